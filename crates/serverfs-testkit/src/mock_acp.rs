//! A scripted ACP agent (protocol version 1, JSON-RPC over stdio), the
//! `fake-acp` binary, for hermetic tests of the Bridge's generic ACP
//! runtime (spec-adapters.md §5, seed 002 §18). It is written against the
//! wire, not against the `agent-client-protocol` crate, so the adapter's
//! use of that crate is tested by an independent peer.
//!
//! # What the client must send
//!
//! The fake refuses (JSON-RPC error, and it says so in its log) an
//! `initialize` that is not version 1 or advertises file-system or
//! terminal capabilities, and a `session/new` whose `mcpServers` is not
//! `[]` or whose `cwd` is not absolute.
//!
//! # Knobs (its environment, i.e. the profile's fixed `env`)
//!
//! | variable | effect |
//! |---|---|
//! | `FAKE_ACP_PROTOCOL` | the `protocolVersion` it answers (default 1) |
//! | `FAKE_ACP_INIT` | `fail`: `initialize` answered with an error; `exit`: exits instead of answering; `garbage`: non-JSON lines before the answer; `slow`: waits [`SLOW_INIT`] first; `malformed`: answers JSON of the wrong shape (`protocolVersion` a string) |
//! | `FAKE_ACP_NEW` | `malformed`: `session/new` answered with JSON of the wrong shape (`sessionId` a number) |
//! | `FAKE_ACP_SESSIONS` | `resume` (default: `loadSession` and `sessionCapabilities.resume`), `load` (only `loadSession`), `none` |
//! | `FAKE_ACP_MODELS` | `1` or `config`: sessions have a model config option (`model`, category `model`, values `mock/a` (current) and `mock/b`), set with `session/set_config_option`; `list`: instead a `models` list (`availableModels` `mock/a` (current) and `mock/b`, as codex-acp's TypeScript build sends), set with `session/set_model`; `both`: both. A value the agent does not offer is refused with `-32602`; `session/set_model` without a list is `-32601` |
//! | `FAKE_ACP_AUTH` | `required`: `session/new` fails with `-32000` |
//!
//! # Scenarios (first keyword of the prompt, in [`SCENARIOS`] order)
//!
//! | keyword | behaviour | final text |
//! |---|---|---|
//! | `approval` | an `execute` tool call, then a permission request with `once`/`allow_once`, `always`/`allow_always`, `reject`/`reject_once`, `never`/`reject_always`; writes `created.txt` in its cwd only when allowed | `approval:<option id>`, or the turn ends `cancelled` |
//!
//! Every permission request's tool call names host paths, as agents do:
//! `rawInput.cwd` is the absolute cwd, and its `locations` are
//! `<cwd>/created.txt` and `<cwd>/../elsewhere.txt` (outside the workdir).
//! | `no-allow-once` | the same with only `always` and `reject` | as `approval` |
//! | `storm` | five permission requests at once (`p1` … `p5`, each `allow_once`/`reject_once`) | `storm:<chosen ids in order>` |
//! | `withdraw` | a permission request it withdraws itself with `$/cancel_request` 300 ms later (expects error `-32800`) | `withdrawn` |
//! | `wait` | a tool call, then runs until `session/cancel` | ends `cancelled` |
//! | `child` | starts `/bin/sh -c 'sleep 300 & sleep 300 & wait'` (its own descendants), then as `wait` | ends `cancelled` |
//! | `escape` | starts the fake runtime's `escape-tree` shell (two `setsid` processes ignoring `SIGTERM`, one orphaned at once, as agents start commands), then as `wait` | ends `cancelled` |
//! | `stubborn` | a tool call, then ignores `session/cancel` | never ends |
//! | `history` | nothing | `history:<earlier prompts of the session, joined by |>` |
//! | `fs` | sends `fs/read_text_file` and `terminal/create` requests | `fs:<error code>,<error code>` |
//! | `garbage` | non-JSON lines mid-turn | as the default |
//! | `meta` | updates carrying `_meta`, an unknown update type, a plan (its first step naming `<cwd>/src/lib.rs`) and usage | as the default |
//! | `huge` | one 2 MiB message chunk | that text |
//! | `oversized` | one line over 16 MiB | — |
//! | `paths` | an `edit` tool call whose `locations` are `<cwd>/notes.txt` and `<cwd>/../elsewhere.txt` (outside the workdir), a `read` tool call whose input names both, then a message naming `<cwd>/notes.txt` | `see <cwd>/notes.txt` |
//! | `error` | the prompt answered with a JSON-RPC error | — |
//! | `refusal` | `stopReason: refusal` | — |
//! | `rogue-cancel` | `stopReason: cancelled` nobody asked for | — |
//! | `stderr` | a credential-looking line on stderr | as the default |
//! | `eof` | exits without answering the prompt | — |
//! | (none) | an empty chunk, then the text in two chunks | `done:<prompt>` (` model=<m>` when a model was set) |
//!
//! A session is `acp-session-<n>`; its prompts are kept in
//! `$HOME/fake-acp-sessions/<id>`. `session/load` replays them (a user
//! chunk, a tool call and an agent chunk `REPLAYED:<prompt>` each) before
//! it answers; resuming or loading an unknown session is error `-32002`.
//!
//! # Log
//!
//! Every run appends JSON lines to `$HOME/fake-acp-log.jsonl`: first
//! `{"argv": [...], "env": {...}}`, then `{"received": <message>}` for each
//! message read.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// The scenarios, by keyword, most specific first.
pub const SCENARIOS: [&str; 20] = [
    "no-allow-once",
    "rogue-cancel",
    "oversized",
    "approval",
    "withdraw",
    "stubborn",
    "history",
    "garbage",
    "refusal",
    "stderr",
    "storm",
    "escape",
    "child",
    "paths",
    "error",
    "wait",
    "meta",
    "huge",
    "eof",
    "fs",
];

