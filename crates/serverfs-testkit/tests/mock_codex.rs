//! Black-box tests of the Codex App Server mock: the real `mock-codex`
//! binary over stdio (and its managed daemon), and the in-process
//! [`MockCodexDaemon`] over WebSocket-on-UDS, each driven by a small client
//! written here rather than borrowed from the mock.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serverfs_testkit::mock_codex::{
    CLI_VERSION, MESSAGE_LOG_FILE, MockCodexDaemon, SLOW_DELAY, USER_AGENT,
};
use tokio::net::UnixStream;
use tokio_tungstenite::tungstenite::Message;

/// Bounds every wait: a mock that forgets to answer fails the test instead
/// of hanging it.
const TIMEOUT: Duration = Duration::from_secs(10);

const BIN: &str = env!("CARGO_BIN_EXE_mock-codex");

/// Removes the wall-clock stamps so whole messages can be compared.
fn untimed(mut msg: Value) -> Value {
    for key in ["startedAtMs", "completedAtMs"] {
        if let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) {
            params.remove(key);
        }
    }
    msg
}

fn initialize_params() -> Value {
    json!({
        "clientInfo": { "name": "test", "title": "Test", "version": "0" },
        "capabilities": { "experimentalApi": true },
    })
}

/// The messages of a default turn after its `turn/start` response.
fn default_turn_tail(thread: &str, turn: &str, msg_id: &str, text: &str) -> Vec<Value> {
    vec![
        json!({"method": "turn/started", "params": {"threadId": thread, "turn": {"id": turn, "status": "inProgress", "items": [], "error": null}}}),
        json!({"method": "item/started", "params": {"threadId": thread, "turnId": turn, "item": {"type": "agentMessage", "id": msg_id, "text": "", "phase": null}}}),
        json!({"method": "item/completed", "params": {"threadId": thread, "turnId": turn, "item": {"type": "agentMessage", "id": msg_id, "text": text, "phase": null}}}),
        json!({"method": "turn/completed", "params": {"threadId": thread, "turn": {"id": turn, "status": "completed", "items": [], "error": null}}}),
    ]
}

/// `mock-codex app-server` on stdio, killed on drop.
struct StdioCodex {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: i64,
    /// `CODEX_HOME`, shared by the processes of one test.
    home: Arc<tempfile::TempDir>,
    log: std::path::PathBuf,
}

impl StdioCodex {
    /// A new process in a new `CODEX_HOME`, logging to `MOCK_CODEX_LOG`.
    fn spawn() -> StdioCodex {
        StdioCodex::spawn_in(Arc::new(tempfile::tempdir().unwrap()), true)
    }

    /// A new process in `home`; without `log_env`, only `CODEX_HOME` is
    /// set, as when the Bridge spawns Codex.
    fn spawn_in(home: Arc<tempfile::TempDir>, log_env: bool) -> StdioCodex {
        let mut command = Command::new(BIN);
        command
            .arg("app-server")
            .env_clear()
            .env("CODEX_HOME", home.path());
        let log = if log_env {
            let log = home.path().join("messages.jsonl");
            command.env("MOCK_CODEX_LOG", &log);
            log
        } else {
            home.path().join(MESSAGE_LOG_FILE)
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        // A reader thread turns blocking line reads into a channel with a
        // receive timeout.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioCodex {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 100,
            home,
            log,
        }
    }

    /// Spawned and through the handshake.
    fn ready() -> StdioCodex {
        StdioCodex::handshake(StdioCodex::spawn())
    }

    fn handshake(mut codex: StdioCodex) -> StdioCodex {
        let init = codex.request("initialize", initialize_params());
        assert_eq!(init["result"]["userAgent"], json!(USER_AGENT));
        codex.send(&json!({"jsonrpc": "2.0", "method": "initialized"}));
        codex
    }

    fn send(&mut self, msg: &Value) {
        self.send_raw(&msg.to_string());
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(TIMEOUT)
            .expect("a message from mock-codex");
        let msg: Value = serde_json::from_str(&line).unwrap();
        assert!(msg.get("jsonrpc").is_none(), "Codex omits jsonrpc: {msg}");
        msg
    }

    fn recv_n(&mut self, n: usize) -> Vec<Value> {
        (0..n).map(|_| untimed(self.recv())).collect()
    }

