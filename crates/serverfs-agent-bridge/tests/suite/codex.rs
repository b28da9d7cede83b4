//! The Codex adapter through the real Bridge daemon, against the scripted
//! mock App Server of `serverfs_testkit::mock_codex` (issue 8, the hermetic
//! list; spec-adapters.md §2).
//!
//! Every scenario runs over both transports ([`both_transports!`]): a
//! Bridge-owned `mock-codex app-server` child per connection over stdio
//! (the default), and the managed daemon over WebSocket on
//! `$CODEX_HOME/app-server-control/app-server-control.sock`, played by an
//! in-process [`MockCodexDaemon`] started before the Bridge and stopped
//! after it. Daemon autostart, a daemon that is down and Bridge crashes
//! have tests of their own.
//!
//! Each test checks both sides: what the task shows (view, events,
//! interactions) and what the Bridge sent Codex, from the mock's log of
//! received messages, `$CODEX_HOME/mock-codex-messages.jsonl` (the binary
//! writes it under its explicit `CODEX_HOME`; the in-process daemon is
//! given the same file). Ids are predictable: each rig has a fresh Codex
//! home, so its first thread is `thread-1` and its turns count from
//! `turn-1`; server request ids count from 0 per connection.
//!
//! The `mock-codex` binary is built from here when it is missing (`cargo
//! build -p serverfs-testkit --bins`, same profile); a failed build fails
//! the tests rather than skipping them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, test_kill_process_group};
use serde_json::{Value, json};
use serverfs_testkit::mock_codex::rig::{
    Transport, codex_setup, control_socket, message_log, start_mock_daemon,
};
use serverfs_testkit::mock_codex::{
    self, CLI_VERSION, HUGE_CHANGE_COUNT, HUGE_COMMAND_BYTES, MESSAGE_LOG_FILE, MockCodexDaemon,
    SLOW_DELAY, SLOW_THREAD_DELAY, SLOW_THREAD_MODEL,
};

use serverfs_testkit::bridge::{
    Daemon, GONE_LIMIT, Setup, WAIT, assert_in_order, count, guards, mcp_mutation, poll, request_id,
};
use serverfs_testkit::process::{group_members, runs_in_group, stat};

/// Keys the Bridge never sends: native mode's forbidden overrides (the
/// mock refuses those too) and the reference's `serviceName`.
const OVERRIDE_KEYS: [&str; 6] = [
    "sandbox",
    "sandboxPolicy",
    "approvalPolicy",
    "approvalsReviewer",
    "config",
    "serviceName",
];

/// The version both transports report: `codex-cli 0.171.0-mock` from
/// `--version`, `codex_app_server/0.171.0-mock` as `userAgent`.
const MOCK_VERSION: &str = "0.171.0-mock";

/// Runs each named scenario, a `fn(Transport)`, once per transport: the
/// module of the same name holds its two tests, `stdio` and `daemon`.
macro_rules! both_transports {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn stdio() {
                    super::$name(super::Transport::Stdio);
                }

                #[test]
                fn daemon() {
                    super::$name(super::Transport::Daemon);
                }
            }
        )*
    };
}

both_transports!(
    new_task,
    continuation,
    steer,
    cancel_interrupts_the_turn,
    command_approval_decisions,
    object_shaped_decisions_are_not_offered,
    file_change_approvals,
    permission_approvals,
    question_round_trip,
    secret_question_is_refused,
    auto_resolved_request_is_never_answered,
    server_resolved_request_turns_stale,
    unsupported_request_is_answered_at_once,
    two_approvals_are_queued,
    string_request_ids_are_echoed,
    cancel_before_the_turn_id_exists,
    transport_drop_mid_turn,
    failed_turn,
    noise_is_ignored,
    provider_errors_lose_credentials,
    non_json_lines_are_skipped,
    object_only_decisions_are_refused_at_once,
    huge_items_are_bounded,
    cancel_while_the_thread_starts,
);

/// A Bridge configured for the `codex` runtime on the mock, with its
/// Codex home; the in-process mock daemon for the daemon transport.
///
/// Fields drop in order: the Bridge is stopped before the mock daemon.
struct Rig {
    bridge: Daemon,
    mock: Option<MockCodexDaemon>,
    setup: Setup,
    home: PathBuf,
}

impl Rig {
    fn start(transport: Transport) -> Rig {
        let (setup, home) = codex_setup(transport);
        let mock = (transport == Transport::Daemon).then(|| start_mock_daemon(&home));
        let bridge = setup.start();
        Rig {
            bridge,
            mock,
            setup,
            home,
        }
    }

    /// The workdir as the Bridge hands it to Codex (`cwd`).
    fn cwd(&self) -> String {
        self.setup
            .work_dir()
            .to_str()
            .expect("utf-8 path")
            .to_owned()
    }

    /// Submits a `codex` task on `demo` with `overrides` merged over the
    /// defaults, retrying while the previous task still holds the lease.
    fn submit_with(&self, overrides: Value) -> String {
        let mut params = json!({ "runtime": "codex" });
        for (key, value) in overrides.as_object().expect("an object") {
            params[key] = value.clone();
        }
        self.bridge.wait_submit(params)
    }

    fn submit(&self, prompt: &str) -> String {
        self.submit_with(json!({ "prompt": prompt }))
    }

    /// Everything the mock received so far, in arrival order.
    fn log(&self) -> Vec<Value> {
        message_log(&self.home)
    }

    /// The log from position `mark` on.
    fn log_since(&self, mark: usize) -> Vec<Value> {
        self.log().split_off(mark)
    }

    /// Waits until the workdir is free again: no lease holder, no guard.
    fn wait_workdir_free(&self, after: &str) {
        poll(
            WAIT,
            &format!("the workdir to be free after {after}"),
            || (mcp_mutation(&self.setup).is_ok() && guards(&self.setup).is_empty()).then_some(()),
        );
    }

    /// Live `mock-codex` processes (zombies excluded) running with this
    /// rig's `CODEX_HOME`.
    fn mock_processes(&self) -> Vec<u32> {
        let wanted = format!("CODEX_HOME={}", self.home.display());
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            let runs = stat(pid).is_some_and(|(state, _)| state != b'Z' && state != b'X');
            let ours = environ
                .split(|byte| *byte == 0)
                .any(|var| var == wanted.as_bytes());
            if runs && ours && String::from_utf8_lossy(&cmdline).contains("mock-codex") {
                found.push(pid);
            }
        }
        found
    }

    /// Waits until no `mock-codex` process of this rig runs any more.
    fn wait_no_mock_process(&self, after: &str) {
        poll(
            GONE_LIMIT,
            &format!("every mock-codex process to exit after {after}"),
            || self.mock_processes().is_empty().then_some(()),
        );
    }
}