/// The version `agentInfo` reports.
pub const VERSION: &str = "0.9.0-mock";

/// How long `withdraw` waits before withdrawing its request.
const WITHDRAW_AFTER: Duration = Duration::from_millis(300);

/// The log the fake writes under `home`.
pub fn log_path(home: &Path) -> PathBuf {
    home.join("fake-acp-log.jsonl")
}

/// Runs the fake agent (the `fake-acp` binary's `main`).
pub fn run() -> ExitCode {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut fake = Fake {
        log: home.as_deref().map(log_path),
        sessions: home.map(|home| home.join("fake-acp-sessions")),
        incoming: crate::jsonl::stdin_lines(),
        next_id: 0,
        model: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    fake.log(&json!({ "argv": argv, "env": env }));
    match fake.serve() {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("fake-acp: {problem}");
            ExitCode::from(1)
        }
    }
}

/// Why the fake gave up: the client broke the protocol as the fake
/// expects it, or the fake's own I/O failed. Printed on stderr; the fake
/// then exits 1, which the test sees as a lost connection.
#[derive(Debug, thiserror::Error)]
enum FakeError {
    #[error("unreadable input: {0}")]
    UnreadableInput(#[from] serde_json::Error),
    #[error("input ended {0}")]
    InputEnded(&'static str),
    #[error("{context}: unexpected {message}")]
    Unexpected {
        context: &'static str,
        message: Value,
    },
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("no HOME for the sessions")]
    NoHome,
}

impl FakeError {
    /// An I/O error of `what` the fake was doing.
    fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> FakeError {
        move |source| FakeError::Io { what, source }
    }
}

type Step<T> = Result<T, FakeError>;

/// How long `FAKE_ACP_INIT=slow` waits before it answers `initialize`:
/// far longer than any bound a test sets, so that a test can tell a bound
/// that was kept from the agent's own answer.
pub const SLOW_INIT: Duration = Duration::from_secs(30);

/// The models the fake offers, the first being its default.
const MODELS: [(&str, &str); 2] = [("mock/a", "Mock A"), ("mock/b", "Mock B")];

fn knob(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// How a prompt turn ended.
enum Ending {
    /// `stopReason` and the text sent.
    Stop(&'static str),
    /// The prompt answered with a JSON-RPC error.
    Error,
    /// Exit at once, answering nothing.
    Exit,
}

struct Fake {
    log: Option<PathBuf>,
    sessions: Option<PathBuf>,
    incoming: mpsc::Receiver<String>,
    next_id: i64,
    /// The model set on the session, if any.
    model: Option<String>,
}

impl Fake {
    fn log(&self, entry: &Value) {
        crate::jsonl::append(self.log.as_deref(), entry);
    }

    fn send(&self, message: &Value) {
        self.raw(&message.to_string());
    }

    fn raw(&self, line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn result(&self, id: &Value, result: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    }

    fn error(&self, id: &Value, code: i64, message: &str) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id,
                           "error": { "code": code, "message": message } }));
    }

