//! One client connection's protocol state: handshake, methods, the turn.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::state::{MockState, ThreadRecord};
use super::turn::{ActiveTurn, RequestIds, SLOW_THREAD_DELAY, SLOW_THREAD_MODEL};
use super::wire::{
    Incoming, PARSE_ERROR, RpcError, classify, error_response, notification, response,
};
use super::{USER_AGENT, diag};

/// Params the Bridge must never send in native mode (our product rule:
/// the user's own Codex configuration decides sandbox and approvals).
/// Their presence is answered with `-32602` so a regression fails the test.
const FORBIDDEN_KEYS: [&str; 5] = [
    "sandbox",
    "sandboxPolicy",
    "approvalPolicy",
    "approvalsReviewer",
    "config",
];

/// The model every thread runs unless the client picks one.
const DEFAULT_MODEL: &str = "mock-model";

/// The cursor of `model/list`'s second (last) page.
const SECOND_PAGE: &str = "mock-page-2";

/// Something the transport must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Send one JSON-RPC message (a line on stdio, a text frame on WS).
    Send(Value),
    /// Send this text as it is, as one line or text frame: not JSON (the
    /// `garbage` scenario); it never contains a newline.
    Raw(String),
    /// Close the transport now, without a goodbye (stdio: exit the process;
    /// WebSocket: drop the socket without a close frame).
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    /// Nothing received yet.
    Fresh,
    /// `initialize` answered; waiting for the `initialized` notification.
    Initializing,
    /// Ready for every method.
    Ready,
}

/// A successful method call: the result, then messages that follow it.
struct Reply {
    result: Value,
    then: Vec<Output>,
    /// Send the result and what follows it this much later (the
    /// `slow-start` scenario); other messages are served meanwhile.
    delay: Option<Duration>,
}

impl Reply {
    fn plain(result: Value) -> Reply {
        Reply::then(result, Vec::new())
    }

    fn then(result: Value, then: Vec<Output>) -> Reply {
        Reply {
            result,
            then,
            delay: None,
        }
    }
}

/// The scripted Codex App Server for one connection, independent of the
/// transport.
///
/// Feed it every message with [`Session::on_text`] (raw bytes of one line or
/// frame) or [`Session::on_message`], and send the returned [`Output`]s in
/// order. Between messages, wait at most until [`Session::next_deadline`]
/// and then call [`Session::on_deadline`] (only the `slow`, `slow-start`
/// and `slow-resolve` scenarios use it).
pub struct Session {
    state: MockState,
    handshake: Handshake,
    ids: RequestIds,
    turn: Option<ActiveTurn>,
    /// A delayed reply (with what follows it) and when it is due.
    held: Option<(Instant, Vec<Output>)>,
}

impl Session {
    /// A fresh session (before `initialize`) over shared `state`.
    pub fn new(state: MockState) -> Session {
        Session {
            state,
            handshake: Handshake::Fresh,
            ids: RequestIds::default(),
            turn: None,
            held: None,
        }
    }

    /// Handles one raw message (one stdio line or WebSocket text frame).
    /// Bytes that are not JSON are recorded as a string and answered with a
    /// `-32700` error.
    pub fn on_text(&mut self, text: &[u8]) -> Vec<Output> {
        match serde_json::from_slice::<Value>(text) {
            Ok(msg) => self.on_message(msg),
            Err(e) => {
                let raw = String::from_utf8_lossy(text).into_owned();
                self.state.record(&Value::String(raw));
                let error = RpcError {
                    code: PARSE_ERROR,
                    message: format!("Parse error: {e}"),
                };
                vec![Output::Send(error_response(Value::Null, &error))]
            }
        }
    }

    /// Handles one parsed message.
    pub fn on_message(&mut self, msg: Value) -> Vec<Output> {
        self.state.record(&msg);
        match classify(msg) {
            Incoming::Request { id, method, params } => self.on_request(id, &method, &params),
            Incoming::Notification { method } => {
                self.on_notification(&method);
                Vec::new()
            }
            Incoming::Response { id, outcome } => self.on_response(&id, &outcome),
            Incoming::Invalid { id, reason } => vec![Output::Send(error_response(id, &reason))],
        }
    }

    /// When [`Session::on_deadline`] next has something to send.
    pub fn next_deadline(&self) -> Option<Instant> {
        let held = self.held.as_ref().map(|(due, _)| *due);
        let turn = self.turn.as_ref().and_then(ActiveTurn::deadline);
        held.into_iter().chain(turn).min()
    }

