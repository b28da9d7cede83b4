//! `serverfs doctor` from the operator's side: the real binary, a cleared
//! environment. Every stdout line is `OK   `, `WARN ` or `FAIL ` plus a
//! check, then one summary line; exit 0 without FAIL, 1 with one, 2 (one
//! stderr line, nothing on stdout) when the configuration cannot be parsed.
//! The report never shows a token or a token hash (ARCHITECTURE.md §1
//! invariant 9).

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use serverfs_testkit::bridge::Setup;

use crate::common::binary;

const CONFIG_ERROR: &str = "serverfs: configuration error: ";

/// What one run of the binary produced.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The check lines (without the summary), after asserting the report's
    /// form: tagged lines, then exactly one summary line whose counts match.
    fn lines(&self) -> Vec<&str> {
        let all: Vec<&str> = self.stdout.lines().collect();
        let (summary, checks) = all.split_last().expect("a summary line");
        for line in checks {
            assert!(
                ["OK   ", "WARN ", "FAIL "]
                    .iter()
                    .any(|tag| line.starts_with(tag)),
                "untagged line {line:?} in\n{}",
                self.stdout
            );
        }
        let count = |tag: &str| checks.iter().filter(|l| l.starts_with(tag)).count();
        assert_eq!(
            *summary,
            format!(
                "doctor: {} ok, {} warnings, {} failures",
                count("OK   "),
                count("WARN "),
                count("FAIL ")
            ),
            "summary of\n{}",
            self.stdout
        );
        checks.to_vec()
    }

    fn has_line(&self, prefix: &str) -> bool {
        self.lines().iter().any(|line| line.starts_with(prefix))
    }

    fn failures(&self) -> Vec<&str> {
        self.lines()
            .into_iter()
            .filter(|line| line.starts_with("FAIL "))
            .collect()
    }
}

/// Runs `serverfs <args>` with only `PATH` and `env` in its environment.
fn serverfs(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(binary());
    command.args(args).env_clear();
    for (key, value) in env {
        command.env(key, value);
    }
    run(command)
}

