//! The OpenAI Codex runtime: the official App Server JSON-RPC protocol
//! (spec-adapters.md §2), in native mode — the Bridge sends no sandbox,
//! approval-policy or configuration override, so the user's own Codex
//! configuration decides what Codex may do and when it asks.
//!
//! One turn per task: `thread/start` (or `thread/resume` for a
//! continuation), `turn/start`, then the turn's messages until
//! `turn/completed`. Server requests (approvals, questions) are served
//! concurrently, each through the host, which queues them and presents one
//! at a time; any request kind the Bridge does not serve is refused at once
//! so the turn never hangs. Steering is `turn/steer`, cancellation
//! `turn/interrupt`.

#![warn(missing_docs)]

mod connect;
mod interactions;
mod rpc;

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use serverfs_protocol::bridge::{
    AgentProfile, BridgeErrorCode, CatalogScope, CatalogStatus, EventPayload, InFlightRecovery,
    ModelCatalog, ModelDiscovery, ModelInfo, ReconcileStatus,
};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};

pub use connect::{CodexConfig, CodexTransport};

use self::connect::{Connection, request_failed};
use self::interactions::{Ask, REFUSED, approval_response, ask, question_response};
use self::rpc::{Incoming, RpcFailure, RpcPeer};
use serverfs_agent_runtime::{
    Adapter, AgentError, BoxFuture, Capabilities, Host, NativeIds, Probe, ProviderState,
    TaskContext, TurnOutcome, TurnStatus, scrub_credentials,
};

/// The runtime's name.
pub const CODEX_RUNTIME: &str = "codex";

/// What Codex can do through the App Server.
pub const CODEX_CAPABILITIES: Capabilities = Capabilities {
    persistent_session: true,
    live_steer: true,
    interactive_approval: true,
    interactive_question: true,
    in_flight_recovery: InFlightRecovery::SessionResume,
    model_override: true,
    model_discovery: ModelDiscovery::RuntimeCatalog,
};

/// How long a successful probe is reused.
const PROBE_REUSE: Duration = Duration::from_secs(30);
/// Budget of `codex --version` in a probe.
const PROBE_BUDGET: Duration = Duration::from_secs(5);
/// Most models listed.
const MAX_MODELS: usize = 64;
/// Longest string field of an item event, in bytes: with the other fields
/// it keeps an item well under the core's event cap (64 KiB by default),
/// which would otherwise drop the whole event.
const MAX_ITEM_TEXT: usize = 16 * 1024;
/// Largest `changes` of a file-change item event, as compact JSON; a
/// larger one is replaced by its count.
const MAX_ITEM_CHANGES: usize = 32 * 1024;
/// Codex's JSON-RPC code for a thread it cannot resume (unknown id, no
/// rollout: measured on 0.171.0). Codex uses it for other invalid requests
/// too, but on `thread/resume` with valid params it means the session is
/// gone.
const UNKNOWN_THREAD: i64 = -32600;

/// A running turn, as steering and cancellation see it.
struct Active {
    /// The turn, once `turn/start` answered.
    turn: watch::Sender<Option<TurnHandle>>,
    /// Set by `cancel`.
    cancelled: watch::Sender<bool>,
}

#[derive(Clone)]
struct TurnHandle {
    peer: Arc<RpcPeer>,
    thread_id: String,
    turn_id: String,
}

#[derive(Default)]
struct State {
    closed: bool,
    active: HashMap<String, Arc<Active>>,
    /// The last successful probe and when it was taken.
    last_probe: Option<(Instant, Probe)>,
}

/// A turn's entry in [`State::active`], removed however the turn ends:
/// returned, or dropped by the runner once its bounded wait is over. The
/// turn handle is cleared too, since it holds the connection's peer.
struct Registration<'a> {
    state: &'a Mutex<State>,
    task_id: String,
    active: Arc<Active>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.active.turn.send_replace(None);
        let mut state = lock(self.state);
        // Only our own entry: never one a later run of the id put there.
        if state
            .active
            .get(&self.task_id)
            .is_some_and(|active| Arc::ptr_eq(active, &self.active))
        {
            state.active.remove(&self.task_id);
        }
    }
}

