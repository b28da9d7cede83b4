//! The adapter interface through the fake runtime: every directive, the
//! host callbacks it drives, cancellation (with a real process tree),
//! deadlines, close, and the runtime's reported values.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serverfs_agent_runtime::fake::{
    Directive, FAKE_RUNTIME, FAKE_VERSION, FakeAdapter, parse_script,
};
use serverfs_agent_runtime::{
    Adapter, BridgeErrorCode, NativeIds, ProviderState, ProxyPolicy, TaskContext, TurnOutcome,
    TurnStatus, WorkingDir, is_group_alive,
};
use serverfs_protocol::bridge::{
    AgentProfile, ApprovalCategory, ApprovalDecision, ApprovalOption, ApprovalOptionKind,
    ApprovalPayload, ApprovalResolution, CatalogScope, CatalogStatus, EventPayload,
    InFlightRecovery, ModelDiscovery, QuestionAnswer, QuestionResolution, ReconcileStatus,
};
use serverfs_testkit::host::{RecordingHost, Unscripted};
use serverfs_testkit::within;
use tokio::time::Instant;

use super::support::await_members;

/// A host that fails what its script does not answer.
fn scripted() -> RecordingHost {
    RecordingHost::new(Unscripted::Fail)
}

fn context(task_id: &str, cwd: &Path, profile: AgentProfile, prompt: &str) -> TaskContext {
    TaskContext {
        task_id: task_id.to_owned(),
        cwd: WorkingDir::open_trusted(cwd).unwrap(),
        profile,
        prompt: prompt.to_owned(),
        model: None,
        continue_native_session_id: None,
        deadline: None,
    }
}

/// Runs one turn in a fresh temporary directory with `workspace-write`.
async fn run_prompt(prompt: &str, host: Arc<RecordingHost>) -> TurnOutcome {
    let dir = tempfile::tempdir().unwrap();
    let adapter = FakeAdapter::new();
    let ctx = context("t1", dir.path(), AgentProfile::WorkspaceWrite, prompt);
    within("fake turn", adapter.run(ctx, host)).await
}

/// Starts a turn in the background and waits until it is registered.
async fn start(
    adapter: &Arc<FakeAdapter>,
    ctx: TaskContext,
    host: Arc<RecordingHost>,
) -> tokio::task::JoinHandle<TurnOutcome> {
    let task_id = ctx.task_id.clone();
    let runner = Arc::clone(adapter);
    let handle = tokio::spawn(async move { runner.run(ctx, host).await });
    within("task registration", async {
        while !adapter.is_active(&task_id) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    handle
}

fn failed_with(outcome: &TurnOutcome, code: BridgeErrorCode) {
    assert_eq!(outcome.status, TurnStatus::Failed { code }, "{outcome:?}");
}

#[tokio::test]
async fn complete_emits_turn_events_and_native_ids() {
    let host = Arc::new(scripted());
    let outcome = run_prompt("intro line\nfake: complete all done", host.clone()).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.final_text, "all done");
    let native = NativeIds {
        session_id: Some("fake-session-t1".to_owned()),
        turn_id: Some("fake-turn-t1".to_owned()),
    };
    assert_eq!(outcome.native, native);
    assert_eq!(host.native_ids(), vec![native]);
    let events = host.events();
    assert_eq!(
        events.first(),
        Some(&EventPayload::TurnStarted {
            runtime: Some("fake".to_owned())
        })
    );
    assert!(matches!(
        events.last(),
        Some(EventPayload::AgentMessage { text, .. }) if text == "all done"
    ));
}

#[tokio::test]
async fn a_prompt_without_directives_completes_with_its_text_and_continues_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = FakeAdapter::new();
    let mut ctx = context("t2", dir.path(), AgentProfile::Review, "  just answer  ");
    ctx.continue_native_session_id = Some("earlier-session".to_owned());
    let host = Arc::new(scripted());
    let outcome = within("turn", adapter.run(ctx, host)).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.final_text, "just answer");
    assert_eq!(
        outcome.native.session_id.as_deref(),
        Some("earlier-session")
    );
    assert!(!adapter.is_active("t2"), "a finished task is deregistered");
}