    fn update(&self, session: &str, update: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": "session/update",
                           "params": { "sessionId": session, "update": update } }));
    }

    fn chunk(&self, session: &str, text: &str) {
        self.update(
            session,
            json!({ "sessionUpdate": "agent_message_chunk",
                    "content": { "type": "text", "text": text } }),
        );
    }

    /// The next message; `None` at end of input or after `timeout`.
    fn next(&mut self, timeout: Option<Duration>) -> Step<Option<Value>> {
        let line = match timeout {
            Some(timeout) => self.incoming.recv_timeout(timeout).ok(),
            None => self.incoming.recv().ok(),
        };
        let Some(line) = line else { return Ok(None) };
        let message: Value = serde_json::from_str(&line)?;
        self.log(&json!({ "received": message }));
        Ok(Some(message))
    }

    fn serve(&mut self) -> Step<()> {
        while let Some(message) = self.next(None)? {
            let id = message["id"].clone();
            let method = message["method"].as_str().unwrap_or_default().to_owned();
            let params = message["params"].clone();
            if id.is_null() || message.get("method").is_none() {
                // session/cancel outside a prompt, and late answers to
                // requests of a turn that is over.
                continue;
            }
            match method.as_str() {
                "initialize" => {
                    if !self.initialize(&id, &params)? {
                        return Ok(());
                    }
                }
                "session/new" => self.new_session(&id, &params)?,
                "session/resume" => self.continue_session(&id, &params, false)?,
                "session/load" => self.continue_session(&id, &params, true)?,
                "session/set_config_option" => self.set_option(&id, &params),
                "session/set_model" => self.set_model(&id, &params),
                "session/prompt" => {
                    if !self.prompt(&id, &params)? {
                        return Ok(());
                    }
                }
                _ => self.error(&id, -32601, "Method not found"),
            }
        }
        Ok(())
    }

    /// `false` when the fake is to exit.
    fn initialize(&mut self, id: &Value, params: &Value) -> Step<bool> {
        let capabilities = &params["clientCapabilities"];
        if params["protocolVersion"] != 1
            || capabilities["fs"]["readTextFile"] == true
            || capabilities["fs"]["writeTextFile"] == true
            || capabilities["terminal"] == true
        {
            self.log(&json!({ "refused": "initialize" }));
            self.error(
                id,
                -32602,
                "the fake takes version 1 with no fs or terminal",
            );
            return Ok(true);
        }
        match knob("FAKE_ACP_INIT").as_str() {
            "fail" => {
                self.error(id, -32603, "initialization failed");
                return Ok(true);
            }
            "exit" => return Ok(false),
            "garbage" => {
                self.raw("Starting the mock agent...");
                self.raw("{\"half\":");
            }
            "slow" => std::thread::sleep(SLOW_INIT),
            "malformed" => {
                self.result(
                    id,
                    json!({ "protocolVersion": "1", "agentCapabilities": {} }),
                );
                return Ok(true);
            }
            _ => {}
        }
        let version: i64 = knob("FAKE_ACP_PROTOCOL").parse().unwrap_or(1);
        let sessions = knob("FAKE_ACP_SESSIONS");
        let (load, resume) = match sessions.as_str() {
            "load" => (true, false),
            "none" => (false, false),
            _ => (true, true),
        };
        let mut session_capabilities = json!({});
        if resume {
            session_capabilities["resume"] = json!({});
        }
        self.result(
            id,
            json!({
                "protocolVersion": version,
                "agentCapabilities": {
                    "loadSession": load,
                    "promptCapabilities": { "image": false, "audio": false, "embeddedContext": false },
                    "sessionCapabilities": session_capabilities,
                },
                "authMethods": [{ "id": "mock-login", "name": "Mock login" }],
                "agentInfo": { "name": "fake-acp", "title": "Fake ACP", "version": VERSION },
            }),
        );
        Ok(true)
    }

    /// The model currently set on the session.
    fn current_model(&self) -> String {
        self.model.clone().unwrap_or_else(|| MODELS[0].0.to_owned())
    }

    /// Whether the session offers a model config option, and whether it
    /// offers a `models` list.
    fn model_selection() -> (bool, bool) {
        match knob("FAKE_ACP_MODELS").as_str() {
            "1" | "config" => (true, false),
            "list" => (false, true),
            "both" => (true, true),
            _ => (false, false),
        }
    }

    /// The session answer's model fields: `configOptions`, `models`, both
    /// or neither, as `FAKE_ACP_MODELS` says.
    fn session_result(&self, mut result: Value) -> Value {
        let (option, list) = Fake::model_selection();
        if option {
            result["configOptions"] = self.config_options();
        }
        if list {
            let models: Vec<Value> = MODELS
                .iter()
                .map(|(id, name)| json!({ "modelId": id, "name": name, "description": format!("{name}, listed") }))
                .collect();
            result["models"] =
                json!({ "availableModels": models, "currentModelId": self.current_model() });
        }
        result
    }

    fn config_options(&self) -> Value {
        let values: Vec<Value> = MODELS
            .iter()
            .map(|(id, name)| json!({ "value": id, "name": name }))
            .collect();
        json!([
            { "id": "mode", "name": "Mode", "category": "mode", "type": "select",
              "currentValue": "build", "options": [{ "value": "build", "name": "Build" }] },
            { "id": "model", "name": "Model", "category": "model", "type": "select",
              "currentValue": self.current_model(), "options": values },
        ])
    }

    /// Whether `value` (a JSON string) names a model the fake offers.
    fn offers(value: &Value) -> Option<String> {
        let model = value.as_str()?;
        MODELS
            .iter()
            .any(|(id, _)| *id == model)
            .then(|| model.to_owned())
    }

    fn new_session(&mut self, id: &Value, params: &Value) -> Step<()> {
        if params["mcpServers"] != json!([])
            || !params["cwd"]
                .as_str()
                .is_some_and(|cwd| cwd.starts_with('/'))
        {
            self.log(&json!({ "refused": "session/new" }));
            self.error(id, -32602, "mcpServers must be [] and cwd absolute");
            return Ok(());
        }
        if knob("FAKE_ACP_AUTH") == "required" {
            self.error(id, -32000, "Authentication required");
            return Ok(());
        }
        if knob("FAKE_ACP_NEW") == "malformed" {
            self.result(id, json!({ "sessionId": 42 }));
            return Ok(());
        }
        let session = self.create_session()?;
        self.update(
            &session,
            json!({ "sessionUpdate": "available_commands_update", "availableCommands": [] }),
        );
        let result = self.session_result(json!({ "sessionId": session }));
        self.result(id, result);
        Ok(())
    }

    fn continue_session(&mut self, id: &Value, params: &Value, load: bool) -> Step<()> {
        let session = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let Some(prompts) = self.history(&session) else {
            self.error(id, -32002, "Resource not found");
            return Ok(());
        };
        if load {
            // The whole conversation, before the answer (as agents do).
            for prompt in &prompts {
                self.update(
                    &session,
                    json!({ "sessionUpdate": "user_message_chunk",
                            "content": { "type": "text", "text": prompt } }),
                );
                self.update(
                    &session,
                    json!({ "sessionUpdate": "tool_call", "toolCallId": "replayed-call",
                            "title": "replayed", "kind": "execute",
                            "rawInput": { "command": "echo replayed" } }),
                );
                self.chunk(&session, &format!("REPLAYED:{prompt}"));
            }
        }
        let result = self.session_result(json!({}));
        self.result(id, result);
        Ok(())
    }

    fn set_option(&mut self, id: &Value, params: &Value) {
        let model = Fake::offers(&params["value"]);
        match (Fake::model_selection(), model) {
            ((true, _), Some(model)) if params["configId"] == "model" => {
                self.model = Some(model);
                self.result(id, json!({ "configOptions": self.config_options() }));
            }
            _ => self.error(id, -32602, "unknown option or value"),
        }
    }

    /// `session/set_model`: only an agent with a `models` list has it.
    fn set_model(&mut self, id: &Value, params: &Value) {
        match (Fake::model_selection(), Fake::offers(&params["modelId"])) {
            ((_, false), _) => self.error(id, -32601, "Method not found"),
            (_, Some(model)) => {
                self.model = Some(model);
                self.result(id, json!({}));
            }
            (_, None) => self.error(id, -32602, "unknown model"),
        }
    }

    fn sessions_dir(&self) -> Step<&Path> {
        self.sessions.as_deref().ok_or(FakeError::NoHome)
    }

    fn create_session(&mut self) -> Step<String> {
        let dir = self.sessions_dir()?.to_path_buf();
        std::fs::create_dir_all(&dir).map_err(FakeError::io("the sessions directory"))?;
        let n = std::fs::read_dir(&dir)
            .map_err(FakeError::io("the sessions directory"))?
            .count()
            + 1;
        let session = format!("acp-session-{n}");
        std::fs::write(dir.join(&session), "").map_err(FakeError::io("a new session"))?;
        Ok(session)
    }

    /// The prompts of `session` so far; `None` for an unknown session.
    fn history(&self, session: &str) -> Option<Vec<String>> {
        if session.is_empty() || session.contains(['/', '.']) {
            return None;
        }
        let text = std::fs::read_to_string(self.sessions.as_ref()?.join(session)).ok()?;
        Some(text.lines().map(str::to_owned).collect())
    }

    fn remember(&self, session: &str, prompt: &str) -> Step<()> {
        let path = self.sessions_dir()?.join(session);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(FakeError::io("a session's history"))?;
        writeln!(file, "{}", prompt.replace('\n', " "))
            .map_err(FakeError::io("a session's history"))
    }

    /// Sends a permission request whose tool call names host paths inside
    /// and outside the workdir; its id.
    fn ask(&mut self, session: &str, call: &str, options: Value) -> Step<Value> {
        let (cwd, inside, outside) = host_paths("created.txt")?;
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({
            "jsonrpc": "2.0", "id": id, "method": "session/request_permission",
            "params": {
                "sessionId": session,
                "toolCall": { "toolCallId": call, "title": "echo hi > created.txt", "kind": "execute",
                              "status": "pending",
                              "rawInput": { "command": "echo hi > created.txt", "cwd": cwd },
                              "locations": [{ "path": inside }, { "path": outside }] },
                "options": options,
            },
        }));
        Ok(id)
    }

    /// Waits for the answer to `id`; `Ok(None)` once `session/cancel`
    /// arrived (the client then owes `cancelled` answers, which are read
    /// and dropped).
    fn answer_to(&mut self, id: &Value) -> Step<Option<Value>> {
        let mut cancelled = false;
        loop {
            let message = self
                .next(None)?
                .ok_or(FakeError::InputEnded("waiting for an answer"))?;
            if message["method"] == "session/cancel" {
                cancelled = true;
                continue;
            }
            if message["id"] == *id && message.get("method").is_none() {
                if cancelled {
                    return Ok(None);
                }
                return Ok(Some(message));
            }
            return Err(FakeError::Unexpected {
                context: "waiting for an answer",
                message,
            });
        }
    }

    /// Waits for `session/cancel`.
    fn until_cancelled(&mut self) -> Step<Ending> {
        loop {
            let Some(message) = self.next(None)? else {
                return Ok(Ending::Exit);
            };
            if message["method"] == "session/cancel" {
                return Ok(Ending::Stop("cancelled"));
            }
        }
    }

    /// Starts `/bin/sh -c script` in the cwd, as an agent runs a command,
    /// and logs its pid.
    fn start_shell(&mut self, script: &str) -> Step<()> {
        let child = std::process::Command::new("/bin/sh")
            .args(["-c", script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .map_err(FakeError::io("starting a shell"))?;
        self.log(&json!({ "child": child.id() }));
        Ok(())
    }

    /// `false` when the fake is to exit.
    fn prompt(&mut self, id: &Value, params: &Value) -> Step<bool> {
        let session = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let prompt: String = params["prompt"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| block["text"].as_str())
            .collect();
        let Some(earlier) = self.history(&session) else {
            self.error(id, -32002, "unknown session");
            return Ok(true);
        };
        self.remember(&session, &prompt)?;
        let scenario = SCENARIOS
            .iter()
            .find(|keyword| prompt.contains(**keyword))
            .copied();
        let mut said = format!("done:{prompt}");
        let ending = match scenario {
            Some("approval") => self.approval(&session, &mut said, true)?,
            Some("no-allow-once") => self.approval(&session, &mut said, false)?,
            Some("storm") => self.storm(&session, &mut said)?,
            Some("withdraw") => {
                let asked = self.ask(
                    &session,
                    "call-w",
                    json!([{ "optionId": "once", "name": "Allow once", "kind": "allow_once" }]),
                )?;
                if let Some(early) = self.next(Some(WITHDRAW_AFTER))? {
                    return Err(FakeError::Unexpected {
                        context: "before the withdrawal",
                        message: early,
                    });
                }
                self.send(&json!({ "jsonrpc": "2.0", "method": "$/cancel_request",
                                   "params": { "requestId": asked } }));
                let answer = self.answer_to(&asked)?.unwrap_or_default();
                if answer["error"]["code"] != -32800 {
                    return Err(FakeError::Unexpected {
                        context: "the answer to a withdrawn request",
                        message: answer,
                    });
                }
                said = "withdrawn".to_owned();
                Ending::Stop("end_turn")
            }
            Some("wait") => {
                self.tool_call(&session, "call-wait", "sleep 60");
                self.until_cancelled()?
            }
            Some("child") => {
                self.tool_call(&session, "call-child", "sleep 300");
                self.start_shell("sleep 300 & sleep 300 & wait")?;
                self.until_cancelled()?
            }
            Some("escape") => {
                self.tool_call(&session, "call-escape", "setsid sleep 3600");
                self.start_shell(serverfs_agent_runtime::fake::ESCAPE_TREE_SCRIPT)?;
                self.until_cancelled()?
            }
            Some("stubborn") => {
                self.tool_call(&session, "call-stubborn", "sleep 600");
                loop {
                    if self.next(None)?.is_none() {
                        return Ok(false);
                    }
                }
            }
            Some("history") => {
                said = format!("history:{}", earlier.join("|"));
                Ending::Stop("end_turn")
            }
            Some("fs") => {
                let mut codes = Vec::new();
                for (method, params) in [
                    (
                        "fs/read_text_file",
                        json!({ "sessionId": session, "path": "/etc/passwd" }),
                    ),
                    (
                        "terminal/create",
                        json!({ "sessionId": session, "command": "id" }),
                    ),
                ] {
                    self.next_id += 1;
                    let asked = json!(self.next_id);
                    self.send(&json!({ "jsonrpc": "2.0", "id": asked, "method": method, "params": params }));
                    let answer = self.answer_to(&asked)?.unwrap_or_default();
                    codes.push(answer["error"]["code"].to_string());
                }
                said = format!("fs:{}", codes.join(","));
                Ending::Stop("end_turn")
            }
            Some("garbage") => {
                self.raw("this is not json");
                self.raw("{\"jsonrpc\":");
                Ending::Stop("end_turn")
            }
            Some("meta") => {
                self.update(
                    &session,
                    json!({ "sessionUpdate": "agent_message_chunk", "_meta": { "secret": "META_SECRET" },
                            "content": { "type": "text", "text": "" } }),
                );
                self.update(
                    &session,
                    json!({ "sessionUpdate": "from_the_future", "x": 1 }),
                );
                let (_, inside, _) = host_paths("src/lib.rs")?;
                let step = format!("edit {inside}");
                self.update(
                    &session,
                    json!({ "sessionUpdate": "plan", "_meta": { "secret": "META_SECRET" }, "entries": [
                        { "content": step, "priority": "high", "status": "pending" },
                        { "content": "run the tests", "priority": "low", "status": "completed",
                          "_meta": { "secret": "META_SECRET" } }] }),
                );
                self.update(
                    &session,
                    json!({ "sessionUpdate": "usage_update", "used": 1, "size": 10 }),
                );
                Ending::Stop("end_turn")
            }
            Some("huge") => {
                said = "x".repeat(2 * 1024 * 1024);
                Ending::Stop("end_turn")
            }
            Some("oversized") => {
                self.chunk(&session, &"y".repeat(17 * 1024 * 1024));
                self.until_cancelled()?
            }
            Some("paths") => {
                let (_, inside, outside) = host_paths("notes.txt")?;
                self.update(
                    &session,
                    json!({ "sessionUpdate": "tool_call", "toolCallId": "call-edit",
                            "title": "Edit notes.txt", "kind": "edit",
                            "locations": [{ "path": inside, "line": 1 }, { "path": outside }] }),
                );
                self.update(
                    &session,
                    json!({ "sessionUpdate": "tool_call", "toolCallId": "call-read",
                            "title": "Read notes.txt", "kind": "read",
                            "rawInput": { "path": inside, "also": [outside] },
                            "locations": [{ "path": inside }] }),
                );
                said = format!("see {inside}");
                Ending::Stop("end_turn")
            }
            Some("error") => Ending::Error,
            Some("refusal") => Ending::Stop("refusal"),
            Some("rogue-cancel") => Ending::Stop("cancelled"),
            Some("stderr") => {
                eprintln!("fake-acp: OPENAI_API_KEY=sk-fake-stderr-secret failed somewhere");
                Ending::Stop("end_turn")
            }
            Some("eof") => Ending::Exit,
            _ => Ending::Stop("end_turn"),
        };
        match ending {
            Ending::Exit => Ok(false),
            Ending::Error => {
                self.error(id, -32603, "the mock model failed");
                Ok(true)
            }
            Ending::Stop(reason) => {
                if reason == "end_turn" {
                    if let Some(model) = &self.model {
                        said.push_str(&format!(" model={model}"));
                    }
                    // An empty chunk first, then the text in two pieces.
                    self.chunk(&session, "");
                    let middle = said.len() / 2;
                    let middle = (middle..=said.len())
                        .find(|at| said.is_char_boundary(*at))
                        .unwrap_or(said.len());
                    self.chunk(&session, &said[..middle]);
                    self.chunk(&session, &said[middle..]);
                }
                self.result(id, json!({ "stopReason": reason }));
                Ok(true)
            }
        }
    }

    fn tool_call(&self, session: &str, call: &str, command: &str) {
        self.update(
            session,
            json!({ "sessionUpdate": "tool_call", "toolCallId": call, "title": command,
                    "kind": "execute", "status": "pending", "rawInput": { "command": command } }),
        );
    }

    /// `approval` / `no-allow-once`.
    fn approval(&mut self, session: &str, said: &mut String, with_once: bool) -> Step<Ending> {
        self.chunk(session, "I will create the file.");
        self.tool_call(session, "call-1", "echo hi > created.txt");
        let mut options = vec![
            json!({ "optionId": "always", "name": "Always allow", "kind": "allow_always" }),
            json!({ "optionId": "reject", "name": "Reject", "kind": "reject_once" }),
        ];
        if with_once {
            options.insert(
                0,
                json!({ "optionId": "once", "name": "Allow once", "kind": "allow_once" }),
            );
            options.push(json!({ "optionId": "never", "name": "Never", "kind": "reject_always" }));
        }
        let asked = self.ask(session, "call-1", Value::Array(options))?;
        let Some(answer) = self.answer_to(&asked)? else {
            return Ok(Ending::Stop("cancelled"));
        };
        let outcome = &answer["result"]["outcome"];
        match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
            (Some("selected"), Some(option @ ("once" | "always" | "reject" | "never"))) => {
                if option == "once" || option == "always" {
                    std::fs::write("created.txt", "hi\n").map_err(FakeError::io("created.txt"))?;
                }
                self.update(
                    session,
                    json!({ "sessionUpdate": "tool_call_update", "toolCallId": "call-1",
                            "status": if option == "reject" || option == "never" { "failed" } else { "completed" } }),
                );
                *said = format!("approval:{option}");
                Ok(Ending::Stop("end_turn"))
            }
            (Some("cancelled"), _) => self.until_cancelled(),
            _ => Err(FakeError::Unexpected {
                context: "an option that was never offered",
                message: answer,
            }),
        }
    }

    /// `storm`: five requests at once, answered in any order.
    fn storm(&mut self, session: &str, said: &mut String) -> Step<Ending> {
        let asked = (1..=5)
            .map(|n| {
                self.ask(
                    session,
                    &format!("call-{n}"),
                    json!([{ "optionId": format!("p{n}-yes"), "name": "Allow", "kind": "allow_once" },
                           { "optionId": format!("p{n}-no"), "name": "Reject", "kind": "reject_once" }]),
                )
            })
            .collect::<Step<Vec<Value>>>()?;
        let mut chosen = BTreeMap::new();
        while chosen.len() < asked.len() {
            let message = self
                .next(None)?
                .ok_or(FakeError::InputEnded("in the storm"))?;
            if message["method"] == "session/cancel" {
                // The answers still owed come as `cancelled`, and are
                // dropped by the main loop.
                return Ok(Ending::Stop("cancelled"));
            }
            let Some(at) = asked.iter().position(|id| *id == message["id"]) else {
                return Err(FakeError::Unexpected {
                    context: "in the storm",
                    message,
                });
            };
            let option = message["result"]["outcome"]["optionId"]
                .as_str()
                .unwrap_or("cancelled")
                .to_owned();
            chosen.insert(at, option);
        }
        *said = format!(
            "storm:{}",
            chosen.into_values().collect::<Vec<_>>().join(",")
        );
        Ok(Ending::Stop("end_turn"))
    }
}