/// The Codex adapter.
pub struct CodexAdapter {
    config: CodexConfig,
    state: Mutex<State>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn provider_error(message: impl Into<String>) -> AgentError {
    AgentError::new(BridgeErrorCode::AgentProviderError, message)
}

/// Resolves once the turn is cancelled.
async fn cancellation(cancelled: &mut watch::Receiver<bool>) {
    if cancelled.wait_for(|cancelled| *cancelled).await.is_err() {
        // The sender lives in `Active` as long as the turn does; should it
        // go, nothing can cancel any more, which is no reason to stop.
        std::future::pending::<()>().await;
    }
}

/// Runs a step before the turn exists (connecting, opening the thread)
/// unless the task is cancelled first. Dropping such a step leaves nothing
/// running in Codex that an interrupt would have to stop, so a cancel ends
/// the task at once rather than after the step's own timeout.
async fn unless_cancelled<T>(
    cancelled: &mut watch::Receiver<bool>,
    step: impl Future<Output = Result<T, AgentError>>,
) -> Result<T, AgentError> {
    tokio::select! {
        biased;
        () = cancellation(cancelled) => {
            Err(provider_error("the turn was cancelled before it started"))
        }
        result = step => result,
    }
}

/// The string at `key`, or the `type` of an object there (Codex 0.171.0
/// turned several enums into tagged objects; both shapes are accepted).
fn tag(value: &Value, key: &str) -> Option<String> {
    match value.get(key)? {
        Value::String(text) => Some(text.clone()),
        Value::Object(object) => object
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

fn string_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

impl CodexAdapter {
    /// A Codex adapter with `config`.
    pub fn new(config: CodexConfig) -> CodexAdapter {
        CodexAdapter {
            config,
            state: Mutex::new(State::default()),
        }
    }

    fn active(&self, task_id: &str) -> Option<Arc<Active>> {
        lock(&self.state).active.get(task_id).cloned()
    }

    /// A short-lived connection for probes, model lists and
    /// reconciliation; a Bridge-owned child runs in Codex's home.
    /// Looks at the runtime without starting anything: `codex --version`
    /// (stdio), or a handshake with the daemon (never starting it).
    async fn probe_now(&self) -> Probe {
        let unavailable = Probe {
            available: false,
            version: None,
        };
        match self.config.transport {
            CodexTransport::Stdio => self.version_probe().await,
            // Never starts the daemon: a probe only looks.
            CodexTransport::Daemon { autostart } => {
                let mut config = self.config.clone();
                config.transport = CodexTransport::Daemon { autostart: false };
                match Connection::open(&config, Path::new("/"), None).await {
                    Ok(connection) => {
                        let version = connection.user_agent.as_deref().and_then(version_of);
                        connection.close().await;
                        Probe {
                            available: true,
                            version,
                        }
                    }
                    // A daemon that a task may start is available when
                    // the CLI that starts it runs; otherwise submit
                    // would refuse every task and autostart never run.
                    Err(_) if autostart => self.version_probe().await,
                    Err(_) => unavailable,
                }
            }
        }
    }

    /// Never starts the managed daemon: only a task may (autostart), not a
    /// model list or a reconciliation.
    async fn side_connection(&self) -> Result<Connection, AgentError> {
        let home = self.config.home.clone();
        let cwd = if home.is_dir() {
            home
        } else {
            Path::new("/").to_path_buf()
        };
        let mut config = self.config.clone();
        if let CodexTransport::Daemon { autostart } = &mut config.transport {
            *autostart = false;
        }
        Connection::open(&config, &cwd, None).await
    }

    /// `codex --version` (bounded): available when it exits successfully,
    /// with the version it prints. Starts nothing else.
    async fn version_probe(&self) -> Probe {
        let unavailable = Probe {
            available: false,
            version: None,
        };
        let Ok(mut child) = self
            .config
            .command(Path::new("/"))
            .args(["--version"])
            .spawn()
        else {
            return unavailable;
        };
        let mut output = String::new();
        if let Some(mut stdout) = child.take_stdout() {
            let read = tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut output);
            let _ = tokio::time::timeout(PROBE_BUDGET, read).await;
        }
        let status = tokio::time::timeout(PROBE_BUDGET, child.wait()).await;
        let _stopped = child.terminate(Duration::from_secs(1)).await;
        match status {
            Ok(Ok(status)) if status.success() => Probe {
                available: true,
                version: version_of(&output),
            },
            _ => unavailable,
        }
    }

    async fn run_turn(&self, ctx: TaskContext, host: Arc<dyn Host>) -> TurnOutcome {
        if ctx.profile != AgentProfile::WorkspaceWrite {
            return TurnOutcome::failed(
                AgentError::new(
                    BridgeErrorCode::AgentProfileNotAllowed,
                    "codex currently requires the workspace-write profile",
                ),
                NativeIds::default(),
            );
        }
        let registration = {
            let mut state = lock(&self.state);
            if state.closed {
                return TurnOutcome::failed(
                    AgentError::new(
                        BridgeErrorCode::AgentRuntimeUnavailable,
                        "the codex runtime is closed",
                    ),
                    NativeIds::default(),
                );
            }
            let active = Arc::new(Active {
                turn: watch::channel(None).0,
                cancelled: watch::channel(false).0,
            });
            state
                .active
                .insert(ctx.task_id.clone(), Arc::clone(&active));
            Registration {
                state: &self.state,
                task_id: ctx.task_id.clone(),
                active,
            }
        };
        let active = Arc::clone(&registration.active);
        let mut cancelled = active.cancelled.subscribe();
        let mut native = NativeIds {
            session_id: ctx.continue_native_session_id.clone(),
            turn_id: None,
        };
        let opened = unless_cancelled(
            &mut cancelled,
            Connection::open(&self.config, &ctx.cwd, Some(host.as_ref())),
        )
        .await;
        let outcome = match opened {
            Ok(mut connection) => {
                let mut turn = Turn {
                    ctx: &ctx,
                    host: &host,
                    active: &active,
                    cancelled,
                    native: &mut native,
                    handlers: JoinSet::new(),
                    serving: HashMap::new(),
                    final_answer: None,
                    last_message: None,
                };
                let peer = Arc::clone(&connection.peer);
                let outcome = turn.follow(&peer, &mut connection.incoming).await;
                // Aborts every server request still being served.
                drop(turn);
                active.turn.send_replace(None);
                drop(peer);
                connection.close().await;
                outcome
            }
            Err(error) => Err(error),
        };
        drop(registration);
        let closed = lock(&self.state).closed;
        let cancelled = *active.cancelled.borrow();
        ending(outcome, closed, cancelled, native)
    }
}

/// The outcome of a turn that ended with `result`.
///
/// A closed adapter is checked first: [`Adapter::close`] stops its turns
/// through the cancel flag, yet they were not cancelled by the user.
fn ending(
    result: Result<String, AgentError>,
    closed: bool,
    cancelled: bool,
    native: NativeIds,
) -> TurnOutcome {
    match result {
        Ok(text) => TurnOutcome::completed(text, native),
        Err(_) if closed => TurnOutcome {
            status: TurnStatus::Interrupted,
            final_text: "the codex runtime was closed".to_owned(),
            native,
        },
        Err(_) if cancelled => TurnOutcome {
            status: TurnStatus::Cancelled,
            final_text: "the turn was cancelled".to_owned(),
            native,
        },
        Err(error) => TurnOutcome::failed(error, native),
    }
}

/// One turn's loop state.
struct Turn<'a> {
    ctx: &'a TaskContext,
    host: &'a Arc<dyn Host>,
    active: &'a Active,
    /// Set by `cancel` (and `close`).
    cancelled: watch::Receiver<bool>,
    native: &'a mut NativeIds,
    /// The tasks serving server requests: owned here, so that dropping the
    /// turn (the runner gave up on it) aborts them all.
    handlers: JoinSet<()>,
    /// Server requests seen, by stringified id, to withdraw one Codex
    /// resolved itself and to serve each id once.
    serving: HashMap<String, AbortHandle>,
    /// The last agent message of phase `final_answer`.
    final_answer: Option<String>,
    /// The last agent message of any phase.
    last_message: Option<String>,
}

impl Turn<'_> {
    /// Starts the turn and follows it to its end; `Ok(final text)` when it
    /// completed.
    async fn follow(
        &mut self,
        peer: &Arc<RpcPeer>,
        incoming: &mut tokio::sync::mpsc::UnboundedReceiver<Incoming>,
    ) -> Result<String, AgentError> {
        let cwd = self.ctx.cwd.to_string_lossy().into_owned();
        let thread_id = match &self.ctx.continue_native_session_id {
            Some(thread_id) => {
                let mut params = json!({ "threadId": thread_id, "cwd": cwd });
                if let Some(model) = &self.ctx.model {
                    params["model"] = json!(model);
                }
                let resumed = async {
                    peer.request("thread/resume", params)
                        .await
                        .map_err(|failure| resume_failed(&failure))
                };
                let result = unless_cancelled(&mut self.cancelled, resumed).await?;
                let resumed = string_at(&result, "/thread/id").unwrap_or_default();
                if resumed != thread_id {
                    return Err(AgentError::new(
                        BridgeErrorCode::AgentSessionNotResumable,
                        "Codex resumed a different thread",
                    ));
                }
                thread_id.clone()
            }
            None => {
                let mut params = json!({ "cwd": cwd });
                if let Some(model) = &self.ctx.model {
                    params["model"] = json!(model);
                }
                let started = async {
                    peer.request("thread/start", params)
                        .await
                        .map_err(|failure| request_failed("thread/start", &failure))
                };
                let result = unless_cancelled(&mut self.cancelled, started).await?;
                string_at(&result, "/thread/id")
                    .ok_or_else(|| provider_error("Codex returned no thread id"))?
                    .to_owned()
            }
        };
        self.native.session_id = Some(thread_id.clone());
        self.host
            .record_native_ids(NativeIds {
                session_id: Some(thread_id.clone()),
                turn_id: None,
            })
            .await?;
        if *self.cancelled.borrow_and_update() {
            return Err(provider_error("the turn was cancelled before it started"));
        }
        // Not raced against a cancel: once sent, the turn may run in Codex
        // (the managed daemon outlives this connection), and only its id,
        // in this answer, lets us interrupt it. The runner bounds the wait.
        let result = peer
            .request(
                "turn/start",
                json!({
                    "threadId": thread_id,
                    "input": [{ "type": "text", "text": self.ctx.prompt }],
                    "cwd": cwd,
                }),
            )
            .await
            .map_err(|failure| request_failed("turn/start", &failure))?;
        let turn_id = string_at(&result, "/turn/id")
            .ok_or_else(|| provider_error("Codex returned no turn id"))?
            .to_owned();
        self.native.turn_id = Some(turn_id.clone());
        let handle = TurnHandle {
            peer: Arc::clone(peer),
            thread_id: thread_id.clone(),
            turn_id: turn_id.clone(),
        };
        let recorded = self
            .host
            .record_native_ids(NativeIds {
                session_id: None,
                turn_id: Some(turn_id.clone()),
            })
            .await;
        if let Err(error) = recorded {
            // The turn already runs in Codex: stop it rather than leave it
            // working unobserved (on the daemon it would outlive us).
            interrupt(&handle).await;
            return Err(error);
        }
        self.active.turn.send_replace(Some(handle.clone()));
        // A cancel that arrived before the turn id existed interrupts now.
        let mut interrupted = false;
        if *self.cancelled.borrow_and_update() {
            interrupt(&handle).await;
            interrupted = true;
        }
        loop {
            // Reap finished handlers so the set stays small in long turns.
            while self.handlers.try_join_next().is_some() {}
            let message = tokio::select! {
                message = incoming.recv() => message,
                changed = self.cancelled.changed(), if !interrupted => {
                    if changed.is_ok() && *self.cancelled.borrow_and_update() {
                        interrupt(&handle).await;
                        interrupted = true;
                    }
                    continue;
                }
            };
            let Some(message) = message else {
                return Err(AgentError::new(
                    BridgeErrorCode::AgentProviderDisconnected,
                    "Codex App Server connection was lost",
                ));
            };
            if let Some(done) = self.handle(peer, &thread_id, &turn_id, message).await {
                return done;
            }
        }
    }

