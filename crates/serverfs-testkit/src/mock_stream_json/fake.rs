//! One run of the fake CLI: the handshake, then the scenario its prompt
//! picks (the table in the module documentation).

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use super::argv::Args;
use super::error::FakeError;
use super::{Cli, MODELS_VARIABLE, SCENARIOS, SLOW_INIT_VARIABLE, UNANSWERED_VARIABLE};

type Step<T> = Result<T, FakeError>;

/// How long `withdraw` waits before withdrawing its request.
const WITHDRAW_AFTER: Duration = Duration::from_millis(300);

/// The size of `oversized`'s line: over the engine's 16 MiB line cap.
const OVERSIZED_LINE_BYTES: usize = 17 * 1024 * 1024;

/// The requests `unsupported` sends: the two kinds the Bridge never
/// configures, one newer than it, and a `can_use_tool` it cannot read.
const UNSUPPORTED_REQUESTS: [&str; 4] = [
    r#"{"subtype":"hook_callback","callback_id":"h1","input":{}}"#,
    r#"{"subtype":"mcp_message","server_name":"sdk","message":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}"#,
    r#"{"subtype":"future_request","x":1}"#,
    r#"{"subtype":"can_use_tool","input":{}}"#,
];

/// One run of the fake.
pub(super) struct Fake {
    pub cli: Cli,
    pub args: Args,
    pub log: Option<PathBuf>,
    pub sessions: Option<PathBuf>,
    pub incoming: mpsc::Receiver<String>,
    pub next_request: u64,
}

impl Fake {
    pub fn log(&self, entry: Value) {
        crate::jsonl::append(self.log.as_deref(), &entry);
    }

    fn send(&self, message: &Value) {
        self.send_line(&message.to_string());
    }

    fn send_line(&self, line: &str) {
        let mut out = std::io::stdout().lock();
        // One write per line; a reader that went away is the test's
        // business (it sees what it read).
        let _ = out.write_all(format!("{line}\n").as_bytes());
        let _ = out.flush();
    }

    /// The next message; `None` at end of input or once `timeout` passes.
    fn next(&mut self, timeout: Option<Duration>) -> Step<Option<Value>> {
        let line = match timeout {
            Some(timeout) => self.incoming.recv_timeout(timeout).ok(),
            None => self.incoming.recv().ok(),
        };
        let Some(line) = line else {
            return Ok(None);
        };
        let message: Value = serde_json::from_str(&line)?;
        self.log(json!({ "received": message }));
        Ok(Some(message))
    }

    /// The next message; an error naming `what` at end of input.
    fn expect(&mut self, what: &'static str) -> Step<Value> {
        self.next(None)?.ok_or(FakeError::InputEnded(what))
    }

    /// Reads until stdin closes, as the real CLIs end.
    fn drain(&mut self) -> Step<()> {
        while self.next(None)?.is_some() {}
        Ok(())
    }

    /// Whether the operator's variable says to leave our `subtype` request
    /// unanswered.
    fn unanswered(subtype: &str) -> bool {
        std::env::var(UNANSWERED_VARIABLE).is_ok_and(|value| value == subtype)
    }

    /// Answers our control request `message` of `subtype` with `answer`,
    /// unless told to leave it unanswered: then reads until stdin closes
    /// and says so (`false`).
    fn answer_ours(&mut self, message: &Value, subtype: &'static str, answer: Value) -> Step<bool> {
        let request_id = control_request(message, subtype)?;
        if Self::unanswered(subtype) {
            self.drain()?;
            return Ok(false);
        }
        self.send(&success(&request_id, answer));
        Ok(true)
    }

    /// The models the catalog answers hold: two, or what the operator's
    /// variable asks for (`empty`, `invalid`).
    fn models() -> Value {
        match std::env::var(MODELS_VARIABLE).as_deref() {
            Ok("empty") => json!([]),
            Ok("invalid") => json!([{ "displayName": "no value" }, 7, "text"]),
            _ => json!([
                { "value": "default", "displayName": "Default (recommended)", "description": "mock default" },
                { "value": "mock-opus", "displayName": "Mock Opus", "isEnabled": true, "isFree": false, "priceFactor": 1.0 }
            ]),
        }
    }

