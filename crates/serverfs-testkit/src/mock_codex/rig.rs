//! A Bridge wired to the mock App Server, for the tests that run the
//! `codex` runtime through the real Bridge: its configuration, Codex home
//! and, for the daemon transport, the in-process daemon.

use std::path::{Path, PathBuf};

use super::{MESSAGE_LOG_FILE, MockCodexDaemon, MockState};
use crate::bridge::{Setup, Workdir};

/// Longest AF_UNIX socket path (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// How the Bridge reaches the mock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `codex_transport` unset: a `mock-codex app-server` child per
    /// connection.
    Stdio,
    /// `codex_transport = "daemon"`: the in-process [`MockCodexDaemon`].
    Daemon,
}

/// A Bridge [`Setup`] for the `codex` runtime on the mock: workdir `demo`
/// (`<root>/work`, workspace-write, runtime `codex`), `codex_bin` the
/// freshly built `mock-codex` and `codex_home` `<root>/ch` (created, and
/// returned; short, for the control socket's path).
///
/// # Panics
///
/// When the home cannot be created or its control socket path would not
/// fit `sun_path` (use a shorter `TMPDIR`).
pub fn codex_setup(transport: Transport) -> (Setup, PathBuf) {
    let mut setup = Setup::new().without_workdirs().workdir(Workdir {
        path: "work".to_owned(),
        ..Workdir::new("demo", "workspace-write", &["codex"])
    });
    let home = codex_home(&setup);
    std::fs::create_dir(&home).unwrap_or_else(|e| panic!("creating the codex home: {e}"));
    setup = setup
        .agent("codex_bin", &toml_path(&super::binary()))
        .agent("codex_home", &toml_path(&home));
    if transport == Transport::Daemon {
        setup = setup.agent("codex_transport", r#""daemon""#);
    }
    let socket = control_socket(&home);
    assert!(
        socket.as_os_str().len() <= MAX_SOCKET_PATH,
        "{} is too long for AF_UNIX; use a shorter TMPDIR",
        socket.display()
    );
    (setup, home)
}

/// The Codex home of a [`codex_setup`]: `<root>/ch`.
pub fn codex_home(setup: &Setup) -> PathBuf {
    setup.root().join("ch")
}

/// Where the managed daemon listens (spec-adapters §2.1 A).
pub fn control_socket(home: &Path) -> PathBuf {
    home.join("app-server-control")
        .join("app-server-control.sock")
}

/// The in-process daemon on `home`'s control socket, logging to the same
/// file as the binary ([`MESSAGE_LOG_FILE`] in `home`).
///
/// # Panics
///
/// When the daemon cannot listen.
pub fn start_mock_daemon(home: &Path) -> MockCodexDaemon {
    let state = MockState::new(home).with_log_file(home.join(MESSAGE_LOG_FILE));
    MockCodexDaemon::start_with_state(control_socket(home), state)
        .unwrap_or_else(|e| panic!("starting the mock daemon: {e}"))
}

/// Everything the mock received so far under `home`, in arrival order.
///
/// # Panics
///
/// On an unreadable log.
pub fn message_log(home: &Path) -> Vec<serde_json::Value> {
    crate::jsonl::read(&home.join(MESSAGE_LOG_FILE), "the mock's log")
}

/// A path as a TOML string.
fn toml_path(path: &Path) -> String {
    format!(
        "{:?}",
        path.to_str().unwrap_or_else(|| panic!("a non-UTF-8 path"))
    )
}
