//! The `mock-codex` command line: the subset of `codex` the Bridge runs.
//!
//! ```text
//! mock-codex --version
//! mock-codex app-server [--listen stdio://]
//! mock-codex app-server --listen unix://[PATH]
//! mock-codex app-server daemon start|stop
//! ```
//!
//! Anything else (including `-c key=value` overrides, which native mode
//! never passes) is a usage error with exit status 2, so a regression in
//! how the Bridge invokes Codex fails loudly.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::watch;

use super::daemon::{Control, bind_socket, serve_unix};
use super::stdio::serve_lines;
use super::{CLI_VERSION, MESSAGE_LOG_FILE, MockState, THREAD_STORE_FILE, diag};

const USAGE: &str = "usage: mock-codex --version
       mock-codex app-server [--listen stdio://|unix://[PATH]]
       mock-codex app-server daemon start|stop";

/// Where `daemon start` puts the socket, below `CODEX_HOME` (as Codex).
const CONTROL_DIR: &str = "app-server-control";
const CONTROL_SOCKET: &str = "app-server-control.sock";
/// The daemon's pid, next to its socket, for `daemon stop`.
const PID_FILE: &str = "mock-codex.pid";
/// The detached daemon's stderr.
const DAEMON_LOG: &str = "mock-codex-daemon.log";

/// How long `daemon start` waits for the socket, and `daemon stop` for the
/// process to go.
const DAEMON_WAIT: Duration = Duration::from_secs(10);

enum Listen {
    Stdio,
    Unix(PathBuf),
}

/// Runs the command line in `args` (without the program name).
pub(crate) fn run(args: Vec<OsString>) -> ExitCode {
    let args: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
    let result = match args.as_slice() {
        [flag] if *flag == "--version" || *flag == "-V" => {
            say(format_args!("codex-cli {CLI_VERSION}"))
        }
        [cmd, rest @ ..] if *cmd == "app-server" => app_server(rest),
        _ => Err(Failure::Usage(String::new())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(why)) => {
            if !why.is_empty() {
                diag(&why);
            }
            // Nothing sensible is left to do if stderr is gone.
            let _ = writeln!(io::stderr(), "{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(why)) => {
            diag(&why);
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    Usage(String),
    Runtime(String),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Runtime(e.to_string())
    }
}

fn app_server(args: &[&OsStr]) -> Result<(), Failure> {
    let listen = match args {
        [] => Listen::Stdio,
        [flag, url] if *flag == "--listen" => parse_listen(url)?,
        [flag] if flag.as_bytes().starts_with(b"--listen=") => {
            parse_listen(OsStr::from_bytes(&flag.as_bytes()[b"--listen=".len()..]))?
        }
        [daemon, action] if *daemon == "daemon" && *action == "start" => {
            return daemon_start();
        }
        [daemon, action] if *daemon == "daemon" && *action == "stop" => return daemon_stop(),
        _ => {
            let shown: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
            return Err(Failure::Usage(format!(
                "unsupported app-server arguments: {}",
                shown.join(" ")
            )));
        }
    };
    let state = state_from_env()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = match listen {
        Listen::Stdio => runtime
            .block_on(serve_lines(tokio::io::stdin(), tokio::io::stdout(), state))
            .map(drop),
        Listen::Unix(path) => runtime.block_on(serve_socket(&path, state)),
    };
    // Tokio reads stdin on a blocking thread that a normal runtime drop
    // would wait for; after a `drop` scenario that read never ends.
    runtime.shutdown_background();
    result.map_err(Failure::from)
}

fn parse_listen(url: &OsStr) -> Result<Listen, Failure> {
    let bytes = url.as_bytes();
    if bytes == b"stdio://" {
        Ok(Listen::Stdio)
    } else if bytes == b"unix://" {
        Ok(Listen::Unix(control_socket(&codex_home()?)))
    } else if let Some(path) = bytes.strip_prefix(b"unix://") {
        Ok(Listen::Unix(PathBuf::from(OsStr::from_bytes(path))))
    } else {
        Err(Failure::Usage(format!(
            "unsupported --listen {} (mock-codex serves stdio:// and unix://)",
            url.to_string_lossy()
        )))
    }
}

/// The WebSocket daemon in the foreground until SIGTERM or SIGINT, which
/// remove the socket on the way out.
async fn serve_socket(path: &Path, state: MockState) -> io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};

    // Caught before the socket can be seen: a stop right after the start
    // must still remove it.
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let listener = bind_socket(path)?;
    listener.set_nonblocking(true)?;
    let listener = tokio::net::UnixListener::from_std(listener)?;
    let (control, control_rx) = watch::channel(Control::default());
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        control.send_modify(|c| c.shutdown = true);
    });
    serve_unix(listener, state, control_rx).await;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        Ok(()) | Err(_) => Ok(()),
    }
}

