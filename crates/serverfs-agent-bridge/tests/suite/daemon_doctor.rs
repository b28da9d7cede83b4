//! `serverfs-agent-bridge doctor` on the real binary: a healthy Bridge is
//! all OK or WARN (exit 0); each broken piece an operator meets is a FAIL
//! line naming its fix (exit 1); a configuration error is exit 2; and no
//! credential ever appears, whether it sits in a passed-through variable,
//! an auth file or the proxy's URL.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serverfs_testkit::bridge::{Setup, Workdir};

/// Values that must never be printed.
const KEY_MARKER: &str = "sk-doctor-marker-7f3a";
const AUTH_FILE_MARKER: &str = "auth-file-marker-91c2";

struct Doctor {
    code: Option<i32>,
    stdout: String,
}

impl Doctor {
    fn run(setup: &Setup) -> Doctor {
        let (status, stdout, stderr) = setup.run(&["doctor"]);
        for marker in [KEY_MARKER, AUTH_FILE_MARKER] {
            assert!(
                !stdout.contains(marker) && !stderr.contains(marker),
                "doctor printed a credential:\n{stdout}{stderr}"
            );
        }
        Doctor {
            code: status.code(),
            stdout,
        }
    }

    /// The line of `check` (exactly one), which must carry `tag`.
    fn line(&self, tag: &str, check: &str) -> &str {
        let lines: Vec<&str> = self
            .stdout
            .lines()
            .filter(|line| {
                line.get(5..)
                    .is_some_and(|rest| rest.starts_with(&format!("{check}:")))
            })
            .collect();
        assert_eq!(lines.len(), 1, "{check}:\n{}", self.stdout);
        assert!(lines[0].starts_with(tag), "{tag} {check}:\n{}", self.stdout);
        lines[0]
    }

    fn fail(&self, check: &str, fix: &str) {
        let line = self.line("FAIL", check);
        assert!(line.contains(fix), "{line}");
        assert_eq!(self.code, Some(1), "{}", self.stdout);
    }
}

