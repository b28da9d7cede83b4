//! The Claude Code and Qoder runtimes through the real Bridge daemon,
//! against the scripted fake CLIs of `serverfs_testkit::mock_stream_json`
//! (issue 13; spec-adapters.md §3–§4): what the CLI is started with and
//! sent, and what the task shows. Lifecycle cases every runtime shares are
//! in `conformance.rs`.
//!
//! Every scenario runs for both CLIs ([`both_clis!`]); the fake logs its
//! argv, environment and every message it read under the Bridge's `HOME`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_testkit::bridge::{
    Daemon, Setup, WAIT, assert_in_order, count, poll, request_id, wait_workdir_free,
};
use serverfs_testkit::mock_stream_json::{
    self, AUTH_PAYLOAD_VARIABLE, Cli, MODELS_VARIABLE, SLOW_INIT_VARIABLE, UNANSWERED_VARIABLE,
    read_log,
};
use serverfs_testkit::process::live_with_home;

use super::native_ids::recorded_session;

/// Runs each named scenario, a `fn(Cli)`, once per CLI.
macro_rules! both_clis {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn claude() {
                    super::$name(super::Cli::Claude);
                }

                #[test]
                fn qoder() {
                    super::$name(super::Cli::Qoder);
                }
            }
        )*
    };
}

both_clis!(
    a_turn_runs_in_native_mode,
    continuation_resumes_the_recorded_session,
    a_restart_interrupts_and_the_recorded_session_resumes,
    approvals_of_every_category_offer_and_apply_only_session_suggestions,
    settings_suggestions_are_never_offered_for_the_session,
    questions_single_multi_and_free_text,
    a_duplicate_question_is_refused,
    cancel_before_the_prompt_never_sends_it,
    cancel_after_the_prompt_interrupts,
    a_withdrawn_request_goes_stale,
    unsupported_requests_are_refused_at_once,
    error_results_and_eof_are_provider_errors,
    garbage_lines_are_skipped,
    an_oversized_line_fails_the_turn_and_stops_the_cli,
    an_unanswered_control_request_times_out,
    a_cli_ignoring_eof_and_sigterm_is_killed,
    a_model_override_applies_to_its_own_task_only,
    a_model_a_cli_could_read_as_an_option_is_refused_at_submit,
    models_are_listed_without_a_turn,
    an_empty_or_invalid_model_list_is_unavailable,
    passed_through_credentials_reach_only_their_runtime,
    the_egress_proxy_reaches_the_cli_its_own_way,
);

/// Qoder's credentials: the payload file of a personal access token.
#[test]
fn a_personal_access_token_reaches_qodercli_in_its_payload_file_only() {
    qoder_access_token();
}

/// A Bridge for `cli`'s runtime on the fake; `tune` adjusts the setup.
fn start(cli: Cli, tune: impl FnOnce(Setup) -> Setup) -> (Daemon, Setup) {
    let setup = tune(mock_stream_json::bridge_setup(cli));
    (setup.start_serving(), setup)
}

/// `setup` with `variables` in the Bridge's environment and handed to
/// `cli`'s runtime by name, as an operator would (the fake reads its
/// test switches this way).
fn passing(setup: Setup, cli: Cli, variables: &[(&str, &str)]) -> Setup {
    let names: Vec<String> = variables
        .iter()
        .map(|(name, _)| format!("{name:?}"))
        .collect();
    let passthrough = format!("{}_env_passthrough", cli.name());
    let setup = setup.agent(&passthrough, &format!("[{}]", names.join(", ")));
    variables
        .iter()
        .fold(setup, |setup, (name, value)| setup.env(name, value))
}

/// How `cli` calls itself to people ("Claude", "Qoder").
fn display(cli: Cli) -> &'static str {
    match cli {
        Cli::Claude => "Claude",
        Cli::Qoder => "Qoder",
    }
}

fn submit(bridge: &Daemon, cli: Cli, prompt: &str) -> String {
    submit_with(bridge, cli, json!({ "prompt": prompt }))
}