/// `daemon start`: runs `app-server --listen unix://<control socket>`
/// detached, waits until the socket accepts, prints one JSON line.
fn daemon_start() -> Result<(), Failure> {
    let home = codex_home()?;
    let dir = home.join(CONTROL_DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    // `create` leaves an existing directory's mode alone.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    let socket = dir.join(CONTROL_SOCKET);
    let status = |status: &str| json!({ "status": status, "socketPath": socket.to_string_lossy() });
    if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        report(status("alreadyRunning"));
        return Ok(());
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(DAEMON_LOG))?;
    let mut listen = OsString::from("unix://");
    listen.push(&socket);
    let mut child = Command::new(std::env::current_exe()?)
        .arg("app-server")
        .arg("--listen")
        .arg(listen)
        .env("CODEX_HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Its own process group: a signal to the starter's group (a test
        // harness's Ctrl-C) does not reach the daemon, as with Codex.
        .process_group(0)
        .spawn()?;
    std::fs::write(dir.join(PID_FILE), format!("{}\n", child.id()))?;
    let started = Instant::now();
    loop {
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            report(status("started"));
            return Ok(());
        }
        if let Some(exit) = child.try_wait()? {
            return Err(Failure::Runtime(format!(
                "the daemon exited during start-up ({exit}); see {}",
                dir.join(DAEMON_LOG).display()
            )));
        }
        if started.elapsed() > DAEMON_WAIT {
            // Best effort: the start failed either way.
            let _ = child.kill();
            return Err(Failure::Runtime(
                "the daemon socket never accepted".to_owned(),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `daemon stop`: SIGTERM to the pid next to the socket, wait for it to go,
/// remove the pid file (and the socket, should the daemon have left it).
fn daemon_stop() -> Result<(), Failure> {
    use rustix::process::{Pid, Signal, kill_process, test_kill_process};

    let dir = codex_home()?.join(CONTROL_DIR);
    let socket = dir.join(CONTROL_SOCKET);
    let pid_file = dir.join(PID_FILE);
    let status = |status: &str| json!({ "status": status, "socketPath": socket.to_string_lossy() });
    let raw = match std::fs::read_to_string(&pid_file) {
        Ok(raw) => raw,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            report(status("notRunning"));
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    // Never signal pid 0/1 or a group (negative): a corrupt pid file must
    // not turn `stop` into a broadcast.
    let pid = raw
        .trim()
        .parse::<i32>()
        .ok()
        .filter(|pid| *pid > 1)
        .and_then(Pid::from_raw)
        .ok_or_else(|| Failure::Runtime(format!("bad pid file {}", pid_file.display())))?;
    if kill_process(pid, Signal::TERM).is_ok() {
        let asked = Instant::now();
        while test_kill_process(pid).is_ok() {
            if asked.elapsed() > DAEMON_WAIT {
                // Best effort: still there after SIGTERM, or a zombie.
                let _ = kill_process(pid, Signal::KILL);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    for path in [&pid_file, &socket] {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e.into()),
            Ok(()) | Err(_) => {}
        }
    }
    report(status("stopped"));
    Ok(())
}

/// Prints a `daemon` status line with `println!`, as Codex does: on a
/// closed stdout it panics and the command exits with status 101 although
/// the daemon runs, so a Bridge that does not read this output sees the
/// failure the real command gives it.
fn report(line: impl std::fmt::Display) {
    println!("{line}");
}

/// Prints one line on stdout; unlike `println!`, a closed stdout is an
/// error, not a panic.
fn say(line: impl std::fmt::Display) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()?;
    Ok(())
}

/// `CODEX_HOME`, else `$HOME/.codex`, as Codex resolves it.
fn codex_home() -> Result<PathBuf, Failure> {
    if let Some(home) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".codex")),
        None => Err(Failure::Runtime(
            "neither CODEX_HOME nor HOME is set".to_owned(),
        )),
    }
}

fn control_socket(home: &Path) -> PathBuf {
    home.join(CONTROL_DIR).join(CONTROL_SOCKET)
}

/// The state of a server process: `codexHome` from the environment; the
/// message log in `MOCK_CODEX_LOG`, else [`MESSAGE_LOG_FILE`] under an
/// explicit `CODEX_HOME`; threads in [`THREAD_STORE_FILE`] under an
/// explicit `CODEX_HOME`.
///
/// `CODEX_HOME` is the one variable the Bridge always gives Codex (its
/// child environment is an allowlist, so `MOCK_CODEX_LOG` does not get
/// through it). Nothing is written under a `~/.codex` merely derived from
/// `HOME`: that may be a developer's real Codex home.
fn state_from_env() -> Result<MockState, Failure> {
    let home = codex_home()?;
    let explicit = std::env::var_os("CODEX_HOME").is_some_and(|h| !h.is_empty());
    let mut state = MockState::new(&home);
    if explicit {
        state = state.with_thread_store(home.join(THREAD_STORE_FILE));
    }
    match std::env::var_os("MOCK_CODEX_LOG").filter(|p| !p.is_empty()) {
        Some(path) => state = state.with_log_file(path),
        None if explicit => state = state.with_log_file(home.join(MESSAGE_LOG_FILE)),
        None => {}
    }
    Ok(state)
}