/// The fake's cwd and, as text, the absolute path of `name` in it and one
/// outside it (`<cwd>/../elsewhere.txt`): host paths as agents report them.
fn host_paths(name: &str) -> Step<(String, String, String)> {
    let cwd = std::env::current_dir().map_err(FakeError::io("the working directory"))?;
    let outside = cwd.parent().unwrap_or(&cwd).join("elsewhere.txt");
    Ok((
        cwd.display().to_string(),
        cwd.join(name).display().to_string(),
        outside.display().to_string(),
    ))
}

/// The fake agent binary, freshly built (see [`crate::binaries`]).
pub fn binary() -> PathBuf {
    crate::binaries::workspace_binary("serverfs-testkit", "fake-acp")
}

/// One ACP profile of the fake for a Bridge [`Setup`](crate::bridge::Setup).
#[derive(Debug, Clone)]
pub struct Profile {
    /// The profile id (the runtime is `acp-<id>`).
    pub id: String,
    /// Fixed environment pairs: the fake's knobs.
    pub env: Vec<(String, String)>,
    /// `session_scoped_allow_always`.
    pub session_scoped_allow_always: bool,
    /// Further raw TOML `key = value` pairs of the profile table.
    pub extra: Vec<String>,
}

impl Profile {
    /// The profile `mock` with no knobs and a session-scoped
    /// "allow always".
    pub fn new() -> Profile {
        Profile {
            id: "mock".to_owned(),
            env: Vec::new(),
            session_scoped_allow_always: true,
            extra: Vec::new(),
        }
    }