fn submit_with(bridge: &Daemon, cli: Cli, extra: Value) -> String {
    let mut params = json!({ "runtime": cli.name() });
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    bridge.wait_submit(params)
}

/// The fake's runs, one entry per run: its argv, environment, the
/// messages it read, and what else it logged.
struct Run {
    argv: Vec<String>,
    env: serde_json::Map<String, Value>,
    received: Vec<Value>,
    proxy: Option<Value>,
    /// Qoder's auth payload as the fake found it: `payload`, `file_mode`,
    /// `dir_mode`.
    auth: Option<Value>,
    /// Every other entry (`{"stdin": "closed"}`, `{"ignored": "SIGTERM"}`).
    notes: Vec<Value>,
}

fn runs(setup: &Setup, cli: Cli) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for entry in read_log(setup.root(), cli) {
        if let Some(argv) = entry.get("argv") {
            runs.push(Run {
                argv: serde_json::from_value(argv.clone()).unwrap(),
                env: entry["env"].as_object().cloned().unwrap_or_default(),
                received: Vec::new(),
                proxy: None,
                auth: None,
                notes: Vec::new(),
            });
        } else if let Some(run) = runs.last_mut() {
            if let Some(message) = entry.get("received") {
                run.received.push(message.clone());
            } else if let Some(proxy) = entry.get("proxy") {
                run.proxy = Some(proxy.clone());
            } else if let Some(auth) = entry.get("auth") {
                run.auth = Some(auth.clone());
            } else {
                run.notes.push(entry);
            }
        }
    }
    runs
}

/// The runs that ran a task (model discovery sends no user message).
fn task_runs(setup: &Setup, cli: Cli) -> Vec<Run> {
    runs(setup, cli)
        .into_iter()
        .filter(|run| !run.argv.contains(&"--setting-sources=user".to_owned()))
        .filter(|run| {
            !run.argv
                .windows(2)
                .any(|pair| pair == ["--setting-sources", "user"])
        })
        .collect()
}

fn base_argv(cli: Cli) -> Vec<String> {
    let argv: &[&str] = match cli {
        Cli::Claude => &[
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
            "--setting-sources=user,project,local",
        ],
        Cli::Qoder => &[
            "--print",
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
            "--setting-sources",
            "user,project,local",
        ],
    };
    argv.iter().map(|arg| (*arg).to_owned()).collect()
}

/// Live fake-CLI processes (zombies excluded) of `setup`'s Bridge.
fn fake_processes(setup: &Setup, cli: Cli) -> Vec<u32> {
    let program = match cli {
        Cli::Claude => "fake-claude",
        Cli::Qoder => "fake-qodercli",
    };
    live_with_home(program, setup.root())
}

fn a_turn_runs_in_native_mode(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "hello there");
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:hello there");
    let runs = task_runs(&setup, cli);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.argv, base_argv(cli), "argv exactly as the SDKs send it");
    assert_eq!(
        run.env.get("PWD").and_then(Value::as_str),
        setup.work_dir().to_str()
    );
    let marker = match cli {
        Cli::Claude => "CLAUDE_CODE_ENTRYPOINT",
        Cli::Qoder => "QODER_ENTRYPOINT",
    };
    assert_eq!(run.env[marker], "sdk-rust");
    // The handshake, then the prompt: nothing else, no override.
    let subtypes: Vec<&str> = run
        .received
        .iter()
        .map(|message| {
            message["request"]["subtype"]
                .as_str()
                .or_else(|| message["type"].as_str())
                .unwrap_or("?")
        })
        .collect();
    let expected: &[&str] = match cli {
        Cli::Claude => &["initialize", "user"],
        Cli::Qoder => &["initialize", "set_proxy", "user"],
    };
    assert_eq!(subtypes, expected);
    assert_eq!(
        run.received[0]["request"],
        match cli {
            Cli::Claude => json!({ "subtype": "initialize", "hooks": null }),
            Cli::Qoder => json!({ "subtype": "initialize", "modelPolicyProvider": false,
                              "initializeTimeoutMs": 60_000 }),
        }
    );
    let types = bridge.event_types(&task);
    assert_in_order(
        &types,
        &[
            "task.started",
            "turn.started",
            "agent.message",
            "task.completed",
        ],
    );
    wait_workdir_free(&setup, "a completed task");
    assert_eq!(fake_processes(&setup, cli), Vec::<u32>::new());
    if cli == Cli::Qoder {
        // The local login, in a private file that went with the process.
        assert_eq!(
            run.auth,
            Some(
                json!({ "payload": { "type": "qodercli" }, "file_mode": "600",
                         "dir_mode": "700" })
            )
        );
        let file = run.env[AUTH_PAYLOAD_VARIABLE].as_str().unwrap();
        assert!(!Path::new(file).exists(), "{file} left behind");
        let dir = Path::new(file).parent().unwrap();
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
}