    pub fn serve(&mut self) -> Step<()> {
        let initialize = self.expect("initialize")?;
        // A slow start, for tests that stop a turn before its prompt is
        // written (the variable reaches the fake only when the operator
        // passes it through).
        if let Some(ms) = std::env::var(SLOW_INIT_VARIABLE)
            .ok()
            .and_then(|ms| ms.parse::<u64>().ok())
        {
            std::thread::sleep(Duration::from_millis(ms));
        }
        let answer = match self.cli {
            Cli::Claude => {
                json!({ "commands": [], "models": Self::models(), "pid": std::process::id() })
            }
            Cli::Qoder => json!({ "commands": [] }),
        };
        if !self.answer_ours(&initialize, "initialize", answer)? {
            return Ok(());
        }
        if self.cli == Cli::Qoder {
            let proxy = self.expect("set_proxy")?;
            self.log(json!({ "proxy": proxy["request"]["proxy"] }));
            if !self.answer_ours(&proxy, "set_proxy", json!({}))? {
                return Ok(());
            }
        }
        // Claude's model discovery reads the initialize answer and closes.
        let Some(first) = self.next(None)? else {
            return Ok(());
        };
        if first["type"] == "control_request" && first["request"]["subtype"] == "get_models" {
            if self.answer_ours(&first, "get_models", json!({ "models": Self::models() }))? {
                // Discovery ends with stdin.
                self.drain()?;
            }
            return Ok(());
        }
        let prompt = user_prompt(self.cli, &first)?;
        let Some(session) = self.session()? else {
            self.send(&json!({
                "type": "result", "subtype": "error_during_execution", "is_error": true,
                "errors": ["No conversation found with that session ID"], "uuid": "result-none",
            }));
            return Ok(());
        };
        self.send(&json!({
            "type": "system", "subtype": "init", "session_id": session,
            "model": self.args.model.clone().unwrap_or_else(|| "mock-default".to_owned()),
            "tools": ["Bash", "Write", "AskUserQuestion"],
        }));
        self.play(&prompt, &session)
    }

    /// Plays the scenario `prompt` picks in `session`.
    fn play(&mut self, prompt: &str, session: &str) -> Step<()> {
        let scenario = SCENARIOS
            .iter()
            .find(|keyword| prompt.contains(**keyword))
            .copied();
        let said = match scenario {
            Some("approval" | "user-settings") => {
                self.approval(&approval_tool(prompt), scenario == Some("approval"))?
            }
            Some("question") => self.question(prompt.contains("multi"))?,
            Some("duplicate") => self.duplicate()?,
            Some("withdraw") => self.withdraw()?,
            Some("unsupported") => self.unsupported()?,
            Some("write") => {
                self.assistant(
                    json!([{ "type": "tool_use", "id": "toolu_w", "name": "Write",
                    "input": { "file_path": "notes.txt", "content": "hi" } }]),
                );
                Some("wrote".to_owned())
            }
            Some("wait") => return self.wait_for_interrupt(session),
            Some("stubborn") => return self.stubborn(session),
            Some("oversized") => {
                let text = "x".repeat(OVERSIZED_LINE_BYTES);
                self.send_line(
                    &json!({ "type": "assistant", "message": { "role": "assistant",
                        "content": [{ "type": "text", "text": text }] } })
                    .to_string(),
                );
                return self.drain();
            }
            Some("error") => {
                self.send(&json!({
                    "type": "result", "subtype": "error_during_execution", "is_error": true,
                    "errors": ["mock failure"], "session_id": session, "uuid": "result-error",
                }));
                return Ok(());
            }
            Some("eof") => return Ok(()),
            Some("not-logged-in") => {
                self.send(&json!({
                    "type": "result", "subtype": "success", "is_error": true,
                    "result": "Not logged in · Please run /login", "session_id": session,
                    "uuid": "result-login",
                }));
                return Ok(());
            }
            Some("garbage") => {
                self.send_line("this is not json");
                self.send_line("{\"half\":");
                Some(format!("done:{prompt}"))
            }
            _ => Some(format!("done:{prompt}")),
        };
        let Some(said) = said else {
            // A deny that interrupts: the turn ends with an error.
            self.send(&json!({
                "type": "result", "subtype": "error_during_execution", "is_error": true,
                "errors": ["interrupted by the permission decision"], "session_id": session,
                "uuid": "result-interrupt",
            }));
            return Ok(());
        };
        self.succeed(session, said);
        self.drain()
    }

