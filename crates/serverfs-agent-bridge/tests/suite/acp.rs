//! The generic ACP runtime through the real Bridge daemon, against the
//! scripted ACP agent of `serverfs_testkit::mock_acp` (issue 16; seed 002
//! §18): what the agent is started with and sent, what the task and the
//! runtime list show. Lifecycle cases every runtime shares are in
//! `conformance.rs`.

use std::time::Instant;

use serde_json::{Value, json};
use serverfs_agent_runtime::TASK_MARKER_VAR;
use serverfs_testkit::bridge::{
    Daemon, GONE_LIMIT, Setup, WAIT, assert_in_order, count, guards, mcp_mutation, poll,
    request_id, wait_workdir_free,
};
use serverfs_testkit::mock_acp::{self, Profile, Run, SLOW_INIT, runs};

use super::daemon_lifecycle::sha256_hex;
use serverfs_testkit::process::{
    KillOnDrop, await_escaped, is_running, live_with_home, runs_in_group, session_of, stat,
};

/// A Bridge running `profile` (on workdir `demo`).
fn start(profile: Profile) -> (Daemon, Setup) {
    start_with(profile, |setup| setup)
}

/// As [`start`], `tune` adjusting the setup.
fn start_with(profile: Profile, tune: impl FnOnce(Setup) -> Setup) -> (Daemon, Setup) {
    let setup = tune(mock_acp::bridge_setup(&[profile]));
    (setup.start_serving(), setup)
}

fn submit(bridge: &Daemon, prompt: &str) -> String {
    submit_with(bridge, json!({ "prompt": prompt }))
}

fn submit_with(bridge: &Daemon, extra: Value) -> String {
    let mut params = json!({ "runtime": "acp-mock" });
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    bridge.wait_submit(params)
}

/// The runtime's `runtime.list` descriptor.
fn listed(bridge: &Daemon) -> Value {
    let list = bridge.ok("runtime.list", json!({}));
    list["runtimes"]
        .as_array()
        .and_then(|runtimes| runtimes.iter().find(|r| r["name"] == "acp-mock"))
        .cloned()
        .unwrap_or_else(|| panic!("acp-mock is not listed: {list}"))
}

/// The fake's runs that opened a session for a task (not probes).
fn task_runs(setup: &Setup) -> Vec<Run> {
    runs(setup.root())
        .into_iter()
        .filter(|run| run.params("session/prompt").is_some())
        .collect()
}

fn fake_processes(setup: &Setup) -> Vec<u32> {
    live_with_home("fake-acp", setup.root())
}

/// Waits until no agent process of `setup` is left, `after` what.
fn wait_no_fake_process(setup: &Setup, after: &str) {
    poll(
        GONE_LIMIT,
        &format!("no agent process after {after}"),
        || fake_processes(setup).is_empty().then_some(()),
    );
}

/// Whether the Bridge waited for the slow agent ([`SLOW_INIT`]) rather than
/// keeping its own bound: far more than the bound and its stop take, far
/// less than the agent's answer.
fn kept_its_bound(started: Instant) -> bool {
    started.elapsed() < SLOW_INIT / 2
}

/// Every event of `task` as one JSON text, for absence checks.
fn events_text(bridge: &Daemon, task: &str) -> String {
    Value::Array(bridge.events(task)).to_string()
}

// --- configuration and the capability snapshot -----------------------------

#[test]
fn listing_starts_no_agent_and_reports_what_was_measured() {
    let (mut bridge, setup) = start(Profile::new());
    let before = listed(&bridge);
    assert_eq!(before["available"], true, "{before}");
    assert_eq!(before["capability_state"], "unmeasured", "{before}");
    assert_eq!(before["version"], Value::Null);
    assert_eq!(before.get("capabilities_measured_at"), None, "{before}");
    for conservative in [
        "persistent_session",
        "live_steer",
        "interactive_question",
        "model_override",
    ] {
        assert_eq!(before[conservative], false, "{conservative}: {before}");
    }
    assert_eq!(before["in_flight_recovery"], "none");
    assert_eq!(before["model_discovery"], "unsupported");
    assert!(runs(setup.root()).is_empty(), "listing started the agent");

    let task = submit(&bridge, "hello");
    bridge.wait_status(&task, "succeeded");
    let after = listed(&bridge);
    assert_eq!(after["capability_state"], "measured", "{after}");
    assert!(
        after["capabilities_measured_at"]
            .as_i64()
            .is_some_and(|at| at > 0),
        "{after}"
    );
    assert_eq!(after["version"], mock_acp::VERSION);
    assert_eq!(after["persistent_session"], true);
    assert_eq!(after["in_flight_recovery"], "session-resume");
    assert_eq!(after["live_steer"], false);
    assert_eq!(after["interactive_approval"], true);
    assert_eq!(after["interactive_question"], false);
    let runs_so_far = runs(setup.root()).len();
    assert_eq!(
        listed(&bridge),
        after,
        "a second listing measures nothing anew"
    );
    assert_eq!(runs(setup.root()).len(), runs_so_far);

    // The snapshot survives a restart; a changed profile starts anew.
    bridge.stop();
    let bridge = setup.start_serving();
    assert_eq!(listed(&bridge), after);
    drop(bridge);
    // The same state directory, another launch configuration.
    let changed = Profile::new().with("args = [\"--changed\"]");
    let bridge = setup
        .clone()
        .agent("acp_profiles", &format!("[{}]", changed.toml()))
        .start_serving();
    assert_eq!(listed(&bridge)["capability_state"], "unmeasured");
}