    /// Asserts nothing arrives for a short while.
    fn assert_quiet(&mut self) {
        match self.lines.recv_timeout(Duration::from_millis(300)) {
            Err(RecvTimeoutError::Timeout) => {}
            other => panic!("expected silence, got {other:?}"),
        }
    }

    /// Sends a request with a fresh integer id and returns its response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let reply = self.recv();
        assert_eq!(reply["id"], json!(id), "response to {method}: {reply}");
        reply
    }

    fn start_thread(&mut self) -> String {
        let reply = self.request("thread/start", json!({"cwd": "/work/project"}));
        let id = reply["result"]["thread"]["id"].as_str().unwrap().to_owned();
        assert_eq!(self.recv()["method"], json!("thread/started"));
        id
    }

    /// Starts a turn and returns its id (the response is checked).
    fn start_turn(&mut self, thread: &str, prompt: &str) -> String {
        let reply = self.request(
            "turn/start",
            json!({"threadId": thread, "input": [{"type": "text", "text": prompt}], "cwd": "/work/project"}),
        );
        assert_eq!(reply["result"]["turn"]["status"], json!("inProgress"));
        reply["result"]["turn"]["id"].as_str().unwrap().to_owned()
    }

    /// The messages the mock logged to `MOCK_CODEX_LOG`.
    fn logged(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Closes stdin and waits for the exit status.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "mock-codex did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for StdioCodex {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn binary_path_finds_the_built_binary() {
    let found = serverfs_testkit::mock_codex::binary();
    assert_eq!(found, Path::new(BIN));
}

#[test]
fn version_and_usage() {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("codex-cli {CLI_VERSION}\n")
    );

    // Overrides on the command line are not native mode: refused.
    let out = Command::new(BIN)
        .args(["app-server", "-c", "approval_policy=never"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn stdio_handshake_rules() {
    let mut codex = StdioCodex::spawn();
    let early = codex.request("thread/start", json!({"cwd": "/tmp"}));
    assert_eq!(
        early["error"],
        json!({"code": -32600, "message": "Not initialized"})
    );

    let no_experimental = codex.request(
        "initialize",
        json!({"clientInfo": {"name": "t", "version": "0"}, "capabilities": {}}),
    );
    assert_eq!(no_experimental["error"]["code"], json!(-32602));

    // The reference client uses the string id "initialize"; echoed as is.
    codex.send(&json!({"id": "initialize", "method": "initialize", "params": initialize_params()}));
    let init = codex.recv();
    let home = codex.home.path().to_string_lossy().into_owned();
    assert_eq!(
        init,
        json!({"id": "initialize", "result": {
            "userAgent": USER_AGENT, "codexHome": home,
            "platformFamily": "unix", "platformOs": "linux",
        }})
    );
    // Until the `initialized` notification, still not ready.
    let before = codex.request("model/list", json!({"limit": 64, "includeHidden": true}));
    assert_eq!(before["error"]["message"], json!("Not initialized"));
    codex.send(&json!({"method": "initialized", "params": {}}));
    let again = codex.request("initialize", initialize_params());
    assert_eq!(again["error"]["message"], json!("Already initialized"));

    codex.send_raw("{not json");
    assert_eq!(codex.recv()["error"]["code"], json!(-32700));

    let unknown = codex.request("thread/fork", json!({}));
    assert_eq!(
        unknown["error"],
        json!({"code": -32600, "message": "Invalid request: unknown variant `thread/fork`"})
    );
    assert!(codex.finish().success());
}

#[test]
fn stdio_default_turn() {
    let mut codex = StdioCodex::ready();
    let thread = codex.start_thread();
    assert_eq!(thread, "thread-1");
    let turn = codex.start_turn(&thread, "hello");
    assert_eq!(
        codex.recv_n(4),
        default_turn_tail(&thread, &turn, "msg-1", "done:hello")
    );
    let logged = codex.logged();
    let turn_start = logged.iter().find(|m| m["method"] == "turn/start").unwrap();
    assert_eq!(turn_start["params"]["input"][0]["text"], json!("hello"));
}

#[test]
fn stdio_forbidden_overrides_are_refused() {
    let mut codex = StdioCodex::ready();
    let reply = codex.request(
        "thread/start",
        json!({"cwd": "/tmp", "approvalPolicy": "on-request"}),
    );
    assert_eq!(reply["error"]["code"], json!(-32602));
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`approvalPolicy`")
    );

    let thread = codex.start_thread();
    let reply = codex.request(
        "turn/start",
        json!({"threadId": thread, "input": [], "sandboxPolicy": {"type": "readOnly"}}),
    );
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`sandboxPolicy`")
    );
    let reply = codex.request("thread/resume", json!({"threadId": thread, "config": {}}));
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`config`")
    );
}