#[tokio::test]
async fn approved_approval_completes() {
    let host = Arc::new(scripted().with_decisions(&[ApprovalDecision::ApproveOnce]));
    let outcome = run_prompt("fake: approval make build", host.clone()).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.final_text, "approved: make build");
    let approvals = host.approvals();
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0].category, ApprovalCategory::Command);
    assert_eq!(approvals[0].command_display.as_deref(), Some("make build"));
    assert_eq!(approvals[0].available_decisions, ApprovalDecision::ALL);
    assert!(host.event_types().contains(&"approval.observed"));
}

#[tokio::test]
async fn denied_approval_completes_saying_denied() {
    let host = Arc::new(scripted().with_decisions(&[ApprovalDecision::Deny]));
    let outcome = run_prompt("fake: approval", host).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.final_text, "denied: echo test");
}

#[tokio::test]
async fn cancel_task_decision_cancels_the_turn() {
    let host = Arc::new(scripted().with_decisions(&[ApprovalDecision::CancelTask]));
    let outcome = run_prompt("fake: approval rm it", host).await;
    assert_eq!(outcome.status, TurnStatus::Cancelled);
}

#[tokio::test]
async fn options_offers_exact_options_and_reports_the_chosen_one() {
    let host = Arc::new(
        scripted().with_options(&[(ApprovalDecision::ApproveSession, "opt-allow-always")]),
    );
    let outcome = run_prompt("fake: options", host.clone()).await;
    assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.final_text, "option=opt-allow-always");
    let option = |id: &str, label: &str, kind| ApprovalOption {
        option_id: id.to_owned(),
        label: label.to_owned(),
        kind,
    };
    assert_eq!(
        host.approvals(),
        vec![ApprovalPayload {
            category: ApprovalCategory::Other,
            title: Some("Fake exact-option approval".to_owned()),
            reason: None,
            command_display: None,
            relative_cwd: None,
            additional_permissions: None,
            network_approval_context: None,
            file_changes: None,
            requested_permissions: None,
            tool: None,
            tool_input: None,
            blocked_path: None,
            available_decisions: ApprovalDecision::ALL.to_vec(),
            options: Some(vec![
                option(
                    "opt-allow-once",
                    "Allow once",
                    ApprovalOptionKind::AllowOnce
                ),
                option(
                    "opt-allow-always",
                    "Always allow",
                    ApprovalOptionKind::AllowAlways
                ),
                option("opt-reject", "Reject", ApprovalOptionKind::RejectOnce),
            ]),
            approval_advice: None,
        }]
    );
    assert!(
        host.events()
            .contains(&EventPayload::ApprovalObserved(ApprovalResolution {
                decision: ApprovalDecision::ApproveSession,
                granted_permission_ids: Vec::new(),
                option_id: Some("opt-allow-always".to_owned()),
            }))
    );

    // cancel_task needs no option and cancels the turn.
    let host = Arc::new(scripted().with_decisions(&[ApprovalDecision::CancelTask]));
    let outcome = run_prompt("fake: options", host).await;
    assert_eq!(outcome.status, TurnStatus::Cancelled, "{outcome:?}");
    // Like an ACP agent, the fake cannot act on a bare decision.
    let host = Arc::new(scripted().with_decisions(&[ApprovalDecision::ApproveOnce]));
    let outcome = run_prompt("fake: options", host).await;
    failed_with(&outcome, BridgeErrorCode::AgentProviderError);
}

#[tokio::test]
async fn two_approvals_are_requested_together_and_both_answered() {
    let host = Arc::new(
        scripted().with_decisions(&[ApprovalDecision::ApproveSession, ApprovalDecision::Deny]),
    );
    let outcome = run_prompt("fake: two-approvals", host.clone()).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.final_text, "approvals=approve_session,deny");
    assert_eq!(host.approvals().len(), 2);
    assert_eq!(host.max_in_flight(), 2);
    assert_eq!(host.script_left(), 0);
    let observed = host
        .event_types()
        .into_iter()
        .filter(|kind| *kind == "approval.observed")
        .count();
    assert_eq!(observed, 2);
}

