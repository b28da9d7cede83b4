//! The Claude Code and Qoder runtimes through the real Bridge daemon,
//! against the scripted fake CLIs of `serverfs_testkit::mock_stream_json`
//! (issue 13; spec-adapters.md §3–§4): what the CLI is started with and
//! sent, and what the task shows. Lifecycle cases every runtime shares are
//! in `conformance.rs`.
//!
//! Every scenario runs for both CLIs ([`both_clis!`]); the fake logs its
//! argv, environment and every message it read under the Bridge's `HOME`.

use std::path::Path;

use serde_json::{Value, json};
use serverfs_testkit::bridge::{
    Daemon, Setup, WAIT, assert_in_order, count, poll, request_id, wait_workdir_free,
};
use serverfs_testkit::mock_stream_json::{self, Cli, SLOW_INIT_VARIABLE, read_log};
use serverfs_testkit::process::live_with_home;

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
    approvals_offer_and_apply_only_session_suggestions,
    settings_suggestions_are_never_offered_for_the_session,
    questions_single_multi_and_free_text,
    a_duplicate_question_is_refused,
    cancel_before_the_prompt_never_sends_it,
    cancel_after_the_prompt_interrupts,
    a_withdrawn_request_goes_stale,
    unsupported_requests_are_refused_at_once,
    error_results_and_eof_are_provider_errors,
    garbage_lines_are_skipped,
    a_model_override_applies_to_its_own_task_only,
    models_are_listed_without_a_turn,
    passed_through_credentials_reach_only_their_runtime,
    the_egress_proxy_reaches_the_cli_its_own_way,
);

/// A Bridge for `cli`'s runtime on the fake; `tune` adjusts the setup.
fn start(cli: Cli, tune: impl FnOnce(Setup) -> Setup) -> (Daemon, Setup) {
    let setup = tune(mock_stream_json::bridge_setup(cli));
    (setup.start_serving(), setup)
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

/// The fake's runs, one entry per run: its argv, environment and the
/// messages it read.
struct Run {
    argv: Vec<String>,
    env: serde_json::Map<String, Value>,
    received: Vec<Value>,
    proxy: Option<Value>,
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
            });
        } else if let Some(run) = runs.last_mut() {
            if let Some(message) = entry.get("received") {
                run.received.push(message.clone());
            } else if let Some(proxy) = entry.get("proxy") {
                run.proxy = Some(proxy.clone());
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
        // The auth payload file went with the process.
        let file = run.env["QODER_SDK_AUTH_PAYLOAD_FILE"].as_str().unwrap();
        assert!(!Path::new(file).exists(), "{file} left behind");
    }
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
    let mut resumed = base_argv(cli);
    match cli {
        Cli::Claude => resumed.push(format!("--resume={session}")),
        Cli::Qoder => resumed.extend(["--resume".to_owned(), session]),
    }
    assert_eq!(runs[1].argv, resumed);
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

fn pending_approval(bridge: &Daemon, task: &str) -> Value {
    let pending = bridge.wait_pending(task);
    assert_eq!(pending["kind"], "approval", "{pending}");
    pending
}

fn approvals_offer_and_apply_only_session_suggestions(cli: Cli) {
    let (bridge, _setup) = start(cli, |setup| setup);
    let display = match cli {
        Cli::Claude => "Claude",
        Cli::Qoder => "Qoder",
    };
    for (decision, status, said) in [
        ("approve_once", "succeeded", Some("approval:allow")),
        (
            "approve_session",
            "succeeded",
            Some("approval:allow:session"),
        ),
        ("deny", "succeeded", Some("approval:deny")),
        ("cancel_task", "cancelled", None),
    ] {
        let task = submit(&bridge, cli, "approval please");
        let pending = pending_approval(&bridge, &task);
        let payload = &pending["payload"];
        assert_eq!(
            payload["available_decisions"],
            json!(["approve_once", "approve_session", "deny", "cancel_task"]),
            "{payload}"
        );
        assert_eq!(payload["category"], "command");
        assert_eq!(payload["command_display"], "echo hi > created.txt");
        assert_eq!(payload["tool"], "Bash");
        assert_eq!(
            payload["title"], "Bash",
            "{display}: the CLI's display name"
        );
        bridge
            .respond(&task, &request_id(&pending), decision)
            .unwrap();
        let view = bridge.wait_terminal(&task);
        assert_eq!(view["status"], status, "{decision}: {view}");
        if let Some(said) = said {
            assert_eq!(view["final_response"], said, "{decision}");
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
            .env(SLOW_INIT_VARIABLE, "3000")
    });
    let task = submit(&bridge, cli, "wait");
    // The CLI has started and is slow to answer `initialize`.
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
    let pending = bridge.wait_pending(&task);
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "withdrawn");
    assert_eq!(
        bridge
            .respond(&task, &request_id(&pending), "approve_once")
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
    assert_eq!(view["final_response"], "unsupported:unsupported request");
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
    assert!(
        runs[0]
            .argv
            .windows(2)
            .any(|w| w == ["--model", "mock-opus"])
    );
    assert!(!runs[1].argv.contains(&"--model".to_owned()));
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
