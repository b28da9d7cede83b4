//! Scripted stand-ins for the `claude` and `qodercli` CLIs, speaking the
//! stream-json control protocol over stdio (spec-adapters.md §3–§4), for
//! hermetic tests of the Bridge's stream-json runtimes. Two binaries,
//! `fake-claude` and `fake-qodercli`, run [`run`] with their [`Cli`].
//!
//! # Native mode is enforced
//!
//! The argv must be exactly what the Bridge sends in native mode (no
//! `--permission-mode`, tool lists, MCP configuration, settings, system
//! prompt or `--print` for Claude; Qoder's two-token flags and `--print`),
//! or the fake exits with status 2 naming the offending argument. The fake
//! Qoder also requires its authentication payload file (private, the local
//! login payload) and a `set_proxy` request before the prompt.
//!
//! # Scenarios
//!
//! The first user message picks a scenario by keyword (first match in
//! [`SCENARIOS`] order); the final text tells the test what the fake saw:
//!
//! | keyword | behaviour | final text |
//! |---|---|---|
//! | `approval` | Bash `can_use_tool` with a session and a local-settings suggestion | `approval:allow`, `approval:allow:session` (the session suggestion applied), `approval:deny` |
//! | `user-settings` | Bash `can_use_tool` with user- and project-settings suggestions only | as `approval` |
//! | `question` | AskUserQuestion, options `A`/`B` (`multi` anywhere: multi-select) | `question:<answer>` |
//! | `duplicate` | AskUserQuestion with two questions of one text | `question:denied` |
//! | `withdraw` | `can_use_tool`, withdrawn with `control_cancel_request` 300 ms later | `withdrawn` |
//! | `unsupported` | a `hook_callback` request | `unsupported:<error>` |
//! | `write` | a `Write` tool use, no permission asked | `wrote` |
//! | `wait` | runs until `interrupt` | error result `aborted_streaming` |
//! | `error` | error result `mock failure` | — |
//! | `eof` | exits without a result | — |
//! | `garbage` | non-JSON lines first | as the default |
//! | `not-logged-in` | `success` + `is_error` "Not logged in · Please run /login" | — |
//! | (none) | one text block | `done:<prompt>` |
//!
//! A deny with `interrupt: true` ends the turn with an error result. With
//! `--model M` the final text ends with ` model=M`. Sessions are
//! `<cli>-session-<n>`, kept in `$HOME/fake-<cli>-sessions`; `--resume`
//! of an unknown one is an error result.
//!
//! # Log
//!
//! Every run appends JSON lines to `$HOME/fake-<cli>-log.jsonl`: first
//! `{"argv": [...], "env": {name: value}}` (the whole environment), then
//! `{"received": <message>}` for each message read.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// Which CLI the fake plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    /// `claude` (Claude Code 2.1.197's protocol).
    Claude,
    /// `qodercli` (1.1.76's protocol).
    Qoder,
}

impl Cli {
    /// The short name in files and session ids.
    pub fn name(self) -> &'static str {
        match self {
            Cli::Claude => "claude",
            Cli::Qoder => "qoder",
        }
    }

    /// What `--version` prints.
    pub fn version(self) -> &'static str {
        match self {
            Cli::Claude => "2.1.197-mock (Claude Code)",
            Cli::Qoder => "1.1.76-mock",
        }
    }
}

/// The log the fake writes under `home`.
pub fn log_path(home: &std::path::Path, cli: Cli) -> PathBuf {
    home.join(format!("fake-{}-log.jsonl", cli.name()))
}

/// The scenarios, by keyword, most specific first.
pub const SCENARIOS: [&str; 12] = [
    "user-settings",
    "not-logged-in",
    "unsupported",
    "duplicate",
    "withdraw",
    "approval",
    "question",
    "garbage",
    "write",
    "error",
    "wait",
    "eof",
];

/// Milliseconds the fake waits before answering `initialize`.
pub const SLOW_INIT_VARIABLE: &str = "FAKE_CLI_SLOW_INIT_MS";

/// How long `withdraw` waits before withdrawing its request.
const WITHDRAW_AFTER: Duration = Duration::from_millis(300);

/// The arguments the fake understood.
struct Args {
    model: Option<String>,
    resume: Option<String>,
}