/// The params of every request for `method` the Bridge sent.
fn requests(log: &[Value], method: &str) -> Vec<Value> {
    log.iter()
        .filter(|m| m["method"] == method && m.get("id").is_some())
        .map(|m| m["params"].clone())
        .collect()
}

/// The Bridge's answers to server requests (messages without `method`).
fn answers(log: &[Value]) -> Vec<Value> {
    log.iter()
        .filter(|m| m.get("method").is_none())
        .cloned()
        .collect()
}

/// Index of the first request for `method` in `log`.
fn position(log: &[Value], method: &str) -> Option<usize> {
    log.iter()
        .position(|m| m["method"] == method && m.get("id").is_some())
}

/// No request the Bridge sent carried a native-mode override.
fn assert_native_mode(log: &[Value]) {
    for message in log {
        let Some(params) = message["params"].as_object() else {
            continue;
        };
        for key in OVERRIDE_KEYS {
            assert!(!params.contains_key(key), "{key} sent: {message}");
        }
    }
}

/// A `task.approval.respond` error code.
fn respond_error(bridge: &Daemon, task: &str, request: &str, decision: &str) -> String {
    bridge.err(
        "task.approval.respond",
        json!({ "task_id": task, "request_id": request, "decision": decision }),
    )
}

/// The JSON-RPC answer the Bridge sends for server request `id`.
fn rpc_result(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// The descriptor `runtime.list` gives a working mock.
fn available_codex(version: Option<&str>) -> Value {
    json!({
        "name": "codex",
        "available": version.is_some(),
        "version": version,
        "persistent_session": true,
        "live_steer": true,
        "interactive_approval": true,
        "interactive_question": true,
        "in_flight_recovery": "session-resume",
        "model_override": true,
        "model_discovery": "runtime_catalog",
    })
}

fn new_task(transport: Transport) {
    let rig = Rig::start(transport);
    let cwd = rig.cwd();

    // Probe and catalog, without a turn: the version comes from `--version`
    // (stdio) or the daemon's userAgent; model/list is paged and asks for
    // hidden models.
    let listed = rig.bridge.ok("runtime.list", json!({}));
    assert_eq!(
        listed,
        json!({ "runtimes": [available_codex(Some(MOCK_VERSION))] })
    );
    assert_eq!(CLI_VERSION, MOCK_VERSION);
    let probed: Vec<Value> = rig.log().iter().map(|m| m["method"].clone()).collect();
    match transport {
        // `codex --version` only: no app-server was started.
        Transport::Stdio => assert_eq!(probed, Vec::<Value>::new()),
        // A connection, initialized for its userAgent, and nothing else
        // (the `initialized` notification may be cut off by the close).
        Transport::Daemon => {
            assert_eq!(probed.first(), Some(&json!("initialize")), "{probed:?}");
            assert!(
                probed
                    .iter()
                    .all(|m| m == "initialize" || m == "initialized"),
                "{probed:?}"
            );
            // A successful probe is reused: listing again asks nothing.
            let again = rig.bridge.ok("runtime.list", json!({}));
            assert_eq!(again, listed);
            let initializes =
                |log: &[Value]| log.iter().filter(|m| m["method"] == "initialize").count();
            assert_eq!(initializes(&rig.log()), 1, "{:?}", rig.log());
        }
    }
    let catalog = rig
        .bridge
        .ok("runtime.models", json!({ "runtime": "codex" }));
    assert_eq!(catalog["runtime"], "codex", "{catalog}");
    assert_eq!(catalog["status"], "ok", "{catalog}");
    assert_eq!(catalog["scope"], "runtime_catalog", "{catalog}");
    assert_eq!(catalog["source"], "codex_app_server", "{catalog}");
    let models = catalog["models"].as_array().expect("models");
    let summary: Vec<Value> = models
        .iter()
        .map(|m| json!([m["id"], m["display_name"], m["is_default"], m["hidden"]]))
        .collect();
    assert_eq!(
        summary,
        vec![
            json!(["mock-model", "Mock Model", true, false]),
            json!(["mock-model-mini", "Mock Model Mini", false, true]),
        ]
    );
    assert_eq!(
        models[0]["reasoning"],
        json!({ "supported": ["low", "medium", "high"], "default": "medium" })
    );
    assert_eq!(models[0]["input_modalities"], json!(["text", "image"]));
    assert_eq!(models[1]["description"], "A hidden smaller scripted model");
    let log = rig.log();
    assert_eq!(
        requests(&log, "model/list"),
        vec![
            json!({ "limit": 64, "includeHidden": true }),
            json!({ "limit": 64, "includeHidden": true, "cursor": "mock-page-2" }),
        ]
    );
    for method in ["thread/start", "thread/resume", "turn/start"] {
        assert_eq!(requests(&log, method), Vec::<Value>::new(), "{method}");
    }

    // A new task: one thread, one turn, no override.
    let mark = rig.log().len();
    let task = rig.submit("hello codex");
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:hello codex", "{view}");
    assert_eq!(view["error_code"], Value::Null);
    let text = view.to_string();
    assert!(
        !text.contains("thread-1") && !text.contains("turn-1"),
        "{text}"
    );
    let log = rig.log_since(mark);
    assert_native_mode(&log);
    // The daemon transport's submit probe initializes a connection too.
    let initialized = requests(&log, "initialize");
    assert!(!initialized.is_empty(), "{log:?}");
    for params in initialized {
        assert_eq!(
            params,
            json!({
                "clientInfo": {
                    "name": "serverfs-agent-bridge",
                    "title": "ServerFS Agent Bridge",
                    "version": env!("CARGO_PKG_VERSION"),
                },
                "capabilities": { "experimentalApi": true },
            })
        );
    }
    assert!(
        log.iter()
            .any(|m| m == &json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} })),
        "{log:?}"
    );
    assert_eq!(requests(&log, "thread/start"), vec![json!({ "cwd": cwd })]);
    assert_eq!(
        requests(&log, "turn/start"),
        vec![json!({
            "threadId": "thread-1",
            "input": [{ "type": "text", "text": "hello codex" }],
            "cwd": cwd,
        })]
    );
    assert_eq!(requests(&log, "thread/resume"), Vec::<Value>::new());
    let types = rig.bridge.event_types(&task);
    assert_in_order(
        &types,
        &[
            "task.started",
            "turn.started",
            "item.started",
            "item.completed",
            "task.completed",
        ],
    );
    assert_eq!(
        rig.bridge.payloads(&task, "item.completed"),
        vec![
            json!({ "type": "agentMessage", "id": "msg-1", "text": "done:hello codex", "phase": null })
        ]
    );
    assert_eq!(
        rig.bridge.payloads(&task, "item.started"),
        vec![json!({ "type": "agentMessage", "id": "msg-1", "text": "", "phase": null })]
    );

    // A model override goes on thread/start of its own task only.
    let mark = rig.log().len();
    let task = rig.submit_with(json!({ "prompt": "pick a model", "model": "mock-model-mini" }));
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:pick a model");
    assert_eq!(view["requested_model"], "mock-model-mini");
    assert_eq!(
        requests(&rig.log_since(mark), "thread/start"),
        vec![json!({ "cwd": cwd, "model": "mock-model-mini" })]
    );
    let mark = rig.log().len();
    let task = rig.submit("no model again");
    rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(
        requests(&rig.log_since(mark), "thread/start"),
        vec![json!({ "cwd": cwd })]
    );
    rig.wait_workdir_free("three tasks");
}