    /// Sends whatever is due at `now` (nothing if it is early).
    pub fn on_deadline(&mut self, now: Instant) -> Vec<Output> {
        let mut out = match self.held.take() {
            Some((due, held)) if due <= now => held,
            early => {
                self.held = early;
                Vec::new()
            }
        };
        if let Some(turn) = &mut self.turn {
            let step = turn.on_deadline(&self.state, now);
            if step.finished {
                self.turn = None;
            }
            out.extend(step.out);
        }
        out
    }

    fn on_request(&mut self, id: Value, method: &str, params: &Map<String, Value>) -> Vec<Output> {
        let reply = if method == "initialize" {
            self.initialize(params)
        } else if self.handshake != Handshake::Ready {
            Err(RpcError::invalid_request("Not initialized"))
        } else {
            match method {
                "model/list" => model_list(params),
                "thread/start" => self.thread_start(params),
                "thread/resume" => self.thread_resume(params),
                "thread/read" => self.thread_read(params),
                "turn/start" => self.turn_start(params),
                "turn/steer" => self.turn_steer(params),
                "turn/interrupt" => self.turn_interrupt(params),
                other => Err(RpcError::invalid_request(format!(
                    "Invalid request: unknown variant `{other}`"
                ))),
            }
        };
        match reply {
            Ok(Reply {
                result,
                then,
                delay,
            }) => {
                let mut out = vec![Output::Send(response(id, result))];
                out.extend(then);
                match delay {
                    Some(delay) => {
                        self.held = Some((Instant::now() + delay, out));
                        Vec::new()
                    }
                    None => out,
                }
            }
            Err(error) => vec![Output::Send(error_response(id, &error))],
        }
    }

    fn on_notification(&mut self, method: &str) {
        match (method, self.handshake) {
            ("initialized", Handshake::Initializing) => self.handshake = Handshake::Ready,
            ("initialized", Handshake::Fresh | Handshake::Ready) => {
                diag("`initialized` out of order; ignored");
            }
            (other, _) => diag(&format!("client notification `{other}` ignored")),
        }
    }

    fn on_response(&mut self, id: &Value, outcome: &Result<Value, Value>) -> Vec<Output> {
        if let Some(turn) = &mut self.turn
            && let Some(step) = turn.on_response(&self.state, id, outcome)
        {
            if step.finished {
                self.turn = None;
            }
            return step.out;
        }
        if self.ids.self_resolved.contains(id) {
            diag(&format!(
                "answer to request {id}, which the server already resolved; ignored"
            ));
        } else {
            diag(&format!("response to unknown request id {id}; ignored"));
        }
        Vec::new()
    }

    fn initialize(&mut self, params: &Map<String, Value>) -> Result<Reply, RpcError> {
        if self.handshake != Handshake::Fresh {
            return Err(RpcError::invalid_request("Already initialized"));
        }
        if !params.contains_key("clientInfo") {
            return Err(missing("clientInfo"));
        }
        // The Bridge relies on experimental fields (`availableDecisions`,
        // `additionalPermissions`), which Codex only sends when opted in.
        if params
            .get("capabilities")
            .and_then(|c| c.get("experimentalApi"))
            != Some(&json!(true))
        {
            return Err(RpcError::invalid_params(
                "mock-codex requires capabilities.experimentalApi == true",
            ));
        }
        self.handshake = Handshake::Initializing;
        Ok(Reply::plain(json!({
            "userAgent": USER_AGENT,
            "codexHome": self.state.codex_home().to_string_lossy(),
            "platformFamily": "unix",
            "platformOs": "linux",
        })))
    }