#[test]
fn probe_measures_with_initialize_only() {
    let setup = mock_acp::bridge_setup(&[Profile::new()]);
    let (status, stdout, stderr) = setup.run(&["probe"]);
    assert!(status.success(), "{stdout}\n{stderr}");
    let info: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{stdout}: {e}"));
    assert_eq!(info["name"], "acp-mock");
    assert_eq!(info["capability_state"], "measured", "{info}");
    assert_eq!(info["version"], mock_acp::VERSION);
    let probes = runs(setup.root());
    assert_eq!(probes.len(), 1);
    assert_eq!(
        probes[0].methods(),
        ["initialize"],
        "no session, no inference"
    );
    assert!(fake_processes(&setup).is_empty());
    // The running Bridge reports the probe's measurement.
    let bridge = setup.start_serving();
    assert_eq!(listed(&bridge)["capability_state"], "measured");

    let failing = mock_acp::bridge_setup(&[Profile::new().env("FAKE_ACP_INIT", "fail")]);
    let (status, stdout, _) = failing.run(&["probe"]);
    assert!(!status.success(), "{stdout}");
    assert!(
        stdout.starts_with(
            "acp-mock: probe failed: AGENT_PROVIDER_ERROR: acp-mock refused initialize"
        ),
        "{stdout}"
    );
}

#[test]
fn check_config_shows_the_profile() {
    let setup = mock_acp::bridge_setup(&[Profile::new()]);
    let (status, stdout, stderr) = setup.run(&["check-config"]);
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains("  runtimes: acp-mock (agent proxy: none)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  acp-mock: ACP, capabilities unmeasured (run `serverfs-agent-bridge probe`)\n"
        ),
        "{stdout}"
    );
}

#[test]
fn runtimes_and_profiles_are_checked_at_submit() {
    let other = Profile {
        id: "other".to_owned(),
        ..Profile::new()
    };
    let setup = Setup::new()
        .without_workdirs()
        .workdir(serverfs_testkit::bridge::Workdir {
            path: "work".to_owned(),
            ..serverfs_testkit::bridge::Workdir::new("demo", "workspace-write", &["acp-mock"])
        })
        .agent(
            "acp_profiles",
            &format!("[{}, {}]", Profile::new().toml(), other.toml()),
        );
    let bridge = setup.start_serving();
    // Defined, but allowed by no workdir: not a runtime of this Bridge.
    let refused = bridge
        .submit_with(json!({ "runtime": "acp-other", "prompt": "x" }))
        .map_err(|e| e.code);
    assert_eq!(refused, Err("AGENT_RUNTIME_NOT_ALLOWED".to_owned()));
    let refused = bridge
        .submit_with(json!({ "runtime": "acp-nope", "prompt": "x" }))
        .map_err(|e| e.code);
    assert_eq!(refused, Err("AGENT_RUNTIME_NOT_ALLOWED".to_owned()));
    // No read-only mode of an ACP agent is enforceable.
    let task = submit_with(&bridge, json!({ "prompt": "x", "profile": "review" }));
    let view = bridge.wait_terminal(&task);
    assert_eq!(view["error_code"], "AGENT_PROFILE_NOT_ALLOWED", "{view}");
    assert!(runs(setup.root()).is_empty(), "no agent started");
}

// --- protocol and session ---------------------------------------------------

#[test]
fn a_turn_speaks_acp_v1_as_the_smallest_client() {
    let (bridge, setup) = start_with(
        Profile::new()
            .env("MOCK_SETTING", "fixed")
            .with("args = [\"--stdio\", \"a b;c\"]")
            .with("env_passthrough = [\"MOCK_KEY\", \"MOCK_ABSENT\"]"),
        |setup| {
            setup
                .env("MOCK_KEY", "from-the-bridge")
                .env("OTHER_SECRET", "never")
        },
    );
    let task = submit(&bridge, "hello there");
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:hello there");
    let runs = task_runs(&setup);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.argv, ["--stdio", "a b;c"], "fixed argv, no shell");
    assert_eq!(run.refused, Vec::<String>::new());
    let initialize = run.params("initialize").unwrap();
    assert_eq!(initialize["protocolVersion"], 1);
    assert_eq!(
        initialize["clientCapabilities"]["fs"],
        json!({ "readTextFile": false, "writeTextFile": false })
    );
    assert_eq!(initialize["clientCapabilities"]["terminal"], false);
    assert_eq!(initialize["clientInfo"]["name"], "serverfs-agent-bridge");
    let new = run.params("session/new").unwrap();
    assert_eq!(new["mcpServers"], json!([]));
    assert_eq!(new["cwd"].as_str(), setup.work_dir().to_str());
    let prompt = run.params("session/prompt").unwrap();
    assert_eq!(prompt["sessionId"], "acp-session-1");
    assert_eq!(
        prompt["prompt"],
        json!([{ "type": "text", "text": "hello there" }])
    );
    assert_eq!(
        run.methods(),
        ["initialize", "session/new", "session/prompt"]
    );
    // The environment: the profile's pair, the named variable, the cwd;
    // nothing else of the Bridge's.
    assert_eq!(run.env["MOCK_SETTING"], "fixed");
    assert_eq!(run.env["MOCK_KEY"], "from-the-bridge");
    assert_eq!(run.env["PWD"].as_str(), setup.work_dir().to_str());
    for absent in ["OTHER_SECRET", "MOCK_ABSENT"] {
        assert!(!run.env.contains_key(absent), "{absent} reached the agent");
    }
    assert!(!run.env.keys().any(|name| name.starts_with("SERVERFS_")));
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
    // One message, the empty opening chunk dropped.
    assert_eq!(
        bridge.payloads(&task, "agent.message"),
        [json!({ "text": "done:hello there" })]
    );
    wait_workdir_free(&setup, "a completed task");
    assert!(fake_processes(&setup).is_empty());
}

