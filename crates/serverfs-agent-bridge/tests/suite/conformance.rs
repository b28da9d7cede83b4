//! The runtime conformance matrix: every lifecycle case of the adapter
//! contract (spec-adapters.md §1), through the real Bridge daemon, against
//! every runtime rig — the way ripgrep's `rgtest!` reruns each test under
//! every matcher.
//!
//! A rig ([`RuntimeRig`]) starts a Bridge whose `demo` workdir allows its
//! runtime, and says which prompt makes its provider (or test double) do
//! what a case needs. A case is one function of `&dyn RuntimeRig` that
//! asserts only what the contract promises of every runtime: statuses,
//! codes, events, the workdir's lease and guard, the recorded native
//! session. What a runtime puts on its own wire is checked by its own
//! suite (`codex.rs`, the adapter crates' tests).
//!
//! Rigs: the fake runtime, Codex over stdio and over the daemon socket
//! (the scripted mock App Server), Claude Code and Qoder (the scripted
//! fake CLIs), and an ACP profile (the scripted ACP agent). Adding a
//! runtime is one rig and one line in [`runtime_test!`]; a case a runtime
//! cannot express (no live steering, no questions: both absent from ACP
//! v1) skips with a printed reason, decided by what `runtime.list` says.
//!
//! A cancel before the start is forced, not raced: each rig holds a turn
//! before it starts ([`RuntimeRig::hold`]). Where the hold comes before any
//! provider process (the fake; Codex on the managed daemon, which the
//! Bridge never starts for a task), [`cancel_before_start`] also checks
//! that none was started; a runtime that reaches its provider through the
//! stdio of a process it starts first (Codex over stdio, Claude Code,
//! Qoder, ACP) can be held only once that process runs, and runs the
//! weaker [`cancel_before_turn_start`] instead.

use serde_json::{Value, json};
use serverfs_testkit::MockCodexDaemon;
use serverfs_testkit::bridge::{
    Daemon, Setup, WAIT, assert_in_order, count, guards, mcp_mutation, poll, request_id,
};
use serverfs_testkit::mock_acp::{self, Profile};
use serverfs_testkit::mock_codex::SLOW_THREAD_MODEL;
use serverfs_testkit::mock_codex::rig::{
    Transport, codex_home, codex_setup, message_log, start_mock_daemon,
};
use serverfs_testkit::mock_stream_json::{self, Cli, SLOW_INIT_VARIABLE};

use super::native_ids::recorded_session;

/// Runs each named case once per rig: the module of the same name holds
/// one test per rig.
macro_rules! runtime_test {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[test]
            fn fake() {
                super::$case(&super::Fake);
            }

            #[test]
            fn codex_stdio() {
                super::$case(&super::Codex(super::Transport::Stdio));
            }

            #[test]
            fn codex_daemon() {
                super::$case(&super::Codex(super::Transport::Daemon));
            }

            #[test]
            fn claude() {
                super::$case(&super::StreamJson(super::Cli::Claude));
            }

            #[test]
            fn qoder() {
                super::$case(&super::StreamJson(super::Cli::Qoder));
            }

            #[test]
            fn acp() {
                super::$case(&super::Acp);
            }
        }
    )*};
}

runtime_test!(
    new_task,
    continuation,
    approve_once,
    approve_session,
    deny,
    cancel_task_decision,
    question,
    steer,
    cancel_before_start,
    cancel_before_turn_start,
    cancel_right_after_submit,
    cancel_after_start,
    withdrawn_request,
    provider_error,
    transport_drop,
    restart_reconciliation,
);

/// What a rig's provider is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    /// Complete at once with [`RuntimeRig::completed_text`].
    Complete,
    /// Raise one command approval offering at least approve-once, deny and
    /// cancel, and finish once it is answered.
    Approval,
    /// Raise one question with options and free text, and finish with the
    /// answer.
    Question,
    /// Wait for one steering message and finish with it.
    Steer,
    /// Keep running until stopped.
    Wait,
    /// Raise an approval and withdraw it itself shortly after, then finish.
    Withdraw,
    /// Fail with `AGENT_PROVIDER_ERROR`.
    Fail,
    /// Lose the provider connection mid-turn ([`RuntimeRig::drop_code`]).
    Drop,
}