    fn thread_start(&mut self, params: &Map<String, Value>) -> Result<Reply, RpcError> {
        reject_overrides(params)?;
        let cwd = match opt_str(params, "cwd")? {
            Some(cwd) => cwd.to_owned(),
            // Codex falls back to its own working directory.
            None => std::env::current_dir()
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "/".to_owned()),
        };
        let model = opt_str(params, "model")?
            .unwrap_or(DEFAULT_MODEL)
            .to_owned();
        // Thread start has no prompt to pick a scenario from: the model
        // name asks for a late answer instead.
        let delay = model
            .contains(SLOW_THREAD_MODEL)
            .then_some(SLOW_THREAD_DELAY);
        let (id, record) = self.state.new_thread(cwd, model);
        let thread = thread_json(&id, &record, json!({ "type": "idle" }), false);
        let result = open_thread_result(thread.clone(), &record);
        let started = notification("thread/started", json!({ "thread": thread }));
        Ok(Reply {
            result,
            then: vec![Output::Send(started)],
            delay,
        })
    }

    fn thread_resume(&mut self, params: &Map<String, Value>) -> Result<Reply, RpcError> {
        reject_overrides(params)?;
        let thread_id = req_str(params, "threadId")?;
        opt_str(params, "cwd")?;
        let model = opt_str(params, "model")?;
        let mut record = self
            .state
            .thread(thread_id)
            .ok_or_else(|| no_rollout(thread_id))?;
        if let Some(model) = model {
            self.state.set_thread_model(thread_id, model.to_owned());
            record.model = model.to_owned();
        }
        let exclude_turns = params.get("excludeTurns") == Some(&json!(true));
        let thread = thread_json(thread_id, &record, idle_or_active(&record), !exclude_turns);
        Ok(Reply::plain(open_thread_result(thread, &record)))
    }

    fn thread_read(&mut self, params: &Map<String, Value>) -> Result<Reply, RpcError> {
        let thread_id = req_str(params, "threadId")?;
        let include_turns = params.get("includeTurns") == Some(&json!(true));
        let record = self
            .state
            .thread(thread_id)
            .ok_or_else(|| no_rollout(thread_id))?;
        let active = record.running_here();
        // Protocol drift tolerance: odd threads report the status as a bare
        // string (older servers), even ones as the 0.171.0 tagged object.
        let status = match (record.number % 2 == 1, active) {
            (true, true) => json!("active"),
            (true, false) => json!("idle"),
            (false, _) => idle_or_active(&record),
        };
        let thread = thread_json(thread_id, &record, status, include_turns);
        Ok(Reply::plain(json!({ "thread": thread })))
    }

    fn turn_start(&mut self, params: &Map<String, Value>) -> Result<Reply, RpcError> {
        reject_overrides(params)?;
        let thread_id = req_str(params, "threadId")?;
        let prompt = input_text(params)?;
        let cwd = opt_str(params, "cwd")?;
        let record = self
            .state
            .thread(thread_id)
            .ok_or_else(|| RpcError::invalid_request(format!("thread not found: {thread_id}")))?;
        if let Some(turn) = &self.turn {
            return Err(RpcError::invalid_request(format!(
                "turn `{}` is still active on thread `{}`",
                turn.turn_id, turn.thread_id
            )));
        }
        let cwd = cwd.map_or(record.cwd, str::to_owned);
        let number = self
            .state
            .new_turn(thread_id)
            .ok_or_else(|| RpcError::invalid_request(format!("thread not found: {thread_id}")))?;
        let mut turn = ActiveTurn::new(thread_id.to_owned(), number, cwd, prompt);
        let result = json!({ "turn": turn.turn_json() });
        let delay = turn.reply_delay();
        let step = turn.begin(&self.state, &mut self.ids);
        if !step.finished {
            self.turn = Some(turn);
        }
        Ok(Reply {
            result,
            then: step.out,
            delay,
        })
    }

    fn turn_steer(&mut self, params: &Map<String, Value>) -> Result<Reply, RpcError> {
        reject_overrides(params)?;
        let thread_id = req_str(params, "threadId")?;
        let expected = req_str(params, "expectedTurnId")?;
        let text = input_text(params)?;
        let Some(turn) = self.turn.as_mut().filter(|t| t.thread_id == thread_id) else {
            return Err(RpcError::invalid_request("no active turn to steer"));
        };
        if turn.turn_id != expected {
            return Err(RpcError::invalid_request(format!(
                "expected active turn id `{expected}` but found `{}`",
                turn.turn_id
            )));
        }
        let result = json!({ "turnId": turn.turn_id });
        let step = turn.steer(&self.state, &text);
        if step.finished {
            self.turn = None;
        }
        Ok(Reply::then(result, step.out))
    }

    fn turn_interrupt(&mut self, params: &Map<String, Value>) -> Result<Reply, RpcError> {
        let thread_id = req_str(params, "threadId")?;
        let turn_id = req_str(params, "turnId")?;
        let Some(turn) = self
            .turn
            .as_mut()
            .filter(|t| t.thread_id == thread_id && t.turn_id == turn_id)
        else {
            return Err(RpcError::invalid_request(format!(
                "no active turn `{turn_id}` to interrupt"
            )));
        };
        let then = turn.interrupt(&self.state);
        self.turn = None;
        Ok(Reply::then(json!({}), then))
    }
}