#[test]
fn a_handshake_the_bridge_cannot_use_fails_the_task() {
    // The last column: whether `initialize` itself succeeded (and so the
    // capabilities were measured).
    for (knob, value, code, message, initialized) in [
        (
            "FAKE_ACP_PROTOCOL",
            "2",
            "AGENT_RUNTIME_UNAVAILABLE",
            "acp-mock speaks ACP protocol version 2, the Bridge only version 1",
            false,
        ),
        (
            "FAKE_ACP_INIT",
            "fail",
            "AGENT_PROVIDER_ERROR",
            "acp-mock refused initialize (JSON-RPC error -32603)",
            false,
        ),
        (
            "FAKE_ACP_INIT",
            "exit",
            "AGENT_PROVIDER_DISCONNECTED",
            "acp-mock exited or closed its output during initialize",
            false,
        ),
        // Valid JSON of the wrong shape: a bounded error of our own, not
        // the agent's text.
        (
            "FAKE_ACP_INIT",
            "malformed",
            "AGENT_PROVIDER_ERROR",
            "acp-mock answered initialize with an unreadable result",
            false,
        ),
        (
            "FAKE_ACP_NEW",
            "malformed",
            "AGENT_PROVIDER_ERROR",
            "acp-mock answered session/new with an unreadable result",
            true,
        ),
        (
            "FAKE_ACP_AUTH",
            "required",
            "AGENT_RUNTIME_NOT_READY",
            "acp-mock requires authentication",
            true,
        ),
    ] {
        let (bridge, setup) = start(Profile::new().env(knob, value));
        let task = submit(&bridge, "hello");
        let view = bridge.wait_status(&task, "failed");
        assert_eq!(view["error_code"], code, "{knob}={value}: {view}");
        let said = view["error_message"].as_str().unwrap_or_default();
        assert!(said.starts_with(message), "{knob}={value}: {said}");
        assert_eq!(
            listed(&bridge)["capability_state"],
            if initialized {
                "measured"
            } else {
                "unmeasured"
            },
            "{knob}={value}"
        );
        assert_eq!(
            count(&bridge.event_types(&task), "turn.started"),
            0,
            "{knob}={value}: never prompted"
        );
        wait_workdir_free(&setup, "a refused handshake");
        wait_no_fake_process(&setup, "a refused handshake");
    }
    // The probe reports a malformed handshake the same way.
    let malformed = mock_acp::bridge_setup(&[Profile::new().env("FAKE_ACP_INIT", "malformed")]);
    let (status, stdout, _) = malformed.run(&["probe"]);
    assert!(!status.success(), "{stdout}");
    assert_eq!(
        stdout.trim(),
        "acp-mock: probe failed: AGENT_PROVIDER_ERROR: acp-mock answered initialize with an \
         unreadable result"
    );
    wait_no_fake_process(&malformed, "a malformed probe");
    // Stray lines before the answer cost nothing.
    let (bridge, _setup) = start(Profile::new().env("FAKE_ACP_INIT", "garbage"));
    let task = submit(&bridge, "hello");
    bridge.wait_status(&task, "succeeded");
}

#[test]
fn a_slow_handshake_fails_the_probe_and_the_task_within_their_bounds() {
    // The agent would answer `initialize` only after SLOW_INIT.
    let slow = || Profile::new().env("FAKE_ACP_INIT", "slow");
    // A probe is bounded as a whole.
    let setup = mock_acp::bridge_setup(&[slow().with("probe_timeout_seconds = 0.5")]);
    let started = Instant::now();
    let (status, stdout, _) = setup.run(&["probe"]);
    assert!(!status.success(), "{stdout}");
    assert_eq!(
        stdout.trim(),
        "acp-mock: probe failed: AGENT_PROVIDER_DISCONNECTED: acp-mock did not finish its probe \
         in time"
    );
    assert!(kept_its_bound(started), "the probe waited for the agent");
    wait_no_fake_process(&setup, "a probe past its bound");
    let bridge = setup.start_serving();
    assert_eq!(listed(&bridge)["capability_state"], "unmeasured");
    drop(bridge);

    // A task's handshake is one request, bounded as every request.
    let (bridge, setup) = start(
        slow()
            .with("request_timeout_seconds = 0.5")
            .with("shutdown_timeout_seconds = 0.5"),
    );
    let started = Instant::now();
    let task = submit(&bridge, "hello");
    let view = bridge.wait_status(&task, "failed");
    assert!(kept_its_bound(started), "the task waited for the agent");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_DISCONNECTED", "{view}");
    assert_eq!(
        view["error_message"],
        "acp-mock did not answer initialize in time"
    );
    wait_workdir_free(&setup, "a handshake past its bound");
    wait_no_fake_process(&setup, "a handshake past its bound");
    assert_eq!(
        runs(setup.root())
            .iter()
            .map(Run::methods)
            .collect::<Vec<_>>(),
        [["initialize"]],
        "nothing but the handshake"
    );
}

/// Runs "first prompt", then a continuation of it asking the agent for
/// the session's history, which must hold the first prompt; both task ids.
fn first_then_history(bridge: &Daemon) -> (String, String) {
    let first = submit(bridge, "first prompt");
    bridge.wait_status(&first, "succeeded");
    let second = submit_with(
        bridge,
        json!({ "prompt": "history please", "continue_from_task_id": first }),
    );
    let view = bridge.wait_status(&second, "succeeded");
    assert_eq!(view["final_response"], "history:first prompt");
    (first, second)
}

#[test]
fn continuation_resumes_the_session_the_agent_remembers() {
    let (bridge, setup) = start(Profile::new());
    let (first, _) = first_then_history(&bridge);
    let runs = task_runs(&setup);
    assert_eq!(
        runs[1].methods(),
        ["initialize", "session/resume", "session/prompt"]
    );
    assert_eq!(
        runs[1].params("session/resume").unwrap()["sessionId"],
        "acp-session-1"
    );
    // A session the agent lost is not silently replaced by a new one.
    std::fs::remove_file(setup.root().join("fake-acp-sessions").join("acp-session-1")).unwrap();
    let third = submit_with(
        &bridge,
        json!({ "prompt": "x", "continue_from_task_id": first }),
    );
    let view = bridge.wait_status(&third, "failed");
    assert_eq!(view["error_code"], "AGENT_SESSION_NOT_RESUMABLE", "{view}");
    assert!(runs_without_new_session(&setup, 2));
}

