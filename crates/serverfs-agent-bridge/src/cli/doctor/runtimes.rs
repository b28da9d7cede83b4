//! Each runtime the workdirs allow: its executable resolves and answers
//! `--version`, its authentication is present (a file, or a variable
//! passed through — by name), Codex's daemon answers when it is the
//! transport, and which variables its providers start with (names only).
//!
//! Nothing here runs a turn, a login or a daemon: `--version` is the only
//! command started, with an empty environment and a time bound.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serverfs_adapter_codex::{CodexConfig, CodexTransport};
use serverfs_adapter_stream_json::{AuthSource, StreamJsonConfig};
use serverfs_agent_runtime::ProviderCommand;
use serverfs_config::DoctorReport;

use super::super::bridge_config::{LoadedConfig, RuntimeSetup};

/// Bound on one `--version` run.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of the version output is shown.
const VERSION_CHARS: usize = 80;

/// Variables a provider reads an API key from, as each runtime's documents
/// name them: set and passed through, they stand for a login.
const CODEX_KEY_VARIABLES: &[&str] = &["OPENAI_API_KEY", "CODEX_API_KEY"];
const CLAUDE_KEY_VARIABLES: &[&str] = &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"];

pub(super) fn check<W: std::io::Write>(report: &mut DoctorReport<W>, loaded: &LoadedConfig) {
    for (runtime, error) in &loaded.unusable {
        report.fail(&format!("runtime {runtime}"), error);
    }
    let env = &loaded.env;
    for (name, setup) in loaded.config.setups() {
        let check = format!("runtime {name}");
        match setup {
            RuntimeSetup::Fake(_) => {
                report.ok(&check, "built in (the deterministic test runtime)");
            }
            RuntimeSetup::Codex(codex) => {
                check_version(report, &check, &codex.bin);
                check_codex_auth(report, name, codex, env);
                if let CodexTransport::Daemon { autostart } = codex.transport {
                    check_codex_daemon(report, name, codex, autostart);
                }
            }
            RuntimeSetup::Claude(claude) => {
                check_version(report, &check, &claude.bin);
                check_claude_auth(report, name, claude, env);
            }
            RuntimeSetup::Qoder(qoder) => {
                check_version(report, &check, &qoder.bin);
                check_qoder_auth(report, name, qoder, env);
            }
            RuntimeSetup::Acp(acp) => report.ok(
                &check,
                format!(
                    "{} is executable (ACP agents authenticate themselves; `probe` measures one)",
                    acp.command.display()
                ),
            ),
        }
        let mut command = provider_command(setup);
        command.inherited_env(env.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        check_environment(report, name, &command);
    }
}

/// `<bin> --version`, first line, bounded, with an empty environment:
/// nothing a CLI could log in with or act on.
fn check_version<W: std::io::Write>(report: &mut DoctorReport<W>, check: &str, bin: &Path) {
    match version_of(bin) {
        Ok(version) => report.ok(check, format!("{} ({version})", bin.display())),
        Err(reason) => report.fail(
            check,
            format!(
                "{} does not answer --version ({reason}); reinstall it or point the runtime's \
                 *_bin setting at a working executable",
                bin.display()
            ),
        ),
    }
}

fn version_of(bin: &Path) -> Result<String, String> {
    let mut child = Command::new(bin)
        .arg("--version")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| error.kind().to_string())?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", VERSION_TIMEOUT.as_secs()));
            }
            Err(error) => return Err(error.kind().to_string()),
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    if !status.success() {
        return Err(format!("exit status {status}"));
    }
    let line: String = out
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(VERSION_CHARS)
        .collect();
    if line.is_empty() {
        Err("it printed nothing".to_owned())
    } else {
        Ok(line)
    }
}

/// Where a runtime's authentication may be: its login file, or one of
/// the key variables its documents name, passed through and set.
struct AuthEvidence<'a> {
    login_file: Option<PathBuf>,
    passthrough: &'a [String],
    key_variables: &'a [&'a str],
}

/// OK naming the file or the variable (never a value), else FAIL with
/// `fix`.
fn check_auth<W: std::io::Write>(
    report: &mut DoctorReport<W>,
    name: &str,
    evidence: &AuthEvidence<'_>,
    env: &BTreeMap<String, String>,
    fix: &str,
) {
    let check = format!("runtime {name} authentication");
    let passed_key = evidence
        .passthrough
        .iter()
        .filter(|variable| evidence.key_variables.contains(&variable.as_str()))
        .find(|variable| {
            env.get(*variable)
                .is_some_and(|value| !value.trim().is_empty())
        });
    match (&evidence.login_file, passed_key) {
        (Some(file), _) if file.is_file() => {
            report.ok(&check, format!("{} present", file.display()));
        }
        (_, Some(variable)) => report.ok(&check, format!("{variable} is set and passed through")),
        _ => report.fail(&check, fix),
    }
}