/// A stand-in CLI that answers `--version` only.
fn fake_cli(dir: &Path, name: &str, version: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A Codex workdir with the stand-in CLI and `<root>/codex-home`.
fn codex_setup(extra: &[(&str, &str)]) -> Setup {
    let setup = Setup::new().without_workdirs().workdir(Workdir::new(
        "demo",
        "workspace-write",
        &["codex"],
    ));
    let bin = fake_cli(setup.root(), "codex", "codex-cli 0.0.1-test");
    let home = setup.root().join("codex-home");
    std::fs::create_dir(&home).unwrap();
    let mut setup = setup
        .agent("codex_bin", &format!("{:?}", bin.to_str().unwrap()))
        .agent("codex_home", &format!("{:?}", home.to_str().unwrap()));
    for (key, value) in extra {
        setup = setup.agent(key, value);
    }
    setup
}

#[test]
fn a_running_healthy_bridge_passes() {
    let setup = Setup::new();
    let mut daemon = setup.start_serving();
    let doctor = Doctor::run(&setup);
    daemon.stop();
    assert_eq!(doctor.code, Some(0), "{}", doctor.stdout);
    for check in [
        "configuration",
        "socket directory",
        "lock directory",
        "state directory",
        "runtime fake",
        "runtime fake environment",
        "bridge socket",
        "agent egress proxy",
    ] {
        doctor.line("OK", check);
    }
    let lock = doctor.line("OK", "lock artifact workdir demo");
    assert!(lock.contains("mode 0600"), "{lock}");
    let summary = doctor.stdout.lines().last().unwrap_or("");
    assert!(
        summary.starts_with("doctor: ") && summary.ends_with(", 0 failures"),
        "{}",
        doctor.stdout
    );
}

#[test]
fn a_missing_runtime_executable_fails_with_its_setting() {
    let setup = codex_setup(&[("codex_bin", r#""/nonexistent/bin/codex""#)]);
    let doctor = Doctor::run(&setup);
    doctor.fail("runtime codex", "codex_bin");
}

#[test]
fn codex_without_authentication_fails_and_a_login_or_key_passes_unprinted() {
    let setup = codex_setup(&[]);
    let doctor = Doctor::run(&setup);
    doctor.fail("runtime codex authentication", "codex login");
    let version = doctor.line("OK", "runtime codex");
    assert!(version.contains("codex-cli 0.0.1-test"), "{version}");

    // A passed-through key: named, never shown.
    let setup = codex_setup(&[("codex_env_passthrough", r#"["OPENAI_API_KEY"]"#)])
        .env("OPENAI_API_KEY", KEY_MARKER);
    let doctor = Doctor::run(&setup);
    let line = doctor.line("OK", "runtime codex authentication");
    assert!(line.contains("OPENAI_API_KEY is set"), "{line}");
    let env = doctor.line("OK", "runtime codex environment");
    assert!(
        env.contains("OPENAI_API_KEY") && env.contains("CODEX_HOME"),
        "{env}"
    );
    assert_eq!(doctor.code, Some(0), "{}", doctor.stdout);

    // A login file: its path, never its content.
    let setup = codex_setup(&[]);
    std::fs::write(
        setup.root().join("codex-home/auth.json"),
        format!("{{\"OPENAI_API_KEY\":\"{AUTH_FILE_MARKER}\"}}"),
    )
    .unwrap();
    let doctor = Doctor::run(&setup);
    let line = doctor.line("OK", "runtime codex authentication");
    assert!(line.contains("auth.json present"), "{line}");
}

#[test]
fn an_unreachable_codex_daemon_fails_with_how_to_start_it() {
    let setup = codex_setup(&[
        ("codex_transport", r#""daemon""#),
        ("codex_autostart", "false"),
    ]);
    std::fs::write(setup.root().join("codex-home/auth.json"), "{}").unwrap();
    let doctor = Doctor::run(&setup);
    doctor.fail("runtime codex daemon", "codex app-server daemon start");
}

#[test]
fn a_world_readable_state_directory_fails_with_chmod() {
    let setup = Setup::new();
    std::fs::create_dir(setup.state_dir()).unwrap();
    std::fs::set_permissions(setup.state_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let doctor = Doctor::run(&setup);
    doctor.fail("state directory", "chmod 0700");
    // doctor only reads: the mode is still the operator's.
    let mode = std::fs::metadata(setup.state_dir())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[test]
fn a_lock_artifact_with_the_wrong_mode_fails_with_chmod() {
    let setup = Setup::new();
    let mut daemon = setup.start_serving();
    daemon.stop();
    let lock = std::fs::read_dir(setup.lock_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "lock"))
        .expect("the Bridge created a lock artifact");
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).unwrap();
    let doctor = Doctor::run(&setup);
    doctor.fail("lock artifact workdir demo", "chmod 0600");
}

#[test]
fn an_unreachable_proxy_fails_and_its_url_is_never_printed() {
    // A port nothing listens on: bound, then released.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let setup = Setup::new()
        .agent("proxy_runtimes", r#"["fake"]"#)
        .env("SERVERFS_AGENT_PROXY_URL", &url);
    let doctor = Doctor::run(&setup);
    doctor.fail("agent egress proxy", "start the proxy");
    assert!(
        !doctor.stdout.contains(&port.to_string()),
        "{}",
        doctor.stdout
    );

    // Listening: OK, still without the URL.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let setup = Setup::new().agent("proxy_runtimes", r#"["fake"]"#).env(
        "SERVERFS_AGENT_PROXY_URL",
        &format!("http://127.0.0.1:{port}"),
    );
    let doctor = Doctor::run(&setup);
    let line = doctor.line("OK", "agent egress proxy");
    assert!(line.contains("used by fake"), "{line}");
    assert!(
        !doctor.stdout.contains(&port.to_string()),
        "{}",
        doctor.stdout
    );
    let env = doctor.line("OK", "runtime fake environment");
    assert!(env.contains("HTTPS_PROXY"), "{env}");
}

#[test]
fn a_configuration_error_is_exit_2_without_a_report() {
    let setup = Setup::new().agent("state_dir", r#""relative""#);
    let (status, stdout, stderr) = setup.run(&["doctor"]);
    assert_eq!(status.code(), Some(2), "{stdout}{stderr}");
    assert_eq!(stdout, "");
    assert!(stderr.contains("state_dir"), "{stderr}");
}

/// A workdir allowing `runtime` through the stand-in CLI at `<key>`.
fn cli_setup(runtime: &str, key: &str) -> Setup {
    let setup = Setup::new().without_workdirs().workdir(Workdir::new(
        "demo",
        "workspace-write",
        &[runtime],
    ));
    let bin = fake_cli(setup.root(), runtime, "1.0.0-test");
    setup.agent(key, &format!("{:?}", bin.to_str().unwrap()))
}

#[test]
fn claude_and_qoder_without_authentication_fail_and_keys_pass_unprinted() {
    // Claude: no credentials file, no key.
    let doctor = Doctor::run(&cli_setup("claude", "claude_bin"));
    doctor.fail("runtime claude authentication", "claude_env_passthrough");
    // A passed-through key.
    let setup = cli_setup("claude", "claude_bin")
        .agent("claude_env_passthrough", r#"["ANTHROPIC_API_KEY"]"#)
        .env("ANTHROPIC_API_KEY", KEY_MARKER);
    let doctor = Doctor::run(&setup);
    let line = doctor.line("OK", "runtime claude authentication");
    assert!(line.contains("ANTHROPIC_API_KEY is set"), "{line}");

    // Qoder with a personal access token that is not set.
    let pat = |setup: Setup| {
        setup
            .agent("qoder_auth", r#""personal-access-token""#)
            .agent(
                "qoder_env_passthrough",
                r#"["QODER_PERSONAL_ACCESS_TOKEN"]"#,
            )
    };
    let doctor = Doctor::run(&pat(cli_setup("qoder", "qoder_bin")));
    doctor.fail(
        "runtime qoder authentication",
        "QODER_PERSONAL_ACCESS_TOKEN is not set",
    );
    let setup = pat(cli_setup("qoder", "qoder_bin")).env("QODER_PERSONAL_ACCESS_TOKEN", KEY_MARKER);
    let doctor = Doctor::run(&setup);
    doctor.line("OK", "runtime qoder authentication");
    let env = doctor.line("OK", "runtime qoder environment");
    assert!(env.contains("QODER_PERSONAL_ACCESS_TOKEN"), "{env}");
    // Qoder's own login: its state directory under HOME.
    let doctor = Doctor::run(&cli_setup("qoder", "qoder_bin"));
    doctor.fail("runtime qoder authentication", "qodercli login");
}