/// Whether the runs after the first `skip` opened no new session.
fn runs_without_new_session(setup: &Setup, skip: usize) -> bool {
    runs(setup.root())
        .iter()
        .skip(skip)
        .all(|run| run.params("session/new").is_none())
}

#[test]
fn a_loaded_session_does_not_replay_into_the_new_task() {
    let (bridge, setup) = start(Profile::new().env("FAKE_ACP_SESSIONS", "load"));
    let (_, second) = first_then_history(&bridge);
    assert_eq!(
        task_runs(&setup)[1].methods(),
        ["initialize", "session/load", "session/prompt"]
    );
    let events = events_text(&bridge, &second);
    assert!(!events.contains("REPLAYED"), "{events}");
    assert_eq!(
        count(&bridge.event_types(&second), "command.started"),
        0,
        "{events}"
    );
    assert_eq!(
        count(&bridge.event_types(&second), "agent.message"),
        1,
        "{events}"
    );
}

#[test]
fn an_agent_without_continuation_refuses_it_explicitly() {
    let (bridge, setup) = start(Profile::new().env("FAKE_ACP_SESSIONS", "none"));
    let first = submit(&bridge, "first prompt");
    bridge.wait_status(&first, "succeeded");
    assert_eq!(listed(&bridge)["persistent_session"], false);
    let second = submit_with(
        &bridge,
        json!({ "prompt": "x", "continue_from_task_id": first }),
    );
    let view = bridge.wait_status(&second, "failed");
    assert_eq!(view["error_code"], "AGENT_SESSION_NOT_RESUMABLE", "{view}");
    assert!(
        runs_without_new_session(&setup, 1),
        "a fresh session was started instead"
    );
}

#[test]
fn the_session_is_recorded_before_the_prompt_ends() {
    // Crash mid-turn: the restarted Bridge interrupts the task and never
    // re-runs it, and the session recorded before the crash continues.
    let (mut bridge, setup) = start(Profile::new());
    let first = submit(&bridge, "wait here");
    poll(WAIT, "the turn to start", || {
        (count(&bridge.event_types(&first), "turn.started") > 0).then_some(())
    });
    bridge.kill();
    // The agent loses its stdin with the Bridge and ends; a restart before
    // that would find the task's agent still alive and keep its guard.
    wait_no_fake_process(&setup, "the Bridge was killed");
    let bridge = setup.start_serving();
    let view = bridge.wait_terminal(&first);
    assert_eq!(view["status"], "interrupted", "{view}");
    wait_workdir_free(&setup, "the restart");
    let second = submit_with(
        &bridge,
        json!({ "prompt": "history please", "continue_from_task_id": first }),
    );
    let view = bridge.wait_status(&second, "succeeded");
    assert_eq!(view["final_response"], "history:wait here");
    assert_eq!(
        task_runs(&setup).len(),
        2,
        "the interrupted prompt never ran again"
    );
}

#[test]
fn stray_lines_are_skipped_and_an_oversized_one_ends_the_turn() {
    let (bridge, setup) = start(Profile::new());
    let task = submit(&bridge, "garbage");
    assert_eq!(
        bridge.wait_status(&task, "succeeded")["final_response"],
        "done:garbage"
    );
    let task = submit(&bridge, "oversized");
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_DISCONNECTED", "{view}");
    wait_workdir_free(&setup, "an oversized line");
    assert!(fake_processes(&setup).is_empty());
}

#[test]
fn turn_endings_other_than_end_turn_fail() {
    let (bridge, _setup) = start(Profile::new());
    for (prompt, message) in [
        (
            "error",
            "acp-mock refused session/prompt (JSON-RPC error -32603)",
        ),
        ("refusal", "acp-mock refused to continue"),
        (
            "rogue-cancel",
            "acp-mock cancelled the turn outside a ServerFS cancellation",
        ),
        (
            "eof",
            "acp-mock exited or closed its output during the turn",
        ),
    ] {
        let task = submit(&bridge, prompt);
        let view = bridge.wait_status(&task, "failed");
        assert_eq!(view["error_message"], message, "{view}");
    }
}

// --- permissions --------------------------------------------------------------

/// Waits for the approval of `task` and answers `decision` with
/// `option_id`; the answer.
fn choose(
    bridge: &Daemon,
    task: &str,
    decision: &str,
    option_id: Option<&str>,
) -> Result<Value, String> {
    let pending = bridge.wait_pending(task);
    bridge
        .respond_option(task, &request_id(&pending), decision, option_id)
        .map_err(|error| error.code)
}

#[test]
fn approvals_carry_the_agents_exact_options() {
    let (bridge, setup) = start(Profile::new().session_scoped(false));
    let task = submit(&bridge, "approval");
    let pending = bridge.wait_pending(&task);
    let payload = &pending["payload"];
    assert_eq!(payload["category"], "command", "{payload}");
    assert_eq!(payload["tool"], "execute");
    assert_eq!(payload["command_display"], "echo hi > created.txt");
    assert_eq!(payload["title"], "echo hi > created.txt");
    assert_eq!(
        payload["available_decisions"],
        json!(["approve_once", "deny", "cancel_task"]),
        "allow_always is not offered unless session-scoped"
    );
    assert_eq!(
        payload["options"],
        json!([
            { "option_id": "once", "label": "Allow once", "kind": "allow_once" },
            { "option_id": "reject", "label": "Reject", "kind": "reject_once" },
        ]),
        "never reject_always"
    );
    let request = request_id(&pending);
    for (decision, option) in [
        ("approve_once", Some("forged")),
        ("approve_once", Some("never")),
        ("approve_once", Some("reject")),
        ("approve_session", Some("always")),
        ("approve_once", None),
    ] {
        assert_eq!(
            bridge
                .respond_option(&task, &request, decision, option)
                .map_err(|e| e.code),
            Err("INVALID_APPROVAL_DECISION".to_owned()),
            "{decision} {option:?}"
        );
    }
    assert_eq!(bridge.task(&task)["status"], "waiting_for_approval");
    assert!(!setup.work_dir().join("created.txt").exists());
    bridge
        .respond_option(&task, &request, "approve_once", Some("once"))
        .unwrap();
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "approval:once");
    assert!(setup.work_dir().join("created.txt").exists());
    let run = &task_runs(&setup)[0];
    assert_eq!(
        run.answers()[0]["result"],
        json!({ "outcome": { "outcome": "selected", "optionId": "once" } })
    );
    assert_in_order(
        &bridge.event_types(&task),
        &[
            "agent.message",
            "command.started",
            "approval.requested",
            "approval.resolved",
            "item.completed",
            "task.completed",
        ],
    );

    let task = submit(&bridge, "approval");
    choose(&bridge, &task, "deny", Some("reject")).unwrap();
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "approval:reject");
}