/// A Bridge running one rig's runtime. Fields drop in order: the Bridge
/// stops before what runs beside it (a mock daemon).
struct Running {
    bridge: Daemon,
    beside: Option<MockCodexDaemon>,
    setup: Setup,
}

/// A rig's way of holding a turn before it starts ([`RuntimeRig::hold`]):
/// a Bridge whose provider (or test double) holds every turn long enough
/// for a test to cancel it, and the task to submit.
struct Hold {
    /// The Bridge.
    running: Running,
    /// The prompt of a held task.
    prompt: &'static str,
    /// Submit params beside the prompt (a model the double is slow for).
    extra: Value,
    /// Whether the turn is held before any provider process starts;
    /// otherwise in a provider process the runtime had to start first.
    before_process: bool,
}

/// One runtime the matrix runs against.
trait RuntimeRig {
    /// The runtime name tasks are submitted with.
    fn runtime(&self) -> &'static str;

    /// A Bridge for the runtime, its `demo` workdir (`<root>/work`,
    /// workspace-write) allowing it.
    fn start(&self) -> Running;

    /// The prompt that makes the provider follow `script`.
    fn prompt(&self, script: Script) -> &'static str;

    /// The final response of a [`Script::Complete`] turn.
    fn completed_text(&self) -> &'static str;

    /// The final response of a [`Script::Approval`] turn answered with
    /// `decision` (`approve_once`, `approve_session`, `deny`).
    fn approval_text(&self, decision: &str) -> String;

    /// The code of a turn whose provider connection was lost: a lost
    /// JSON-RPC peer is `AGENT_PROVIDER_DISCONNECTED`; a CLI whose output
    /// ends before its result is `AGENT_PROVIDER_ERROR`.
    fn drop_code(&self) -> &'static str {
        "AGENT_PROVIDER_DISCONNECTED"
    }

    /// Lets a provider that outlives a lost connection (a managed daemon)
    /// finish the turns it still runs, as it would by itself in time.
    fn end_lost_turns(&self, _running: &Running) {}

    /// A Bridge whose runtime holds each turn before it starts, until the
    /// test cancels it (or, for a double that is only slow, seconds
    /// longer than a cancel takes).
    fn hold(&self) -> Hold;

    /// Whether the provider (or its double) was ever handed a turn, as it
    /// recorded itself: the prompt on its wire, or (the fake, which has no
    /// wire) the first act of its held turn.
    fn turn_reached_provider(&self, running: &Running) -> bool;
}

/// The deterministic fake runtime.
struct Fake;

impl RuntimeRig for Fake {
    fn runtime(&self) -> &'static str {
        "fake"
    }

    fn start(&self) -> Running {
        Running::serving(Setup::new())
    }

    fn prompt(&self, script: Script) -> &'static str {
        match script {
            Script::Complete => "fake: complete conformance",
            Script::Approval => "fake: approval echo test",
            Script::Question => "fake: question Pick one",
            Script::Steer => "fake: steer",
            Script::Wait => "fake: wait 60000",
            Script::Withdraw => "fake: withdraw 300",
            Script::Fail => "fake: fail AGENT_PROVIDER_ERROR",
            Script::Drop => "fake: fail AGENT_PROVIDER_DISCONNECTED",
        }
    }

    fn completed_text(&self) -> &'static str {
        "conformance"
    }

    fn approval_text(&self, decision: &str) -> String {
        match decision {
            "deny" => "denied: echo test".to_owned(),
            _ => "approved: echo test".to_owned(),
        }
    }

    fn hold(&self) -> Hold {
        // The fake holds before anything; the turn's first act after the
        // hold would be a provider process writing the marker.
        Hold {
            running: self.start(),
            prompt: "fake: start-after 600000\nfake: shell-write started.txt held",
            extra: json!({}),
            before_process: true,
        }
    }

    fn turn_reached_provider(&self, running: &Running) -> bool {
        running.setup.work_dir().join("started.txt").exists()
    }
}