/// The argv of a turn that resumes `session`.
fn resumed_argv(cli: Cli, session: &str) -> Vec<String> {
    let mut argv = base_argv(cli);
    match cli {
        Cli::Claude => argv.push(format!("--resume={session}")),
        Cli::Qoder => argv.extend(["--resume".to_owned(), session.to_owned()]),
    }
    argv
}

fn continuation_resumes_the_recorded_session(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let first = submit(&bridge, cli, "one");
    bridge.wait_status(&first, "succeeded");
    let second = submit_with(
        &bridge,
        cli,
        json!({ "prompt": "two", "continue_from_task_id": first }),
    );
    bridge.wait_status(&second, "succeeded");
    let session = format!("{}-session-1", cli.name());
    let runs = task_runs(&setup, cli);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].argv, resumed_argv(cli, &session));
    // A session the CLI does not know fails the follow-up.
    let unknown_home = setup.root().join(format!("fake-{}-sessions", cli.name()));
    std::fs::write(&unknown_home, "").unwrap();
    let third = submit_with(
        &bridge,
        cli,
        json!({ "prompt": "three", "continue_from_task_id": first }),
    );
    let view = bridge.wait_status(&third, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_ERROR", "{view}");
}

fn a_restart_interrupts_and_the_recorded_session_resumes(cli: Cli) {
    let (mut bridge, setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "wait");
    let session = format!("{}-session-1", cli.name());
    // Recorded as soon as the CLI named it, long before the turn ends.
    poll(WAIT, "the native session to be recorded", || {
        (recorded_session(&setup, &task).as_deref() == Some(session.as_str())).then_some(())
    });
    bridge.kill();
    // The CLI loses its stdin with the Bridge and ends.
    poll(WAIT, "the fake CLI to be gone", || {
        fake_processes(&setup, cli).is_empty().then_some(())
    });
    let bridge = setup.start_serving();
    let view = bridge.wait_terminal(&task);
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "BRIDGE_RESTARTED", "{view}");

    let next = submit_with(
        &bridge,
        cli,
        json!({ "prompt": "after the restart", "continue_from_task_id": task }),
    );
    let view = bridge.wait_status(&next, "succeeded");
    assert_eq!(view["final_response"], "done:after the restart");
    let runs = task_runs(&setup, cli);
    assert_eq!(runs.len(), 2, "the interrupted turn was run again");
    assert_eq!(runs[1].argv, resumed_argv(cli, &session));
    assert_eq!(recorded_session(&setup, &next), Some(session));
}

fn pending_approval(bridge: &Daemon, task: &str) -> Value {
    let pending = bridge.wait_pending(task);
    assert_eq!(pending["kind"], "approval", "{pending}");
    pending
}

/// One tool of each approval category (permission.rs maps them), with
/// the event its `tool_use` block becomes.
const APPROVAL_TOOLS: [(&str, &str, &str); 6] = [
    ("Bash", "command", "command.started"),
    ("Write", "file_change", "file_change.started"),
    ("Edit", "file_change", "file_change.started"),
    ("WebFetch", "network_permission", "tool.started"),
    ("mcp__github__create_issue", "mcp_tool", "tool.started"),
    ("Task", "other", "tool.started"),
];