/// Runs `command` (whose environment the caller set) with `PATH` added
/// and no stdin, and collects what it printed.
fn run(mut command: Command) -> Run {
    let output = command
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .output()
        .expect("run serverfs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `serverfs doctor --config <dir>/serverfs.toml <extra>` with `text` as
/// the file.
fn doctor_toml(dir: &Path, text: &str, extra: &[&str]) -> Run {
    let config = dir.join("serverfs.toml");
    std::fs::write(&config, text).unwrap();
    let mut args = vec!["doctor", "--config", config.to_str().unwrap()];
    args.extend_from_slice(extra);
    serverfs(&args, &[])
}

fn toml_path(path: &Path) -> String {
    format!("{:?}", path.to_str().unwrap())
}

/// `serverfs token create NAME` into `tokens`; the token it printed.
fn create_token(tokens: &Path, name: &str) -> String {
    let created = serverfs(
        &[
            "token",
            "create",
            name,
            "--token-file",
            tokens.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(created.code, Some(0), "{created:?}");
    let token = created.stdout.trim().to_owned();
    assert!(token.starts_with("sfs_"), "{created:?}");
    token
}

#[test]
fn a_sound_configuration_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let (docs, code) = (tmp.path().join("docs"), tmp.path().join("code"));
    std::fs::create_dir(&docs).unwrap();
    std::fs::create_dir(&code).unwrap();
    std::fs::write(code.join("main.rs"), "fn main() {}\n").unwrap();
    let text = format!(
        "[[workdirs]]\nalias = \"docs\"\npath = {}\n\n\
         [[workdirs]]\nalias = \"code\"\npath = {}\nread_only = false\n",
        toml_path(&docs),
        toml_path(&code)
    );
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.failures().is_empty(), "{run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
    for prefix in [
        "OK   configuration: TOML file",
        "OK   workdir docs root:",
        "OK   workdir docs open:",
        "OK   workdir docs list:",
        "OK   workdir code root:",
        "OK   workdir code open:",
        "OK   workdir code list:",
        "OK   workdir code write:",
        "OK   http: ",
        "OK   agent bridge: agent bridge disabled",
    ] {
        assert!(run.has_line(prefix), "no {prefix:?} in\n{}", run.stdout);
    }
    // The read-only workdir's write line is OK or a defence-in-depth WARN
    // (the tests may run as root); the confinement line OK or WARN.
    assert!(
        run.has_line("OK   workdir docs write:") || run.has_line("WARN workdir docs write:"),
        "{}",
        run.stdout
    );
    assert!(
        run.has_line("OK   kernel confinement:") || run.has_line("WARN kernel confinement:"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("2 workdirs"), "{}", run.stdout);
}

#[test]
fn a_missing_root_is_a_failure_of_its_workdir() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "[[workdirs]]\nalias = \"gone\"\npath = {}\n",
        toml_path(&tmp.path().join("nowhere"))
    );
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let failures = run.failures();
    assert_eq!(failures.len(), 1, "{run:?}");
    assert!(
        failures[0].starts_with("FAIL workdir gone root:"),
        "{run:?}"
    );
    assert!(failures[0].contains("does not exist"), "{run:?}");
    assert!(run.stderr.is_empty(), "not a configuration error: {run:?}");

    // The same through a --workdir spec.
    let spec = format!("gone={}", tmp.path().join("nowhere").display());
    let run = serverfs(&["doctor", "--workdir", &spec], &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.has_line("FAIL workdir gone root:"), "{run:?}");
}

#[test]
fn a_symlinked_root_is_a_failure_of_its_workdir() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let text = format!(
        "[[workdirs]]\nalias = \"linked\"\npath = {}\n",
        toml_path(&link)
    );
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let failures = run.failures();
    assert_eq!(failures.len(), 1, "{run:?}");
    assert!(
        failures[0].starts_with("FAIL workdir linked root:"),
        "{run:?}"
    );
    assert!(failures[0].contains("symbolic link"), "{run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
}

#[test]
fn a_shared_token_file_fails_and_no_token_is_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let tokens = tmp.path().join("tokens.json");
    let token = create_token(&tokens, "laptop");
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    let hash = stored["tokens"][0]["sha256"].as_str().unwrap().to_owned();
    let secret_free = |run: &Run| {
        for secret in [&token, &hash] {
            assert!(
                !run.stdout.contains(secret.as_str()) && !run.stderr.contains(secret.as_str()),
                "a secret leaked: {run:?}"
            );
        }
    };
    let text = format!(
        "[http]\nbind = \"127.0.0.1:0\"\ntoken_file = {}\n\n\
         [[workdirs]]\nalias = \"w\"\npath = {}\n",
        toml_path(&tokens),
        toml_path(&root)
    );

    // Private (0600, as created): counted, not shown.
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.has_line("OK   http auth: bearer"), "{run:?}");
    assert!(run.has_line("OK   http bind:"), "{run:?}");
    let line = run
        .lines()
        .into_iter()
        .find(|l| l.starts_with("OK   http token file:"))
        .expect("token file line")
        .to_owned();
    assert!(line.contains("1 token"), "{line}");
    secret_free(&run);

    // World-readable: a failure, still nothing shown.
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let failures = run.failures();
    assert_eq!(failures.len(), 1, "{run:?}");
    assert!(failures[0].starts_with("FAIL http token file:"), "{run:?}");
    assert!(failures[0].contains("chmod 600"), "{run:?}");
    secret_free(&run);

    // Malformed (a hash where a number belongs): a failure that does not
    // echo the file.
    let broken = format!("{{\"version\": \"{hash}\", \"tokens\": []}}");
    std::fs::write(&tokens, broken).unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.has_line("FAIL http token file:"), "{run:?}");
    secret_free(&run);
}

#[test]
fn a_missing_token_file_is_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let spec = format!("w={}", root.display());
    let tokens = tmp.path().join("tokens.json");
    let run = serverfs(
        &["doctor", "--workdir", &spec, "--http", "127.0.0.1:0"],
        &[("SERVERFS_TOKEN_FILE", tokens.to_str().unwrap())],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.has_line("WARN http token file:") && run.stdout.contains("serverfs token create"),
        "{run:?}"
    );
}

#[test]
fn a_broken_configuration_exits_2_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    std::fs::create_dir(&root).unwrap();
    for text in [
        "[[workdirs]\nalias = \"w\"\n".to_owned(),
        format!(
            "[[workdirs]]\nalias = \"w\"\npath = {}\nbogus = true\n",
            toml_path(&root)
        ),
    ] {
        let run = doctor_toml(tmp.path(), &text, &[]);
        assert_eq!(run.code, Some(2), "{run:?}");
        assert!(run.stdout.is_empty(), "{run:?}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{run:?}");
        assert!(lines[0].starts_with(CONFIG_ERROR), "{run:?}");
    }
    // No source at all is a configuration error too.
    let run = serverfs(&["doctor"], &[]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.starts_with(CONFIG_ERROR), "{run:?}");
}

