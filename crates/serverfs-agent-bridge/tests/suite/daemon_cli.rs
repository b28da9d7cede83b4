//! The command line of the real binary: `check-config`, configuration
//! errors (exit 2, one line), a second daemon on a claimed socket, and
//! `inspect` (redacted: statuses and ids, never a prompt or a host path).

use std::time::Duration;

use serde_json::json;

use serverfs_testkit::bridge::{ChildTree, Setup, Workdir, guards};

/// The one-line prefix of every configuration error.
const CONFIG_ERROR: &str = "serverfs-agent-bridge: configuration error: ";

/// Asserts a refusal: exit 2, nothing on stdout, exactly one stderr line
/// starting with `prefix`; returns that line.
fn one_line_refusal(status: std::process::ExitStatus, stdout: &str, stderr: &str) -> String {
    assert_eq!(
        status.code(),
        Some(2),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(stdout, "", "stderr:\n{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    lines[0].to_owned()
}

/// Runs `check-config` and `serve` on `setup`; both must refuse with one
/// configuration-error line containing `expected` and none of `secrets`,
/// and `serve` must not create the socket or the state directory.
fn assert_config_error(setup: &Setup, expected: &str, secrets: &[&str]) {
    let (status, stdout, stderr) = setup.run(&["check-config"]);
    let checked = one_line_refusal(status, &stdout, &stderr);

    let mut daemon = setup.spawn();
    let status = daemon
        .wait_exit(Duration::from_secs(15))
        .unwrap_or_else(|| panic!("serve did not refuse; stderr:\n{}", daemon.stderr()));
    let served = one_line_refusal(status, "", &daemon.stderr());
    assert_eq!(checked, served, "both commands give the same reason");
    assert!(checked.starts_with(CONFIG_ERROR), "{checked}");
    assert!(checked.contains(expected), "{checked}");
    for secret in secrets {
        assert!(!checked.contains(secret), "{checked} echoes {secret}");
    }
    assert!(!setup.socket().exists(), "{checked}");
    assert!(!setup.state_dir().exists(), "{checked}");
}

#[test]
fn check_config_prints_the_effective_settings() {
    let setup = Setup::new()
        .agent("max_active_tasks", "2")
        .agent("task_timeout_seconds", "600")
        .agent("interaction_timeout_seconds", "60")
        .agent("proxy_runtimes", r#"["fake"]"#)
        .env("SERVERFS_AGENT_PROXY_URL", "http://proxy.test:3128")
        .workdir(Workdir::new("notes", "review", &["fake"]));
    let (status, stdout, stderr) = setup.run(&["check-config"]);
    assert!(status.success(), "{stderr}");
    assert_eq!(stderr, "");
    let root = setup.root().display().to_string();
    let uid = rustix::process::getuid().as_raw();
    let expected = format!(
        "agent bridge: enabled\n\
         \x20 socket: {root}/run/bridge.sock\n\
         \x20 state_dir: {root}/state\n\
         \x20 lock_dir: {root}/run/locks\n\
         \x20 peer: uid {uid}\n\
         \x20 limits: max_active_tasks 2, task_timeout 600 s, interaction_timeout 60 s, \
         retention 168 h, result_spool_threshold 262144 bytes\n\
         \x20 runtimes: fake (agent proxy: fake)\n\
         workdirs:\n\
         \x20 demo: agent_mode workspace-write, runtimes fake, read-write\n\
         \x20 notes: agent_mode review, runtimes fake, read-write\n"
    );
    assert_eq!(stdout, expected);
    assert!(!stdout.contains("proxy.test"), "the endpoint is a secret");
    assert!(!setup.socket().exists(), "check-config only reads");
    assert!(!setup.state_dir().exists(), "check-config only reads");
}

#[test]
fn a_disabled_bridge_refuses_to_start() {
    // Without agent workdirs: the Bridge's own check.
    let setup = Setup::new()
        .agent("enabled", "false")
        .without_workdirs()
        .workdir(Workdir::new("plain", "disabled", &[]));
    assert_config_error(
        &setup,
        "agent.enabled: the Agent Bridge is disabled; set [agent] enabled = true",
        &[],
    );
    // With one: the shared configuration already refuses it.
    let setup = Setup::new().agent("enabled", "false");
    assert_config_error(&setup, "set agent.enabled to true", &[]);
}

#[test]
fn a_relative_state_dir_is_refused() {
    let setup = Setup::new().agent("state_dir", r#""rel""#);
    assert_config_error(&setup, "state_dir", &[]);
    assert!(!setup.root().join("rel").exists());
}

#[test]
fn an_acp_runtime_needs_its_profile_and_its_executable() {
    let setup = Setup::new().without_workdirs().workdir(Workdir::new(
        "demo",
        "workspace-write",
        &["acp-opencode"],
    ));
    assert_config_error(
        &setup,
        "runtime \"acp-opencode\" is not a configured ACP profile",
        &[],
    );
    // The profile's executable is checked when the Bridge starts, not
    // when its first task fails.
    let setup = setup.agent(
        "acp_profiles",
        r#"[{ id = "opencode", command = "/nonexistent/opencode", args = ["acp"] }]"#,
    );
    assert_config_error(
        &setup,
        "agent.acp_profiles[0].command: /nonexistent/opencode is not an executable file",
        &[],
    );
}

/// The daemon's PATH holds no `codex` (nor `claude`, `qodercli`): enabling
/// the runtime names the missing executable at start-up instead of failing
/// every task later.
#[test]
fn a_codex_runtime_without_its_executable_is_refused() {
    let setup = Setup::new().without_workdirs().workdir(Workdir::new(
        "demo",
        "workspace-write",
        &["codex"],
    ));
    assert_config_error(&setup, "codex_bin", &[]);
    // Likewise the stream-json CLIs.
    for (runtime, key) in [("claude", "agent.claude_bin"), ("qoder", "agent.qoder_bin")] {
        let setup = Setup::new().without_workdirs().workdir(Workdir::new(
            "demo",
            "workspace-write",
            &[runtime],
        ));
        assert_config_error(&setup, &format!("{key}: "), &[]);
    }
}

#[test]
fn a_malformed_proxy_url_is_refused_without_echoing_it() {
    for url in [
        "http://operator:hunter2@vault.test:3128",
        "socks5://vault.test:1080",
        "http://vault.test:3128/path?token=hunter2",
        "http://vault.test",
    ] {
        let setup = Setup::new().env("SERVERFS_AGENT_PROXY_URL", url);
        assert_config_error(
            &setup,
            "SERVERFS_AGENT_PROXY_URL",
            &["vault", "hunter2", "operator", url],
        );
    }
}

#[test]
fn a_second_daemon_on_the_same_socket_refuses_to_start() {
    let setup = Setup::new();
    let mut first = setup.start();
    let task = first.submit("fake: complete before");
    first.wait_status(&task, "succeeded");

    let mut second = setup.spawn();
    let status = second
        .wait_exit(Duration::from_secs(15))
        .unwrap_or_else(|| panic!("the second daemon kept running: {}", second.stderr()));
    let line = one_line_refusal(status, "", &second.stderr());
    assert!(
        line.starts_with("serverfs-agent-bridge: cannot start: SOCKET_PATH_IN_USE"),
        "{line}"
    );

    first.assert_alive();
    assert!(
        setup.socket().exists(),
        "the first daemon's socket is intact"
    );
    let runtimes = first.ok("runtime.list", json!({}));
    assert_eq!(runtimes["runtimes"][0]["name"], "fake", "{runtimes}");
    let after = first.submit("fake: complete after");
    first.wait_status(&after, "succeeded");
    assert_eq!(first.task(&task)["status"], "succeeded");
    assert!(first.stop().success(), "{}", first.stderr());
}

#[test]
fn inspect_lists_tasks_without_their_prompts() {
    const WORD: &str = "quokkaplatypus";
    let setup = Setup::new();
    let (status, stdout, stderr) = setup.run(&["inspect"]);
    assert!(status.success(), "{stderr}");
    assert_eq!(
        stdout,
        "tasks: none (the Bridge has not run yet)\n\
         recovery guards: none (no lock directory yet)\n"
    );

    let mut daemon = setup.start();
    let done = daemon.submit(&format!("fake: complete {WORD} finished"));
    daemon.wait_status(&done, "succeeded");
    let failed = daemon.submit(&format!("fake: fail AGENT_PROVIDER_ERROR\n{WORD}"));
    daemon.wait_status(&failed, "failed");

    // Beside the running daemon (WAL).
    let (status, stdout, stderr) = setup.run(&["inspect"]);
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.starts_with("tasks: 2 shown, 0 unfinished\n"),
        "{stdout}"
    );
    let line = |task: &str| {
        stdout
            .lines()
            .find(|line| line.contains(task))
            .unwrap_or_else(|| panic!("{task} not listed:\n{stdout}"))
            .to_owned()
    };
    let done_line = line(&done);
    assert!(
        done_line.starts_with(&format!(
            "  {done} succeeded runtime=fake workdir=demo cwd=. profile=workspace-write "
        )),
        "{done_line}"
    );
    assert!(
        done_line.contains(" native_session=recorded result_bytes="),
        "{done_line}"
    );
    assert!(
        !done_line.contains("fake-session"),
        "a native id: {done_line}"
    );
    let failed_line = line(&failed);
    assert!(
        failed_line.starts_with(&format!("  {failed} failed runtime=fake ")),
        "{failed_line}"
    );
    assert!(
        failed_line.ends_with(" error=AGENT_PROVIDER_ERROR"),
        "{failed_line}"
    );
    assert!(stdout.ends_with("recovery guards: none\n"), "{stdout}");
    assert!(!stdout.contains(WORD), "inspect shows a prompt:\n{stdout}");
    let root = setup.root().display().to_string();
    assert!(
        !stdout.contains(&root),
        "inspect shows a host path:\n{stdout}"
    );

    assert!(daemon.stop().success());
    let log = daemon.stderr();
    assert!(!log.contains(WORD), "the log shows a prompt:\n{log}");
}

#[test]
fn inspect_lists_a_kept_recovery_guard() {
    let setup = Setup::new();
    let mut daemon = setup.start();
    let task = daemon.submit("fake: child-tree");
    let tree = ChildTree::wait_for(&setup, &task);
    daemon.kill();

    let (status, stdout, stderr) = setup.run(&["inspect"]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains(&format!("  {task} running ")), "{stdout}");
    assert!(
        stdout.ends_with(&format!(
            "recovery guards: 1\n  workdir demo task={task} runtime=fake provider=running pgid={}\n",
            tree.pgid()
        )),
        "{stdout}"
    );

    tree.kill();
    tree.wait_gone();
    let (status, stdout, stderr) = setup.run(&["inspect"]);
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.ends_with(&format!(
            "recovery guards: 1\n  workdir demo task={task} runtime=fake provider=stopped pgid={}\n",
            tree.pgid()
        )),
        "inspect only reads; the guard stays until a Bridge clears it:\n{stdout}"
    );
    assert_eq!(guards(&setup).len(), 1);
}
