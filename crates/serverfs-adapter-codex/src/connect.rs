//! Opening an initialized App Server connection over the configured
//! transport (spec-adapters.md §2.1–§2.2, §2.7).
//!
//! * `stdio` (default): a Bridge-owned `codex app-server` child per
//!   connection, started through the kit's process helper (authorized cwd,
//!   own process group recorded before it acts, scrubbed environment,
//!   bounded stderr) and stopped as a group when the connection closes.
//! * `daemon`: the user's managed daemon over WebSocket on its Unix control
//!   socket ([`crate::websocket`], never through a proxy). With autostart,
//!   a failed connect runs the official `codex app-server daemon start`
//!   once, then connects again (whatever the command's exit status: the
//!   socket decides).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serverfs_agent_runtime::jsonrpc::{Incoming, JsonRpcPeer, RpcFailure};
use serverfs_agent_runtime::lines::{read_lines, write_lines};
use serverfs_agent_runtime::spawn::{STOP_GRACE, spawn_provider, spawn_with_stdio};
use serverfs_agent_runtime::{
    AgentError, BridgeErrorCode, Host, ProviderChild, ProviderCommand, ProxyPolicy, StartDir,
};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

use crate::websocket;
use crate::wire::{
    ClientCapabilities, ClientInfo, INITIALIZED, Initialize, InitializeParams, Method,
};

/// Largest message accepted from Codex (its frames can be large: whole
/// file diffs); a larger one ends the connection. Messages that are not
/// JSON are skipped.
pub const MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

/// Budget of `codex app-server daemon start`.
const DAEMON_START_BUDGET: Duration = Duration::from_secs(30);

/// How the Bridge reaches Codex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodexTransport {
    /// A `codex app-server` child per connection, over stdio.
    Stdio,
    /// The managed daemon's control socket.
    Daemon {
        /// Run `codex app-server daemon start` when the socket is down.
        autostart: bool,
    },
}

/// The Codex runtime's configuration, resolved at start-up.
#[derive(Debug, Clone)]
pub struct CodexConfig {
    /// Absolute path of the `codex` executable.
    pub bin: PathBuf,
    /// `CODEX_HOME` for Codex (its configuration, sessions, daemon).
    pub home: PathBuf,
    /// The transport.
    pub transport: CodexTransport,
    /// Bound of one request.
    pub request_timeout: Duration,
    /// Egress proxy policy of Bridge-owned children (the managed daemon
    /// is the user's, and keeps its own environment).
    pub proxy: ProxyPolicy,
    /// Variables of the Bridge's environment handed to Bridge-owned
    /// children (the operator's choice, e.g. `OPENAI_API_KEY`).
    pub env_passthrough: Vec<String>,
}

impl CodexConfig {
    /// The managed daemon's control socket.
    pub fn control_socket(&self) -> PathBuf {
        self.home
            .join("app-server-control")
            .join("app-server-control.sock")
    }

    /// The `codex` command with the Bridge's environment rules.
    pub fn command(&self, cwd: impl Into<StartDir>) -> ProviderCommand {
        let mut command = ProviderCommand::new(&self.bin, cwd);
        command
            .env("CODEX_HOME", self.home.to_string_lossy().into_owned())
            .pass_through(self.env_passthrough.iter().cloned())
            .proxy(self.proxy.clone());
        command
    }
}

fn not_ready(message: &str) -> AgentError {
    AgentError::new(BridgeErrorCode::AgentRuntimeNotReady, message.to_owned())
}

fn disconnected(message: &str) -> AgentError {
    AgentError::new(
        BridgeErrorCode::AgentProviderDisconnected,
        message.to_owned(),
    )
}

/// Why a request of ours failed: the peer's failure, or a result the
/// adapter cannot read.
#[derive(Debug, Clone, PartialEq)]
pub enum CallFailure {
    /// The JSON-RPC exchange failed.
    Rpc(RpcFailure),
    /// Codex answered, but not in the shape the method promises.
    Unreadable,
}

/// The adapter's error for a failed request of ours. The provider's own
/// message is not passed on: it may name host paths the core cannot
/// attribute to a workdir.
pub fn request_failed(what: &str, failure: &CallFailure) -> AgentError {
    match failure {
        CallFailure::Rpc(RpcFailure::Error { code, .. }) => {
            AgentError::provider(format!("Codex refused {what} (JSON-RPC error {code})"))
        }
        CallFailure::Rpc(RpcFailure::Timeout) => {
            disconnected(&format!("Codex did not answer {what} in time"))
        }
        CallFailure::Rpc(RpcFailure::Closed) => {
            disconnected("Codex App Server connection was lost")
        }
        CallFailure::Unreadable => {
            AgentError::provider(format!("Codex answered {what} with an unreadable result"))
        }
    }
}