    /// Ends the turn with `said` (and the model, when one was asked for).
    fn succeed(&self, session: &str, mut said: String) {
        if let Some(model) = &self.args.model {
            said.push_str(&format!(" model={model}"));
        }
        self.assistant(json!([{ "type": "text", "text": said }]));
        self.send(&json!({
            "type": "result", "subtype": "success", "is_error": false, "result": said,
            "session_id": session, "uuid": format!("result-{session}"),
        }));
    }

    /// The session of this run: resumed (`None` when unknown) or new.
    fn session(&mut self) -> Step<Option<String>> {
        let known: Vec<String> = self
            .sessions
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        if let Some(resume) = &self.args.resume {
            return Ok(known.contains(resume).then(|| resume.clone()));
        }
        let session = format!("{}-session-{}", self.cli.name(), known.len() + 1);
        if let Some(path) = &self.sessions {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(FakeError::io("opening the sessions file"))?;
            writeln!(file, "{session}").map_err(FakeError::io("writing the sessions file"))?;
        }
        Ok(Some(session))
    }

    fn assistant(&self, content: Value) {
        self.send(&json!({
            "type": "assistant",
            "message": { "role": "assistant", "content": content },
            "parent_tool_use_id": null,
        }));
    }

    /// Sends a request of the CLI and waits for its answer.
    fn ask(&mut self, request: Value) -> Step<Value> {
        self.next_request += 1;
        let id = format!("cli-req-{}", self.next_request);
        self.send(&json!({ "type": "control_request", "request_id": id, "request": request }));
        self.answer_to(&id)
    }

    /// Waits for the `control_response` to `id`, answering interrupts.
    fn answer_to(&mut self, id: &str) -> Step<Value> {
        loop {
            let message = self.expect("an answer")?;
            if message["type"] == "control_request" {
                self.answer_interrupt(&message)?;
                continue;
            }
            if message["type"] == "control_response" && message["response"]["request_id"] == id {
                return Ok(message["response"].clone());
            }
            return Err(FakeError::unexpected("an answer", &message));
        }
    }

    fn answer_interrupt(&self, message: &Value) -> Step<()> {
        let request_id = control_request(message, "interrupt")?;
        self.send(&success(&request_id, json!({})));
        Ok(())
    }

