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
//! Qoder also requires its authentication payload file — `0600`, in a
//! `0700` directory, the local-login payload `{"type":"qodercli"}` or a
//! personal access token `{"type":"accessToken","accessToken":…}` — and a
//! `set_proxy` request before the prompt.
//!
//! # Scenarios
//!
//! The first user message picks a scenario by keyword (first match in
//! [`SCENARIOS`] order); the final text tells the test what the fake saw:
//!
//! | keyword | behaviour | final text |
//! |---|---|---|
//! | `approval` | a `can_use_tool` for the prompt's `tool=<name>` (default `Bash`), with a session and a local-settings suggestion | `approval:allow`, `approval:allow:session` (the session suggestion applied), `approval:deny` |
//! | `user-settings` | as `approval`, with user- and project-settings suggestions only | as `approval` |
//! | `question` | AskUserQuestion, options `A`/`B` (`multi` anywhere: multi-select) | `question:<answer>` |
//! | `duplicate` | AskUserQuestion with two questions of one text | `question:denied` |
//! | `withdraw` | `can_use_tool`, withdrawn with `control_cancel_request` 300 ms later | `withdrawn` |
//! | `unsupported` | `hook_callback`, `mcp_message`, an unknown subtype and a `can_use_tool` without a tool, one after the other | `unsupported:<error>\|<error>\|<error>\|<error>` |
//! | `write` | a `Write` tool use, no permission asked | `wrote` |
//! | `wait` | runs until `interrupt` | error result `aborted_streaming` |
//! | `stubborn` | completes, then outlives the end of its stdin and ignores `SIGTERM` (logging `{"stdin":"closed"}` and `{"ignored":"SIGTERM"}`) | `done:stubborn` |
//! | `oversized` | one 17 MiB line, over the engine's line cap | — |
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
//! # Variables
//!
//! These reach the fake only when the test hands them through the
//! runtime's passthrough list, as an operator would: [`SLOW_INIT_VARIABLE`]
//! delays the `initialize` answer, [`UNANSWERED_VARIABLE`] names one of the
//! Bridge's requests (`initialize`, `set_proxy`, `get_models`) the fake
//! reads and never answers, and [`MODELS_VARIABLE`] (`empty`, `invalid`)
//! spoils the model list of `initialize` (Claude) or `get_models` (Qoder).
//!
//! # Log
//!
//! Every run appends JSON lines to `$HOME/fake-<cli>-log.jsonl`: first
//! `{"argv": [...], "env": {name: value}}` (the whole environment), for
//! Qoder `{"auth": {"payload", "file_mode", "dir_mode"}}`, then
//! `{"received": <message>}` for each message read (and `{"proxy": …}`
//! for Qoder's `set_proxy`).

mod argv;
mod auth;
mod error;
mod fake;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};

pub use auth::AUTH_PAYLOAD_VARIABLE;
pub use error::FakeError;

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
pub const SCENARIOS: [&str; 14] = [
    "user-settings",
    "not-logged-in",
    "unsupported",
    "duplicate",
    "withdraw",
    "oversized",
    "stubborn",
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

/// The subtype of the Bridge's request the fake never answers.
pub const UNANSWERED_VARIABLE: &str = "FAKE_CLI_UNANSWERED";

/// `empty` or `invalid`: what the fake's model list holds.
pub const MODELS_VARIABLE: &str = "FAKE_CLI_MODELS";

/// Runs the fake CLI with the process arguments (without the program).
pub fn run(cli: Cli) -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv == ["--version"] {
        println!("{}", cli.version());
        return ExitCode::SUCCESS;
    }
    match serve(cli, argv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("fake-{}: {problem}", cli.name());
            ExitCode::from(problem.exit_status())
        }
    }
}

/// One run: the invocation checked and logged, then the protocol.
fn serve(cli: Cli, argv: Vec<String>) -> Result<(), FakeError> {
    let args = argv::parse(cli, &argv)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut fake = fake::Fake {
        cli,
        args,
        log: home.as_ref().map(|home| log_path(home, cli)),
        sessions: home.map(|home| home.join(format!("fake-{}-sessions", cli.name()))),
        incoming: crate::jsonl::stdin_lines(),
        next_request: 0,
    };
    let env: BTreeMap<String, String> = std::env::vars().collect();
    fake.log(json!({ "argv": argv, "env": env }));
    if cli == Cli::Qoder {
        let auth = auth::check_payload()?;
        fake.log(json!({ "auth": auth }));
    }
    fake.serve()
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