/// Runs the fake CLI with the process arguments (without the program).
pub fn run(cli: Cli) -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv == ["--version"] {
        println!("{}", cli.version());
        return ExitCode::SUCCESS;
    }
    let args = match parse(cli, &argv) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("fake-{}: refused: {problem}", cli.name());
            return ExitCode::from(2);
        }
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut fake = Fake {
        cli,
        args,
        log: home.as_ref().map(|home| log_path(home, cli)),
        sessions: home.map(|home| home.join(format!("fake-{}-sessions", cli.name()))),
        incoming: crate::jsonl::stdin_lines(),
        next_request: 0,
    };
    let env: BTreeMap<String, String> = std::env::vars().collect();
    fake.log(json!({ "argv": argv, "env": env }));
    if cli == Cli::Qoder
        && let Err(problem) = check_auth_payload()
    {
        eprintln!("fake-qoder: refused: {problem}");
        return ExitCode::from(2);
    }
    match fake.serve() {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("fake-{}: {problem}", cli.name());
            ExitCode::from(1)
        }
    }
}

/// Checks the argv against what the Bridge must send in native mode.
fn parse(cli: Cli, argv: &[String]) -> Result<Args, String> {
    let mut rest = argv.iter();
    let mut seen = Vec::new();
    let mut args = Args {
        model: None,
        resume: None,
    };
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| {
            rest.next()
                .cloned()
                .ok_or_else(|| format!("{name} without a value"))
        };
        match (cli, arg.as_str()) {
            (_, "--output-format" | "--input-format") => {
                let format = value(arg)?;
                if format != "stream-json" {
                    return Err(format!("{arg} {format}"));
                }
            }
            (_, "--permission-prompt-tool") => {
                let tool = value(arg)?;
                if tool != "stdio" {
                    return Err(format!("{arg} {tool}"));
                }
            }
            (_, "--model") => args.model = Some(value(arg)?),
            (Cli::Claude, "--verbose") => {}
            (Cli::Claude, sources) if sources.starts_with("--setting-sources=") => {
                check_sources(&sources["--setting-sources=".len()..])?;
            }
            (Cli::Claude, resume) if resume.starts_with("--resume=") => {
                args.resume = Some(resume["--resume=".len()..].to_owned());
            }
            (Cli::Qoder, "--print") => {}
            (Cli::Qoder, "--setting-sources") => check_sources(&value(arg)?)?,
            (Cli::Qoder, "--resume") => args.resume = Some(value(arg)?),
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
        seen.push(arg.as_str());
    }
    let mut required = vec![
        "--output-format",
        "--input-format",
        "--permission-prompt-tool",
    ];
    match cli {
        Cli::Claude => required.push("--verbose"),
        Cli::Qoder => required.extend(["--print", "--setting-sources"]),
    }
    for flag in required {
        if !seen.contains(&flag) {
            return Err(format!("{flag} missing"));
        }
    }
    if cli == Cli::Claude && !seen.iter().any(|arg| arg.starts_with("--setting-sources=")) {
        return Err("--setting-sources= missing".to_owned());
    }
    Ok(args)
}

fn check_sources(sources: &str) -> Result<(), String> {
    match sources {
        "user,project,local" | "user" => Ok(()),
        other => Err(format!("setting sources {other}")),
    }
}

/// Qoder's payload file: private, the local-login payload.
fn check_auth_payload() -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("QODER_SDK_AUTH_PAYLOAD_FILE")
        .ok_or("QODER_SDK_AUTH_PAYLOAD_FILE missing")?;
    let meta = std::fs::metadata(&path).map_err(|e| format!("auth payload: {e}"))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err("the auth payload file is not private".to_owned());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("auth payload: {e}"))?;
    let payload: Value = serde_json::from_str(&text).map_err(|e| format!("auth payload: {e}"))?;
    if payload != json!({ "type": "qodercli" }) {
        return Err(format!("auth payload {payload}"));
    }
    Ok(())
}

/// One run of the fake.
struct Fake {
    cli: Cli,
    args: Args,
    log: Option<PathBuf>,
    sessions: Option<PathBuf>,
    incoming: mpsc::Receiver<String>,
    next_request: u64,
}

type Step<T> = Result<T, String>;

impl Fake {
    fn log(&self, entry: Value) {
        crate::jsonl::append(self.log.as_deref(), &entry);
    }

    fn send(&self, message: &Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{message}");
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
        let message: Value =
            serde_json::from_str(&line).map_err(|e| format!("unreadable input: {e}"))?;
        self.log(json!({ "received": message }));
        Ok(Some(message))
    }