/// Every decision, all of which a request with a session-scoped
/// suggestion offers.
const DECISIONS: [&str; 4] = ["approve_once", "approve_session", "deny", "cancel_task"];

/// What the task shows once the approval is answered with `decision`:
/// its status and, unless cancelled, what the fake says it received.
fn approval_outcome(decision: &str) -> (&'static str, Option<&'static str>) {
    match decision {
        "approve_once" => ("succeeded", Some("approval:allow")),
        "approve_session" => ("succeeded", Some("approval:allow:session")),
        "deny" => ("succeeded", Some("approval:deny")),
        "cancel_task" => ("cancelled", None),
        other => panic!("a decision nobody offers: {other}"),
    }
}

fn approvals_of_every_category_offer_and_apply_only_session_suggestions(cli: Cli) {
    let (bridge, _setup) = start(cli, |setup| setup);
    for (tool, category, started) in APPROVAL_TOOLS {
        let prompt = format!("approval tool={tool}");
        // Each decision on offer, on a task of its own.
        for decision in DECISIONS {
            let task = submit(&bridge, cli, &prompt);
            let pending = pending_approval(&bridge, &task);
            let payload = &pending["payload"];
            assert_eq!(payload["available_decisions"], json!(DECISIONS), "{tool}");
            assert_eq!(payload["category"], category, "{tool}: {payload}");
            assert_eq!(payload["tool"], tool);
            assert!(payload["tool_input"].is_object(), "{tool}: {payload}");
            // The fake's path lies outside the workdir, beside it: its
            // name only (`approval_paths` is informative by default).
            assert_eq!(payload["blocked_path"], "<outside-workdir>/…/created.txt");
            match tool {
                "Bash" => {
                    assert_eq!(payload["command_display"], "echo hi > created.txt");
                    assert_eq!(payload["title"], "Bash", "the CLI's display name");
                    assert_eq!(payload["reason"], "create a file");
                }
                _ => {
                    assert_eq!(payload.get("command_display"), None, "{payload}");
                    assert_eq!(
                        payload["title"],
                        format!("{} wants to use {tool}", display(cli))
                    );
                }
            }
            bridge
                .respond(&task, &request_id(&pending), decision)
                .unwrap();
            let view = bridge.wait_terminal(&task);
            let (status, said) = approval_outcome(decision);
            assert_eq!(view["status"], status, "{tool} {decision}: {view}");
            if let Some(said) = said {
                assert_eq!(view["final_response"], said, "{tool} {decision}");
            }
            assert_eq!(
                count(&bridge.event_types(&task), started),
                1,
                "{tool}: the tool use as {started}"
            );
        }
    }
}

fn settings_suggestions_are_never_offered_for_the_session(cli: Cli) {
    let (bridge, _setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "user-settings approval");
    let pending = pending_approval(&bridge, &task);
    assert_eq!(
        pending["payload"]["available_decisions"],
        json!(["approve_once", "deny", "cancel_task"])
    );
    assert_eq!(
        bridge
            .respond(&task, &request_id(&pending), "approve_session")
            .map_err(|e| e.code),
        Err("INVALID_APPROVAL_DECISION".to_owned())
    );
    bridge
        .respond(&task, &request_id(&pending), "approve_once")
        .unwrap();
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(
        view["final_response"], "approval:allow",
        "no update applied"
    );
}

fn answer(bridge: &Daemon, task: &str, selected: &[&str], text: Option<&str>) -> Value {
    let pending = bridge.wait_pending(task);
    assert_eq!(pending["kind"], "question", "{pending}");
    let question = &pending["payload"]["questions"][0];
    assert_eq!(question["prompt"], "Which option?");
    assert_eq!(question["allow_free_text"], true);
    let mut reply =
        json!({ "question_id": question["question_id"], "selected_option_ids": selected });
    if let Some(text) = text {
        reply["text"] = json!(text);
    }
    bridge
        .answer(task, &request_id(&pending), json!([reply]))
        .unwrap();
    bridge.wait_status(task, "succeeded")
}