#[test]
fn a_session_scoped_allow_always_is_offered_as_approve_session() {
    let (bridge, _setup) = start(Profile::new().session_scoped(true));
    let task = submit(&bridge, "approval");
    choose(&bridge, &task, "approve_session", Some("always")).unwrap();
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "approval:always");
    // Without allow_once the agent's set is shown as it is.
    let task = submit(&bridge, "no-allow-once");
    let pending = bridge.wait_pending(&task);
    assert_eq!(
        pending["payload"]["available_decisions"],
        json!(["approve_session", "deny", "cancel_task"])
    );
    choose(&bridge, &task, "deny", Some("reject")).unwrap();
    bridge.wait_status(&task, "succeeded");
}

#[test]
fn a_missing_allow_once_is_never_invented() {
    let (bridge, _setup) = start(Profile::new().session_scoped(false));
    let task = submit(&bridge, "no-allow-once");
    let pending = bridge.wait_pending(&task);
    assert_eq!(
        pending["payload"]["available_decisions"],
        json!(["deny", "cancel_task"])
    );
    assert_eq!(
        pending["payload"]["options"],
        json!([{ "option_id": "reject", "label": "Reject", "kind": "reject_once" }])
    );
    choose(&bridge, &task, "deny", Some("reject")).unwrap();
    assert_eq!(
        bridge.wait_status(&task, "succeeded")["final_response"],
        "approval:reject"
    );
}

#[test]
fn a_permission_storm_is_presented_one_at_a_time() {
    let (bridge, setup) = start(Profile::new());
    let task = submit(&bridge, "storm");
    let mut chosen = Vec::new();
    for _ in 0..5 {
        let pending = bridge.wait_task(&task, "the next request", |view| {
            view["pending_request"].is_object()
                && !chosen.contains(&view["pending_request"]["request_id"].clone())
        })["pending_request"]
            .clone();
        // Presented in the order the requests reached the host; each is
        // answered by its own ids: odd ones allowed, even ones rejected.
        let options = pending["payload"]["options"].as_array().unwrap().clone();
        let id = options[0]["option_id"].as_str().unwrap();
        let odd = id[1..2].parse::<u32>().unwrap() % 2 == 1;
        let (decision, option) = if odd {
            ("approve_once", &options[0])
        } else {
            ("deny", &options[1])
        };
        bridge
            .respond_option(
                &task,
                &request_id(&pending),
                decision,
                option["option_id"].as_str(),
            )
            .unwrap();
        chosen.push(pending["request_id"].clone());
    }
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(
        view["final_response"],
        "storm:p1-yes,p2-no,p3-yes,p4-no,p5-yes"
    );
    assert_eq!(count(&bridge.event_types(&task), "approval.requested"), 5);
    assert_eq!(
        task_runs(&setup)[0].answers().len(),
        5,
        "each answered once"
    );
}

#[test]
fn cancel_while_a_permission_waits_answers_it_cancelled() {
    let (bridge, setup) = start(Profile::new());
    let task = submit(&bridge, "approval");
    bridge.wait_pending(&task);
    let cancelled = bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled");
    wait_workdir_free(&setup, "a cancel during an approval");
    let run = &task_runs(&setup)[0];
    assert_eq!(
        run.answers()[0]["result"],
        json!({ "outcome": { "outcome": "cancelled" } })
    );
    let methods = run.methods();
    assert_eq!(
        methods[methods.len() - 2..],
        ["-", "session/cancel"],
        "answered, then cancelled"
    );
    assert!(!setup.work_dir().join("created.txt").exists());
    assert!(fake_processes(&setup).is_empty());
}

#[test]
fn an_unanswered_permission_expires_and_the_turn_stops() {
    let (bridge, setup) = start_with(Profile::new(), |setup| {
        setup.agent("interaction_timeout_seconds", "1")
    });
    let task = submit(&bridge, "approval");
    let view = bridge.wait_terminal(&task);
    assert_ne!(view["status"], "succeeded", "{view}");
    wait_workdir_free(&setup, "an expired approval");
    let run = &task_runs(&setup)[0];
    assert_eq!(
        run.answers()[0]["result"],
        json!({ "outcome": { "outcome": "cancelled" } })
    );
    assert!(run.methods().contains(&"session/cancel"));
}

#[test]
fn requests_the_bridge_never_offered_are_refused() {
    let (bridge, _setup) = start(Profile::new());
    let task = submit(&bridge, "fs");
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "fs:-32601,-32601");
}

// --- cancellation and containment --------------------------------------------

#[test]
fn an_agent_ignoring_session_cancel_is_stopped_within_the_bound() {
    let (bridge, setup) = start(Profile::new().with("shutdown_timeout_seconds = 0.5"));
    let task = submit(&bridge, "stubborn");
    poll(WAIT, "the turn to start", || {
        (count(&bridge.event_types(&task), "turn.started") > 0).then_some(())
    });
    let cancelled = bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled");
    wait_workdir_free(&setup, "a cancel the agent ignored");
    assert!(fake_processes(&setup).is_empty());
    assert!(task_runs(&setup)[0].methods().contains(&"session/cancel"));
}