    /// The next message; `Err` naming `what` at end of input.
    fn expect(&mut self, what: &str) -> Step<Value> {
        self.next(None)?
            .ok_or_else(|| format!("input ended waiting for {what}"))
    }

    fn serve(&mut self) -> Step<()> {
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
        let request_id = control_request(&initialize, "initialize")?;
        let models = json!([
            { "value": "default", "displayName": "Default (recommended)", "description": "mock default" },
            { "value": "mock-opus", "displayName": "Mock Opus", "isEnabled": true, "isFree": false, "priceFactor": 1.0 }
        ]);
        let answer = match self.cli {
            Cli::Claude => json!({ "commands": [], "models": models, "pid": std::process::id() }),
            Cli::Qoder => json!({ "commands": [] }),
        };
        self.send(&success(&request_id, answer));
        if self.cli == Cli::Qoder {
            let proxy = self.expect("set_proxy")?;
            let request_id = control_request(&proxy, "set_proxy")?;
            self.log(json!({ "proxy": proxy["request"]["proxy"] }));
            self.send(&success(&request_id, json!({})));
        }
        // Claude's model discovery reads the initialize answer and closes.
        let Some(first) = self.next(None)? else {
            return Ok(());
        };
        if first["type"] == "control_request" && first["request"]["subtype"] == "get_models" {
            let request_id = first["request_id"].as_str().unwrap_or_default().to_owned();
            self.send(&success(&request_id, json!({ "models": models })));
            // Discovery ends with stdin.
            while self.next(None)?.is_some() {}
            return Ok(());
        }
        let prompt = user_prompt(self.cli, &first)?;
        let session = self.session()?;
        let Some(session) = session else {
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
        let scenario = SCENARIOS
            .iter()
            .find(|keyword| prompt.contains(**keyword))
            .copied();
        let said = match scenario {
            Some("approval" | "user-settings") => self.approval(scenario == Some("approval"))?,
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
            Some("wait") => return self.wait_for_interrupt(&session),
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
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "this is not json");
                let _ = writeln!(out, "{{\"half\":");
                let _ = out.flush();
                Some(format!("done:{prompt}"))
            }
            _ => Some(format!("done:{prompt}")),
        };
        let Some(mut said) = said else {
            // A deny that interrupts: the turn ends with an error.
            self.send(&json!({
                "type": "result", "subtype": "error_during_execution", "is_error": true,
                "errors": ["interrupted by the permission decision"], "session_id": session,
                "uuid": "result-interrupt",
            }));
            return Ok(());
        };
        if let Some(model) = &self.args.model {
            said.push_str(&format!(" model={model}"));
        }
        self.assistant(json!([{ "type": "text", "text": said }]));
        self.send(&json!({
            "type": "result", "subtype": "success", "is_error": false, "result": said,
            "session_id": session, "uuid": format!("result-{session}"),
        }));
        // Like the real CLIs: end once stdin closes.
        while self.next(None)?.is_some() {}
        Ok(())
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
                .map_err(|e| format!("sessions: {e}"))?;
            writeln!(file, "{session}").map_err(|e| format!("sessions: {e}"))?;
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