    /// Handles one message; `Some` ends the turn.
    async fn handle(
        &mut self,
        peer: &Arc<RpcPeer>,
        thread_id: &str,
        turn_id: &str,
        message: Incoming,
    ) -> Option<Result<String, AgentError>> {
        let (method, params, request_id) = match message {
            Incoming::Request { id, method, params } => (method, params, Some(id)),
            Incoming::Notification { method, params } => (method, params, None),
        };
        let foreign = |pointer: &str, ours: &str| {
            string_at(&params, pointer).is_some_and(|theirs| theirs != ours)
        };
        if foreign("/threadId", thread_id)
            || foreign("/turnId", turn_id)
            || foreign("/turn/id", turn_id)
        {
            // Another thread's or turn's traffic on a shared daemon; a
            // request must still be answered so that it never hangs.
            if let Some(id) = request_id {
                peer.respond_error(&id, REFUSED, "not this turn's request");
            }
            return None;
        }
        if let Some(id) = request_id {
            self.serve(peer, id, method, params);
            return None;
        }
        match method.as_str() {
            "serverRequest/resolved" => {
                // Codex resolved a request itself: stop waiting for the
                // human (dropping the wait withdraws the interaction).
                if let Some(key) = params.get("requestId").map(id_key)
                    && let Some(handler) = self.serving.remove(&key)
                {
                    handler.abort();
                }
            }
            "turn/started" => {
                let _ = self
                    .host
                    .emit(EventPayload::TurnStarted { runtime: None })
                    .await;
            }
            "item/started" | "item/completed" => {
                let completed = method == "item/completed";
                if let Some(item) = params.get("item") {
                    if completed && tag(item, "type").as_deref() == Some("agentMessage") {
                        let text = item.get("text").and_then(Value::as_str).unwrap_or("");
                        if tag(item, "phase").as_deref() == Some("final_answer") {
                            self.final_answer = Some(text.to_owned());
                        }
                        self.last_message = Some(text.to_owned());
                    }
                    let summary = item_summary(item);
                    let event = if completed {
                        EventPayload::ItemCompleted(summary)
                    } else {
                        EventPayload::ItemStarted(summary)
                    };
                    let _ = self.host.emit(event).await;
                }
            }
            "error" => {
                let message = params
                    .get("error")
                    .and_then(|error| {
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .or_else(|| error.as_str())
                    })
                    .or_else(|| params.get("message").and_then(Value::as_str))
                    .map_or_else(|| "Codex reported an error".to_owned(), scrub_credentials);
                let will_retry = params.get("willRetry").and_then(Value::as_bool) == Some(true);
                let _ = self
                    .host
                    .emit(EventPayload::ProviderError {
                        message,
                        will_retry,
                    })
                    .await;
            }
            "turn/completed" => {
                let turn = params.get("turn").cloned().unwrap_or(Value::Null);
                let status = tag(&turn, "status").unwrap_or_default();
                return Some(match status.as_str() {
                    "completed" => Ok(self.final_text()),
                    "interrupted" => Err(provider_error("the Codex turn was interrupted")),
                    other => {
                        let detail = string_at(&turn, "/error/message")
                            .map(str::to_owned)
                            .unwrap_or_else(|| format!("Codex turn ended with status {other}"));
                        Err(provider_error(scrub_credentials(&detail)))
                    }
                });
            }
            // Token usage, rate limits, deltas, warnings and the like.
            _ => {}
        }
        None
    }