    /// Adds a knob (`FAKE_ACP_*`) or another fixed variable.
    pub fn env(mut self, name: &str, value: &str) -> Profile {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets `session_scoped_allow_always`.
    pub fn session_scoped(mut self, scoped: bool) -> Profile {
        self.session_scoped_allow_always = scoped;
        self
    }

    /// Adds a raw `key = value` line to the profile table.
    pub fn with(mut self, line: &str) -> Profile {
        self.extra.push(line.to_owned());
        self
    }

    /// The runtime name, `acp-<id>`.
    pub fn runtime(&self) -> String {
        format!("acp-{}", self.id)
    }

    /// The profile as one inline TOML table, the fake as its command.
    pub fn toml(&self) -> String {
        let bin = binary();
        let bin = bin
            .to_str()
            .unwrap_or_else(|| panic!("a non-UTF-8 path: {}", bin.display()));
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(name, value)| format!("{name} = {value:?}"))
            .collect();
        let mut fields = vec![
            format!("id = {:?}", self.id),
            format!("command = {bin:?}"),
            format!("env = {{ {} }}", env.join(", ")),
            format!(
                "session_scoped_allow_always = {}",
                self.session_scoped_allow_always
            ),
        ];
        fields.extend(self.extra.iter().cloned());
        format!("{{ {} }}", fields.join(", "))
    }
}