#[tokio::test]
async fn an_unanswered_approval_fails_with_the_hosts_code() {
    let outcome = run_prompt("fake: approval", Arc::new(scripted())).await;
    failed_with(&outcome, BridgeErrorCode::AgentInteractionTimedOut);
}

#[tokio::test]
async fn question_answer_appears_in_the_final_text() {
    let host = Arc::new(scripted().with_answers(vec![QuestionResolution {
        answers: vec![QuestionAnswer {
            question_id: "q1".to_owned(),
            selected_option_ids: vec!["b".to_owned()],
            text: Some("rather blue".to_owned()),
        }],
    }]));
    let outcome = run_prompt("fake: question Which colour?", host.clone()).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert!(outcome.final_text.starts_with("answers="), "{outcome:?}");
    assert!(outcome.final_text.contains("rather blue"));
    assert!(
        outcome
            .final_text
            .contains(r#""selected_option_ids":["b"]"#)
    );
    let questions = host.questions();
    let question = &questions[0].questions[0];
    assert_eq!(question.question_id, "q1");
    assert_eq!(question.prompt, "Which colour?");
    assert_eq!(question.options.len(), 2);
    assert!(question.allow_free_text && !question.multi_select);
}

#[tokio::test]
async fn steer_receives_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = Arc::new(FakeAdapter::new());
    let host = Arc::new(scripted());
    let ctx = context(
        "steer",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: steer",
    );
    let handle = start(&adapter, ctx, host).await;
    within("send", adapter.send_message("steer", "go left".to_owned()))
        .await
        .unwrap();
    let outcome = within("steered turn", handle).await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.final_text, "steered=go left");

    let refused = within("send", adapter.send_message("steer", "late".to_owned()))
        .await
        .unwrap_err();
    assert_eq!(refused.code, BridgeErrorCode::AgentTaskNotActive);
}

#[tokio::test]
async fn fail_gives_the_code_and_bad_directives_fail_closed() {
    let host = Arc::new(scripted());
    let outcome = run_prompt(
        "fake: fail AGENT_PROVIDER_DISCONNECTED\nfake: complete never",
        host,
    )
    .await;
    failed_with(&outcome, BridgeErrorCode::AgentProviderDisconnected);

    for prompt in [
        "fake: launch rockets",
        "fake: fail NOT_A_CODE",
        "fake: wait soon",
        "fake: steer now",
    ] {
        let host = Arc::new(scripted());
        let outcome = run_prompt(prompt, host.clone()).await;
        failed_with(&outcome, BridgeErrorCode::AgentProviderError);
        assert!(host.events().is_empty(), "{prompt}: nothing ran");
    }
}

#[tokio::test]
async fn write_creates_the_file_under_workspace_write() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = FakeAdapter::new();
    let host = Arc::new(scripted());
    let ctx = context(
        "w1",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: write notes.txt hello world",
    );
    let outcome = within("write", adapter.run(ctx, host.clone())).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.final_text, "wrote notes.txt");
    assert_eq!(
        fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "hello world"
    );
    assert!(host.event_types().contains(&"file_change.started"));
}

#[tokio::test]
async fn writes_land_in_the_opened_directory_after_its_path_was_swapped() {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("work");
    let outside = outer.path().join("outside");
    fs::create_dir(&dir).unwrap();
    fs::create_dir(&outside).unwrap();
    let adapter = FakeAdapter::new();
    // Opened first, as the core does at submit; then the path is moved and
    // a symlink to another directory takes its place.
    let ctx = context(
        "swap",
        &dir,
        AgentProfile::WorkspaceWrite,
        "fake: write direct.txt a\nfake: shell-write shell.txt b",
    );
    let moved = outer.path().join("moved");
    fs::rename(&dir, &moved).unwrap();
    std::os::unix::fs::symlink(&outside, &dir).unwrap();

    let outcome = within("swapped writes", adapter.run(ctx, Arc::new(scripted()))).await;
    assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
    assert_eq!(fs::read_to_string(moved.join("direct.txt")).unwrap(), "a");
    assert_eq!(fs::read_to_string(moved.join("shell.txt")).unwrap(), "b");
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing escaped"
    );
}