    /// Serves a server request on its own task, so that several can wait
    /// for the human at once (the host queues them).
    fn serve(&mut self, peer: &Arc<RpcPeer>, id: Value, method: String, params: Value) {
        let key = id_key(&id);
        if self.serving.contains_key(&key) {
            return;
        }
        let peer = Arc::clone(peer);
        let host = Arc::clone(self.host);
        let handler = self.handlers.spawn(async move {
            match ask(&method, &params) {
                Ask::Refuse { code, message } => peer.respond_error(&id, code, message),
                Ask::Answer(result) => peer.respond(&id, result),
                Ask::Approval(payload, kind) => match host.request_approval(*payload).await {
                    Ok(resolution) => peer.respond(&id, approval_response(&kind, &resolution)),
                    Err(_) => peer.respond_error(&id, REFUSED, "the request was not answered"),
                },
                Ask::Question(payload) => match host.ask_question(payload.clone()).await {
                    Ok(resolution) => peer.respond(&id, question_response(&payload, &resolution)),
                    Err(_) => peer.respond_error(&id, REFUSED, "the question was not answered"),
                },
            }
        });
        self.serving.insert(key, handler);
    }

    /// The last `final_answer` message, else the last message, else "".
    fn final_text(&self) -> String {
        self.final_answer
            .clone()
            .or_else(|| self.last_message.clone())
            .unwrap_or_default()
    }
}