/// Sends request `M` on `peer` and decodes its result.
pub async fn call<M: Method>(
    peer: &JsonRpcPeer,
    params: &M::Params,
) -> Result<M::Result, CallFailure> {
    let params = serde_json::to_value(params).map_err(|_| CallFailure::Unreadable)?;
    let result = peer
        .request(M::NAME, params)
        .await
        .map_err(CallFailure::Rpc)?;
    decode(result)
}

fn decode<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, CallFailure> {
    serde_json::from_value(value).map_err(|_| CallFailure::Unreadable)
}

/// One initialized connection.
pub struct Connection {
    /// Our side of the JSON-RPC session, shared with the tasks that serve
    /// server requests and with steering.
    pub peer: Arc<JsonRpcPeer>,
    /// Server requests and notifications.
    pub incoming: mpsc::UnboundedReceiver<Incoming>,
    /// The server's `userAgent`.
    pub user_agent: Option<String>,
    child: Option<ProviderChild>,
}

impl Connection {
    /// Opens and initializes a connection. For a Bridge-owned child,
    /// `host` (when given) learns its process group before it can act.
    pub async fn open(
        config: &CodexConfig,
        cwd: StartDir,
        host: Option<&dyn Host>,
    ) -> Result<Connection, AgentError> {
        let timeout = config.request_timeout;
        let (peer, incoming, child) = match &config.transport {
            CodexTransport::Stdio => {
                let mut command = config.command(cwd);
                command.args(["app-server"]);
                let (child, stdin, stdout) = spawn_with_stdio(&command, host, "codex").await?;
                let (peer, incoming) = JsonRpcPeer::start(
                    timeout,
                    |mut router| async move {
                        read_lines(stdout, MAX_MESSAGE_BYTES, |line| router.keep_reading(line))
                            .await;
                    },
                    |queue| write_lines(stdin, queue),
                );
                (peer, incoming, Some(child))
            }
            CodexTransport::Daemon { autostart } => {
                let socket = connect_daemon(config, *autostart).await?;
                let (sink, stream) = socket.split();
                let (peer, incoming) = JsonRpcPeer::start(
                    timeout,
                    |router| websocket::read_frames(stream, router),
                    |queue| websocket::write_frames(sink, queue),
                );
                (peer, incoming, None)
            }
        };
        let mut connection = Connection {
            peer: Arc::new(peer),
            incoming,
            user_agent: None,
            child,
        };
        match connection.initialize().await {
            Ok(()) => Ok(connection),
            Err(error) => {
                connection.close().await;
                Err(error)
            }
        }
    }

    async fn initialize(&mut self) -> Result<(), AgentError> {
        let params = InitializeParams {
            client_info: ClientInfo {
                name: "serverfs-agent-bridge",
                title: "ServerFS Agent Bridge",
                version: env!("CARGO_PKG_VERSION"),
            },
            capabilities: ClientCapabilities {
                experimental_api: true,
            },
        };
        let result = call::<Initialize>(&self.peer, &params)
            .await
            .map_err(|failure| request_failed("initialize", &failure))?;
        self.user_agent = result.user_agent;
        self.peer.notify(INITIALIZED, serde_json::json!({}));
        Ok(())
    }

    /// Closes the connection (once every other holder of the peer let go);
    /// a Bridge-owned child is stopped as a group.
    pub async fn close(self) {
        let Connection { peer, child, .. } = self;
        drop(peer);
        if let Some(mut child) = child {
            let stopped = child.terminate(STOP_GRACE).await;
            if !stopped.tree_gone {
                tracing::warn!("codex app-server could not be proven stopped");
            }
        }
    }
}

/// Connects to the managed daemon, starting it once when allowed.
async fn connect_daemon(
    config: &CodexConfig,
    autostart: bool,
) -> Result<websocket::Socket, AgentError> {
    let unavailable = || not_ready("Codex App Server daemon control socket is unavailable");
    match websocket::connect(&config.control_socket()).await {
        Ok(socket) => return Ok(socket),
        Err(_) if !autostart => return Err(unavailable()),
        Err(_) => {}
    }
    let started = start_daemon(config).await;
    // Connect even after a failed start: the command's exit status is not
    // the daemon's (it can fail printing its status line, or report an
    // error while a daemon it raced with came up). Only when nothing
    // listens is the start's own failure reported.
    match websocket::connect(&config.control_socket()).await {
        Ok(socket) => Ok(socket),
        Err(_) => Err(started.err().unwrap_or_else(unavailable)),
    }
}