#[tokio::test]
async fn write_is_refused_in_review_and_for_unsafe_names() {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("work");
    fs::create_dir(&dir).unwrap();
    let adapter = FakeAdapter::new();

    let ctx = context("r1", &dir, AgentProfile::Review, "fake: write notes.txt hi");
    let outcome = within("review write", adapter.run(ctx, Arc::new(scripted()))).await;
    failed_with(&outcome, BridgeErrorCode::AgentProfileNotAllowed);

    for (task, name) in [("n1", "../x"), ("n2", "a/b"), ("n3", ".env"), ("n4", "..")] {
        let prompt = format!("fake: write {name} secret");
        let ctx = context(task, &dir, AgentProfile::WorkspaceWrite, &prompt);
        let outcome = within("unsafe write", adapter.run(ctx, Arc::new(scripted()))).await;
        failed_with(&outcome, BridgeErrorCode::InvalidWorkdirPath);
    }
    assert_eq!(
        fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing was written"
    );
    assert!(!outer.path().join("x").exists());

    // A symlink planted under the name is not followed.
    let target = outer.path().join("outside.txt");
    fs::write(&target, "untouched").unwrap();
    std::os::unix::fs::symlink(&target, dir.join("link")).unwrap();
    let ctx = context(
        "s1",
        &dir,
        AgentProfile::WorkspaceWrite,
        "fake: write link pwned",
    );
    let outcome = within("symlink write", adapter.run(ctx, Arc::new(scripted()))).await;
    failed_with(&outcome, BridgeErrorCode::AgentProviderError);
    assert_eq!(fs::read_to_string(&target).unwrap(), "untouched");
}

#[tokio::test]
async fn cancel_stops_the_whole_child_tree() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = Arc::new(FakeAdapter::new());
    let host = Arc::new(scripted());
    let ctx = context(
        "tree",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: child-tree",
    );
    let handle = start(&adapter, ctx, Arc::clone(&host)).await;
    let group = within("child tree", async {
        loop {
            if let Some(group) = adapter.process_group("tree") {
                return group;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    // The shell and its two sleeps.
    await_members(group.as_raw(), 3).await;
    assert!(is_group_alive(group));
    // The host learnt the group before anything could write.
    assert_eq!(host.process_groups(), vec![group]);

    within("cancel", adapter.cancel("tree")).await;
    let outcome = within("cancelled turn", handle).await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert!(!is_group_alive(group), "every process of the group is gone");
    assert_eq!(adapter.process_group("tree"), None);
}

#[tokio::test]
async fn cancel_interrupts_a_wait_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = Arc::new(FakeAdapter::new());
    let host = Arc::new(scripted());
    let ctx = context(
        "w",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: wait 60000",
    );
    let handle = start(&adapter, ctx, host).await;
    let started = Instant::now();
    within("cancel", adapter.cancel("w")).await;
    let outcome = within("cancelled turn", handle).await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!adapter.is_active("w"));
    // Cancelling an unknown or finished task is a no-op.
    within("cancel again", adapter.cancel("w")).await;
}

/// Under the `Stop` rule the first reason wins: a user's cancel that a
/// shutdown follows before the turn has ended ends it `Cancelled`, not
/// `Interrupted`. (The test runtime has one thread, so the turn cannot run
/// between the two calls: both reasons arrive before it looks.)
#[tokio::test]
async fn a_cancel_followed_by_a_shutdown_ends_the_turn_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = Arc::new(FakeAdapter::new());
    let ctx = context(
        "cs",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: wait 60000",
    );
    let handle = start(&adapter, ctx, Arc::new(scripted())).await;
    within("cancel", adapter.cancel("cs")).await;
    within("close", adapter.close()).await;
    let outcome = within("stopped turn", handle).await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_eq!(outcome.final_text, "the turn was cancelled");
}