fn continuation(transport: Transport) {
    let rig = Rig::start(transport);
    let cwd = rig.cwd();
    let first = rig.submit("first");
    assert_eq!(
        rig.bridge.wait_status(&first, "succeeded")["final_response"],
        "done:first"
    );

    let mark = rig.log().len();
    let second = rig.submit_with(json!({ "prompt": "second", "continue_from_task_id": first }));
    assert_ne!(second, first);
    let view = rig.bridge.wait_status(&second, "succeeded");
    assert_eq!(view["final_response"], "done:second");
    assert_eq!(view["continue_from_task_id"], first.as_str());
    let log = rig.log_since(mark);
    assert_native_mode(&log);
    assert_eq!(
        requests(&log, "thread/resume"),
        vec![json!({ "threadId": "thread-1", "cwd": cwd })]
    );
    assert_eq!(requests(&log, "thread/start"), Vec::<Value>::new());
    assert_eq!(
        requests(&log, "turn/start"),
        vec![json!({
            "threadId": "thread-1",
            "input": [{ "type": "text", "text": "second" }],
            "cwd": cwd,
        })]
    );
    // A new turn of the same thread (`turn-2` after `turn-1`).
    assert_eq!(
        rig.bridge.payloads(&second, "item.completed"),
        vec![
            json!({ "type": "agentMessage", "id": "msg-2", "text": "done:second", "phase": null })
        ]
    );
    assert_eq!(count(&rig.bridge.event_types(&second), "turn.started"), 1);

    // A continuation may pick a model for itself; the next one does not
    // inherit it.
    let mark = rig.log().len();
    let third = rig.submit_with(json!({
        "prompt": "third", "continue_from_task_id": second, "model": "mock-model-mini",
    }));
    rig.bridge.wait_status(&third, "succeeded");
    let fourth = rig.submit_with(json!({ "prompt": "fourth", "continue_from_task_id": third }));
    assert_eq!(
        rig.bridge.wait_status(&fourth, "succeeded")["final_response"],
        "done:fourth"
    );
    let log = rig.log_since(mark);
    assert_eq!(
        requests(&log, "thread/resume"),
        vec![
            json!({ "threadId": "thread-1", "cwd": cwd, "model": "mock-model-mini" }),
            json!({ "threadId": "thread-1", "cwd": cwd }),
        ]
    );
    assert_eq!(
        requests(&rig.log(), "thread/start").len(),
        1,
        "one thread in all"
    );
    assert_eq!(
        requests(&rig.log(), "turn/start").len(),
        4,
        "one turn per task"
    );
}

fn steer(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("steer me");
    rig.bridge.wait_event(&task, "turn.started");
    let sent = rig.bridge.ok(
        "task.message.send",
        json!({ "task_id": task, "message": "go left ✓" }),
    );
    assert_eq!(
        sent,
        json!({ "task_id": task, "accepted": true, "correlation_id": null })
    );
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "steered:go left ✓");
    let log = rig.log();
    assert_native_mode(&log);
    assert_eq!(
        requests(&log, "turn/steer"),
        vec![json!({
            "threadId": "thread-1",
            "input": [{ "type": "text", "text": "go left ✓" }],
            "expectedTurnId": "turn-1",
        })]
    );
    assert_eq!(requests(&log, "turn/interrupt"), Vec::<Value>::new());
    // Codex shows the steered text as a user message item of the turn.
    let items = rig.bridge.payloads(&task, "item.completed");
    assert_eq!(items[0], json!({ "type": "userMessage", "id": "user-1" }));
    assert_eq!(count(&rig.bridge.event_types(&task), "user.message"), 1);
}

fn cancel_interrupts_the_turn(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("wait for it");
    rig.bridge.wait_event(&task, "turn.started");
    assert_eq!(mcp_mutation(&rig.setup), Err("WORKDIR_BUSY"));
    let group = poll(WAIT, "the guard", || {
        guards(&rig.setup)
            .into_iter()
            .find(|(id, _)| *id == task)
            .map(|(_, pgid)| pgid)
    });
    match transport {
        // The Bridge-owned child's group is in the guard before it runs.
        Transport::Stdio => {
            let pgid = group.expect("the child's process group");
            assert!(!rig.mock_processes().is_empty());
            assert!(
                group_members(pgid)
                    .iter()
                    .any(|pid| runs_in_group(*pid, pgid))
            );
        }
        Transport::Daemon => assert_eq!(group, None, "the daemon is not the Bridge's"),
    }

    let cancelled = rig.bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled");
    rig.wait_workdir_free("a cancel");
    let view = rig.bridge.task(&task);
    assert_eq!(view["status"], "cancelled", "{view}");
    assert_eq!(view["error_code"], Value::Null, "{view}");
    assert_eq!(view["final_response"], Value::Null, "{view}");
    let log = rig.log();
    assert_eq!(
        requests(&log, "turn/interrupt"),
        vec![json!({ "threadId": "thread-1", "turnId": "turn-1" })]
    );
    if let Some(pgid) = group {
        poll(GONE_LIMIT, "the child's process group to go", || {
            let gone = Pid::from_raw(pgid)
                .is_none_or(|pid| test_kill_process_group(pid) == Err(Errno::SRCH));
            let stopped = group_members(pgid)
                .iter()
                .all(|pid| !runs_in_group(*pid, pgid));
            (gone || stopped).then_some(())
        });
        rig.wait_no_mock_process("a cancel");
    }
    let types = rig.bridge.event_types(&task);
    assert_eq!(count(&types, "task.cancelled"), 1, "{types:?}");

    // The workdir takes the next task.
    let next = rig.submit("after the cancel");
    assert_eq!(
        rig.bridge.wait_status(&next, "succeeded")["final_response"],
        "done:after the cancel"
    );
}

/// The pending approval of `task`, once presented, checked to be the
/// task's only pending request.
fn pending_approval(bridge: &Daemon, task: &str) -> Value {
    let pending = bridge.wait_pending(task);
    let view = bridge.task(task);
    assert_eq!(view["status"], "waiting_for_approval", "{view}");
    assert_eq!(view["pending_request_id"], pending["request_id"]);
    assert_eq!(pending["kind"], "approval");
    assert_eq!(pending["status"], "pending");
    pending
}