/// A request id as a map key; `0` and `"0"` stay distinct.
fn id_key(id: &Value) -> String {
    id.to_string()
}

/// The event form of an item: its type and id plus the fields a client can
/// act on (host paths are redacted by the core), bounded so that it fits an
/// event: a string field longer than [`MAX_ITEM_TEXT`] is cut (on a
/// character boundary), `changes` larger than [`MAX_ITEM_CHANGES`] becomes
/// `{"count", "truncated"}`, and either adds `"truncated": true`.
fn item_summary(item: &Value) -> Map<String, Value> {
    let mut summary = Map::new();
    let kind = tag(item, "type").unwrap_or_default();
    summary.insert("type".to_owned(), json!(kind));
    let keep: &[&str] = match kind.as_str() {
        "agentMessage" => &["id", "text", "phase"],
        "commandExecution" => &["id", "command", "cwd", "status", "exitCode"],
        "fileChange" => &["id", "status", "changes"],
        _ => &["id", "status"],
    };
    let mut truncated = false;
    for key in keep {
        if let Some(value) = item.get(*key) {
            let value = match value {
                Value::Object(object) if *key == "status" => {
                    object.get("type").cloned().unwrap_or_else(|| value.clone())
                }
                Value::String(text) if text.len() > MAX_ITEM_TEXT => {
                    truncated = true;
                    json!(utf8_prefix(text, MAX_ITEM_TEXT))
                }
                changes if *key == "changes" && json_len(changes) > MAX_ITEM_CHANGES => {
                    truncated = true;
                    let count = match changes {
                        Value::Array(list) => list.len(),
                        Value::Object(map) => map.len(),
                        _ => 1,
                    };
                    json!({ "count": count, "truncated": true })
                }
                other => other.clone(),
            };
            summary.insert((*key).to_owned(), value);
        }
    }
    if truncated {
        summary.insert("truncated".to_owned(), json!(true));
    }
    summary
}