fn questions_single_multi_and_free_text(cli: Cli) {
    let (bridge, _setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "question");
    let view = answer(&bridge, &task, &["B"], Some("because"));
    assert_eq!(view["final_response"], "question:B, because");

    let task = submit(&bridge, cli, "multi question");
    let pending = bridge.wait_pending(&task);
    let question = &pending["payload"]["questions"][0];
    assert_eq!(question["multi_select"], true);
    assert_eq!(
        question["options"],
        json!([
            { "option_id": "A", "label": "A", "description": "first" },
            { "option_id": "B", "label": "B", "description": "second" }
        ])
    );
    let view = answer(&bridge, &task, &["A", "B"], None);
    assert_eq!(view["final_response"], "question:A, B");

    let task = submit(&bridge, cli, "question");
    let view = answer(&bridge, &task, &[], Some("neither"));
    assert_eq!(view["final_response"], "question:neither");
}

fn a_duplicate_question_is_refused(cli: Cli) {
    let (bridge, _setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "duplicate question");
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "question:denied");
    assert_eq!(
        count(&bridge.event_types(&task), "question.requested"),
        0,
        "never shown to the human"
    );
}

fn cancel_before_the_prompt_never_sends_it(cli: Cli) {
    let passthrough = format!("{}_env_passthrough", cli.name());
    let (bridge, setup) = start(cli, |setup| {
        setup
            .agent(&passthrough, &format!("[{SLOW_INIT_VARIABLE:?}]"))
            .env(SLOW_INIT_VARIABLE, "30000")
    });
    let task = submit(&bridge, cli, "wait");
    // The CLI has started and is slow to answer `initialize` (30 s: the
    // cancel below must come first even on a loaded machine; it kills the
    // CLI, so no run waits that long).
    poll(WAIT, "the fake CLI to start", || {
        (!task_runs(&setup, cli).is_empty()).then_some(())
    });
    let cancelled = bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled");
    wait_workdir_free(&setup, "a cancel before the prompt");
    let run = &task_runs(&setup, cli)[0];
    assert!(
        !run.received.iter().any(|message| message["type"] == "user"),
        "the prompt was written: {:?}",
        run.received
    );
    poll(WAIT, "the fake CLI to be gone", || {
        fake_processes(&setup, cli).is_empty().then_some(())
    });
}

fn cancel_after_the_prompt_interrupts(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "wait");
    poll(WAIT, "the prompt to reach the CLI", || {
        task_runs(&setup, cli)
            .first()
            .is_some_and(|run| run.received.iter().any(|m| m["type"] == "user"))
            .then_some(())
    });
    bridge.ok("task.cancel", json!({ "task_id": task }));
    wait_workdir_free(&setup, "a cancel mid-turn");
    let view = bridge.task(&task);
    assert_eq!(view["status"], "cancelled", "{view}");
    let run = &task_runs(&setup, cli)[0];
    assert_eq!(
        run.received
            .iter()
            .filter(|m| m["request"]["subtype"] == "interrupt")
            .count(),
        1,
        "{:?}",
        run.received
    );
    assert_eq!(fake_processes(&setup, cli), Vec::<u32>::new());
}

fn a_withdrawn_request_goes_stale(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "withdraw");
    // Pending for only a moment: the id comes from the stored event.
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "withdrawn");
    let requested = bridge.wait_event(&task, "approval.requested");
    assert_eq!(
        bridge
            .respond(&task, &request_id(&requested["payload"]), "approve_once")
            .map_err(|e| e.code),
        Err("REQUEST_STALE".to_owned())
    );
    let run = &task_runs(&setup, cli)[0];
    assert!(
        !run.received.iter().any(|m| m["type"] == "control_response"),
        "a withdrawn request was answered: {:?}",
        run.received
    );
}