/// The Codex runtime on the scripted mock App Server, over one transport.
struct Codex(Transport);

impl RuntimeRig for Codex {
    fn runtime(&self) -> &'static str {
        "codex"
    }

    fn start(&self) -> Running {
        let (setup, home) = codex_setup(self.0);
        let beside = (self.0 == Transport::Daemon).then(|| start_mock_daemon(&home));
        Running {
            bridge: setup.start_serving(),
            beside,
            setup,
        }
    }

    fn prompt(&self, script: Script) -> &'static str {
        // The mock picks its scenario by keyword (`mock_codex::Scenario`).
        match script {
            Script::Complete => "conformance",
            Script::Approval => "approval",
            Script::Question => "question",
            Script::Steer => "steer",
            Script::Wait => "wait",
            Script::Withdraw => "slow-resolve",
            Script::Fail => "fail",
            Script::Drop => "drop",
        }
    }

    fn completed_text(&self) -> &'static str {
        "done:conformance"
    }

    fn end_lost_turns(&self, running: &Running) {
        if let Some(daemon) = &running.beside {
            daemon.state().interrupt_open_turns();
        }
    }

    fn approval_text(&self, decision: &str) -> String {
        let native = match decision {
            "approve_once" => "accept",
            "approve_session" => "acceptForSession",
            _ => "decline",
        };
        format!("approval:{native}")
    }

    fn hold(&self) -> Hold {
        // The mock answers `thread/start` seconds late for this model, and
        // the turn is started only after it. On the daemon transport the
        // Bridge starts no process for a task (the daemon runs beside it);
        // over stdio the `mock-codex` child is started first.
        Hold {
            running: self.start(),
            prompt: self.prompt(Script::Wait),
            extra: json!({ "model": SLOW_THREAD_MODEL }),
            before_process: self.0 == Transport::Daemon,
        }
    }

    fn turn_reached_provider(&self, running: &Running) -> bool {
        message_log(&codex_home(&running.setup))
            .iter()
            .any(|message| message["method"] == "turn/start")
    }
}

/// The prompt of the scripted fake CLIs and the fake ACP agent, which pick
/// their scenario by the same keywords (`mock_stream_json`, `mock_acp`).
fn keyword(script: Script) -> &'static str {
    match script {
        Script::Complete => "conformance",
        Script::Approval => "approval",
        Script::Question => "question",
        Script::Steer => "steer",
        Script::Wait => "wait",
        Script::Withdraw => "withdraw",
        Script::Fail => "error",
        Script::Drop => "eof",
    }
}

/// Claude Code or Qoder on the scripted fake CLI.
struct StreamJson(Cli);

impl RuntimeRig for StreamJson {
    fn runtime(&self) -> &'static str {
        self.0.name()
    }

    fn start(&self) -> Running {
        Running::serving(mock_stream_json::bridge_setup(self.0))
    }

    fn prompt(&self, script: Script) -> &'static str {
        keyword(script)
    }

    fn completed_text(&self) -> &'static str {
        "done:conformance"
    }

    fn approval_text(&self, decision: &str) -> String {
        match decision {
            "approve_session" => "approval:allow:session",
            "deny" => "approval:deny",
            _ => "approval:allow",
        }
        .to_owned()
    }

    fn drop_code(&self) -> &'static str {
        "AGENT_PROVIDER_ERROR"
    }

    fn hold(&self) -> Hold {
        // The fake CLI answers `initialize` 30 s late when the operator
        // passes the knob through (far longer than a cancel takes on a
        // loaded machine; the cancel kills it, so no run waits that long);
        // the prompt follows the answer.
        let passthrough = format!("{}_env_passthrough", self.0.name());
        let setup = mock_stream_json::bridge_setup(self.0)
            .agent(&passthrough, &format!("[{SLOW_INIT_VARIABLE:?}]"))
            .env(SLOW_INIT_VARIABLE, "30000");
        Hold {
            running: Running::serving(setup),
            prompt: keyword(Script::Wait),
            extra: json!({}),
            before_process: false,
        }
    }

    fn turn_reached_provider(&self, running: &Running) -> bool {
        mock_stream_json::read_log(running.setup.root(), self.0)
            .iter()
            .any(|entry| entry["received"]["type"] == "user")
    }
}