    /// Sends a `can_use_tool` and waits for its answer.
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
            return Err(format!("unexpected message while waiting: {message}"));
        }
    }

    fn answer_interrupt(&self, message: &Value) -> Step<()> {
        let request_id = control_request(message, "interrupt")?;
        self.send(&success(&request_id, json!({})));
        Ok(())
    }

    /// `approval`/`user-settings`: `Some(text)`, or `None` when a deny
    /// interrupts the turn.
    fn approval(&mut self, with_session: bool) -> Step<Option<String>> {
        let session =
            json!({ "type": "addDirectories", "directories": ["/work"], "destination": "session" });
        let local = json!({ "type": "addRules", "rules": [{ "toolName": "Bash", "ruleContent": "echo hi *" }],
                            "behavior": "allow", "destination": "localSettings" });
        let suggestions = if with_session {
            json!([local, session])
        } else {
            json!([
                { "type": "addRules", "rules": [{ "toolName": "Bash" }], "behavior": "allow", "destination": "userSettings" },
                { "type": "setMode", "mode": "acceptEdits", "destination": "projectSettings" }
            ])
        };
        let input = json!({ "command": "echo hi > created.txt", "description": "create a file" });
        self.assistant(
            json!([{ "type": "tool_use", "id": "toolu_1", "name": "Bash", "input": input }]),
        );
        let answer = self.ask(json!({
            "subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
            "input": input, "description": "create a file",
            "permission_suggestions": suggestions, "blocked_path": "/work/created.txt",
            "tool_use_id": "toolu_1",
        }))?;
        let body = &answer["response"];
        match body["behavior"].as_str() {
            Some("allow") => {
                if body["updatedInput"] != input {
                    return Err(format!("updatedInput changed: {body}"));
                }
                match body.get("updatedPermissions") {
                    None => Ok(Some("approval:allow".to_owned())),
                    Some(updates) if *updates == json!([session]) => {
                        Ok(Some("approval:allow:session".to_owned()))
                    }
                    Some(other) => Err(format!("updatedPermissions {other}")),
                }
            }
            Some("deny") if body["interrupt"] == true => Ok(None),
            Some("deny") => Ok(Some("approval:deny".to_owned())),
            _ => Err(format!("unexpected permission answer {answer}")),
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
            return Err(format!("unexpected question answer {answer}"));
        }
        let given = body["updatedInput"]["answers"]["Which option?"]
            .as_str()
            .ok_or_else(|| format!("no answer in {answer}"))?;
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
            _ => Err(format!("a duplicate question was answered: {answer}")),
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
            return Err(format!("answered before the withdrawal: {early}"));
        }
        self.send(&json!({ "type": "control_cancel_request", "request_id": id }));
        Ok(Some("withdrawn".to_owned()))
    }

    fn unsupported(&mut self) -> Step<Option<String>> {
        let answer =
            self.ask(json!({ "subtype": "hook_callback", "callback_id": "h1", "input": {} }))?;
        if answer["subtype"] != "error" {
            return Err(format!("hook_callback was not refused: {answer}"));
        }
        Ok(Some(format!(
            "unsupported:{}",
            answer["error"].as_str().unwrap_or_default()
        )))
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
                while self.next(None)?.is_some() {}
                return Ok(());
            }
        }
    }
}

/// The id of `message`, a control request of `subtype`.
fn control_request(message: &Value, subtype: &str) -> Step<String> {
    if message["type"] != "control_request" || message["request"]["subtype"] != subtype {
        return Err(format!(
            "expected a {subtype} control request, got {message}"
        ));
    }
    message["request_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{subtype} without a request_id"))
}

fn success(request_id: &str, response: Value) -> Value {
    json!({ "type": "control_response",
            "response": { "subtype": "success", "request_id": request_id, "response": response } })
}

/// The prompt of the user message, checked for the CLI's shape.
fn user_prompt(cli: Cli, message: &Value) -> Step<String> {
    if message["type"] != "user" || message["message"]["role"] != "user" {
        return Err(format!("expected the user message, got {message}"));
    }
    if cli == Cli::Qoder && message["priority"] != "next" {
        return Err(format!("the user message's priority: {message}"));
    }
    if cli == Cli::Claude && message.get("priority").is_some() {
        return Err("Claude takes no priority".to_owned());
    }
    message["message"]["content"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("a prompt that is not text: {message}"))
}

/// The fake CLI binary of `cli`, freshly built (see [`crate::binaries`]).
pub fn binary(cli: Cli) -> PathBuf {
    let bin = match cli {
        Cli::Claude => "fake-claude",
        Cli::Qoder => "fake-qodercli",
    };
    crate::binaries::workspace_binary("serverfs-testkit", bin)
}

/// A Bridge [`Setup`](crate::bridge::Setup) for `cli`'s runtime on the
/// fake: workdir `demo` (`<root>/work`, workspace-write) allowing it, its
/// `*_bin` the fake. The fake logs under the Bridge's `HOME`, the setup's
/// root ([`log_path`]).
pub fn bridge_setup(cli: Cli) -> crate::bridge::Setup {
    use crate::bridge::{Setup, Workdir};
    let bin = binary(cli);
    let bin = bin
        .to_str()
        .unwrap_or_else(|| panic!("a non-UTF-8 path: {}", bin.display()));
    Setup::new()
        .without_workdirs()
        .workdir(Workdir {
            path: "work".to_owned(),
            ..Workdir::new("demo", "workspace-write", &[cli.name()])
        })
        .agent(&format!("{}_bin", cli.name()), &format!("{bin:?}"))
}

/// Every entry of the fake's log under `home`, in order.
///
/// # Panics
///
/// On an unreadable log.
pub fn read_log(home: &std::path::Path, cli: Cli) -> Vec<Value> {
    crate::jsonl::read(&log_path(home, cli), "the fake CLI's log")
}