#[tokio::test]
async fn start_after_holds_the_turn_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = Arc::new(FakeAdapter::new());
    let host = Arc::new(scripted());
    // The shell would write `started.txt` as the held turn's first act.
    let ctx = context(
        "held",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: shell-write started.txt yes\nfake: start-after 60000",
    );
    let handle = start(&adapter, ctx, Arc::clone(&host)).await;
    within("cancel", adapter.cancel("held")).await;
    let outcome = within("held turn", handle).await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Cancelled);
    assert_eq!(host.event_types(), Vec::<&str>::new());
    assert_eq!(host.native_ids(), Vec::<NativeIds>::new());
    assert_eq!(host.process_groups().len(), 0);
    assert!(!dir.path().join("started.txt").exists());

    // A hold that passes starts the turn as usual, then runs the rest.
    let host = Arc::new(scripted());
    let ctx = context(
        "short",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: complete done\nfake: start-after 20",
    );
    let outcome = within("short hold", adapter.run(ctx, Arc::clone(&host) as _)).await;
    assert_eq!(outcome.final_text, "done");
    assert_eq!(host.event_types(), ["turn.started", "agent.message"]);
}

#[tokio::test]
async fn a_passed_deadline_fails_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = FakeAdapter::new();
    let mut ctx = context(
        "d",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: wait 60000",
    );
    ctx.deadline = Some(Instant::now() + Duration::from_millis(50));
    let outcome = within("deadline", adapter.run(ctx, Arc::new(scripted()))).await;
    failed_with(&outcome, BridgeErrorCode::AgentTaskTimedOut);
}

#[tokio::test]
async fn a_task_id_runs_once_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = Arc::new(FakeAdapter::new());
    let ctx = context(
        "dup",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: wait 60000",
    );
    let handle = start(&adapter, ctx.clone(), Arc::new(scripted())).await;
    let second = within("second run", adapter.run(ctx, Arc::new(scripted()))).await;
    failed_with(&second, BridgeErrorCode::AgentProviderError);
    assert!(
        adapter.is_active("dup"),
        "the first run keeps its registration"
    );
    within("cancel", adapter.cancel("dup")).await;
    let first = within("first run", handle).await.unwrap();
    assert_eq!(first.status, TurnStatus::Cancelled);
}

#[tokio::test]
async fn close_interrupts_running_turns_and_refuses_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = Arc::new(FakeAdapter::new());
    let ctx = context(
        "c",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: wait 60000",
    );
    let handle = start(&adapter, ctx, Arc::new(scripted())).await;
    within("close", adapter.close()).await;
    within("close again", adapter.close()).await;
    let outcome = within("closed turn", handle).await.unwrap();
    assert_eq!(outcome.status, TurnStatus::Interrupted);

    let ctx = context(
        "c2",
        dir.path(),
        AgentProfile::WorkspaceWrite,
        "fake: complete x",
    );
    let refused = within("after close", adapter.run(ctx, Arc::new(scripted()))).await;
    failed_with(&refused, BridgeErrorCode::AgentRuntimeUnavailable);
    assert!(!within("probe", adapter.probe()).await.available);
}

#[tokio::test]
async fn probe_models_capabilities_and_reconcile() {
    let adapter = FakeAdapter::new();
    assert_eq!(adapter.name(), FAKE_RUNTIME);
    let probe = within("probe", adapter.probe()).await;
    assert!(probe.available);
    assert_eq!(probe.version.as_deref(), Some(FAKE_VERSION));

    let caps = adapter.capabilities();
    assert!(caps.live_steer && caps.interactive_approval && caps.interactive_question);
    assert!(caps.persistent_session && !caps.model_override);
    assert_eq!(caps.in_flight_recovery, InFlightRecovery::None);
    assert_eq!(caps.model_discovery, ModelDiscovery::Unsupported);
    let info = caps.runtime_info(adapter.name(), &probe);
    assert_eq!(info.name, "fake");
    assert!(info.available && info.live_steer);
    assert_eq!(info.version.as_deref(), Some("phase-a"));

    let catalog = within("models", adapter.models()).await;
    assert_eq!(catalog.runtime, "fake");
    assert_eq!(catalog.status, CatalogStatus::Unsupported);
    assert_eq!(catalog.scope, CatalogScope::None);
    assert!(catalog.models.is_empty());

    let state = within("reconcile", adapter.reconcile("t", &NativeIds::default())).await;
    assert_eq!(
        state,
        ProviderState {
            status: ReconcileStatus::NotRecoverable,
            provider_active: Some(false),
        }
    );
}