#[test]
fn stdio_approval_round_trip_echoes_the_integer_id() {
    let mut codex = StdioCodex::ready();
    let thread = codex.start_thread();
    let turn = codex.start_turn(&thread, "approval");
    let msgs = codex.recv_n(3);
    assert_eq!(msgs[0]["method"], json!("turn/started"));
    assert_eq!(msgs[1]["params"]["item"]["type"], json!("commandExecution"));
    let ask = &msgs[2];
    assert_eq!(
        *ask,
        json!({"id": 0, "method": "item/commandExecution/requestApproval", "params": {
            "threadId": thread, "turnId": turn, "itemId": "call_1", "kind": "command",
            "command": "pytest -q", "cwd": "/work/project", "commandActions": [],
            "reason": "run tests",
            "availableDecisions": ["accept", "acceptForSession", "decline", "cancel"],
        }})
    );
    // The same id as a string is a different id: ignored.
    codex.send(&json!({"id": "0", "result": {"decision": "accept"}}));
    codex.assert_quiet();
    codex.send(&json!({"id": 0, "result": {"decision": "acceptForSession"}}));
    let msgs = codex.recv_n(5);
    assert_eq!(
        msgs[0],
        json!({"method": "serverRequest/resolved", "params": {"threadId": thread, "requestId": 0}})
    );
    assert_eq!(msgs[1]["params"]["item"]["status"], json!("completed"));
    assert_eq!(
        msgs[3]["params"]["item"]["text"],
        json!("approval:acceptForSession")
    );
    assert_eq!(msgs[4]["params"]["turn"]["status"], json!("completed"));
}

#[test]
fn stdio_interactions_render_the_answer() {
    // (prompt, answer to the single server request, expected final text)
    let cases = [
        (
            "file-approval",
            json!({"result": {"decision": "decline"}}),
            "file:decline",
        ),
        (
            "file-outside",
            json!({"result": {"decision": "accept"}}),
            "file:accept",
        ),
        (
            "permission",
            json!({"result": {"permissions": {"network": {"enabled": true}, "fileSystem": {}}, "scope": "session"}}),
            "permission:session:fileSystem,network",
        ),
        (
            "question",
            json!({"result": {"answers": {"q1": {"answers": ["B", "details"]}}}}),
            "question:B,details",
        ),
        (
            "secret-question",
            json!({"error": {"code": -32000, "message": "refused"}}),
            "request-error:-32000",
        ),
        (
            "unsupported",
            json!({"error": {"code": -32601, "message": "unsupported request"}}),
            "done:unsupported",
        ),
        (
            "object-decisions",
            json!({"result": {"decision": {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["pytest"]}}}}),
            "approval:acceptWithExecpolicyAmendment",
        ),
        (
            "object-decisions",
            json!({"result": {"decision": "decline"}}),
            "approval:not-offered:decline",
        ),
    ];
    for (prompt, answer, expected) in cases {
        let mut codex = StdioCodex::ready();
        let thread = codex.start_thread();
        codex.start_turn(&thread, prompt);
        let ask = loop {
            let msg = codex.recv();
            if msg.get("id").is_some() {
                break msg;
            }
        };
        match prompt {
            "file-approval" => assert_eq!(ask["params"]["grantRoot"], json!("/work/project")),
            "file-outside" => assert_eq!(ask["params"]["grantRoot"], json!("/work")),
            _ => {}
        }
        if prompt == "secret-question" {
            assert_eq!(ask["params"]["questions"][0]["isSecret"], json!(true));
        }
        let mut reply = answer.clone();
        reply["id"] = ask["id"].clone();
        codex.send(&reply);
        let text = loop {
            let msg = codex.recv();
            if msg["method"] == "item/completed" && msg["params"]["item"]["type"] == "agentMessage"
            {
                break msg["params"]["item"]["text"].clone();
            }
        };
        assert_eq!(text, json!(expected), "scenario {prompt}");
        assert_eq!(codex.recv()["method"], json!("turn/completed"));
    }
}