fn check_codex_auth<W: std::io::Write>(
    report: &mut DoctorReport<W>,
    name: &str,
    codex: &CodexConfig,
    env: &BTreeMap<String, String>,
) {
    let auth_file = codex.home.join("auth.json");
    let fix = format!(
        "no {} and no API key passed through: run `codex login` as this user (CODEX_HOME={}), \
         or set OPENAI_API_KEY in the Bridge's environment and list it in \
         agent.codex_env_passthrough",
        auth_file.display(),
        codex.home.display()
    );
    let evidence = AuthEvidence {
        login_file: Some(auth_file),
        passthrough: &codex.env_passthrough,
        key_variables: CODEX_KEY_VARIABLES,
    };
    check_auth(report, name, &evidence, env, &fix);
}

/// Whether the managed daemon's control socket accepts a connection
/// (without a request: that is all `doctor` may do to it).
fn check_codex_daemon<W: std::io::Write>(
    report: &mut DoctorReport<W>,
    name: &str,
    codex: &CodexConfig,
    autostart: bool,
) {
    let check = format!("runtime {name} daemon");
    let socket = codex.control_socket();
    match std::os::unix::net::UnixStream::connect(&socket) {
        Ok(_) => report.ok(&check, format!("answers at {}", socket.display())),
        Err(error) if autostart => report.warn(
            &check,
            format!(
                "does not answer at {} ({}); the Bridge starts it for the first task \
                 (agent.codex_autostart)",
                socket.display(),
                error.kind()
            ),
        ),
        Err(error) => report.fail(
            &check,
            format!(
                "does not answer at {} ({}): start it as this user with `CODEX_HOME={} codex \
                 app-server daemon start`, or set agent.codex_autostart = true",
                socket.display(),
                error.kind(),
                codex.home.display()
            ),
        ),
    }
}

fn check_claude_auth<W: std::io::Write>(
    report: &mut DoctorReport<W>,
    name: &str,
    claude: &StreamJsonConfig,
    env: &BTreeMap<String, String>,
) {
    let config_dir = env
        .get("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| env.get("HOME").map(|home| Path::new(home).join(".claude")));
    let evidence = AuthEvidence {
        login_file: config_dir.map(|dir| dir.join(".credentials.json")),
        passthrough: &claude.env_passthrough,
        key_variables: CLAUDE_KEY_VARIABLES,
    };
    let fix = "no ~/.claude/.credentials.json and no API key passed through: run `claude` as \
               this user and log in (/login), or set ANTHROPIC_API_KEY in the Bridge's \
               environment and list it in agent.claude_env_passthrough";
    check_auth(report, name, &evidence, env, fix);
}

fn check_qoder_auth<W: std::io::Write>(
    report: &mut DoctorReport<W>,
    name: &str,
    qoder: &StreamJsonConfig,
    env: &BTreeMap<String, String>,
) {
    let check = format!("runtime {name} authentication");
    match &qoder.auth {
        AuthSource::AccessToken { variable } => {
            if env
                .get(variable)
                .is_some_and(|value| !value.trim().is_empty())
            {
                report.ok(&check, format!("{variable} is set"));
            } else {
                report.fail(
                    &check,
                    format!(
                        "agent.qoder_auth is a personal access token, but {variable} is not set \
                         in the Bridge's environment: set it (e.g. in the service's \
                         EnvironmentFile)"
                    ),
                );
            }
        }
        AuthSource::LocalLogin => {
            let state = env.get("HOME").map(|home| Path::new(home).join(".qoder"));
            match state.filter(|dir| dir.is_dir()) {
                Some(dir) => report.ok(
                    &check,
                    format!(
                        "{} present (the CLI checks the login itself on the first turn)",
                        dir.display()
                    ),
                ),
                None => report.fail(
                    &check,
                    "no ~/.qoder login state: run `qodercli login` as this user, or use a \
                     personal access token (agent.qoder_auth)",
                ),
            }
        }
    }
}

/// The command the runtime's providers start as, for their environment.
fn provider_command(setup: &RuntimeSetup) -> ProviderCommand {
    match setup {
        RuntimeSetup::Fake(proxy) => {
            let mut command = ProviderCommand::new("/", "/");
            command.proxy(proxy.clone());
            command
        }
        RuntimeSetup::Codex(codex) => codex.command("/"),
        RuntimeSetup::Claude(config) | RuntimeSetup::Qoder(config) => {
            let mut command = ProviderCommand::new(&config.bin, "/");
            command
                .pass_through(config.env_passthrough.iter().cloned())
                .proxy(config.proxy.clone());
            if let AuthSource::AccessToken { variable } = &config.auth {
                command.pass_through([variable.clone()]);
            }
            command
        }
        RuntimeSetup::Acp(acp) => {
            let mut command = ProviderCommand::new(&acp.command, "/");
            for (name, value) in &acp.env {
                command.env(name.clone(), value.clone());
            }
            command
                .pass_through(acp.env_passthrough.iter().cloned())
                .proxy(acp.proxy.clone());
            command
        }
    }
}

/// The variable names a runtime's providers start with.
fn check_environment<W: std::io::Write>(
    report: &mut DoctorReport<W>,
    name: &str,
    command: &ProviderCommand,
) {
    let check = format!("runtime {name} environment");
    match command.environment_names() {
        Ok(names) if names.is_empty() => report.ok(&check, "no variables"),
        Ok(names) => report.ok(&check, names.join(" ")),
        Err(error) => report.fail(&check, error),
    }
}