/// Runs the official `codex app-server daemon start` (never anything
/// else: the Bridge installs nothing).
///
/// Its stdout is read (and discarded) until it exits: Codex prints its
/// status with `println!`, which panics on a closed pipe, so dropping the
/// pipe would make a successful start exit with status 101. Reading stops
/// when the command exits, not at end of file, since the daemon it starts
/// may inherit the pipe.
async fn start_daemon(config: &CodexConfig) -> Result<(), AgentError> {
    let mut command = config.command(&config.home);
    command.args(["app-server", "daemon", "start"]);
    let mut child = spawn_provider(&command, None, "codex").await?;
    drop(child.take_stdin());
    let mut stdout = child.take_stdout();
    let waited = tokio::time::timeout(DAEMON_START_BUDGET, async {
        // A fixed buffer, reused: the output is not needed, so memory
        // stays bounded however much is printed.
        let mut discard = [0_u8; 8192];
        loop {
            let reading = async {
                match stdout.as_mut() {
                    Some(pipe) => pipe.read(&mut discard).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                status = child.wait() => return status,
                read = reading => {
                    if matches!(read, Ok(0) | Err(_)) {
                        stdout = None;
                    }
                }
            }
        }
    })
    .await;
    match waited {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(_) => Err(not_ready("official Codex daemon start failed")),
        Err(_) => {
            let _stopped = child.terminate(STOP_GRACE).await;
            Err(not_ready("official Codex daemon start timed out"))
        }
    }
}

#[cfg(test)]
mod tests {
    //! `daemon start` through `/bin/sh`: the adapter runs `<bin> app-server
    //! daemon start` in `CODEX_HOME`, so with `bin = /bin/sh` the shell runs
    //! the script file `app-server` there. No executable is written, so no
    //! `ETXTBSY` race with other tests' forks.

    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    use serverfs_testkit::mock_codex::MockCodexDaemon;

    use super::*;

    /// A Codex home with `script` as the `daemon start` command.
    fn home_with_start_script(script: &str) -> (tempfile::TempDir, CodexConfig) {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(home.join("app-server"), script).unwrap();
        let config = CodexConfig {
            bin: PathBuf::from("/bin/sh"),
            home,
            transport: CodexTransport::Daemon { autostart: true },
            request_timeout: Duration::from_secs(10),
            proxy: ProxyPolicy::disabled(),
            env_passthrough: Vec::new(),
        };
        (dir, config)
    }

    #[tokio::test]
    async fn daemon_start_output_is_drained_so_printing_cannot_fail_it() {
        // About 240 KiB of status lines, far more than a pipe buffers; with
        // the pipe closed the first line fails (SIGPIPE, or EPIPE and
        // `set -e`), as Codex's `println!` panics.
        let (_dir, config) = home_with_start_script(
            "set -e\ni=0\nwhile [ $i -lt 4000 ]; do\n\
             echo 'a status line of the daemon start command, sixty bytes'\n\
             i=$((i+1))\ndone\n",
        );
        let started = start_daemon(&config).await;
        assert_eq!(started, Ok(()));
    }

    #[tokio::test]
    async fn a_failed_daemon_start_still_connects_when_the_daemon_is_up() {
        // The script asks for the daemon (a marker file), waits until its
        // socket exists, then exits 1, as a start that came up but failed
        // to report it.
        let (_dir, config) = home_with_start_script(
            ": > started\nn=0\n\
             while [ ! -S app-server-control/app-server-control.sock ] && [ $n -lt 2000000 ]; do\n\
             n=$((n+1))\ndone\nexit 1\n",
        );
        let marker = config.home.join("started");
        let socket = config.control_socket();
        let daemon = std::thread::spawn(move || {
            let asked = Instant::now();
            while !marker.exists() {
                assert!(asked.elapsed() < Duration::from_secs(20), "never asked");
                std::thread::sleep(Duration::from_millis(10));
            }
            MockCodexDaemon::start(socket).unwrap()
        });
        let connected = connect_daemon(&config, true).await;
        let daemon = daemon.join().unwrap();
        assert!(connected.is_ok(), "{:?}", connected.err());
        drop(daemon);
    }
}