fn command_approval_decisions(transport: Transport) {
    let rig = Rig::start(transport);
    for (decision, native, status) in [
        ("approve_once", "accept", "succeeded"),
        ("approve_session", "acceptForSession", "succeeded"),
        ("deny", "decline", "succeeded"),
        ("cancel_task", "cancel", "cancelled"),
    ] {
        let mark = rig.log().len();
        let task = rig.submit("approval please");
        let pending = pending_approval(&rig.bridge, &task);
        let payload = &pending["payload"];
        assert_eq!(payload["category"], "command", "{payload}");
        assert_eq!(payload["title"], "Codex command approval");
        assert_eq!(payload["command_display"], "pytest -q");
        assert_eq!(payload["relative_cwd"], ".", "{payload}");
        assert_eq!(payload["reason"], "run tests");
        assert_eq!(
            payload["available_decisions"],
            json!(["approve_once", "approve_session", "deny", "cancel_task"])
        );
        // Nothing was answered while the human decides.
        assert_eq!(answers(&rig.log_since(mark)), Vec::<Value>::new());

        let request = request_id(&pending);
        rig.bridge.respond(&task, &request, decision).unwrap();
        let view = rig.bridge.wait_status(&task, status);
        // A cancelled task is terminal before its provider stops; the
        // provider's last messages are in once the workdir is free.
        rig.wait_workdir_free(decision);
        let log = rig.log_since(mark);
        assert_native_mode(&log);
        assert_eq!(
            answers(&log),
            vec![rpc_result(json!(0), json!({ "decision": native }))],
            "{decision}"
        );
        let resolved = rig.bridge.payloads(&task, "approval.resolved");
        assert_eq!(resolved.len(), 1, "{resolved:?}");
        assert_eq!(resolved[0]["decision"], decision);
        if decision == "cancel_task" {
            // The core cancels the task too; an interrupt may follow the
            // native `cancel` answer, never more than one.
            assert!(requests(&log, "turn/interrupt").len() <= 1, "{log:?}");
            assert_eq!(view["final_response"], Value::Null, "{view}");
        } else {
            assert_eq!(
                view["final_response"],
                format!("approval:{native}"),
                "{decision}"
            );
            assert_eq!(requests(&log, "turn/interrupt"), Vec::<Value>::new());
            // The command item the approval was about completed.
            let commands: Vec<Value> = rig
                .bridge
                .payloads(&task, "item.completed")
                .into_iter()
                .filter(|item| item["type"] == "commandExecution")
                .collect();
            let expected = if native.starts_with("accept") {
                "completed"
            } else {
                "declined"
            };
            assert_eq!(
                commands,
                vec![json!({
                    "type": "commandExecution", "id": "call_1", "command": "pytest -q",
                    "cwd": ".", "status": expected,
                })]
            );
        }
    }
}

fn object_shaped_decisions_are_not_offered(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("object-decisions");
    let pending = pending_approval(&rig.bridge, &task);
    // `acceptWithExecpolicyAmendment` (an object) is parsed, not offered.
    assert_eq!(
        pending["payload"]["available_decisions"],
        json!(["approve_once", "cancel_task"])
    );
    let request = request_id(&pending);
    for refused in ["deny", "approve_session"] {
        assert_eq!(
            respond_error(&rig.bridge, &task, &request, refused),
            "INVALID_APPROVAL_DECISION",
            "{refused}"
        );
    }
    assert_eq!(rig.bridge.task(&task)["status"], "waiting_for_approval");
    assert_eq!(answers(&rig.log()), Vec::<Value>::new());
    rig.bridge.respond(&task, &request, "approve_once").unwrap();
    let view = rig.bridge.wait_status(&task, "succeeded");
    // The mock renders an answer it did not offer as `not-offered:…`.
    assert_eq!(view["final_response"], "approval:accept");
    assert_eq!(
        answers(&rig.log()),
        vec![rpc_result(json!(0), json!({ "decision": "accept" }))]
    );
}

fn file_change_approvals(transport: Transport) {
    let rig = Rig::start(transport);
    // Without `availableDecisions`, the spec's default offer.
    for (prompt, path, decision, native, status) in [
        ("file-approval", ".", "approve_once", "accept", "succeeded"),
        ("file-approval", ".", "deny", "decline", "succeeded"),
        ("file-approval", ".", "cancel_task", "cancel", "cancelled"),
        (
            "file-outside",
            "<outside-workdir>",
            "approve_once",
            "accept",
            "succeeded",
        ),
    ] {
        let mark = rig.log().len();
        let task = rig.submit(prompt);
        let pending = pending_approval(&rig.bridge, &task);
        let payload = &pending["payload"];
        assert_eq!(payload["category"], "file_change", "{payload}");
        assert_eq!(payload["title"], "Codex file-change approval");
        assert_eq!(payload["reason"], "apply the patch");
        assert_eq!(
            payload["file_changes"],
            json!([{ "path": path }]),
            "{payload}"
        );
        assert_eq!(
            payload["available_decisions"],
            json!(["approve_once", "deny", "cancel_task"])
        );
        assert!(
            !payload
                .to_string()
                .contains(rig.setup.root().to_str().unwrap()),
            "{payload}"
        );
        rig.bridge
            .respond(&task, &request_id(&pending), decision)
            .unwrap();
        let view = rig.bridge.wait_status(&task, status);
        // A cancelled task is terminal before its provider stops; the
        // provider's last messages are in once the workdir is free.
        rig.wait_workdir_free(decision);
        if status == "succeeded" {
            assert_eq!(view["final_response"], format!("file:{native}"));
        }
        assert_eq!(
            answers(&rig.log_since(mark)),
            vec![rpc_result(json!(0), json!({ "decision": native }))],
            "{prompt} {decision}"
        );
    }
}