impl Default for Profile {
    fn default() -> Self {
        Profile::new()
    }
}

/// A Bridge [`Setup`](crate::bridge::Setup) for `profiles`: workdir `demo`
/// (`<root>/work`, workspace-write) allowing each of them. The fake logs
/// under the Bridge's `HOME`, the setup's root ([`log_path`]).
pub fn bridge_setup(profiles: &[Profile]) -> crate::bridge::Setup {
    use crate::bridge::{Setup, Workdir};
    let runtimes: Vec<String> = profiles.iter().map(Profile::runtime).collect();
    let runtimes: Vec<&str> = runtimes.iter().map(String::as_str).collect();
    let tables: Vec<String> = profiles.iter().map(Profile::toml).collect();
    Setup::new()
        .without_workdirs()
        .workdir(Workdir {
            path: "work".to_owned(),
            ..Workdir::new("demo", "workspace-write", &runtimes)
        })
        .agent("acp_profiles", &format!("[{}]", tables.join(", ")))
}

/// One run of the fake, from its log: its argv and environment, and every
/// message it read.
#[derive(Debug, Clone)]
pub struct Run {
    /// The arguments it was started with.
    pub argv: Vec<String>,
    /// Its whole environment.
    pub env: serde_json::Map<String, Value>,
    /// The messages it read, in order.
    pub received: Vec<Value>,
    /// The pids of the `child` scenario's shell.
    pub children: Vec<u32>,
    /// The requests it refused as malformed client traffic
    /// (`initialize`, `session/new`).
    pub refused: Vec<String>,
}