#[test]
fn a_cancel_stops_the_agents_descendants() {
    let (bridge, setup) = start(Profile::new());
    let task = submit(&bridge, "child");
    let shell = poll(WAIT, "the agent's child", || {
        task_runs(&setup)
            .first()
            .and_then(|run| run.children.first().copied())
    });
    let (_, group) = stat(shell).expect("the child runs");
    assert!(runs_in_group(shell, group));
    assert_eq!(guards(&setup).len(), 1, "the guard holds the agent's group");
    bridge.ok("task.cancel", json!({ "task_id": task }));
    wait_workdir_free(&setup, "a cancel of an agent with children");
    poll(WAIT, "the agent's descendants to stop", || {
        (!runs_in_group(shell, group)).then_some(())
    });
}

#[test]
fn a_cancel_stops_descendants_that_left_the_agents_group() {
    let (bridge, setup) = start(Profile::new());
    let task = submit(&bridge, "escape");
    // Out of the agent's group and session, ignoring SIGTERM, one orphaned:
    // only the task marker the Bridge gave the agent still ties them to it.
    let own_session = session_of(std::process::id()).expect("the test's session");
    let escaped = KillOnDrop(await_escaped(TASK_MARKER_VAR, &task, 2, own_session));
    let cancelled = bridge.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled");
    // The guard goes only with the last of them.
    poll(WAIT, "the guard to go", || {
        if !guards(&setup).is_empty() {
            return None;
        }
        for pid in &escaped.0 {
            assert!(!is_running(*pid), "guard removed while {pid} runs");
        }
        Some(())
    });
    wait_workdir_free(&setup, "a cancel of an agent whose commands escaped");
    assert!(fake_processes(&setup).is_empty());
}

#[test]
fn an_idempotent_retry_runs_one_turn() {
    let (bridge, setup) = start(Profile::new());
    let params = json!({ "prompt": "once only", "idempotency_key": "k-1" });
    let first = submit_with(&bridge, params.clone());
    let again = submit_with(&bridge, params);
    assert_eq!(first, again);
    bridge.wait_status(&first, "succeeded");
    assert_eq!(task_runs(&setup).len(), 1);
    // The same key for another request is a conflict, never a second
    // turn, nor the first task's answer.
    for change in [
        json!({ "prompt": "something else" }),
        json!({ "model": "mock/b" }),
        json!({ "path": "sub" }),
    ] {
        let mut params =
            json!({ "runtime": "acp-mock", "prompt": "once only", "idempotency_key": "k-1" });
        for (key, value) in change.as_object().unwrap() {
            params[key] = value.clone();
        }
        let refused = bridge.submit_with(params).map_err(|error| error.code);
        assert_eq!(
            refused,
            Err("AGENT_IDEMPOTENCY_CONFLICT".to_owned()),
            "{change}"
        );
    }
    assert_eq!(
        runs(setup.root()).len(),
        1,
        "no agent started for a conflict"
    );
}

#[test]
fn the_task_deadline_bounds_the_prompt() {
    // The deadline leaves room for the agent's start and handshake on a
    // slow machine, so that it falls during the prompt.
    let (bridge, setup) = start_with(Profile::new(), |setup| {
        setup.agent("task_timeout_seconds", "3")
    });
    // `wait` runs until it is cancelled.
    let task = submit(&bridge, "wait");
    let view = bridge.wait_status(&task, "interrupted");
    assert_eq!(view["error_code"], "AGENT_TASK_TIMED_OUT", "{view}");
    wait_workdir_free(&setup, "a task past its deadline");
    wait_no_fake_process(&setup, "a task past its deadline");
    let run = &task_runs(&setup)[0];
    assert_eq!(
        run.methods()[run.methods().len() - 2..],
        ["session/prompt", "session/cancel"],
        "the agent was told to stop its turn"
    );
    assert_eq!(count(&bridge.event_types(&task), "task.interrupted"), 1);
}

#[test]
fn a_second_writer_is_refused_while_an_acp_task_holds_the_workdir() {
    let (bridge, setup) = start(Profile::new());
    let task = submit(&bridge, "wait");
    poll(WAIT, "the turn to start", || {
        (count(&bridge.event_types(&task), "turn.started") > 0).then_some(())
    });
    let refused = bridge
        .submit_with(json!({ "runtime": "acp-mock", "prompt": "second writer" }))
        .map_err(|error| error.code);
    assert_eq!(refused, Err("WORKDIR_BUSY".to_owned()));
    assert_eq!(
        mcp_mutation(&setup),
        Err("WORKDIR_BUSY"),
        "nor may ServerFS write"
    );
    let holders: Vec<String> = guards(&setup).into_iter().map(|(task, _)| task).collect();
    assert_eq!(holders, [task.as_str()]);
    assert_eq!(
        runs(setup.root()).len(),
        1,
        "the refused writer started no agent"
    );
    bridge.ok("task.cancel", json!({ "task_id": task }));
    wait_workdir_free(&setup, "the writer's cancel");
    let second = submit(&bridge, "second writer");
    assert_eq!(
        bridge.wait_status(&second, "succeeded")["final_response"],
        "done:second writer"
    );
}

// --- events and results --------------------------------------------------------

#[test]
fn events_are_bounded_redacted_and_free_of_raw_acp() {
    let (bridge, setup) = start(Profile::new());
    let task = submit(&bridge, "meta");
    bridge.wait_status(&task, "succeeded");
    let events = events_text(&bridge, &task);
    for raw in ["META_SECRET", "_meta", "from_the_future", "usage"] {
        assert!(!events.contains(raw), "{raw} in {events}");
    }
    // The plan, as typed entries, its host path redacted.
    assert_eq!(
        bridge.payloads(&task, "plan.updated"),
        [json!({ "entries": [
            { "content": "edit <workdir>/src/lib.rs", "status": "pending", "priority": "high" },
            { "content": "run the tests", "status": "completed", "priority": "low" },
        ]})]
    );

    let task = submit(&bridge, "paths");
    let view = bridge.wait_status(&task, "succeeded");
    let root = setup.root().to_str().unwrap();
    assert!(!view.to_string().contains(root), "{view}");
    assert_eq!(view["final_response"], "see <workdir>/notes.txt");
    assert!(!events_text(&bridge, &task).contains(root));

    let task = submit(&bridge, "stderr");
    let view = bridge.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "done:stderr");
    assert!(!events_text(&bridge, &task).contains("sk-fake-stderr-secret"));
    assert!(
        !bridge.stderr().contains("sk-fake-stderr-secret"),
        "copied into the Bridge's log"
    );
}