fn permission_approvals(transport: Transport) {
    let rig = Rig::start(transport);
    let cwd = rig.cwd();
    let native_file_system = json!({ "read": [cwd, "/etc"], "write": [cwd] });
    for (decision, granted, final_text, native) in [
        (
            "approve_session",
            Some(json!(["network"])),
            Some("permission:session:network"),
            json!({ "permissions": { "network": { "enabled": true } }, "scope": "session" }),
        ),
        (
            "approve_once",
            None,
            Some("permission:turn:fileSystem,network"),
            json!({
                "permissions": { "fileSystem": native_file_system, "network": { "enabled": true } },
                "scope": "turn",
            }),
        ),
        // An empty selection grants nothing (an absent one, above,
        // grants everything requested).
        (
            "approve_once",
            Some(json!([])),
            Some("permission:turn:"),
            json!({ "permissions": {}, "scope": "turn" }),
        ),
        (
            "deny",
            None,
            Some("permission:turn:"),
            json!({ "permissions": {}, "scope": "turn" }),
        ),
        (
            "cancel_task",
            None,
            None,
            json!({ "permissions": {}, "scope": "turn" }),
        ),
    ] {
        let mark = rig.log().len();
        let task = rig.submit("permission");
        let pending = pending_approval(&rig.bridge, &task);
        let payload = &pending["payload"];
        assert_eq!(payload["category"], "provider_permission", "{payload}");
        assert_eq!(payload["title"], "Codex permission request");
        assert_eq!(payload["reason"], "needs more access");
        assert_eq!(
            payload["available_decisions"],
            json!(["approve_once", "approve_session", "deny", "cancel_task"])
        );
        // Listed with the workdir relative and the system location `/etc`
        // as it is (`approval_paths` is informative by default); answered
        // with the native value.
        assert_eq!(
            payload["requested_permissions"],
            json!([
                {
                    "permission_id": "fileSystem",
                    "kind": "fileSystem",
                    "details": { "read": [".", "/etc"], "write": ["."] },
                },
                { "permission_id": "network", "kind": "network", "details": { "enabled": true } },
            ]),
            "{payload}"
        );
        let mut params = json!({
            "task_id": task, "request_id": request_id(&pending), "decision": decision,
        });
        if let Some(granted) = granted {
            params["granted_permission_ids"] = granted;
        }
        rig.bridge.ok("task.approval.respond", params);
        let status = if final_text.is_some() {
            "succeeded"
        } else {
            "cancelled"
        };
        let view = rig.bridge.wait_status(&task, status);
        // A cancelled task is terminal before its provider stops; the
        // provider's last messages are in once the workdir is free.
        rig.wait_workdir_free(decision);
        if let Some(text) = final_text {
            assert_eq!(view["final_response"], text, "{decision}");
        }
        assert_eq!(
            answers(&rig.log_since(mark)),
            vec![rpc_result(json!(0), native)],
            "{decision}"
        );
    }
}

fn question_round_trip(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("question");
    let pending = rig.bridge.wait_pending(&task);
    assert_eq!(rig.bridge.task(&task)["status"], "waiting_for_question");
    assert_eq!(pending["kind"], "question");
    let questions = &pending["payload"]["questions"];
    assert_eq!(questions.as_array().map(Vec::len), Some(1), "{questions}");
    let question = &questions[0];
    assert_eq!(question["question_id"], "q1");
    assert_eq!(question["prompt"], "Pick one");
    assert_eq!(question["multi_select"], false);
    assert_eq!(question["allow_free_text"], true);
    let options: Vec<Value> = question["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| json!([o["option_id"], o["label"], o["description"]]))
        .collect();
    assert_eq!(
        options,
        vec![
            json!(["opt_0_0", "A", "first"]),
            json!(["opt_0_1", "B", "second"]),
        ]
    );
    rig.bridge.ok(
        "task.question.answer",
        json!({
            "task_id": task,
            "request_id": request_id(&pending),
            "answers": [{ "question_id": "q1", "selected_option_ids": ["opt_0_1"], "text": "because" }],
        }),
    );
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "question:B,because");
    assert_eq!(
        answers(&rig.log()),
        vec![rpc_result(
            json!(0),
            json!({ "answers": { "q1": { "answers": ["B", "because"] } } })
        )]
    );
    let types = rig.bridge.event_types(&task);
    assert_in_order(
        &types,
        &["question.requested", "question.answered", "task.completed"],
    );
}

fn secret_question_is_refused(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("secret-question");
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "request-error:-32000");
    assert_eq!(
        answers(&rig.log()),
        vec![rpc_error(
            json!(0),
            -32000,
            "secret questions are not supported"
        )]
    );
    // A secret never reaches the task store or a client.
    let types = rig.bridge.event_types(&task);
    assert_eq!(count(&types, "question.requested"), 0, "{types:?}");
    assert_eq!(view["pending_request"], Value::Null);
}

fn auto_resolved_request_is_never_answered(transport: Transport) {
    // The server withdraws its request in the same breath as it sends it:
    // the Bridge may not even have stored it. Whatever it stored goes
    // stale, and Codex gets no answer.
    let rig = Rig::start(transport);
    let task = rig.submit("auto-resolve");
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "auto-done");
    assert_eq!(view["pending_request"], Value::Null);
    assert_eq!(answers(&rig.log()), Vec::<Value>::new());
    let types = rig.bridge.event_types(&task);
    assert_eq!(count(&types, "approval.resolved"), 0, "{types:?}");
    assert_eq!(
        count(&types, "interaction.stale"),
        count(&types, "approval.requested"),
        "{types:?}"
    );
}

fn server_resolved_request_turns_stale(transport: Transport) {
    // `slow-resolve`: presented first, withdrawn by Codex SLOW_DELAY later.
    let rig = Rig::start(transport);
    let task = rig.submit("slow-resolve");
    let pending = pending_approval(&rig.bridge, &task);
    let request = request_id(&pending);
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "auto-done");
    assert_eq!(view["pending_request"], Value::Null);
    assert_eq!(
        respond_error(&rig.bridge, &task, &request, "approve_once"),
        "REQUEST_STALE"
    );
    let types = rig.bridge.event_types(&task);
    assert_in_order(
        &types,
        &["approval.requested", "interaction.stale", "task.completed"],
    );
    assert_eq!(count(&types, "interaction.stale"), 1, "{types:?}");
    assert_eq!(count(&types, "approval.resolved"), 0, "{types:?}");
    assert_eq!(
        rig.bridge.payloads(&task, "interaction.stale"),
        vec![json!({ "request_id": request })]
    );
    assert_eq!(answers(&rig.log()), Vec::<Value>::new(), "never answered");
}

fn unsupported_request_is_answered_at_once(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("unsupported");
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:unsupported");
    assert_eq!(
        answers(&rig.log()),
        vec![rpc_error(json!(0), -32601, "unsupported request")]
    );
    let types = rig.bridge.event_types(&task);
    assert_eq!(count(&types, "approval.requested"), 0, "{types:?}");
    assert_eq!(count(&types, "question.requested"), 0, "{types:?}");
}