impl Run {
    /// The methods of the messages it read (`-` for an answer).
    pub fn methods(&self) -> Vec<&str> {
        self.received
            .iter()
            .map(|message| message["method"].as_str().unwrap_or("-"))
            .collect()
    }

    /// The params of the first message it read with `method`.
    pub fn params(&self, method: &str) -> Option<&Value> {
        self.received
            .iter()
            .find(|message| message["method"] == method)
            .map(|message| &message["params"])
    }

    /// The answers it read (messages without a method), in order.
    pub fn answers(&self) -> Vec<&Value> {
        self.received
            .iter()
            .filter(|message| message.get("method").is_none())
            .collect()
    }
}

/// The fake's runs under `home`, in order.
///
/// # Panics
///
/// On an unreadable log.
pub fn runs(home: &Path) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for entry in read_log(home) {
        if let Some(argv) = entry.get("argv") {
            runs.push(Run {
                argv: serde_json::from_value(argv.clone()).unwrap_or_default(),
                env: entry["env"].as_object().cloned().unwrap_or_default(),
                received: Vec::new(),
                children: Vec::new(),
                refused: Vec::new(),
            });
        } else if let Some(run) = runs.last_mut() {
            if let Some(message) = entry.get("received") {
                run.received.push(message.clone());
            } else if let Some(pid) = entry["child"].as_u64() {
                run.children.extend(u32::try_from(pid).ok());
            } else if let Some(what) = entry["refused"].as_str() {
                run.refused.push(what.to_owned());
            }
        }
    }
    runs
}

/// Every entry of the fake's log under `home`, in order.
///
/// # Panics
///
/// On an unreadable log.
fn read_log(home: &Path) -> Vec<Value> {
    crate::jsonl::read(&log_path(home), "the fake agent's log")
}