#[test]
fn approval_paths_decide_how_an_approval_shows_an_outside_path() {
    // The fake's outside file is `<setup root>/elsewhere.txt`, and the
    // Bridge's `HOME` is the setup root: informative shows it under `~`.
    for (approval_paths, outside) in [
        (None, "~/elsewhere.txt"),
        (Some(r#""informative""#), "~/elsewhere.txt"),
        (Some(r#""redacted""#), "<outside-workdir>"),
    ] {
        let (bridge, setup) = start_with(Profile::new(), |setup| match approval_paths {
            Some(value) => setup.server("approval_paths", value),
            None => setup,
        });
        let task = submit(&bridge, "approval");
        let pending = bridge.wait_pending(&task);
        assert_eq!(
            pending["payload"]["file_changes"],
            json!([{ "path": "created.txt" }, { "path": outside }]),
            "{approval_paths:?}"
        );
        let root = setup.root().to_str().unwrap().to_owned();
        assert!(!bridge.task(&task).to_string().contains(&root));
    }
}

#[test]
fn no_host_path_reaches_the_client() {
    let (bridge, setup) = start(Profile::new());
    let root = setup.root().to_str().unwrap().to_owned();
    // A permission request whose tool call names the cwd, a file in it
    // and one outside it (under the Bridge's home, the setup root: `~`).
    let task = submit(&bridge, "approval");
    let pending = bridge.wait_pending(&task);
    let payload = &pending["payload"];
    assert_eq!(
        payload["file_changes"],
        json!([{ "path": "created.txt" }, { "path": "~/elsewhere.txt" }]),
        "{payload}"
    );
    assert_eq!(
        payload["tool_input"],
        json!({ "command": "echo hi > created.txt", "cwd": "." })
    );
    let view = bridge.task(&task);
    assert!(!view.to_string().contains(&root), "{view}");
    choose(&bridge, &task, "deny", Some("reject")).unwrap();
    bridge.wait_status(&task, "succeeded");
    let events = events_text(&bridge, &task);
    assert!(!events.contains(&root), "{events}");

    // Tool calls naming the same paths, as locations and as input.
    let task = submit(&bridge, "paths");
    bridge.wait_status(&task, "succeeded");
    assert_eq!(
        bridge.payloads(&task, "file_change.started"),
        [json!({ "tool": "edit", "tool_use_id": "call-edit",
                 "input": { "paths": ["notes.txt", "<outside-workdir>"] } })]
    );
    assert_eq!(
        bridge.payloads(&task, "tool.started"),
        [json!({ "tool": "read", "tool_use_id": "call-read",
                 "input": { "path": "notes.txt", "also": ["<outside-workdir>"] } })]
    );
    let events = events_text(&bridge, &task);
    assert!(!events.contains(&root), "{events}");
}

#[test]
fn a_large_result_is_spooled_and_read_back_whole() {
    let (bridge, _setup) = start(Profile::new());
    // 2 MiB of `x`, over the default spool threshold of 256 KiB.
    let task = submit(&bridge, "huge");
    let view = bridge.wait_status(&task, "succeeded");
    let expected = "x".repeat(2 * 1024 * 1024);
    let digest = sha256_hex(expected.as_bytes());
    assert_eq!(view["result"]["storage"], "spool", "{}", view["result"]);
    assert_eq!(view["result"]["size_bytes"], expected.len());
    assert_eq!(view["result"]["sha256"], digest.as_str());
    assert_eq!(view["final_response_truncated"], true);
    assert_eq!(
        bridge.payloads(&task, "task.result_spooled"),
        [json!({ "size_bytes": expected.len(), "sha256": digest })]
    );
    let mut read = String::new();
    loop {
        let chunk = bridge.ok(
            "task.result.read",
            json!({ "task_id": task, "offset_bytes": read.len(), "max_bytes": 65_536 }),
        );
        read.push_str(chunk["text"].as_str().unwrap());
        if chunk["eof"] == true {
            break;
        }
        assert!(read.len() <= expected.len(), "read past the result");
    }
    assert_eq!(sha256_hex(read.as_bytes()), digest);
    assert!(read == expected, "the result read back differs");
}

#[test]
fn a_huge_message_is_cut_in_its_event_but_not_in_the_result() {
    let (bridge, _setup) = start(Profile::new());
    let task = submit(&bridge, "huge");
    let view = bridge.wait_status(&task, "succeeded");
    let messages = bridge.payloads(&task, "agent.message");
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages[0]["truncated"], true,
        "{}",
        messages[0]["size_bytes"]
    );
    assert_eq!(messages[0]["size_bytes"], 2 * 1024 * 1024);
    let total = view["result"]["size_bytes"].as_u64().or_else(|| {
        view["final_response"]
            .as_str()
            .map(|text| text.len() as u64)
    });
    assert_eq!(total, Some(2 * 1024 * 1024), "{}", view["result"]);
}

// --- models ----------------------------------------------------------------------

/// A Bridge whose agent offers its models as `FAKE_ACP_MODELS=knob` says,
/// once their catalog was listed: it came from `source` and lists the
/// fake's two models, and the runtime list, conservative before, now
/// reports the override. The catalog.
fn listed_models(knob: &str, source: &str) -> (Daemon, Setup, Value) {
    let (bridge, setup) = start(Profile::new().env("FAKE_ACP_MODELS", knob));
    assert_eq!(listed(&bridge)["model_override"], false, "unmeasured");
    let catalog = bridge.ok("runtime.models", json!({ "runtime": "acp-mock" }));
    assert_eq!(catalog["status"], "ok", "{catalog}");
    assert_eq!(catalog["source"], source, "{catalog}");
    let models: Vec<(&str, bool)> = catalog["models"]
        .as_array()
        .unwrap_or_else(|| panic!("no models: {catalog}"))
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap_or_default(),
                m["is_default"] == true,
            )
        })
        .collect();
    assert_eq!(models, [("mock/a", true), ("mock/b", false)]);
    let runtime = listed(&bridge);
    assert_eq!(runtime["model_override"], true, "{runtime}");
    assert_eq!(runtime["model_discovery"], "runtime_catalog", "{runtime}");
    (bridge, setup, catalog)
}