fn two_approvals_are_queued(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("two-approvals");
    let first = pending_approval(&rig.bridge, &task);
    let first_id = request_id(&first);
    // The second waits unseen behind the first.
    std::thread::sleep(Duration::from_millis(300));
    let view = rig.bridge.task(&task);
    assert_eq!(view["pending_request_id"], first_id.as_str(), "{view}");
    let types = rig.bridge.event_types(&task);
    assert_eq!(count(&types, "approval.requested"), 1, "{types:?}");
    assert_eq!(answers(&rig.log()), Vec::<Value>::new());

    rig.bridge
        .respond(&task, &first_id, "approve_once")
        .unwrap();
    let second = rig.bridge.wait_task(&task, "the second approval", |view| {
        view["pending_request"].is_object() && view["pending_request_id"] != first_id.as_str()
    })["pending_request"]
        .clone();
    let second_id = request_id(&second);
    assert_eq!(second["payload"]["command_display"], "pytest -q");
    // Codex gets exactly the first answer so far (the core presents the
    // second as it resolves the first, maybe before the answer is out).
    let so_far = poll(WAIT, "the first answer to reach the mock", || {
        let so_far = answers(&rig.log());
        (!so_far.is_empty()).then_some(so_far)
    });
    assert_eq!(so_far.len(), 1, "{so_far:?}");
    assert_eq!(so_far[0]["result"], json!({ "decision": "accept" }));
    let first_native = so_far[0]["id"].clone();
    rig.bridge.respond(&task, &second_id, "deny").unwrap();
    let view = rig.bridge.wait_status(&task, "succeeded");

    // Which native request was presented first is the Bridge's race; the
    // mock reports the answers in its own send order (ids 0, 1).
    let all = answers(&rig.log());
    let mut expected = vec![
        rpc_result(first_native.clone(), json!({ "decision": "accept" })),
        rpc_result(
            json!(if first_native == json!(0) { 1 } else { 0 }),
            json!({ "decision": "decline" }),
        ),
    ];
    assert_eq!(all, expected);
    expected.sort_by_key(|answer| answer["id"].as_i64());
    let decisions: Vec<&str> = expected
        .iter()
        .map(|answer| answer["result"]["decision"].as_str().unwrap())
        .collect();
    assert_eq!(
        view["final_response"],
        format!("approvals:{}", decisions.join(","))
    );
    let types = rig.bridge.event_types(&task);
    assert_eq!(count(&types, "approval.requested"), 2, "{types:?}");
    assert_eq!(count(&types, "approval.resolved"), 2, "{types:?}");
}

fn string_request_ids_are_echoed(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("string-id");
    let pending = pending_approval(&rig.bridge, &task);
    rig.bridge
        .respond(&task, &request_id(&pending), "approve_once")
        .unwrap();
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "approval:accept");
    assert_eq!(
        answers(&rig.log()),
        vec![rpc_result(json!("req-7"), json!({ "decision": "accept" }))]
    );
}

fn cancel_before_the_turn_id_exists(transport: Transport) {
    // `slow-start`: Codex answers turn/start SLOW_DELAY late; the cancel
    // lands while the Bridge does not know the turn id yet.
    let rig = Rig::start(transport);
    let task = rig.submit("slow-start");
    let sent = poll(WAIT, "turn/start to reach the mock", || {
        position(&rig.log(), "turn/start").map(|_| Instant::now())
    });
    let cancelled = rig.bridge.ok("task.cancel", json!({ "task_id": task }));
    assert!(
        sent.elapsed() < SLOW_DELAY,
        "the cancel came after turn/start was answered; nothing was tested"
    );
    assert_eq!(cancelled["status"], "cancelled");
    let types = rig.bridge.event_types(&task);
    assert_eq!(count(&types, "turn.started"), 0, "{types:?}");

    // Once the turn id arrives, the turn is interrupted at once.
    rig.wait_workdir_free("a cancel before the turn id");
    let log = rig.log();
    assert_eq!(requests(&log, "turn/start").len(), 1, "{log:?}");
    assert_eq!(
        requests(&log, "turn/interrupt"),
        vec![json!({ "threadId": "thread-1", "turnId": "turn-1" })]
    );
    assert!(position(&log, "turn/start") < position(&log, "turn/interrupt"));
    let view = rig.bridge.task(&task);
    assert_eq!(view["status"], "cancelled", "{view}");
    assert_eq!(view["final_response"], Value::Null, "{view}");
    if transport == Transport::Stdio {
        rig.wait_no_mock_process("a cancel before the turn id");
    }
}

fn transport_drop_mid_turn(transport: Transport) {
    let rig = Rig::start(transport);
    let started = Instant::now();
    let task = rig.submit("drop");
    let view = rig.bridge.wait_terminal(&task);
    assert_eq!(view["status"], "failed", "{view}");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_DISCONNECTED", "{view}");
    // Unnoticed, the loss would hold the task until its deadline (hours);
    // the bound covers start-up and the 2 s group settle on a slow machine.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the loss took {:?} to notice",
        started.elapsed()
    );
    let types = rig.bridge.event_types(&task);
    assert_in_order(&types, &["turn.started", "task.failed"]);
    match transport {
        // The Bridge's own child died with the connection: the workdir is
        // free.
        Transport::Stdio => {
            rig.wait_workdir_free("a dropped connection");
            rig.wait_no_mock_process("a dropped connection");
        }
        // A lost connection proves nothing about the daemon, which still
        // runs the turn: the workdir stays blocked until the turn ends
        // there, and the next writer's reconciliation proves it.
        Transport::Daemon => {
            assert_eq!(guards(&rig.setup), vec![(task.clone(), None)]);
            assert_eq!(mcp_mutation(&rig.setup), Err("WORKDIR_RECOVERY_REQUIRED"));
            let mock = rig.mock.as_ref().expect("the mock daemon");
            assert_eq!(mock.state().interrupt_open_turns(), 1);
        }
    }
    // The runtime is still usable.
    let next = rig.submit("and again");
    rig.bridge.wait_status(&next, "succeeded");
}

fn failed_turn(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("fail");
    let view = rig.bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_ERROR", "{view}");
    assert_eq!(view["error_message"], "mock failure", "{view}");
    assert_eq!(
        rig.bridge.payloads(&task, "provider.error"),
        vec![json!({ "message": "model overloaded", "will_retry": true })]
    );
    let types = rig.bridge.event_types(&task);
    assert_in_order(&types, &["turn.started", "provider.error", "task.failed"]);
    rig.wait_workdir_free("a failed turn");
}

fn noise_is_ignored(transport: Transport) {
    let rig = Rig::start(transport);
    let task = rig.submit("noise");
    let view = rig.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:noise");
    let events = rig.bridge.events(&task);
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains("ignore me"), "another turn's item: {text}");
    assert!(!text.contains("mock warning"), "{text}");
    assert_eq!(
        rig.bridge.payloads(&task, "item.completed"),
        vec![json!({ "type": "agentMessage", "id": "msg-1", "text": "done:noise", "phase": null })]
    );
    assert_eq!(answers(&rig.log()), Vec::<Value>::new());
}