    /// `approval`/`user-settings` for `tool`: `Some(text)`, or `None` when
    /// a deny interrupts the turn.
    fn approval(&mut self, tool: &str, with_session: bool) -> Step<Option<String>> {
        let session =
            json!({ "type": "addDirectories", "directories": ["/work"], "destination": "session" });
        let local = json!({ "type": "addRules", "rules": [{ "toolName": tool, "ruleContent": "mock *" }],
                            "behavior": "allow", "destination": "localSettings" });
        let suggestions = if with_session {
            json!([local, session])
        } else {
            json!([
                { "type": "addRules", "rules": [{ "toolName": tool }], "behavior": "allow", "destination": "userSettings" },
                { "type": "setMode", "mode": "acceptEdits", "destination": "projectSettings" }
            ])
        };
        let input = tool_input(tool);
        self.assistant(
            json!([{ "type": "tool_use", "id": "toolu_1", "name": tool, "input": input }]),
        );
        let mut request = json!({
            "subtype": "can_use_tool", "tool_name": tool, "input": input,
            "permission_suggestions": suggestions, "blocked_path": "/work/created.txt",
            "tool_use_id": "toolu_1",
        });
        // Claude Code names Bash and describes the command (measured); the
        // other tools get the Bridge's own title.
        if tool == "Bash" {
            request["display_name"] = json!("Bash");
            request["description"] = json!("create a file");
        }
        let answer = self.ask(request)?;
        let body = &answer["response"];
        match body["behavior"].as_str() {
            Some("allow") => {
                if body["updatedInput"] != input {
                    return Err(FakeError::unexpected("the unchanged input", &answer));
                }
                match body.get("updatedPermissions") {
                    None => Ok(Some("approval:allow".to_owned())),
                    Some(updates) if *updates == json!([session]) => {
                        Ok(Some("approval:allow:session".to_owned()))
                    }
                    Some(_) => Err(FakeError::unexpected(
                        "exactly the session suggestion",
                        &answer,
                    )),
                }
            }
            Some("deny") if body["interrupt"] == true => Ok(None),
            Some("deny") => Ok(Some("approval:deny".to_owned())),
            _ => Err(FakeError::unexpected("a permission answer", &answer)),
        }
    }

    fn question(&mut self, multi: bool) -> Step<Option<String>> {
        let input = json!({ "questions": [{
            "question": "Which option?", "header": "Pick",
            "options": [{ "label": "A", "description": "first" }, { "label": "B", "description": "second" }],
            "multiSelect": multi,
        }]});
        let answer = self.ask(json!({
            "subtype": "can_use_tool", "tool_name": "AskUserQuestion", "input": input,
            "tool_use_id": "toolu_q",
        }))?;
        let body = &answer["response"];
        if body["behavior"] != "allow" || body["updatedInput"]["questions"] != input["questions"] {
            return Err(FakeError::unexpected("the questions answered", &answer));
        }
        let given = body["updatedInput"]["answers"]["Which option?"]
            .as_str()
            .ok_or_else(|| FakeError::unexpected("an answer by question text", &answer))?;
        Ok(Some(format!("question:{given}")))
    }

    fn duplicate(&mut self) -> Step<Option<String>> {
        let answer = self.ask(json!({
            "subtype": "can_use_tool", "tool_name": "AskUserQuestion",
            "input": { "questions": [
                { "question": "Same?", "options": [], "multiSelect": false },
                { "question": "Same?", "options": [], "multiSelect": false }
            ]},
            "tool_use_id": "toolu_d",
        }))?;
        match answer["response"]["behavior"].as_str() {
            Some("deny") => Ok(Some("question:denied".to_owned())),
            _ => Err(FakeError::unexpected("a refused duplicate", &answer)),
        }
    }

    fn withdraw(&mut self) -> Step<Option<String>> {
        self.next_request += 1;
        let id = format!("cli-req-{}", self.next_request);
        self.send(
            &json!({ "type": "control_request", "request_id": id, "request": {
                "subtype": "can_use_tool", "tool_name": "Bash",
                "input": { "command": "true" }, "tool_use_id": "toolu_x",
            }}),
        );
        // An answer before the withdrawal is a test failure: the human
        // was meant to be too slow.
        if let Some(early) = self.next(Some(WITHDRAW_AFTER))? {
            return Err(FakeError::unexpected(
                "nothing before the withdrawal",
                &early,
            ));
        }
        self.send(&json!({ "type": "control_cancel_request", "request_id": id }));
        Ok(Some("withdrawn".to_owned()))
    }

    /// Every request of [`UNSUPPORTED_REQUESTS`], each of which must be
    /// refused: their errors joined by `|`.
    fn unsupported(&mut self) -> Step<Option<String>> {
        let mut errors = Vec::new();
        for request in UNSUPPORTED_REQUESTS {
            let answer = self.ask(serde_json::from_str(request)?)?;
            if answer["subtype"] != "error" {
                return Err(FakeError::unexpected("a refusal", &answer));
            }
            errors.push(answer["error"].as_str().unwrap_or_default().to_owned());
        }
        Ok(Some(format!("unsupported:{}", errors.join("|"))))
    }