/// An ACP profile on the scripted ACP agent, its "allow always" marked
/// session-scoped so that `approve_session` is offered.
struct Acp;

impl RuntimeRig for Acp {
    fn runtime(&self) -> &'static str {
        "acp-mock"
    }

    fn start(&self) -> Running {
        Running::serving(mock_acp::bridge_setup(&[Profile::new()]))
    }

    fn prompt(&self, script: Script) -> &'static str {
        keyword(script)
    }

    fn completed_text(&self) -> &'static str {
        "done:conformance"
    }

    fn approval_text(&self, decision: &str) -> String {
        // The agent's own option ids, as the fake offers them.
        match decision {
            "approve_session" => "approval:always",
            "deny" => "approval:reject",
            _ => "approval:once",
        }
        .to_owned()
    }

    fn hold(&self) -> Hold {
        // The fake agent answers `initialize` 30 s late; the session and
        // the prompt follow the answer.
        let profile = Profile::new().env("FAKE_ACP_INIT", "slow");
        Hold {
            running: Running::serving(mock_acp::bridge_setup(&[profile])),
            prompt: keyword(Script::Wait),
            extra: json!({}),
            before_process: false,
        }
    }

    fn turn_reached_provider(&self, running: &Running) -> bool {
        mock_acp::runs(running.setup.root())
            .iter()
            .any(|run| run.methods().contains(&"session/prompt"))
    }
}

impl Running {
    /// A Bridge serving `setup`, with nothing beside it.
    fn serving(setup: Setup) -> Running {
        Running {
            bridge: setup.start_serving(),
            beside: None,
            setup,
        }
    }

    /// Whether `runtime.list` says the rig's runtime has `capability`.
    fn runtime_can(&self, rig: &dyn RuntimeRig, capability: &str) -> bool {
        let runtimes = self.bridge.ok("runtime.list", json!({}));
        runtimes["runtimes"]
            .as_array()
            .and_then(|list| list.iter().find(|r| r["name"] == rig.runtime()))
            .is_some_and(|runtime| runtime[capability] == true)
    }

    /// Submits `prompt` for `rig`'s runtime on `demo`, with `extra` params
    /// merged in, retrying while an earlier task still holds the lease.
    fn submit(&self, rig: &dyn RuntimeRig, prompt: &str, extra: Value) -> String {
        let mut params = json!({ "runtime": rig.runtime(), "prompt": prompt });
        if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            params.extend(extra.clone());
        }
        self.bridge.wait_submit(params)
    }

    /// The native session the Bridge recorded for `task`.
    fn native_session(&self, task: &str) -> Option<String> {
        recorded_session(&self.setup, task)
    }

    /// Waits until the MCP side may mutate `demo` again and no recovery
    /// guard is left: the provider is proven stopped.
    fn wait_workdir_free(&self, after: &str) {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let mutation = mcp_mutation(&self.setup);
            let guards = guards(&self.setup);
            if mutation.is_ok() && guards.is_empty() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the workdir is not free after {after}: mutation {mutation:?}, guards \
                 {guards:?}\nbridge log:\n{}",
                self.bridge.stderr()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The provider process group the task's recovery guard records:
    /// `None` while it has no guard, `Some(None)` while no provider process
    /// was started.
    fn provider_group(&self, task: &str) -> Option<Option<i32>> {
        guards(&self.setup)
            .into_iter()
            .find(|(id, _)| id == task)
            .map(|(_, group)| group)
    }

    /// Polls until the task's turn has started.
    fn wait_turn_started(&self, task: &str) {
        poll(WAIT, "the turn to start", || {
            (count(&self.bridge.event_types(task), "turn.started") > 0).then_some(())
        });
    }
}

