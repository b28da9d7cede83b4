//! The turn loop against the in-process mock App Server
//! ([`MockCodexDaemon`], daemon transport): what a dropped or cancelled
//! turn leaves behind, how a shutdown ends a turn, and what reaches
//! clients of provider errors and large items.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serverfs_agent_runtime::bounds::{MAX_ITEM_TEXT_BYTES, json_len};
use serverfs_agent_runtime::jsonrpc::RpcFailure;
use serverfs_agent_runtime::turns::Stop;
use serverfs_agent_runtime::{ProxyPolicy, TurnStatus, scrub_credentials};
use serverfs_protocol::bridge::EventPayload;
use serverfs_testkit::host::{RecordingHost, Unscripted};
use serverfs_testkit::mock_codex::{
    LEAKY_NOTIFICATION, LEAKY_TURN_ERROR, MockCodexDaemon, SLOW_THREAD_DELAY, SLOW_THREAD_MODEL,
};

use super::*;
use crate::connect::CallFailure;
use crate::turn::{UNKNOWN_THREAD, item_summary, resume_failed};
use crate::wire::Item;

const TASK: &str = "agt_test";
/// Bounds every wait on the mock.
const WAIT: Duration = Duration::from_secs(10);

/// A host that records events and keeps approvals waiting until the
/// adapter drops them.
fn holding_host() -> RecordingHost {
    RecordingHost::new(Unscripted::Hold)
}

/// A Codex adapter on the daemon transport, its mock daemon and a workdir.
struct Rig {
    adapter: Arc<CodexAdapter>,
    daemon: MockCodexDaemon,
    cwd: PathBuf,
    _dir: tempfile::TempDir,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let cwd = dir.path().join("work");
    std::fs::create_dir(&home).unwrap();
    std::fs::create_dir(&cwd).unwrap();
    let config = CodexConfig {
        // Never run: the daemon transport without autostart starts nothing.
        bin: PathBuf::from("/nonexistent/codex"),
        home,
        transport: CodexTransport::Daemon { autostart: false },
        request_timeout: WAIT,
        proxy: ProxyPolicy::disabled(),
        env_passthrough: Vec::new(),
    };
    let daemon = MockCodexDaemon::start(config.control_socket()).unwrap();
    Rig {
        adapter: Arc::new(CodexAdapter::new(config)),
        daemon,
        cwd,
        _dir: dir,
    }
}

impl Rig {
    /// Runs a turn of `prompt` on its own task.
    fn run(
        &self,
        prompt: &str,
        model: Option<&str>,
        host: &Arc<RecordingHost>,
    ) -> tokio::task::JoinHandle<TurnOutcome> {
        let ctx = TaskContext {
            task_id: TASK.to_owned(),
            cwd: serverfs_agent_runtime::WorkingDir::open_trusted(&self.cwd).unwrap(),
            profile: AgentProfile::WorkspaceWrite,
            prompt: prompt.to_owned(),
            model: model.map(str::to_owned),
            continue_native_session_id: None,
            deadline: None,
        };
        let adapter = Arc::clone(&self.adapter);
        let host: Arc<dyn Host> = Arc::clone(host) as Arc<dyn Host>;
        tokio::spawn(async move { adapter.run(ctx, host).await })
    }

    /// The params of every request for `method` the mock received.
    fn requests(&self, method: &str) -> Vec<Value> {
        self.daemon
            .messages()
            .into_iter()
            .filter(|m| m["method"] == method && m.get("id").is_some())
            .map(|m| m["params"].clone())
            .collect()
    }