/// The longest prefix of `text` of at most `max` bytes ending on a
/// character boundary.
fn utf8_prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The length of `value` as compact JSON, without building the text.
fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` to a writer that never fails cannot fail; were it
    // to, the count so far is a lower bound, never a panic.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// A failed `thread/resume`: the session is gone only when Codex says it
/// has no such thread ([`UNKNOWN_THREAD`]); anything else (a timeout, a
/// lost connection, another refusal) is not the session's fault.
fn resume_failed(failure: &RpcFailure) -> AgentError {
    match failure {
        RpcFailure::Error {
            code: UNKNOWN_THREAD,
            ..
        } => AgentError::new(
            BridgeErrorCode::AgentSessionNotResumable,
            "Codex could not resume the session",
        ),
        other => request_failed("thread/resume", other),
    }
}

/// Best-effort `turn/interrupt`; failures are swallowed (the turn may have
/// ended meanwhile).
async fn interrupt(handle: &TurnHandle) {
    let _ = handle
        .peer
        .request(
            "turn/interrupt",
            json!({ "threadId": handle.thread_id, "turnId": handle.turn_id }),
        )
        .await;
}

/// The model entries of one `model/list` page.
fn models_of(page: &Value) -> Vec<ModelInfo> {
    page.get("data")
        .and_then(Value::as_array)
        .map(|data| {
            data.iter()
                .filter_map(|model| {
                    let id = model
                        .get("model")
                        .or_else(|| model.get("id"))
                        .and_then(Value::as_str)?;
                    let efforts: Vec<Value> = model
                        .get("supportedReasoningEfforts")
                        .and_then(Value::as_array)
                        .map(|efforts| {
                            efforts
                                .iter()
                                .filter_map(|effort| {
                                    effort
                                        .as_str()
                                        .or_else(|| {
                                            effort.get("reasoningEffort").and_then(Value::as_str)
                                        })
                                        .map(|e| json!(e))
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    let mut reasoning = Map::new();
                    reasoning.insert("supported".to_owned(), Value::Array(efforts));
                    reasoning.insert(
                        "default".to_owned(),
                        model
                            .get("defaultReasoningEffort")
                            .cloned()
                            .unwrap_or(Value::Null),
                    );
                    Some(ModelInfo {
                        id: id.to_owned(),
                        display_name: model
                            .get("displayName")
                            .and_then(Value::as_str)
                            .unwrap_or(id)
                            .to_owned(),
                        enabled: None,
                        is_default: model.get("isDefault").and_then(Value::as_bool),
                        hidden: model.get("hidden").and_then(Value::as_bool),
                        description: model
                            .get("description")
                            .and_then(Value::as_str)
                            .map(|d| d.chars().take(2048).collect()),
                        input_modalities: model.get("inputModalities").and_then(|m| {
                            m.as_array().map(|list| {
                                list.iter()
                                    .filter_map(Value::as_str)
                                    .take(16)
                                    .map(str::to_owned)
                                    .collect()
                            })
                        }),
                        reasoning: Some(reasoning),
                        context: None,
                        service_tiers: None,
                        is_free: None,
                        price_factor: None,
                        is_new: None,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The version in a `codex --version` line (`codex-cli 0.171.0`) or a
/// `userAgent` (`codex_app_server/0.171.0 (…)`).
fn version_of(text: &str) -> Option<String> {
    let text = text.trim();
    let version = text
        .strip_prefix("codex-cli ")
        .or_else(|| text.split_once('/').map(|(_, rest)| rest))?;
    let version = version.split_whitespace().next()?;
    (!version.is_empty()).then(|| version.to_owned())
}

impl Adapter for CodexAdapter {
    fn name(&self) -> &str {
        CODEX_RUNTIME
    }

    fn capabilities(&self) -> Capabilities {
        CODEX_CAPABILITIES
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        Box::pin(async move {
            // Every submit probes: a `codex --version` (a Node start) or a
            // daemon handshake each time would put a process start on the
            // submit path. A success is reused for a while; a failure is
            // not, so a runtime that comes up is seen at once.
            if let Some((at, probe)) = lock(&self.state).last_probe.clone()
                && at.elapsed() < PROBE_REUSE
            {
                return probe;
            }
            let probe = self.probe_now().await;
            if probe.available {
                lock(&self.state).last_probe = Some((Instant::now(), probe.clone()));
            }
            probe
        })
    }

    fn models(&self) -> BoxFuture<'_, ModelCatalog> {
        Box::pin(async move {
            let unavailable = |detail: &str| ModelCatalog {
                runtime: CODEX_RUNTIME.to_owned(),
                status: CatalogStatus::Unavailable,
                scope: CatalogScope::None,
                source: "codex_app_server".to_owned(),
                models: Vec::new(),
                detail: Some(detail.to_owned()),
                model_advice: None,
            };
            let Ok(connection) = self.side_connection().await else {
                return unavailable("runtime is unavailable");
            };
            let mut models = Vec::new();
            let mut cursor: Option<String> = None;
            let mut failed = false;
            loop {
                let mut params = json!({ "limit": MAX_MODELS, "includeHidden": true });
                if let Some(cursor) = &cursor {
                    params["cursor"] = json!(cursor);
                }
                let Ok(page) = connection.peer.request("model/list", params).await else {
                    failed = true;
                    break;
                };
                models.extend(models_of(&page));
                let next = page
                    .get("nextCursor")
                    .and_then(Value::as_str)
                    .filter(|next| !next.is_empty())
                    .map(str::to_owned);
                if models.len() >= MAX_MODELS || next.is_none() || next == cursor {
                    break;
                }
                cursor = next;
            }
            connection.close().await;
            if failed {
                return unavailable("model discovery failed");
            }
            models.truncate(MAX_MODELS);
            ModelCatalog {
                runtime: CODEX_RUNTIME.to_owned(),
                status: CatalogStatus::Ok,
                scope: CatalogScope::RuntimeCatalog,
                source: "codex_app_server".to_owned(),
                models,
                detail: None,
                model_advice: None,
            }
        })
    }

    fn run(&self, ctx: TaskContext, host: Arc<dyn Host>) -> BoxFuture<'_, TurnOutcome> {
        Box::pin(self.run_turn(ctx, host))
    }

    fn send_message<'a>(
        &'a self,
        task_id: &'a str,
        text: String,
    ) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let not_active = || {
                AgentError::new(
                    BridgeErrorCode::AgentTaskNotActive,
                    "the task is not running in the codex runtime",
                )
            };
            let active = self.active(task_id).ok_or_else(not_active)?;
            let mut turn = active.turn.subscribe();
            let handle = match tokio::time::timeout(
                self.config.request_timeout,
                turn.wait_for(Option::is_some),
            )
            .await
            {
                Ok(Ok(handle)) => handle.clone(),
                _ => None,
            }
            .ok_or_else(|| {
                AgentError::new(
                    BridgeErrorCode::AgentTaskNotActive,
                    "Codex turn is no longer steerable",
                )
            })?;
            handle
                .peer
                .request(
                    "turn/steer",
                    json!({
                        "threadId": handle.thread_id,
                        "input": [{ "type": "text", "text": text }],
                        "expectedTurnId": handle.turn_id,
                    }),
                )
                .await
                .map(|_| ())
                .map_err(|failure| request_failed("turn/steer", &failure))
        })
    }

    fn cancel<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Some(active) = self.active(task_id) else {
                return;
            };
            // The turn loop interrupts as soon as it can; before the turn
            // id exists it stops before starting the turn.
            active.cancelled.send_replace(true);
        })
    }

    fn reconcile<'a>(
        &'a self,
        _task_id: &'a str,
        native: &'a NativeIds,
    ) -> BoxFuture<'a, ProviderState> {
        Box::pin(async move {
            let Some(thread_id) = &native.session_id else {
                // No thread: no turn ever ran; a Bridge-owned child, if it
                // was spawned, is judged by its recorded process group.
                return ProviderState {
                    status: ReconcileStatus::NotRecoverable,
                    provider_active: Some(false),
                };
            };
            let Ok(connection) = self.side_connection().await else {
                return ProviderState::UNKNOWN;
            };
            let read = connection
                .peer
                .request(
                    "thread/read",
                    json!({ "threadId": thread_id, "includeTurns": true }),
                )
                .await;
            connection.close().await;
            let Ok(result) = read else {
                return ProviderState::UNKNOWN;
            };
            let thread = result.get("thread").cloned().unwrap_or(Value::Null);
            if string_at(&thread, "/id") != Some(thread_id.as_str()) {
                return ProviderState::UNKNOWN;
            }
            match tag(&thread, "status").as_deref() {
                Some("active") => ProviderState {
                    status: ReconcileStatus::Unknown,
                    provider_active: Some(true),
                },
                _ => ProviderState {
                    status: ReconcileStatus::SessionResumable,
                    provider_active: Some(false),
                },
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        let active: Vec<Arc<Active>> = {
            let mut state = lock(&self.state);
            state.closed = true;
            state.active.values().cloned().collect()
        };
        Box::pin(async move {
            for turn in active {
                turn.cancelled.send_replace(true);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_both_spellings() {
        assert_eq!(
            version_of("codex-cli 0.171.0\n").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(
            version_of("codex_app_server/0.171.0 (Linux; x86_64)").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(version_of("nonsense"), None);
    }

    #[test]
    fn tags_accept_strings_and_objects() {
        assert_eq!(
            tag(&json!({ "status": "idle" }), "status").as_deref(),
            Some("idle")
        );
        assert_eq!(
            tag(
                &json!({ "status": { "type": "active", "activeFlags": [] } }),
                "status"
            )
            .as_deref(),
            Some("active")
        );
        assert_eq!(tag(&json!({ "status": 3 }), "status"), None);
    }

    #[test]
    fn model_pages_accept_object_efforts() {
        let page = json!({ "data": [{
            "id": "m", "model": "gpt-x", "displayName": "GPT X", "isDefault": true, "hidden": false,
            "supportedReasoningEfforts": [{ "reasoningEffort": "low", "description": "fast" }, "high"],
            "defaultReasoningEffort": "low", "inputModalities": ["text"]
        }]});
        let models = models_of(&page);
        assert_eq!(models.len(), 1);
        assert_eq!(models[0].id, "gpt-x");
        assert_eq!(
            models[0]
                .reasoning
                .as_ref()
                .and_then(|r| r.get("supported")),
            Some(&json!(["low", "high"]))
        );
    }
}

#[cfg(test)]
#[path = "turn_tests.rs"]
mod turn_tests;