fn new_task(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let task = running.submit(rig, rig.prompt(Script::Complete), json!({}));
    let view = running.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], rig.completed_text(), "{view}");
    assert_eq!(view["runtime"], rig.runtime());
    let types = running.bridge.event_types(&task);
    assert_in_order(&types, &["task.started", "turn.started", "task.completed"]);
    assert!(
        running.native_session(&task).is_some(),
        "no native session recorded"
    );
    running.wait_workdir_free("a completed task");
}

fn continuation(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let first = running.submit(rig, rig.prompt(Script::Complete), json!({}));
    running.bridge.wait_status(&first, "succeeded");
    let session = running.native_session(&first).expect("the first session");
    let second = running.submit(
        rig,
        rig.prompt(Script::Complete),
        json!({ "continue_from_task_id": first }),
    );
    let view = running.bridge.wait_status(&second, "succeeded");
    assert_eq!(view["continue_from_task_id"], first, "{view}");
    assert_eq!(
        running.native_session(&second),
        Some(session),
        "the follow-up did not continue the first task's session"
    );
}

/// Raises the rig's approval and answers it with `decision`; returns the
/// task and the terminal view.
fn answer_approval(rig: &dyn RuntimeRig, running: &Running, decision: &str) -> (String, Value) {
    let task = running.submit(rig, rig.prompt(Script::Approval), json!({}));
    let pending = running.bridge.wait_pending(&task);
    assert_eq!(pending["kind"], "approval", "{pending}");
    assert_eq!(running.bridge.task(&task)["status"], "waiting_for_approval");
    let offered = &pending["payload"]["available_decisions"];
    assert!(
        offered
            .as_array()
            .is_some_and(|d| d.contains(&json!(decision))),
        "{decision} is not offered: {offered}"
    );
    // A request with exact options is answered with the agent's option of
    // the kind the decision stands for, as a client shows them.
    let option = pending["payload"]["options"]
        .as_array()
        .and_then(|options| {
            options.iter().find(|option| {
                matches!(
                    (option["kind"].as_str(), decision),
                    (Some("allow_once"), "approve_once")
                        | (Some("allow_always"), "approve_session")
                        | (Some("reject_once"), "deny")
                )
            })
        });
    let option_id = option.and_then(|option| option["option_id"].as_str());
    let resolved = running
        .bridge
        .respond_option(&task, &request_id(&pending), decision, option_id)
        .unwrap_or_else(|error| panic!("{decision}: {error}"));
    assert_eq!(resolved["resolved"], true, "{resolved}");
    (task.clone(), running.bridge.wait_terminal(&task))
}

fn approve_once(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let (task, view) = answer_approval(rig, &running, "approve_once");
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["final_response"], rig.approval_text("approve_once"));
    assert_in_order(
        &running.bridge.event_types(&task),
        &["approval.requested", "approval.resolved", "task.completed"],
    );
}

fn approve_session(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let (_, view) = answer_approval(rig, &running, "approve_session");
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["final_response"], rig.approval_text("approve_session"));
}

fn deny(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let (_, view) = answer_approval(rig, &running, "deny");
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["final_response"], rig.approval_text("deny"));
}

fn cancel_task_decision(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let (task, view) = answer_approval(rig, &running, "cancel_task");
    assert_eq!(view["status"], "cancelled", "{view}");
    assert_eq!(view["final_response"], Value::Null, "{view}");
    assert_eq!(
        count(&running.bridge.event_types(&task), "task.cancelled"),
        1
    );
    running.wait_workdir_free("a cancel_task decision");
}