#[test]
fn stdio_two_approvals_report_in_request_order() {
    let mut codex = StdioCodex::ready();
    let thread = codex.start_thread();
    codex.start_turn(&thread, "two-approvals");
    let msgs = codex.recv_n(5);
    assert_eq!(
        (msgs[2]["id"].clone(), msgs[4]["id"].clone()),
        (json!(0), json!(1))
    );
    // Answered in reverse order.
    codex.send(&json!({"id": 1, "result": {"decision": "decline"}}));
    let after_first = codex.recv_n(2);
    assert_eq!(after_first[0]["params"]["requestId"], json!(1));
    codex.send(&json!({"id": 0, "result": {"decision": "accept"}}));
    let tail = codex.recv_n(5);
    assert_eq!(
        tail[3]["params"]["item"]["text"],
        json!("approvals:accept,decline")
    );
}

#[test]
fn stdio_auto_resolve_and_string_id() {
    let mut codex = StdioCodex::ready();
    let thread = codex.start_thread();
    codex.start_turn(&thread, "auto-resolve");
    let msgs = codex.recv_n(7);
    let methods: Vec<&str> = msgs.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "turn/started",
            "item/started",
            "item/commandExecution/requestApproval",
            "serverRequest/resolved",
            "item/started",
            "item/completed",
            "turn/completed",
        ]
    );
    assert_eq!(msgs[5]["params"]["item"]["text"], json!("auto-done"));
    // A late answer is ignored.
    codex.send(&json!({"id": msgs[2]["id"], "result": {"decision": "accept"}}));
    codex.assert_quiet();

    codex.start_turn(&thread, "string-id");
    let msgs = codex.recv_n(3);
    assert_eq!(msgs[2]["id"], json!("req-7"));
    codex.send(&json!({"id": "req-7", "result": {"decision": "cancel"}}));
    let tail = codex.recv_n(5);
    assert_eq!(tail[1]["params"]["item"]["status"], json!("declined"));
    assert_eq!(tail[3]["params"]["item"]["text"], json!("approval:cancel"));
}

#[test]
fn stdio_steer() {
    let mut codex = StdioCodex::ready();
    let thread = codex.start_thread();
    let idle = codex.request(
        "turn/steer",
        json!({"threadId": thread, "input": [{"type": "text", "text": "x"}], "expectedTurnId": "turn-9"}),
    );
    assert_eq!(
        idle["error"],
        json!({"code": -32600, "message": "no active turn to steer"})
    );
    let turn = codex.start_turn(&thread, "steer");
    assert_eq!(codex.recv()["method"], json!("turn/started"));
    let wrong = codex.request(
        "turn/steer",
        json!({"threadId": thread, "input": [{"type": "text", "text": "x"}], "expectedTurnId": "turn-9"}),
    );
    assert_eq!(
        wrong["error"]["message"],
        json!(format!(
            "expected active turn id `turn-9` but found `{turn}`"
        ))
    );
    let right = codex.request(
        "turn/steer",
        json!({"threadId": thread, "input": [{"type": "text", "text": "use tabs"}], "expectedTurnId": turn}),
    );
    assert_eq!(right["result"], json!({"turnId": turn}));
    let msgs = codex.recv_n(5);
    assert_eq!(msgs[0]["params"]["item"]["type"], json!("userMessage"));
    assert_eq!(msgs[3]["params"]["item"]["text"], json!("steered:use tabs"));
    assert_eq!(msgs[4]["params"]["turn"]["status"], json!("completed"));
}