fn unsupported_requests_are_refused_at_once(cli: Cli) {
    let (bridge, _setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "unsupported");
    let view = bridge.wait_status(&task, "succeeded");
    // hook_callback, mcp_message, an unknown subtype, then a can_use_tool
    // without its tool: each refused without asking anyone.
    assert_eq!(
        view["final_response"],
        "unsupported:unsupported request|unsupported request|unsupported request|\
         malformed request"
    );
    let types = bridge.event_types(&task);
    assert_eq!(count(&types, "approval.requested"), 0, "{types:?}");
    assert_eq!(count(&types, "question.requested"), 0, "{types:?}");
}

fn error_results_and_eof_are_provider_errors(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let display = match cli {
        Cli::Claude => "Claude",
        Cli::Qoder => "Qoder",
    };
    let task = submit(&bridge, cli, "error");
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_ERROR");
    assert_eq!(
        view["error_message"],
        format!("{display} failed: mock failure")
    );
    let task = submit(&bridge, cli, "eof");
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_ERROR");
    assert_eq!(
        view["error_message"],
        format!("{display} ended without a result")
    );
    let task = submit(&bridge, cli, "not-logged-in");
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_RUNTIME_NOT_READY", "{view}");
    assert!(
        view["error_message"]
            .as_str()
            .is_some_and(|m| m.contains("not logged in on this host")),
        "{view}"
    );
    wait_workdir_free(&setup, "failed turns");
}

fn garbage_lines_are_skipped(cli: Cli) {
    let (bridge, _setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "garbage");
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:garbage");
}

fn an_oversized_line_fails_the_turn_and_stops_the_cli(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "oversized");
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_ERROR", "{view}");
    assert_eq!(
        view["error_message"],
        format!("{} sent a message over the line limit", display(cli))
    );
    wait_workdir_free(&setup, "an oversized line");
    assert_eq!(fake_processes(&setup, cli), Vec::<u32>::new());
}

fn an_unanswered_control_request_times_out(cli: Cli) {
    let timeout = format!("{}_request_timeout_seconds", cli.name());
    let (bridge, setup) = start(cli, |setup| {
        passing(setup, cli, &[(UNANSWERED_VARIABLE, "initialize")]).agent(&timeout, "0.5")
    });
    let task = submit(&bridge, cli, "hello");
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_DISCONNECTED", "{view}");
    assert_eq!(
        view["error_message"],
        format!(
            "{} did not answer the initialize request in time",
            display(cli)
        )
    );
    wait_workdir_free(&setup, "an unanswered initialize");
    let run = &task_runs(&setup, cli)[0];
    assert!(
        !run.received.iter().any(|m| m["type"] == "user"),
        "the prompt was written without a handshake: {:?}",
        run.received
    );
    assert_eq!(fake_processes(&setup, cli), Vec::<u32>::new());
}

fn a_cli_ignoring_eof_and_sigterm_is_killed(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "stubborn");
    // The task ends once the CLI is stopped: 5 s for it to exit by itself,
    // then SIGTERM, a 2 s grace and SIGKILL.
    let view = bridge.wait_terminal_within(&task, Duration::from_secs(60));
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["final_response"], "done:stubborn");
    wait_workdir_free(&setup, "a stubborn CLI");
    assert_eq!(fake_processes(&setup, cli), Vec::<u32>::new());
    // It saw its stdin close and shrugged off SIGTERM: only SIGKILL ended it.
    let notes = &task_runs(&setup, cli)[0].notes;
    assert_eq!(
        notes.first(),
        Some(&json!({ "stdin": "closed" })),
        "{notes:?}"
    );
    assert!(
        notes.contains(&json!({ "ignored": "SIGTERM" })),
        "{notes:?}"
    );
}

fn a_model_override_applies_to_its_own_task_only(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let task = submit_with(
        &bridge,
        cli,
        json!({ "prompt": "pick", "model": "mock-opus" }),
    );
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:pick model=mock-opus");
    let task = submit(&bridge, cli, "plain");
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:plain");
    let runs = task_runs(&setup, cli);
    // One word, so that no model can be read as an option of its own.
    assert!(runs[0].argv.contains(&"--model=mock-opus".to_owned()));
    assert!(!runs[0].argv.contains(&"--model".to_owned()));
    assert!(!runs[1].argv.iter().any(|arg| arg.starts_with("--model")));
}