fn question(rig: &dyn RuntimeRig) {
    let running = rig.start();
    if !running.runtime_can(rig, "interactive_question") {
        eprintln!("{}: no questions, nothing to check", rig.runtime());
        return;
    }
    let task = running.submit(rig, rig.prompt(Script::Question), json!({}));
    let pending = running.bridge.wait_pending(&task);
    assert_eq!(pending["kind"], "question", "{pending}");
    assert_eq!(running.bridge.task(&task)["status"], "waiting_for_question");
    let question = &pending["payload"]["questions"][0];
    assert_eq!(question["allow_free_text"], true, "{question}");
    let option = question["options"][1]["option_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a second option: {question}"));
    let answered = running.bridge.answer(
        &task,
        &request_id(&pending),
        json!([{
            "question_id": question["question_id"],
            "selected_option_ids": [option],
            "text": "because",
        }]),
    );
    assert!(answered.is_ok(), "{answered:?}");
    let view = running.bridge.wait_status(&task, "succeeded");
    let said = view["final_response"].as_str().unwrap_or_default();
    assert!(said.contains("because"), "the answer never arrived: {view}");
    assert_in_order(
        &running.bridge.event_types(&task),
        &["question.requested", "question.answered", "task.completed"],
    );
}

fn steer(rig: &dyn RuntimeRig) {
    let running = rig.start();
    if !running.runtime_can(rig, "live_steer") {
        eprintln!("{}: no live steering, nothing to check", rig.runtime());
        return;
    }
    let task = running.submit(rig, rig.prompt(Script::Steer), json!({}));
    running.wait_turn_started(&task);
    // A runtime may need a moment after `turn.started` before a steer can
    // reach the turn; the Bridge retries nothing, so neither does the test
    // beyond the wait for the turn.
    let sent = poll(WAIT, "the steering message to be taken", || {
        running
            .bridge
            .call(
                "task.message.send",
                json!({ "task_id": task, "message": "turn left" }),
            )
            .ok()
    });
    assert!(sent.is_object(), "{sent}");
    let view = running.bridge.wait_status(&task, "succeeded");
    let said = view["final_response"].as_str().unwrap_or_default();
    assert!(
        said.contains("turn left"),
        "the steer never arrived: {view}"
    );
}

/// A cancel while the turn is held before it starts, before any provider
/// process: the task ends `cancelled`, no turn started, the provider never
/// got it, and no provider process was ever started.
fn cancel_before_start(rig: &dyn RuntimeRig) {
    let hold = rig.hold();
    if !hold.before_process {
        // The runtime's connection is the stdio of the provider process it
        // starts first: no turn can be held before that process.
        eprintln!(
            "{}: the provider process starts before a turn can be held; \
             cancel_before_turn_start checks the rest",
            rig.runtime()
        );
        return;
    }
    let running = &hold.running;
    let task = running.submit(rig, hold.prompt, hold.extra.clone());
    // The runner marks the task running before it starts the turn, which
    // the rig holds from then on.
    running.bridge.wait_status(&task, "running");
    assert_eq!(
        running.provider_group(&task),
        Some(None),
        "a provider process was started for the held turn"
    );
    cancel_held(rig, running, &task);
}

/// The weaker check of a runtime that must start its provider's process
/// before anything else: a cancel while that process runs and the turn is
/// held before it starts ends the task `cancelled` with no turn started,
/// the provider never handed the turn, and the process stopped.
fn cancel_before_turn_start(rig: &dyn RuntimeRig) {
    let hold = rig.hold();
    if hold.before_process {
        eprintln!(
            "{}: held before any provider process; cancel_before_start checks it",
            rig.runtime()
        );
        return;
    }
    let running = &hold.running;
    let task = running.submit(rig, hold.prompt, hold.extra.clone());
    poll(WAIT, "the provider process to start", || {
        running.provider_group(&task).flatten()
    });
    cancel_held(rig, running, &task);
}

/// Cancels the held `task` and checks that it ended before its turn began.
fn cancel_held(rig: &dyn RuntimeRig, running: &Running, task: &str) {
    let cancelled = running.bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    running.wait_workdir_free("a cancel before the turn started");
    let view = running.bridge.task(task);
    assert_eq!(view["status"], "cancelled", "{view}");
    let types = running.bridge.event_types(task);
    assert_eq!(count(&types, "turn.started"), 0, "{types:?}");
    assert_eq!(count(&types, "task.cancelled"), 1, "{types:?}");
    assert_eq!(count(&types, "task.completed"), 0, "{types:?}");
    assert!(
        !rig.turn_reached_provider(running),
        "the provider was handed the cancelled turn"
    );
}