#[test]
fn stdio_interrupt_is_logged_once() {
    let mut codex = StdioCodex::ready();
    let thread = codex.start_thread();
    let turn = codex.start_turn(&thread, "wait");
    assert_eq!(codex.recv()["method"], json!("turn/started"));
    codex.assert_quiet();
    let reply = codex.request(
        "turn/interrupt",
        json!({"threadId": thread, "turnId": turn}),
    );
    assert_eq!(reply["result"], json!({}));
    assert_eq!(
        codex.recv(),
        json!({"method": "turn/completed", "params": {"threadId": thread, "turn": {
            "id": turn, "status": "interrupted", "items": [], "error": null,
        }}})
    );
    let again = codex.request(
        "turn/interrupt",
        json!({"threadId": thread, "turnId": turn}),
    );
    assert_eq!(again["error"]["code"], json!(-32600));
    let interrupts = codex
        .logged()
        .iter()
        .filter(|m| m["method"] == "turn/interrupt")
        .count();
    assert_eq!(interrupts, 2);
    assert!(
        codex
            .logged()
            .iter()
            .all(|m| m["params"].get("approvalPolicy").is_none()),
        "the log shows every param sent"
    );
}

#[test]
fn stdio_fail_noise_and_drop() {
    let mut codex = StdioCodex::ready();
    let thread = codex.start_thread();
    let turn = codex.start_turn(&thread, "fail");
    let msgs = codex.recv_n(3);
    assert_eq!(
        msgs[1],
        json!({"method": "error", "params": {
            "error": {"message": "model overloaded", "codexErrorInfo": null, "additionalDetails": null},
            "willRetry": true, "threadId": thread, "turnId": turn,
        }})
    );
    assert_eq!(
        msgs[2]["params"]["turn"],
        json!({"id": turn, "status": "failed", "items": [], "error": {"message": "mock failure"}})
    );

    let turn = codex.start_turn(&thread, "noise");
    let msgs = codex.recv_n(10);
    let other = msgs
        .iter()
        .filter(|m| m["method"] == "item/completed" && m["params"]["turnId"] != json!(turn))
        .count();
    assert_eq!(other, 1, "one item of another turn to filter out");
    assert_eq!(msgs[8]["params"]["item"]["text"], json!("done:noise"));
    assert_eq!(msgs[9]["method"], json!("turn/completed"));

    codex.start_turn(&thread, "drop");
    assert_eq!(codex.recv()["method"], json!("turn/started"));
    match codex.lines.recv_timeout(TIMEOUT) {
        Err(RecvTimeoutError::Disconnected) => {}
        other => panic!("expected stdout to close, got {other:?}"),
    }
    assert!(codex.finish().success());
}

/// The Bridge's stdio transport runs one process per turn, passing only
/// `CODEX_HOME`: threads and the message log must live there.
#[test]
fn stdio_threads_outlive_the_process() {
    let home = Arc::new(tempfile::tempdir().unwrap());
    let mut first = StdioCodex::handshake(StdioCodex::spawn_in(home.clone(), false));
    let thread = first.start_thread();
    let turn = first.start_turn(&thread, "hello");
    assert_eq!(first.recv_n(4)[3]["method"], json!("turn/completed"));
    assert!(first.finish().success());

    let mut second = StdioCodex::handshake(StdioCodex::spawn_in(home, false));
    let resumed = second.request(
        "thread/resume",
        json!({"threadId": thread, "cwd": "/work/project"}),
    );
    assert_eq!(resumed["result"]["thread"]["id"], json!(thread));
    let read = second.request(
        "thread/read",
        json!({"threadId": thread, "includeTurns": true}),
    );
    assert_eq!(
        read["result"]["thread"]["turns"],
        json!([{"id": turn, "status": "completed", "items": [], "error": null}])
    );
    assert_eq!(second.start_thread(), "thread-2");
    assert_eq!(second.start_turn("thread-2", "x"), "turn-2");
    let logged = second.logged();
    let resumes = logged
        .iter()
        .filter(|m| m["method"] == "thread/resume")
        .count();
    let inits = logged
        .iter()
        .filter(|m| m["method"] == "initialize")
        .count();
    assert_eq!((resumes, inits), (1, 2), "both processes log to CODEX_HOME");
}