/// Issue 27, item 7: a model that the CLI could read as an option (or
/// split into words) never reaches its argv; it is refused at submit.
fn a_model_a_cli_could_read_as_an_option_is_refused_at_submit(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let hostile = ["--dangerously-skip-permissions", "-x", "a b", "a\nb", ""];
    let long = "m".repeat(513);
    for model in hostile.into_iter().chain([long.as_str()]) {
        let refused = bridge
            .submit_with(json!({ "runtime": cli.name(), "prompt": "pick", "model": model }))
            .expect_err(model);
        assert_eq!(refused.code, "INVALID_REQUEST", "{model:?}");
    }
    assert!(task_runs(&setup, cli).is_empty());
}

fn models_are_listed_without_a_turn(cli: Cli) {
    let (bridge, setup) = start(cli, |setup| setup);
    let catalog = bridge.ok("runtime.models", json!({ "runtime": cli.name() }));
    assert_eq!(catalog["status"], "ok", "{catalog}");
    let ids: Vec<&str> = catalog["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(ids, ["default", "mock-opus"]);
    let (scope, source) = match cli {
        Cli::Claude => ("runtime_catalog", "claude_initialize"),
        Cli::Qoder => ("current_account", "qoder_agent_sdk"),
    };
    assert_eq!(
        (catalog["scope"].as_str(), catalog["source"].as_str()),
        (Some(scope), Some(source))
    );
    let all = runs(&setup, cli);
    assert_eq!(all.len(), 1);
    assert!(
        !all[0].received.iter().any(|m| m["type"] == "user"),
        "a turn was started to list models"
    );
    let runtimes = bridge.ok("runtime.list", json!({}));
    let info = runtimes["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == cli.name())
        .cloned()
        .unwrap();
    assert_eq!(info["available"], true);
    assert_eq!(info["live_steer"], false);
    assert_eq!(
        info["version"],
        cli.version().split_whitespace().next().unwrap()
    );
}

fn an_empty_or_invalid_model_list_is_unavailable(cli: Cli) {
    let mut spoilers = vec![(MODELS_VARIABLE, "empty"), (MODELS_VARIABLE, "invalid")];
    if cli == Cli::Qoder {
        spoilers.push((UNANSWERED_VARIABLE, "get_models"));
    }
    let timeout = format!("{}_request_timeout_seconds", cli.name());
    for (variable, value) in spoilers {
        let (bridge, setup) = start(cli, |setup| {
            passing(setup, cli, &[(variable, value)]).agent(&timeout, "0.5")
        });
        let catalog = bridge.ok("runtime.models", json!({ "runtime": cli.name() }));
        assert_eq!(
            (
                catalog["status"].as_str(),
                catalog["detail"].as_str(),
                catalog["models"].as_array().map(Vec::len)
            ),
            (Some("unavailable"), Some("model discovery failed"), Some(0)),
            "{variable}={value}: {catalog}"
        );
        poll(WAIT, "the discovery CLI to be gone", || {
            fake_processes(&setup, cli).is_empty().then_some(())
        });
    }
}

fn passed_through_credentials_reach_only_their_runtime(cli: Cli) {
    const KEY: &str = "ANTHROPIC_API_KEY";
    const MARKER: &str = "sk-ant-marker-0123456789abcdef";
    // Without passthrough, the Bridge's own key never reaches the CLI.
    let (bridge, setup) = start(cli, |setup| setup.env(KEY, MARKER));
    let task = submit(&bridge, cli, "hello");
    bridge.wait_status(&task, "succeeded");
    assert!(!task_runs(&setup, cli)[0].env.contains_key(KEY));
    drop(bridge);

    let passthrough = format!("{}_env_passthrough", cli.name());
    let (bridge, setup) = start(cli, |setup| {
        setup
            .env(KEY, MARKER)
            .agent(&passthrough, &format!("[{KEY:?}]"))
    });
    let task = submit(&bridge, cli, "hello");
    bridge.wait_status(&task, "succeeded");
    assert_eq!(task_runs(&setup, cli)[0].env[KEY], MARKER);
    // Never in the Bridge's log.
    assert!(!bridge.stderr().contains(MARKER));
}

fn the_egress_proxy_reaches_the_cli_its_own_way(cli: Cli) {
    const PROXY: &str = "http://proxy.test:3128";
    let (bridge, setup) = start(cli, |setup| {
        setup
            .env("SERVERFS_AGENT_PROXY_URL", PROXY)
            .agent("proxy_runtimes", &format!("[{:?}]", cli.name()))
    });
    let task = submit(&bridge, cli, "hello");
    bridge.wait_status(&task, "succeeded");
    let run = &task_runs(&setup, cli)[0];
    match cli {
        Cli::Claude => {
            assert_eq!(run.env["HTTPS_PROXY"], PROXY);
            assert!(run.env["NO_PROXY"].as_str().unwrap().contains("127.0.0.1"));
        }
        Cli::Qoder => {
            // Through `set_proxy`, never the environment.
            assert_eq!(run.proxy, Some(json!(PROXY)));
            assert!(!run.env.contains_key("HTTPS_PROXY"));
        }
    }
    // Without the proxy, Qoder is told so explicitly.
    drop(bridge);
    let (bridge, setup) = start(cli, |setup| setup);
    let task = submit(&bridge, cli, "hello");
    bridge.wait_status(&task, "succeeded");
    let run = &task_runs(&setup, cli)[0];
    assert!(!run.env.contains_key("HTTPS_PROXY"));
    if cli == Cli::Qoder {
        assert_eq!(run.proxy, Some(Value::Null));
    }
}

fn qoder_access_token() {
    const TOKEN_VARIABLE: &str = "QODER_PERSONAL_ACCESS_TOKEN";
    const TOKEN: &str = "pt-marker-0123456789abcdef";
    let cli = Cli::Qoder;
    let pat = |setup: Setup| {
        setup
            .agent("qoder_auth", "\"personal-access-token\"")
            .agent("qoder_env_passthrough", &format!("[{TOKEN_VARIABLE:?}]"))
    };
    let (bridge, setup) = start(cli, |setup| pat(setup).env(TOKEN_VARIABLE, TOKEN));
    let task = submit(&bridge, cli, "hello");
    bridge.wait_status(&task, "succeeded");
    let run = &task_runs(&setup, cli)[0];
    assert_eq!(
        run.auth,
        Some(json!({
            "payload": { "type": "accessToken", "accessToken": TOKEN },
            "file_mode": "600",
            "dir_mode": "700",
        }))
    );
    // In the payload file only: not in the CLI's environment or argv,
    // nowhere in the Bridge's log, and the file went with the CLI.
    assert!(!run.env.contains_key(TOKEN_VARIABLE), "handed to the CLI");
    assert!(
        !run.env.values().any(|value| value.as_str() == Some(TOKEN)),
        "the token is in the CLI's environment"
    );
    assert!(!run.argv.iter().any(|arg| arg.contains(TOKEN)));
    assert!(!bridge.stderr().contains(TOKEN));
    let file = run.env[AUTH_PAYLOAD_VARIABLE].as_str().unwrap();
    assert!(!Path::new(file).exists(), "{file} left behind");
    assert!(!bridge.task(&task).to_string().contains(TOKEN));
    drop(bridge);

    // A Bridge started without the token: its tasks say what is missing.
    let (bridge, setup) = start(cli, pat);
    let task = submit(&bridge, cli, "hello");
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_RUNTIME_NOT_READY", "{view}");
    assert_eq!(
        view["error_message"],
        "Qoder authenticates with a personal access token, but \
         QODER_PERSONAL_ACCESS_TOKEN is not set in the Bridge's environment"
    );
    assert!(
        runs(&setup, cli).is_empty(),
        "qodercli ran without credentials"
    );
}