/// A cancel racing the start (sent right after submit, the turn not held):
/// it may land before or after the turn started, so only what holds either
/// way is checked. The forced cases are [`cancel_before_start`] and
/// [`cancel_before_turn_start`].
fn cancel_right_after_submit(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let task = running.submit(rig, rig.prompt(Script::Wait), json!({}));
    let cancelled = running.bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    running.wait_workdir_free("a cancel right after submit");
    let view = running.bridge.task(&task);
    assert_eq!(view["status"], "cancelled", "{view}");
    let types = running.bridge.event_types(&task);
    assert!(count(&types, "turn.started") <= 1, "{types:?}");
    assert_eq!(count(&types, "task.completed"), 0, "{types:?}");
}

fn cancel_after_start(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let task = running.submit(rig, rig.prompt(Script::Wait), json!({}));
    running.wait_turn_started(&task);
    assert_eq!(running.bridge.task(&task)["status"], "running");
    let cancelled = running.bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    running.wait_workdir_free("a cancel mid-turn");
    let types = running.bridge.event_types(&task);
    assert_eq!(count(&types, "task.cancelled"), 1, "{types:?}");
    assert_eq!(count(&types, "task.completed"), 0, "{types:?}");
    // The runtime takes the next task.
    let next = running.submit(rig, rig.prompt(Script::Complete), json!({}));
    running.bridge.wait_status(&next, "succeeded");
}

fn withdrawn_request(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let task = running.submit(rig, rig.prompt(Script::Withdraw), json!({}));
    // The request is pending for only a moment, so its id comes from the
    // stored event rather than from a poll that could miss the moment.
    let view = running.bridge.wait_status(&task, "succeeded");
    assert_eq!(view["pending_request"], Value::Null, "{view}");
    let request = request_id(&running.bridge.wait_event(&task, "approval.requested")["payload"]);
    let late = running.bridge.respond(&task, &request, "approve_once");
    assert_eq!(
        late.map_err(|error| error.code),
        Err("REQUEST_STALE".to_owned())
    );
    let types = running.bridge.event_types(&task);
    assert_in_order(
        &types,
        &["approval.requested", "interaction.stale", "task.completed"],
    );
    assert_eq!(count(&types, "approval.resolved"), 0, "{types:?}");
}

fn provider_error(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let task = running.submit(rig, rig.prompt(Script::Fail), json!({}));
    let view = running.bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_ERROR", "{view}");
    assert_eq!(count(&running.bridge.event_types(&task), "task.failed"), 1);
    running.wait_workdir_free("a failed turn");
}

fn transport_drop(rig: &dyn RuntimeRig) {
    let running = rig.start();
    let task = running.submit(rig, rig.prompt(Script::Drop), json!({}));
    let view = running.bridge.wait_terminal(&task);
    assert_eq!(view["status"], "failed", "{view}");
    assert_eq!(view["error_code"], rig.drop_code(), "{view}");
    // The runtime is still usable once the provider side of the lost turn
    // is over; until then the workdir stays blocked for a provider that
    // may still write (the next writer's reconciliation decides).
    rig.end_lost_turns(&running);
    let next = running.submit(rig, rig.prompt(Script::Complete), json!({}));
    running.bridge.wait_status(&next, "succeeded");
}

fn restart_reconciliation(rig: &dyn RuntimeRig) {
    let mut running = rig.start();
    let task = running.submit(rig, rig.prompt(Script::Wait), json!({}));
    running.wait_turn_started(&task);
    running.bridge.kill();
    running.bridge = running.setup.start_serving();
    let view = running.bridge.wait_terminal(&task);
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "BRIDGE_RESTARTED", "{view}");
    let types = running.bridge.event_types(&task);
    // Never re-run: one turn, however the provider side ends.
    assert_eq!(count(&types, "turn.started"), 1, "{types:?}");
    assert_eq!(count(&types, "task.reconciled"), 1, "{types:?}");
}