    /// `wait`: runs until `interrupt`, then ends as the real CLI does.
    fn wait_for_interrupt(&mut self, session: &str) -> Step<()> {
        loop {
            let Some(message) = self.next(None)? else {
                return Ok(());
            };
            if message["type"] == "control_request" && message["request"]["subtype"] == "interrupt"
            {
                self.answer_interrupt(&message)?;
                self.send(&json!({ "type": "user", "message": { "role": "user",
                    "content": [{ "type": "text", "text": "[Request interrupted by user]" }] } }));
                self.send(&json!({
                    "type": "result", "subtype": "error_during_execution", "is_error": true,
                    "terminal_reason": "aborted_streaming", "errors": ["aborted"],
                    "session_id": session, "uuid": "result-aborted",
                }));
                return self.drain();
            }
        }
    }

    /// `stubborn`: completes the turn, then outlives the end of its stdin
    /// and ignores `SIGTERM` (logging each), so only `SIGKILL` ends it.
    fn stubborn(&mut self, session: &str) -> Step<()> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(FakeError::io("starting a signal runtime"))?;
        // Caught, so no longer fatal; from here on, before the Bridge can
        // send it.
        let mut terminate = runtime
            .block_on(async { signal(SignalKind::terminate()) })
            .map_err(FakeError::io("catching SIGTERM"))?;
        self.succeed(session, "done:stubborn".to_owned());
        self.drain()?;
        self.log(json!({ "stdin": "closed" }));
        while runtime.block_on(terminate.recv()).is_some() {
            self.log(json!({ "ignored": "SIGTERM" }));
        }
        Ok(())
    }
}

/// The tool `approval` asks about: the prompt's `tool=<name>`, else Bash.
fn approval_tool(prompt: &str) -> String {
    prompt
        .split_whitespace()
        .find_map(|word| word.strip_prefix("tool="))
        .unwrap_or("Bash")
        .to_owned()
}

/// A plausible input of `tool`, as the model would send it.
fn tool_input(tool: &str) -> Value {
    match tool {
        "Bash" => json!({ "command": "echo hi > created.txt", "description": "create a file" }),
        "Write" => json!({ "file_path": "/work/created.txt", "content": "hi\n" }),
        "Edit" => {
            json!({ "file_path": "/work/created.txt", "old_string": "hi", "new_string": "ho" })
        }
        "WebFetch" => json!({ "url": "https://example.com/", "prompt": "summarize" }),
        "WebSearch" => json!({ "query": "serverfs" }),
        _ => json!({ "argument": "mock" }),
    }
}

/// The id of `message`, a control request of `subtype`.
fn control_request(message: &Value, subtype: &'static str) -> Step<String> {
    if message["type"] != "control_request" || message["request"]["subtype"] != subtype {
        return Err(FakeError::unexpected(subtype, message));
    }
    message["request_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| FakeError::unexpected(subtype, message))
}

fn success(request_id: &str, response: Value) -> Value {
    json!({ "type": "control_response",
            "response": { "subtype": "success", "request_id": request_id, "response": response } })
}

/// The prompt of the user message, checked for the CLI's shape.
fn user_prompt(cli: Cli, message: &Value) -> Step<String> {
    let expected = match cli {
        Cli::Claude => "the user message without a priority",
        Cli::Qoder => "the user message with priority next",
    };
    let shaped = message["type"] == "user"
        && message["message"]["role"] == "user"
        && match cli {
            Cli::Claude => message.get("priority").is_none(),
            Cli::Qoder => message["priority"] == "next",
        };
    if !shaped {
        return Err(FakeError::unexpected(expected, message));
    }
    message["message"]["content"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| FakeError::unexpected("a text prompt", message))
}