    /// Waits until the mock received a request for `method`.
    async fn wait_request(&self, method: &str) {
        let asked = Instant::now();
        while self.requests(method).is_empty() {
            assert!(asked.elapsed() < WAIT, "{method} never reached the mock");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until the turn of [`TASK`] is steerable (its id is known).
    async fn wait_turn_handle(&self) -> Arc<ActiveTurn<TurnHandleSlot>> {
        let asked = Instant::now();
        loop {
            if let Ok(active) = self.adapter.turns.active(TASK)
                && active.state().borrow().is_some()
            {
                return active;
            }
            assert!(asked.elapsed() < WAIT, "the turn never started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_turn_leaves_no_registration_connection_or_handler() {
    let rig = rig();
    let host = Arc::new(holding_host());
    let turn = rig.run("approval please", None, &host);
    let active = rig.wait_turn_handle().await;
    let asked = Instant::now();
    let approval = loop {
        if let Some(approval) = host.take_held() {
            break approval;
        }
        assert!(
            asked.elapsed() < WAIT,
            "the approval never reached the host"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };

    // What the runner does once its bounded wait is over.
    turn.abort();
    assert!(turn.await.unwrap_err().is_cancelled());

    assert!(
        rig.adapter.turns.active(TASK).is_err(),
        "registration leaked"
    );
    assert!(
        active.state().borrow().is_none(),
        "the turn handle (and its connection) leaked"
    );
    // The handler serving the approval went with the turn: its wait for
    // the human was dropped, which withdraws the interaction.
    let withdrawn = tokio::time::timeout(WAIT, approval).await;
    assert!(
        matches!(withdrawn, Ok(Err(_))),
        "the approval handler outlived the turn"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_the_thread_starts_ends_the_turn_at_once() {
    let rig = rig();
    let host = Arc::new(holding_host());
    let turn = rig.run("hello", Some(SLOW_THREAD_MODEL), &host);
    rig.wait_request("thread/start").await;
    rig.adapter.cancel(TASK).await;
    let outcome = tokio::time::timeout(SLOW_THREAD_DELAY / 2, turn)
        .await
        .expect("the turn waited for thread/start after the cancel")
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_eq!(rig.requests("turn/start"), Vec::<Value>::new());
    assert!(rig.adapter.turns.active(TASK).is_err());
}

/// Runs a `wait` turn, tells it `stops` in order once its id is known
/// (no await between them yields to the turn on a one-thread runtime),
/// and returns its outcome, checking that Codex was interrupted once.
async fn stopped_wait_turn(stops: &[Stop]) -> TurnOutcome {
    let rig = rig();
    let host = Arc::new(holding_host());
    let turn = rig.run("wait", None, &host);
    rig.wait_turn_handle().await;
    for stop in stops {
        match stop {
            Stop::Cancelled => rig.adapter.cancel(TASK).await,
            Stop::Closed => rig.adapter.close().await,
        }
    }
    let outcome = tokio::time::timeout(WAIT, turn).await.unwrap().unwrap();
    assert_eq!(
        rig.requests("turn/interrupt"),
        vec![json!({ "threadId": "thread-1", "turnId": "turn-1" })]
    );
    assert_eq!(
        outcome.native,
        NativeIds {
            session_id: Some("thread-1".to_owned()),
            turn_id: Some("turn-1".to_owned()),
        }
    );
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_adapter_interrupts_a_turn_rather_than_cancelling_it() {
    let outcome = stopped_wait_turn(&[Stop::Closed]).await;
    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert_eq!(outcome.final_text, "the codex runtime was closed");
}

/// Under the `Stop` rule the first reason wins: a user's cancel that a
/// shutdown follows before the turn has ended ends it `Cancelled`, not
/// `Interrupted`. (One runtime thread: the turn cannot run between the
/// two calls, so both reasons arrive before it looks.)
#[tokio::test]
async fn a_cancel_followed_by_a_shutdown_ends_the_turn_cancelled() {
    let outcome = stopped_wait_turn(&[Stop::Cancelled, Stop::Closed]).await;
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_eq!(outcome.final_text, "the turn was cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_id_that_cannot_be_recorded_interrupts_the_turn() {
    let rig = rig();
    let host = Arc::new(holding_host().failing_turn_ids());
    let outcome = tokio::time::timeout(WAIT, rig.run("wait", None, &host))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome.status,
        TurnStatus::Failed {
            code: BridgeErrorCode::AgentResultStorageError
        }
    );
    assert_eq!(
        rig.requests("turn/interrupt"),
        vec![json!({ "threadId": "thread-1", "turnId": "turn-1" })]
    );
    assert_eq!(rig.daemon.state().interrupt_open_turns(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_error_text_loses_its_credentials() {
    let rig = rig();
    let host = Arc::new(holding_host());
    let outcome = tokio::time::timeout(WAIT, rig.run("leaky-error", None, &host))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome.status,
        TurnStatus::Failed {
            code: BridgeErrorCode::AgentProviderError
        }
    );
    assert_eq!(outcome.final_text, scrub_credentials(LEAKY_TURN_ERROR));
    assert_eq!(outcome.final_text, "invalid api key <redacted>");
    let errors: Vec<EventPayload> = host
        .events()
        .iter()
        .filter(|event| matches!(event, EventPayload::ProviderError { .. }))
        .cloned()
        .collect();
    assert_eq!(
        errors,
        vec![EventPayload::ProviderError {
            message: "proxy http://<redacted>@proxy.internal:3128 refused \
                      Authorization: Bearer <redacted>"
                .to_owned(),
            will_retry: true,
        }]
    );
    assert_ne!(scrub_credentials(LEAKY_NOTIFICATION), LEAKY_NOTIFICATION);
}

#[test]
fn only_an_unknown_thread_makes_a_session_not_resumable() {
    let error = |code| {
        CallFailure::Rpc(RpcFailure::Error {
            code,
            message: "no rollout found for thread id t".to_owned(),
        })
    };
    let code = |failure: CallFailure| resume_failed(&failure).code;
    assert_eq!(
        code(error(UNKNOWN_THREAD)),
        BridgeErrorCode::AgentSessionNotResumable
    );
    assert_eq!(code(error(-32602)), BridgeErrorCode::AgentProviderError);
    assert_eq!(code(error(-32603)), BridgeErrorCode::AgentProviderError);
    assert_eq!(
        code(CallFailure::Rpc(RpcFailure::Timeout)),
        BridgeErrorCode::AgentProviderDisconnected
    );
    assert_eq!(
        code(CallFailure::Rpc(RpcFailure::Closed)),
        BridgeErrorCode::AgentProviderDisconnected
    );
}

fn item(value: Value) -> Item {
    serde_json::from_value(value).unwrap()
}

#[test]
fn item_summaries_are_bounded() {
    // Small items pass whole, without a marker.
    let small = json!({ "type": "agentMessage", "id": "m", "text": "hi", "phase": null });
    assert_eq!(
        Value::Object(item_summary(&item(small))),
        json!({ "type": "agentMessage", "id": "m", "text": "hi", "phase": null })
    );

    // A long string is cut on a character boundary (`€` is three bytes).
    let long = "€".repeat(10_000);
    let command = json!({
        "type": "commandExecution", "id": "c", "command": long, "cwd": long,
        "status": { "type": "completed" }, "exitCode": 0,
    });
    let summary = item_summary(&item(command));
    let cut = summary["command"].as_str().unwrap();
    assert!(cut.len() <= MAX_ITEM_TEXT_BYTES && cut.len() > MAX_ITEM_TEXT_BYTES - 3);
    assert!(long.starts_with(cut));
    assert_eq!(summary["cwd"], summary["command"]);
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["truncated"], true);
    assert!(json_len(&Value::Object(summary)) < 2 * MAX_ITEM_TEXT_BYTES + 1024);

    // Large changes become their count.
    let changes: Vec<Value> = (0..100)
        .map(|n| json!({ "path": format!("f{n}"), "diff": "+".repeat(1024) }))
        .collect();
    let patch =
        json!({ "type": "fileChange", "id": "p", "changes": changes, "status": "completed" });
    assert_eq!(
        Value::Object(item_summary(&item(patch))),
        json!({
            "type": "fileChange", "id": "p", "status": "completed",
            "changes": { "count": 100, "truncated": true }, "truncated": true,
        })
    );
    // Changes within the bound are kept.
    let few = json!({ "type": "fileChange", "id": "p", "changes": [{ "path": "f" }] });
    assert_eq!(
        Value::Object(item_summary(&item(few))),
        json!({ "type": "fileChange", "id": "p", "changes": [{ "path": "f" }] })
    );
    assert_eq!(
        json_len(&json!({ "a": [1, "x"] })),
        r#"{"a":[1,"x"]}"#.len()
    );
}

#[test]
fn item_summaries_name_statuses_and_pass_unread_shapes_on() {
    // A type of a later Codex keeps its name; a status object shows its
    // type.
    let reasoning = json!({
        "type": "reasoning", "id": "r", "status": { "type": "completed" }, "text": "hidden",
    });
    assert_eq!(
        Value::Object(item_summary(&item(reasoning))),
        json!({ "type": "reasoning", "id": "r", "status": "completed" })
    );
    // An argv command (before 0.171.0) and an absent cwd.
    let argv = json!({ "type": "commandExecution", "command": ["cargo", "test"], "exitCode": 0 });
    assert_eq!(
        Value::Object(item_summary(&item(argv))),
        json!({ "type": "commandExecution", "command": ["cargo", "test"], "exitCode": 0 })
    );
    // No readable type: only the id and status, whatever else it has.
    let untyped = json!({ "type": 3, "id": "u", "text": "x", "status": "inProgress" });
    assert_eq!(
        Value::Object(item_summary(&item(untyped))),
        json!({ "type": "", "id": "u", "status": "inProgress" })
    );
}