/// `slow-start` holds back the `turn/start` reply, `slow-resolve` withdraws
/// its own request late; a turn left `inProgress` by a process that is gone
/// does not make its thread active for the next process.
#[test]
fn stdio_slow_start_slow_resolve_and_dead_turns() {
    let home = Arc::new(tempfile::tempdir().unwrap());
    let mut codex = StdioCodex::handshake(StdioCodex::spawn_in(home.clone(), false));
    let thread = codex.start_thread();

    let sent = Instant::now();
    codex.send(&json!({"id": 7, "method": "turn/start", "params": {
        "threadId": thread, "input": [{"type": "text", "text": "slow-start"}],
    }}));
    codex.assert_quiet();
    let reply = codex.recv();
    assert!(sent.elapsed() >= SLOW_DELAY, "the reply came early");
    assert_eq!(reply["id"], json!(7));
    let turn = reply["result"]["turn"]["id"].as_str().unwrap().to_owned();
    assert_eq!(codex.recv()["method"], json!("turn/started"));
    codex.assert_quiet();
    let interrupted = codex.request(
        "turn/interrupt",
        json!({"threadId": thread, "turnId": turn}),
    );
    assert_eq!(interrupted["result"], json!({}));
    assert_eq!(
        codex.recv()["params"]["turn"]["status"],
        json!("interrupted")
    );

    let asked = Instant::now();
    codex.start_turn(&thread, "slow-resolve");
    let opening = codex.recv_n(3);
    assert_eq!(
        opening[2]["method"],
        json!("item/commandExecution/requestApproval")
    );
    let tail = codex.recv_n(4);
    assert!(asked.elapsed() >= SLOW_DELAY, "resolved early");
    assert_eq!(
        tail[0],
        json!({"method": "serverRequest/resolved", "params": {"threadId": thread, "requestId": 0}})
    );
    assert_eq!(tail[2]["params"]["item"]["text"], json!("auto-done"));
    assert_eq!(tail[3]["params"]["turn"]["status"], json!("completed"));

    // A turn still running when its process goes.
    let waiting = codex.start_turn(&thread, "wait");
    assert_eq!(codex.recv()["method"], json!("turn/started"));
    let running = codex.request("thread/read", json!({"threadId": thread}));
    assert_eq!(running["result"]["thread"]["status"], json!("active"));
    assert!(codex.finish().success());
    let mut next = StdioCodex::handshake(StdioCodex::spawn_in(home, false));
    let read = next.request(
        "thread/read",
        json!({"threadId": thread, "includeTurns": true}),
    );
    assert_eq!(read["result"]["thread"]["status"], json!("idle"));
    let turns = read["result"]["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.last().unwrap()["id"], json!(waiting));
    assert_eq!(turns.last().unwrap()["status"], json!("inProgress"));
}

/// A WebSocket client over a Unix socket, as the Bridge connects.
struct WsClient {
    ws: tokio_tungstenite::WebSocketStream<UnixStream>,
    next_id: i64,
}

impl WsClient {
    async fn connect(path: &Path) -> WsClient {
        let stream = UnixStream::connect(path).await.unwrap();
        let (ws, _) = tokio_tungstenite::client_async("ws://localhost/rpc", stream)
            .await
            .unwrap();
        WsClient { ws, next_id: 0 }
    }

    async fn ready(path: &Path) -> WsClient {
        let mut client = WsClient::connect(path).await;
        let init = client.request("initialize", initialize_params()).await;
        assert_eq!(init["result"]["platformOs"], json!("linux"));
        client.send(&json!({"method": "initialized"})).await;
        client
    }

    async fn send(&mut self, msg: &Value) {
        self.ws.send(Message::text(msg.to_string())).await.unwrap();
    }

    /// The next text frame, or `None` when the server closed.
    async fn try_recv(&mut self) -> Option<Value> {
        loop {
            let frame = tokio::time::timeout(TIMEOUT, self.ws.next()).await.unwrap();
            match frame {
                Some(Ok(Message::Text(text))) => return Some(serde_json::from_str(&text).unwrap()),
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => return None,
                Some(Ok(other)) => panic!("unexpected frame {other:?}"),
            }
        }
    }

    async fn recv(&mut self) -> Value {
        self.try_recv().await.expect("a message from the daemon")
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"id": id, "method": method, "params": params}))
            .await;
        let reply = self.recv().await;
        assert_eq!(reply["id"], json!(id), "response to {method}: {reply}");
        reply
    }
}