#[test]
fn a_bind_address_in_use_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let spec = format!("w={}", root.display());
    let tokens = tmp.path().join("tokens.json");
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let run = serverfs(
        &["doctor", "--workdir", &spec, "--http", &addr],
        &[("SERVERFS_TOKEN_FILE", tokens.to_str().unwrap())],
    );
    drop(busy);
    assert_eq!(run.code, Some(1), "{run:?}");
    let failures = run.failures();
    assert_eq!(failures.len(), 1, "{run:?}");
    assert!(failures[0].starts_with("FAIL http bind:"), "{run:?}");
    assert!(failures[0].contains(&addr), "{run:?}");
}

#[test]
fn agent_bridge_lock_artifacts_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    let locks = tmp.path().join("locks");
    let run_dir = tmp.path().join("run");
    for dir in [&locks, &run_dir] {
        std::fs::create_dir(dir).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let text = format!(
        "[agent]\nenabled = true\nsocket = {}\nlock_dir = {}\n\n\
         [[workdirs]]\nalias = \"repo\"\npath = {}\nread_only = false\n\
         agent_mode = \"review\"\nagent_runtimes = [\"fake\"]\n",
        toml_path(&run_dir.join("bridge.sock")),
        toml_path(&locks),
        toml_path(&root)
    );
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let failures = run.failures();
    assert_eq!(failures.len(), 1, "{run:?}");
    assert!(
        failures[0].starts_with("FAIL workdir repo lock:"),
        "{run:?}"
    );
    assert!(run.has_line("OK   agent lock directory:"), "{run:?}");
    assert!(
        run.has_line("OK   agent bridge socket directory:"),
        "{run:?}"
    );
    assert!(run.has_line("WARN agent bridge socket:"), "{run:?}");

    // spec-mcp-filesystem.md §10.2: `alias:repo` → this stem.
    std::fs::write(
        locks.join("255b6be1a22d261f7c81e80e37b195e16c9212de.lock"),
        "",
    )
    .unwrap();
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.has_line("OK   workdir repo lock:"), "{run:?}");

    // A world-writable lock directory fails.
    std::fs::set_permissions(&locks, std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = doctor_toml(tmp.path(), &text, &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.has_line("FAIL agent lock directory:"), "{run:?}");
}

#[test]
fn oauth_settings_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    std::fs::create_dir(&root).unwrap();
    let tokens = tmp.path().join("tokens.json");
    create_token(&tokens, "me");
    let x = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/oauth/idp-ed25519.x"
    ))
    .unwrap();
    let jwks = tmp.path().join("jwks.json");
    std::fs::write(
        &jwks,
        format!(
            r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{}","kid":"k"}}]}}"#,
            x.trim()
        ),
    )
    .unwrap();
    let config = |oauth: &str| {
        format!(
            "[http]\nauth = \"oauth\"\nbind = \"127.0.0.1:0\"\ntoken_file = {}\n\n[http.oauth]\n{oauth}\n\n\
             [[workdirs]]\nalias = \"w\"\npath = {}\n",
            toml_path(&tokens),
            toml_path(&root)
        )
    };
    let external = format!(
        "external_issuer = \"https://idp.example\"\nexternal_jwks_file = {}",
        toml_path(&jwks)
    );
    let run = doctor_toml(
        tmp.path(),
        &config(&format!(
            "public_url = \"https://mcp.example.com/mcp\"\n{external}"
        )),
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    for line in [
        "OK   http auth: OAuth 2.1",
        "OK   http token file:",
        "OK   oauth public url: https://mcp.example.com/mcp",
        "OK   oauth redirect allowlist: 3 redirect URIs besides loopback (0 of them",
        "OK   oauth state file:",
        "OK   oauth external issuer: https://idp.example:",
    ] {
        assert!(run.has_line(line), "{line}: {run:?}");
    }
    // No public URL, an empty allowlist, a shared state file and a key set
    // with no public key.
    std::fs::write(
        &jwks,
        r#"{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"k"}]}"#,
    )
    .unwrap();
    let state = tmp.path().join("oauth.json");
    std::fs::write(&state, "{\"version\":1}").unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = doctor_toml(
        tmp.path(),
        &config(&format!("allowed_redirect_uris = []\n{external}")),
        &[],
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.has_line("WARN oauth public url: not set"), "{run:?}");
    assert!(
        run.has_line("WARN oauth redirect allowlist: empty"),
        "{run:?}"
    );
    assert!(
        run.has_line("FAIL oauth state file:") && run.stdout.contains("chmod 600"),
        "{run:?}"
    );
    assert!(
        run.has_line("FAIL oauth external issuer:") && run.stdout.contains("no usable public key"),
        "{run:?}"
    );
}