#[test]
fn the_directive_grammar() {
    let script = parse_script(
        "Please do things.\n  fake: complete  two words \nfake: approval\nfake: options\nfake: two-approvals\n\
         fake: question\nfake: start-after 5\nfake: wait 25\nfake: steer\nfake: fail AGENT_TASK_TIMED_OUT\n\
         fake: write a.txt x y\nfake: write empty\nfake: shell-write b.txt z\nfake: child-tree\nfake: env",
    )
    .unwrap();
    assert_eq!(
        script,
        vec![
            Directive::Complete("two words".to_owned()),
            Directive::Approval("echo test".to_owned()),
            Directive::Options,
            Directive::TwoApprovals,
            Directive::Question("Pick one".to_owned()),
            Directive::StartAfter(Duration::from_millis(5)),
            Directive::Wait(Duration::from_millis(25)),
            Directive::Steer,
            Directive::Fail(BridgeErrorCode::AgentTaskTimedOut),
            Directive::Write {
                name: "a.txt".to_owned(),
                content: "x y".to_owned(),
                by_shell: false,
            },
            Directive::Write {
                name: "empty".to_owned(),
                content: String::new(),
                by_shell: false,
            },
            Directive::Write {
                name: "b.txt".to_owned(),
                content: "z".to_owned(),
                by_shell: true,
            },
            Directive::ChildTree,
            Directive::Env,
        ]
    );
    assert_eq!(
        parse_script("hello").unwrap(),
        vec![Directive::Complete("hello".to_owned())]
    );
    assert!(parse_script("fake: write").is_err());
    assert!(parse_script("fake: start-after soon").is_err());
    assert!(parse_script("fake: shell-write").is_err());
    assert!(parse_script("fake: options allow").is_err());
}

#[test]
fn task_context_debug_hides_the_prompt_and_path() {
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("secret-host-path");
    fs::create_dir(&dir).unwrap();
    let ctx = context("t", &dir, AgentProfile::Review, "my private prompt");
    let shown = format!("{ctx:?}");
    assert!(!shown.contains("private") && !shown.contains("secret-host-path"));
}

#[tokio::test]
async fn env_reports_only_the_runtime_proxy_policy() {
    let proxy = ProxyPolicy {
        proxy_url: Some("http://proxy.internal:3128".to_owned()),
        no_proxy: Some("corp.example".to_owned()),
        enabled_for_runtime: true,
    };
    for (adapter, expected) in [
        (FakeAdapter::new(), "env: none"),
        (
            FakeAdapter::with_proxy(proxy),
            "env: HTTPS_PROXY=<configured>, NO_PROXY=corp.example,127.0.0.1,localhost,::1",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let host = Arc::new(scripted());
        let ctx = context("env", dir.path(), AgentProfile::Review, "fake: env");
        let outcome = within("env turn", adapter.run(ctx, host)).await;
        assert_eq!(outcome.status, TurnStatus::Completed, "{outcome:?}");
        assert_eq!(outcome.final_text, expected);
    }
}

#[tokio::test]
async fn withdraw_settles_an_unanswered_approval_itself() {
    let host = Arc::new(RecordingHost::new(Unscripted::Hold));
    let outcome = run_prompt("fake: withdraw 50", host.clone()).await;
    assert_eq!(outcome.status, TurnStatus::Completed);
    assert_eq!(outcome.final_text, "withdrawn");
    assert_eq!(host.approvals().len(), 1);
    // The provider gave up the request: the host's wait was dropped.
    let held = host.take_held().expect("the approval was held");
    assert!(within("the withdrawal", held).await.is_err());

    // Answered in time, the answer counts.
    let host = Arc::new(scripted().with_decisions(&[ApprovalDecision::Deny]));
    let outcome = run_prompt("fake: withdraw 60000", host.clone()).await;
    assert_eq!(outcome.final_text, "answered: deny");
    assert!(
        matches!(parse_script("fake: withdraw soon"), Err(error) if error.code == BridgeErrorCode::AgentProviderError)
    );
}