#[tokio::test]
async fn daemon_turns_models_and_thread_state() {
    let home = tempfile::tempdir().unwrap();
    let socket = home
        .path()
        .join("app-server-control/app-server-control.sock");
    let daemon = MockCodexDaemon::start(&socket).unwrap();

    assert_eq!(daemon.state().codex_home(), home.path());
    let mut client = WsClient::ready(&socket).await;
    assert_eq!(
        daemon.messages()[0]["method"],
        json!("initialize"),
        "messages are recorded"
    );

    // model/list: one model per page; the client must follow nextCursor.
    let first = client
        .request("model/list", json!({"limit": 64, "includeHidden": true}))
        .await;
    assert_eq!(first["result"]["data"][0]["model"], json!("mock-model"));
    assert_eq!(
        first["result"]["data"][0]["supportedReasoningEfforts"][0],
        json!({"reasoningEffort": "low", "description": "Fast answers"})
    );
    let cursor = first["result"]["nextCursor"].clone();
    assert!(cursor.is_string());
    let second = client
        .request(
            "model/list",
            json!({"limit": 64, "includeHidden": true, "cursor": cursor}),
        )
        .await;
    assert_eq!(second["result"]["data"][0]["hidden"], json!(true));
    assert_eq!(second["result"]["nextCursor"], Value::Null);

    // A default turn on thread-1.
    let start = client
        .request(
            "thread/start",
            json!({"cwd": "/w", "serviceName": "serverfs-agent-bridge"}),
        )
        .await;
    assert_eq!(start["result"]["thread"]["status"], json!({"type": "idle"}));
    assert_eq!(start["result"]["model"], json!("mock-model"));
    assert_eq!(client.recv().await["method"], json!("thread/started"));
    let turn = client
        .request(
            "turn/start",
            json!({"threadId": "thread-1", "input": [{"type": "text", "text": "hi"}], "cwd": "/w"}),
        )
        .await;
    assert_eq!(turn["result"]["turn"]["id"], json!("turn-1"));
    let mut tail = Vec::new();
    for _ in 0..4 {
        tail.push(untimed(client.recv().await));
    }
    assert_eq!(
        tail,
        default_turn_tail("thread-1", "turn-1", "msg-1", "done:hi")
    );

    // thread-2 has a turn left waiting.
    client
        .request(
            "thread/start",
            json!({"cwd": "/w", "model": "mock-model-mini"}),
        )
        .await;
    client.recv().await;
    client
        .request(
            "turn/start",
            json!({"threadId": "thread-2", "input": [{"type": "text", "text": "wait"}]}),
        )
        .await;
    client.recv().await;

    // Threads are shared across connections; status shapes alternate.
    let mut other = WsClient::ready(&socket).await;
    let odd = other
        .request(
            "thread/read",
            json!({"threadId": "thread-1", "includeTurns": true}),
        )
        .await;
    assert_eq!(odd["result"]["thread"]["status"], json!("idle"));
    assert_eq!(
        odd["result"]["thread"]["turns"],
        json!([{"id": "turn-1", "status": "completed", "items": [], "error": null}])
    );
    let even = other
        .request(
            "thread/read",
            json!({"threadId": "thread-2", "includeTurns": true}),
        )
        .await;
    assert_eq!(
        even["result"]["thread"]["status"],
        json!({"type": "active", "activeFlags": []})
    );
    assert_eq!(
        even["result"]["thread"]["turns"][0]["status"],
        json!("inProgress")
    );
    let resumed = other
        .request(
            "thread/resume",
            json!({"threadId": "thread-2", "cwd": "/w"}),
        )
        .await;
    assert_eq!(resumed["result"]["thread"]["id"], json!("thread-2"));
    assert_eq!(resumed["result"]["model"], json!("mock-model-mini"));
    let unknown = other
        .request("thread/resume", json!({"threadId": "thread-9"}))
        .await;
    assert_eq!(
        unknown["error"],
        json!({"code": -32600, "message": "no rollout found for thread id thread-9"})
    );
    assert_eq!(odd["result"]["thread"]["cwd"], json!("/w"));

    // drop_connections: both connections go; the daemon keeps serving.
    daemon.drop_connections();
    assert_eq!(client.try_recv().await, None);
    assert_eq!(other.try_recv().await, None);
    let mut third = WsClient::ready(&socket).await;
    let read = third
        .request("thread/read", json!({"threadId": "thread-1"}))
        .await;
    assert_eq!(read["result"]["thread"]["turns"], json!([]));

    drop(daemon);
    assert!(!socket.exists(), "the socket is removed on drop");
}