fn provider_errors_lose_credentials(transport: Transport) {
    // `leaky-error`: a proxy URL with userinfo and a bearer token in the
    // `error` notification, an API key in the turn's error.
    let rig = Rig::start(transport);
    let task = rig.submit("leaky-error");
    let view = rig.bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_ERROR", "{view}");
    assert_eq!(
        view["error_message"], "invalid api key <redacted>",
        "{view}"
    );
    assert_eq!(
        rig.bridge.payloads(&task, "provider.error"),
        vec![json!({
            "message": "proxy http://<redacted>@proxy.internal:3128 refused \
                        Authorization: Bearer <redacted>",
            "will_retry": true,
        })]
    );
    rig.wait_workdir_free("a failed turn");
}

fn non_json_lines_are_skipped(transport: Transport) {
    // `garbage`: a line (stdio) or text frame (daemon) that is not JSON in
    // the middle of the turn.
    let rig = Rig::start(transport);
    let task = rig.submit("garbage");
    let view = rig.bridge.wait_terminal(&task);
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["final_response"], "done:garbage", "{view}");
}

fn object_only_decisions_are_refused_at_once(transport: Transport) {
    // Every decision Codex offers is object-shaped: nothing can be
    // presented, so the request is refused without asking anyone, and the
    // turn goes on.
    let rig = Rig::start(transport);
    let task = rig.submit("object-only-decisions");
    let view = rig.bridge.wait_terminal(&task);
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["final_response"], "request-error:-32000", "{view}");
    assert_eq!(
        answers(&rig.log()),
        vec![rpc_error(
            json!(0),
            -32000,
            "no decision the Bridge can offer"
        )]
    );
    let types = rig.bridge.event_types(&task);
    assert_eq!(count(&types, "approval.requested"), 0, "{types:?}");
}

fn huge_items_are_bounded(transport: Transport) {
    // `huge-item`: an 18 MB command line (one message above tungstenite's
    // default 16 MiB frame limit) and a file change of 200 KiB.
    let rig = Rig::start(transport);
    let task = rig.submit("huge-item");
    let view = rig.bridge.wait_terminal(&task);
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["final_response"], "done:huge-item", "{view}");
    const { assert!(HUGE_COMMAND_BYTES > 16 << 20) };
    let items = rig.bridge.payloads(&task, "item.completed");
    let command = items
        .iter()
        .find(|item| item["id"] == "call_huge")
        .expect("the command item");
    // Cut at 16 KiB, on a character boundary (`€` is three bytes).
    assert_eq!(
        command,
        &json!({
            "type": "commandExecution", "id": "call_huge", "command": "€".repeat(16 * 1024 / 3),
            "cwd": ".", "status": "completed", "truncated": true,
        })
    );
    let patch = items
        .iter()
        .find(|item| item["id"] == "patch_huge")
        .expect("the file change item");
    assert_eq!(
        patch,
        &json!({
            "type": "fileChange", "id": "patch_huge", "status": "completed",
            "changes": { "count": HUGE_CHANGE_COUNT, "truncated": true }, "truncated": true,
        })
    );
}

fn cancel_while_the_thread_starts(transport: Transport) {
    // The model name makes the mock answer thread/start SLOW_THREAD_DELAY
    // late; a cancel meanwhile ends the task without waiting for it.
    let rig = Rig::start(transport);
    let task = rig.submit_with(json!({ "prompt": "hello", "model": SLOW_THREAD_MODEL }));
    let sent = poll(WAIT, "thread/start to reach the mock", || {
        position(&rig.log(), "thread/start").map(|_| Instant::now())
    });
    let cancelled = rig.bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled");
    rig.wait_workdir_free("a cancel while the thread starts");
    assert!(
        sent.elapsed() < SLOW_THREAD_DELAY / 2,
        "the workdir was held {:?} after thread/start: the turn waited for it",
        sent.elapsed()
    );
    assert_eq!(requests(&rig.log(), "turn/start"), Vec::<Value>::new());
    if transport == Transport::Stdio {
        rig.wait_no_mock_process("a cancel while the thread starts");
    }
    let view = rig.bridge.task(&task);
    assert_eq!(view["status"], "cancelled", "{view}");
    // The runtime takes the next task.
    let next = rig.submit("after the cancel");
    assert_eq!(
        rig.bridge.wait_status(&next, "succeeded")["final_response"],
        "done:after the cancel"
    );
}

/// Starts a `wait` turn and SIGKILLs the Bridge in the middle of it;
/// returns the task id and the guard's recorded process group.
fn crash_mid_turn(rig: &mut Rig) -> (String, Option<i32>) {
    let task = rig.submit("wait");
    rig.bridge.wait_event(&task, "turn.started");
    let group = poll(WAIT, "the guard", || {
        guards(&rig.setup)
            .into_iter()
            .find(|(id, _)| *id == task)
            .map(|(_, pgid)| pgid)
    });
    if group.is_some() {
        assert!(
            !rig.mock_processes().is_empty(),
            "the app-server child runs"
        );
    }
    rig.bridge.kill();
    assert_eq!(guards(&rig.setup), vec![(task.clone(), group)]);
    assert_eq!(mcp_mutation(&rig.setup), Err("WORKDIR_RECOVERY_REQUIRED"));
    (task, group)
}

/// Starts the Bridge again; its first answer proves start-up
/// reconciliation is over.
fn restart(rig: &mut Rig) {
    rig.bridge = rig.setup.start();
    rig.bridge.ok("runtime.list", json!({}));
}

fn assert_restarted(rig: &Rig, task: &str) {
    let view = rig.bridge.task(task);
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "BRIDGE_RESTARTED", "{view}");
    let types = rig.bridge.event_types(task);
    assert_eq!(count(&types, "turn.started"), 1, "never re-run: {types:?}");
}

#[test]
fn reconcile_stdio_after_a_crash() {
    // The orphaned app-server loses its stdin with the Bridge and exits;
    // thread/read from a fresh one finds the thread resumable and not
    // running, and the recorded group is gone: the guard goes.
    let mut rig = Rig::start(Transport::Stdio);
    let (task, group) = crash_mid_turn(&mut rig);
    let pgid = group.expect("the child's process group");
    rig.wait_no_mock_process("the Bridge's death");
    poll(GONE_LIMIT, "the orphan's process group to go", || {
        group_members(pgid)
            .iter()
            .all(|pid| !runs_in_group(*pid, pgid))
            .then_some(())
    });

    let mark = rig.log().len();
    restart(&mut rig);
    assert_restarted(&rig, &task);
    assert_eq!(
        rig.bridge.payloads(&task, "task.reconciled"),
        vec![json!({
            "status": "SESSION_RESUMABLE",
            "provider_active": false,
            "error_code": "BRIDGE_RESTARTED",
        })]
    );
    assert_eq!(
        rig.bridge.payloads(&task, "runtime.reconcile_finished"),
        vec![
            json!({ "runtime": "codex", "status": "SESSION_RESUMABLE", "provider_active": false })
        ]
    );
    assert_eq!(
        requests(&rig.log_since(mark), "thread/read"),
        vec![json!({ "threadId": "thread-1", "includeTurns": true })]
    );
    assert_eq!(guards(&rig.setup), vec![]);
    assert_eq!(mcp_mutation(&rig.setup), Ok(()));

    // The interrupted task can be continued on its thread.
    let next = rig.submit_with(json!({ "prompt": "go on", "continue_from_task_id": task }));
    assert_eq!(
        rig.bridge.wait_status(&next, "succeeded")["final_response"],
        "done:go on"
    );
    assert_eq!(requests(&rig.log(), "thread/start").len(), 1);
}