/// The uid and gid a Compose deployment's container runs as in the test
/// below (`nobody`), which the Bridge is configured to serve.
const CONTAINER_ID: u32 = 65534;

/// The container-side doctor against a host Bridge, the two processes
/// under different uids: the Bridge (run by the test, as root) serves
/// `peer_uid`/`peer_gid` 65534, and `serverfs doctor` reads the same
/// configuration and runs (1) as 65534, (2) as uid 65533 of the same
/// group, (3) as 65534 inside a user namespace that maps it to the host's
/// root, which is what rootless Docker and userns-remap do to a container.
#[test]
fn doctor_compares_its_identity_with_the_one_the_bridge_measures() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: running doctor under other uids needs root");
        return;
    }
    let id = CONTAINER_ID.to_string();
    let setup = Setup::new().agent("peer_uid", &id).agent("peer_gid", &id);
    // The container identity may traverse the temporary directory, and
    // owns the workdir (read-write, so its group may write too).
    std::fs::set_permissions(setup.root(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let nobody = Some(rustix::process::Uid::from_raw(CONTAINER_ID));
    rustix::fs::chown(
        setup.work_dir(),
        nobody,
        Some(rustix::process::Gid::from_raw(CONTAINER_ID)),
    )
    .unwrap();
    std::fs::set_permissions(setup.work_dir(), std::fs::Permissions::from_mode(0o770)).unwrap();
    let _bridge = setup.start_serving();
    let config = setup.config_path();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let doctor = |mut command: Command| {
        command
            .args(["doctor", "--config", config.to_str().unwrap()])
            .env_clear();
        run(command)
    };
    let peer_line = |run: &Run, tag: &str| -> String {
        run.lines()
            .into_iter()
            .find(|line| line.starts_with(&format!("{tag} agent bridge peer identity:")))
            .unwrap_or_else(|| panic!("no {tag} peer identity line in {run:?}"))
            .to_owned()
    };

    // (1) The configured identity: served, and measured as itself.
    let mut command = Command::new(binary());
    command.uid(CONTAINER_ID).gid(CONTAINER_ID);
    let matching = doctor(command);
    assert_eq!(matching.code, Some(0), "{matching:?}");
    let line = peer_line(&matching, "OK  ");
    assert!(line.contains("measured uid 65534 gid 65534"), "{line}");

    // (2) Another uid of the group reaches the socket, and is refused.
    let mut command = Command::new(binary());
    command.uid(CONTAINER_ID - 1).gid(CONTAINER_ID);
    let other = doctor(command);
    assert_eq!(other.code, Some(1), "{other:?}");
    let line = peer_line(&other, "FAIL");
    assert_eq!(other.failures(), [line.as_str()], "{other:?}");
    for needle in [
        "PEER_NOT_AUTHORIZED",
        "uid 65533 gid 65534 here",
        "serves only uid 65534 gid 65534",
        "not the configured identity",
        "SERVERFS_UID/SERVERFS_GID",
        "Do not loosen",
    ] {
        assert!(line.contains(needle), "{needle:?} not in {line}");
    }

    // (3) Inside the namespace doctor is 65534:65534, what the
    // configuration asks for; the Bridge measures the host's root.
    let mut command = Command::new("unshare");
    command.args([
        "--user",
        &format!("--map-user={CONTAINER_ID}"),
        &format!("--map-group={CONTAINER_ID}"),
        binary(),
    ]);
    let mapped = doctor(command);
    // No report at all: unshare itself failed (not installed, or user
    // namespaces are not allowed here).
    if mapped.stdout.is_empty() {
        eprintln!(
            "skipped the user-namespace case: unshare failed: {}",
            mapped.stderr
        );
        return;
    }
    // The mapping also costs the workdir's permissions (the host sees the
    // files owned by 65534, not by the process), which doctor reports too.
    assert_eq!(mapped.code, Some(1), "{mapped:?}");
    let line = peer_line(&mapped, "FAIL");
    for needle in [
        "PEER_NOT_AUTHORIZED",
        "uid 65534 gid 65534 here",
        "rootless Docker, userns-remap",
        "fails closed",
        "Do not loosen",
    ] {
        assert!(line.contains(needle), "{needle:?} not in {line}");
    }
    assert!(!line.contains("not the configured identity"), "{line}");
}