#[tokio::test]
async fn daemon_slow_turn_waits_and_drop_closes() {
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("codex.sock");
    let daemon = MockCodexDaemon::start(&socket).unwrap();
    let mut client = WsClient::ready(&socket).await;
    client.request("thread/start", json!({"cwd": "/w"})).await;
    client.recv().await;
    let started = Instant::now();
    client
        .request(
            "turn/start",
            json!({"threadId": "thread-1", "input": [{"type": "text", "text": "slow"}]}),
        )
        .await;
    assert_eq!(client.recv().await["method"], json!("turn/started"));
    assert_eq!(client.recv().await["method"], json!("item/started"));
    let done = client.recv().await;
    assert!(started.elapsed() >= SLOW_DELAY, "final messages came early");
    assert_eq!(done["params"]["item"]["text"], json!("done:slow"));
    assert_eq!(
        client.recv().await["params"]["turn"]["status"],
        json!("completed")
    );

    client
        .request(
            "turn/start",
            json!({"threadId": "thread-1", "input": [{"type": "text", "text": "drop"}]}),
        )
        .await;
    assert_eq!(client.recv().await["method"], json!("turn/started"));
    assert_eq!(client.try_recv().await, None);
    drop(daemon);
}

#[tokio::test]
async fn daemon_refuses_other_paths_and_compression() {
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("codex.sock");
    let _daemon = MockCodexDaemon::start(&socket).unwrap();

    let stream = UnixStream::connect(&socket).await.unwrap();
    let wrong_path = tokio_tungstenite::client_async("ws://localhost/other", stream).await;
    assert!(wrong_path.is_err());

    let stream = UnixStream::connect(&socket).await.unwrap();
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
            "ws://localhost/rpc",
        )
        .unwrap();
    request.headers_mut().insert(
        "Sec-WebSocket-Extensions",
        "permessage-deflate".parse().unwrap(),
    );
    assert!(
        tokio_tungstenite::client_async(request, stream)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn daemon_socket_appears_listening_and_replaces_only_a_stale_file() {
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("codex.sock");

    // A socket file nobody listens on (a killed daemon's) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let daemon = MockCodexDaemon::start(&socket).unwrap();
    UnixStream::connect(&socket).await.unwrap();

    // A live socket, or a file that is not a socket, is left alone.
    let second = MockCodexDaemon::start(&socket).err().map(|e| e.kind());
    assert_eq!(second, Some(std::io::ErrorKind::AddrInUse));
    UnixStream::connect(&socket).await.unwrap();
    let regular = home.path().join("plain");
    std::fs::write(&regular, "keep").unwrap();
    let over_a_file = MockCodexDaemon::start(&regular).err().map(|e| e.kind());
    assert_eq!(over_a_file, Some(std::io::ErrorKind::AddrInUse));
    assert_eq!(std::fs::read_to_string(&regular).unwrap(), "keep");

    // The temporary name it listened under first is gone: only the socket
    // and the file remain.
    let mut names: Vec<_> = std::fs::read_dir(home.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["codex.sock", "plain"]);
    drop(daemon);
}

#[test]
fn binary_daemon_start_and_stop() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("messages.jsonl");
    let run = |action: &str| {
        let out = Command::new(BIN)
            .args(["app-server", "daemon", action])
            .env("CODEX_HOME", home.path())
            .env("MOCK_CODEX_LOG", &log)
            .output()
            .unwrap();
        assert!(out.status.success(), "daemon {action}: {out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let socket = home
        .path()
        .join("app-server-control/app-server-control.sock");
    let started = run("start");
    assert_eq!(
        started,
        json!({"status": "started", "socketPath": socket.to_string_lossy()})
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(home.path().join("app-server-control"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = WsClient::ready(&socket).await;
        let reply = client.request("thread/start", json!({"cwd": "/w"})).await;
        assert_eq!(reply["result"]["thread"]["id"], json!("thread-1"));
    });
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.lines().any(|l| l.contains("thread/start")));

    assert_eq!(run("stop")["status"], json!("stopped"));
    assert!(!socket.exists());
    assert_eq!(run("stop")["status"], json!("notRunning"));
}