#[test]
fn reconcile_daemon_keeps_the_guard_while_the_turn_runs() {
    // The managed daemon outlives the Bridge and still runs the turn: the
    // restart reports it active and keeps the guard until the turn ends.
    let mut rig = Rig::start(Transport::Daemon);
    let (task, group) = crash_mid_turn(&mut rig);
    assert_eq!(group, None);

    restart(&mut rig);
    assert_restarted(&rig, &task);
    assert_eq!(
        rig.bridge.payloads(&task, "task.reconciled"),
        vec![json!({
            "status": "UNKNOWN",
            "provider_active": true,
            "error_code": "BRIDGE_RESTARTED",
        })]
    );
    assert_eq!(guards(&rig.setup), vec![(task.clone(), None)]);
    assert_eq!(mcp_mutation(&rig.setup), Err("WORKDIR_RECOVERY_REQUIRED"));
    let refused = rig
        .bridge
        .submit_with(json!({ "runtime": "codex", "prompt": "too early" }))
        .expect_err("a writer while the turn runs");
    assert_eq!(refused.code, "WORKDIR_RECOVERY_REQUIRED");
    assert_eq!(guards(&rig.setup), vec![(task.clone(), None)]);

    // The turn ends in the daemon; the next writer's lazy reconciliation
    // proves it and clears the guard.
    let mock = rig.mock.as_ref().expect("the mock daemon");
    assert_eq!(mock.state().interrupt_open_turns(), 1);
    let next = rig.submit("after the turn ended");
    assert_eq!(
        rig.bridge.wait_status(&next, "succeeded")["final_response"],
        "done:after the turn ended"
    );
    let reconciled = rig.bridge.payloads(&task, "task.reconciled");
    assert_eq!(
        reconciled.last(),
        Some(&json!({ "status": "UNKNOWN", "provider_active": false })),
        "{reconciled:?}"
    );
    assert_restarted(&rig, &task);
    rig.wait_workdir_free("the next task");
}

/// Stops a daemon started through `mock-codex app-server daemon start`
/// when dropped, so a failing test leaves no daemon behind.
struct StopDaemon<'a> {
    home: &'a Path,
}

impl StopDaemon<'_> {
    fn stop(&self) -> std::process::Output {
        Command::new(mock_codex::binary())
            .args(["app-server", "daemon", "stop"])
            .env("CODEX_HOME", self.home)
            .output()
            .expect("run mock-codex app-server daemon stop")
    }
}

impl Drop for StopDaemon<'_> {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[test]
fn autostart_starts_the_daemon_for_a_task() {
    // The mock's `daemon start` prints its status with `println!`, as
    // Codex does: a Bridge that closed the pipe unread would see it exit
    // with status 101 although the daemon started.
    let (setup, home) = codex_setup(Transport::Daemon);
    let setup = setup.agent("codex_autostart", "true");
    let stopper = StopDaemon { home: &home };
    let bridge = setup.start();
    let socket = control_socket(&home);

    // Probing never starts the daemon; the CLI's own version answers.
    let listed = bridge.ok("runtime.list", json!({}));
    assert_eq!(
        listed,
        json!({ "runtimes": [available_codex(Some(MOCK_VERSION))] })
    );
    assert!(!socket.exists(), "a probe started the daemon");

    let task = bridge.wait_submit(json!({ "runtime": "codex", "prompt": "wake up" }));
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:wake up");
    assert!(socket.exists(), "the daemon was not started");
    let log = std::fs::read_to_string(home.join(MESSAGE_LOG_FILE)).expect("the daemon's log");
    assert!(log.contains(r#""method":"turn/start""#), "{log}");
    // Now it runs, the probe reads its userAgent.
    assert_eq!(
        bridge.ok("runtime.list", json!({})),
        json!({ "runtimes": [available_codex(Some(MOCK_VERSION))] })
    );
    drop(bridge);

    let stopped = stopper.stop();
    assert!(stopped.status.success(), "{stopped:?}");
    assert!(
        String::from_utf8_lossy(&stopped.stdout).contains(r#""status":"stopped""#),
        "{stopped:?}"
    );
    assert!(!socket.exists());
}

#[test]
fn a_failing_autostart_fails_the_task_quickly() {
    // `daemon start` cannot create its control directory.
    let (setup, home) = codex_setup(Transport::Daemon);
    let setup = setup.agent("codex_autostart", "true");
    std::fs::write(home.join("app-server-control"), "not a directory").unwrap();
    let _stopper = StopDaemon { home: &home };
    let bridge = setup.start();
    let started = Instant::now();
    let task = bridge.wait_submit(json!({ "runtime": "codex", "prompt": "wake up" }));
    let view = bridge.wait_terminal(&task);
    assert_eq!(view["status"], "failed", "{view}");
    assert_eq!(view["error_code"], "AGENT_RUNTIME_NOT_READY", "{view}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let lease_free = poll(WAIT, "the workdir to be free", || {
        (mcp_mutation(&setup).is_ok() && guards(&setup).is_empty()).then_some(true)
    });
    assert!(lease_free);
}

#[test]
fn a_daemon_that_is_down_is_unavailable_without_autostart() {
    let (setup, home) = codex_setup(Transport::Daemon);
    let bridge = setup.start();
    assert_eq!(
        bridge.ok("runtime.list", json!({})),
        json!({ "runtimes": [available_codex(None)] })
    );
    let catalog = bridge.ok("runtime.models", json!({ "runtime": "codex" }));
    assert_eq!(catalog["status"], "unavailable", "{catalog}");
    assert_eq!(catalog["models"], json!([]), "{catalog}");
    let started = Instant::now();
    let refused = bridge
        .submit_with(json!({ "runtime": "codex", "prompt": "anyone there?" }))
        .expect_err("a submit without a daemon");
    assert_eq!(refused.code, "AGENT_RUNTIME_UNAVAILABLE", "{refused}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    // Nothing was started, nothing was written.
    assert!(!control_socket(&home).exists());
    assert!(!home.join(MESSAGE_LOG_FILE).exists());
    assert_eq!(guards(&setup), vec![]);
    assert_eq!(mcp_mutation(&setup), Ok(()));
}