/// `model/list`: two models, one per page, so a client must follow
/// `nextCursor`. The second is hidden and only listed with
/// `includeHidden: true`.
fn model_list(params: &Map<String, Value>) -> Result<Reply, RpcError> {
    let include_hidden = params.get("includeHidden") == Some(&json!(true));
    let efforts = json!([
        { "reasoningEffort": "low", "description": "Fast answers" },
        { "reasoningEffort": "medium", "description": "Balanced" },
        { "reasoningEffort": "high", "description": "Thorough" },
    ]);
    let result = match opt_str(params, "cursor")? {
        None => json!({
            "data": [{
                "id": DEFAULT_MODEL,
                "model": DEFAULT_MODEL,
                "displayName": "Mock Model",
                "description": "The default scripted model",
                "isDefault": true,
                "hidden": false,
                "inputModalities": ["text", "image"],
                "supportedReasoningEfforts": efforts,
                "defaultReasoningEffort": "medium",
            }],
            "nextCursor": SECOND_PAGE,
        }),
        Some(SECOND_PAGE) => {
            let mini = json!({
                "id": "mock-model-mini",
                "model": "mock-model-mini",
                "displayName": "Mock Model Mini",
                "description": "A hidden smaller scripted model",
                "isDefault": false,
                "hidden": true,
                "inputModalities": ["text"],
                "supportedReasoningEfforts": [{ "reasoningEffort": "low", "description": "Fast answers" }],
                "defaultReasoningEffort": "low",
            });
            let data = if include_hidden {
                vec![mini]
            } else {
                Vec::new()
            };
            json!({ "data": data, "nextCursor": null })
        }
        Some(other) => {
            return Err(RpcError::invalid_request(format!(
                "invalid cursor `{other}`"
            )));
        }
    };
    Ok(Reply::plain(result))
}

/// Refuses the native-mode forbidden keys (see [`FORBIDDEN_KEYS`]).
fn reject_overrides(params: &Map<String, Value>) -> Result<(), RpcError> {
    match FORBIDDEN_KEYS.iter().find(|key| params.contains_key(**key)) {
        Some(key) => Err(RpcError::invalid_params(format!(
            "native mode: the Bridge must not send `{key}` (mock-codex refuses policy overrides)"
        ))),
        None => Ok(()),
    }
}

/// The text items of `input`, joined by newlines.
fn input_text(params: &Map<String, Value>) -> Result<String, RpcError> {
    let input = params
        .get("input")
        .ok_or_else(|| missing("input"))?
        .as_array()
        .ok_or_else(|| RpcError::invalid_request("Invalid request: `input` must be an array"))?;
    let texts: Vec<&str> = input
        .iter()
        .filter(|item| item.get("type") == Some(&json!("text")))
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .collect();
    Ok(texts.join("\n"))
}

fn req_str<'a>(params: &'a Map<String, Value>, key: &str) -> Result<&'a str, RpcError> {
    opt_str(params, key)?.ok_or_else(|| missing(key))
}

/// A string param; absent and `null` are `None`, another type an error.
fn opt_str<'a>(params: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, RpcError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RpcError::invalid_request(format!(
            "Invalid request: invalid type for `{key}`, expected a string"
        ))),
    }
}

fn missing(key: &str) -> RpcError {
    RpcError::invalid_request(format!("Invalid request: missing field `{key}`"))
}

/// Codex's answer (measured) for a thread id it has no rollout for.
fn no_rollout(thread_id: &str) -> RpcError {
    RpcError::invalid_request(format!("no rollout found for thread id {thread_id}"))
}

/// The 0.171.0 tagged thread status: `active` while a turn of the thread
/// runs in this process (see [`ThreadRecord::running_here`]).
fn idle_or_active(record: &ThreadRecord) -> Value {
    if record.running_here() {
        json!({ "type": "active", "activeFlags": [] })
    } else {
        json!({ "type": "idle" })
    }
}

/// A `Thread` object with the fields 0.171.0's schema requires.
fn thread_json(id: &str, record: &ThreadRecord, status: Value, with_turns: bool) -> Value {
    let turns: Vec<Value> = if with_turns {
        record
            .turns
            .iter()
            .map(|t| json!({ "id": t.id, "status": t.status, "items": [], "error": null }))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "id": id,
        "sessionId": id,
        "status": status,
        "cwd": record.cwd,
        "model": record.model,
        "modelProvider": "mock",
        "cliVersion": super::CLI_VERSION,
        "source": "appServer",
        "ephemeral": false,
        "preview": "",
        "projectId": null,
        "path": null,
        "name": null,
        "createdAt": record.created_at,
        "updatedAt": record.created_at,
        "turns": turns,
    })
}

/// The result of `thread/start` and `thread/resume`: the thread plus the
/// effective settings (the defaults a plain 0.171.0 reports, measured).
fn open_thread_result(thread: Value, record: &ThreadRecord) -> Value {
    json!({
        "thread": thread,
        "model": record.model,
        "modelProvider": "mock",
        "cwd": record.cwd,
        "approvalPolicy": "on-request",
        "approvalsReviewer": "user",
        "sandbox": { "type": "readOnly", "networkAccess": false },
        "serviceTier": null,
        "reasoningEffort": null,
    })
}