#[test]
fn models_come_from_the_sessions_model_selector() {
    let (bridge, setup, _) = listed_models("1", "acp_session_config");
    assert_eq!(
        runs(setup.root())[0].methods(),
        ["initialize", "session/new"],
        "no prompt"
    );

    let task = submit_with(&bridge, json!({ "prompt": "pick", "model": "mock/b" }));
    assert_eq!(
        bridge.wait_status(&task, "succeeded")["final_response"],
        "done:pick model=mock/b"
    );
    let set = task_runs(&setup)[0]
        .params("session/set_config_option")
        .cloned()
        .unwrap();
    assert_eq!(
        set,
        json!({ "sessionId": "acp-session-2", "configId": "model", "value": "mock/b" })
    );
    // Request-scoped: the next task has the agent's own default.
    let task = submit(&bridge, "plain");
    assert_eq!(
        bridge.wait_status(&task, "succeeded")["final_response"],
        "done:plain"
    );
    // A model the agent refuses fails the task rather than falling back.
    let task = submit_with(&bridge, json!({ "prompt": "pick", "model": "mock/zzz" }));
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(
        view["error_message"],
        "acp-mock refused the model (JSON-RPC error -32602)"
    );
    assert_eq!(
        count(&bridge.event_types(&task), "turn.started"),
        0,
        "never prompted"
    );
}

#[test]
fn models_come_from_a_models_list_when_that_is_what_the_agent_offers() {
    let (bridge, setup, catalog) = listed_models("list", "acp_session_models");
    assert_eq!(catalog["models"][1]["display_name"], "Mock B");

    // An override for one task, through session/set_model.
    let task = submit_with(&bridge, json!({ "prompt": "pick", "model": "mock/b" }));
    assert_eq!(
        bridge.wait_status(&task, "succeeded")["final_response"],
        "done:pick model=mock/b"
    );
    let run = task_runs(&setup).remove(0);
    assert_eq!(
        run.methods(),
        [
            "initialize",
            "session/new",
            "session/set_model",
            "session/prompt"
        ]
    );
    assert_eq!(
        run.params("session/set_model"),
        Some(&json!({ "sessionId": "acp-session-2", "modelId": "mock/b" }))
    );
    // The next task has the agent's own default.
    let task = submit(&bridge, "plain");
    assert_eq!(
        bridge.wait_status(&task, "succeeded")["final_response"],
        "done:plain"
    );
    assert_eq!(
        task_runs(&setup)[1].methods(),
        ["initialize", "session/new", "session/prompt"]
    );
    // A model the list does not name is refused before the agent is
    // asked: its answer to set_model could not show a fallback.
    let task = submit_with(&bridge, json!({ "prompt": "pick", "model": "mock/zzz" }));
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(view["error_code"], "AGENT_PROVIDER_ERROR", "{view}");
    assert_eq!(
        view["error_message"],
        "acp-mock does not offer the model; list_agent_models shows the models it does"
    );
    assert_eq!(count(&bridge.event_types(&task), "turn.started"), 0);
    let refused = runs(setup.root()).pop().unwrap();
    assert_eq!(
        refused.methods(),
        ["initialize", "session/new"],
        "never asked, never prompted"
    );
    wait_no_fake_process(&setup, "a refused model");
}

#[test]
fn the_stable_config_option_is_preferred_over_a_models_list() {
    let (bridge, setup, _) = listed_models("both", "acp_session_config");
    let task = submit_with(&bridge, json!({ "prompt": "pick", "model": "mock/b" }));
    assert_eq!(
        bridge.wait_status(&task, "succeeded")["final_response"],
        "done:pick model=mock/b"
    );
    let run = task_runs(&setup).remove(0);
    assert!(run.params("session/set_config_option").is_some());
    assert_eq!(run.params("session/set_model"), None, "{:?}", run.methods());
}

#[test]
fn an_agent_without_a_model_selector_takes_no_model() {
    let (bridge, _setup) = start(Profile::new());
    let catalog = bridge.ok("runtime.models", json!({ "runtime": "acp-mock" }));
    assert_eq!(catalog["status"], "unsupported", "{catalog}");
    assert_eq!(listed(&bridge)["model_override"], false);
    let task = submit_with(&bridge, json!({ "prompt": "pick", "model": "mock/b" }));
    let view = bridge.wait_status(&task, "failed");
    assert_eq!(
        view["error_message"],
        "acp-mock offers no model selection; submit the task without a model"
    );
}

#[test]
fn the_agent_proxy_reaches_a_proxied_profile() {
    let (bridge, setup) = start_with(Profile::new(), |setup| {
        setup
            .agent("proxy_runtimes", r#"["acp-mock"]"#)
            .env("SERVERFS_AGENT_PROXY_URL", "http://127.0.0.1:3128")
    });
    let task = submit(&bridge, "hello");
    bridge.wait_status(&task, "succeeded");
    let run = &task_runs(&setup)[0];
    assert_eq!(run.env["HTTPS_PROXY"], "http://127.0.0.1:3128");
    assert!(run.env["NO_PROXY"].as_str().unwrap().contains("127.0.0.1"));
}
