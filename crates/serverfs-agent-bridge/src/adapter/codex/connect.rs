//! Opening an initialized App Server connection over the configured
//! transport (spec-adapters.md §2.1–§2.2, §2.7).
//!
//! * `stdio` (default): a Bridge-owned `codex app-server` child per
//!   connection, started through the shared process helper (authorized
//!   cwd, own process group, scrubbed environment, bounded stderr) and
//!   stopped as a group when the connection closes.
//! * `daemon`: the user's managed daemon over WebSocket on its Unix control
//!   socket (`ws://localhost/rpc`, text frames, no compression, never
//!   through a proxy). With autostart, a failed connect runs the official
//!   `codex app-server daemon start` once, then connects again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_protocol::bridge::BridgeErrorCode;
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use super::rpc::{Incoming, RpcFailure, RpcPeer, Wire};
use crate::adapter::{AdapterError, Host};
use crate::{ProviderChild, ProviderCommand, ProxyPolicy};

/// `SIGTERM` grace of a Bridge-owned app-server before `SIGKILL`.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Budget of `codex app-server daemon start`.
const DAEMON_START_BUDGET: Duration = Duration::from_secs(30);
/// Budget of connecting to the daemon's control socket.
const CONNECT_BUDGET: Duration = Duration::from_secs(5);

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
}

impl CodexConfig {
    /// The managed daemon's control socket.
    pub fn control_socket(&self) -> PathBuf {
        self.home
            .join("app-server-control")
            .join("app-server-control.sock")
    }

    /// The `codex` command with the Bridge's environment rules.
    pub fn command(&self, cwd: &Path) -> ProviderCommand {
        let mut command = ProviderCommand::new(&self.bin, cwd);
        command
            .env("CODEX_HOME", self.home.to_string_lossy().into_owned())
            .proxy(self.proxy.clone());
        command
    }
}

fn not_ready(message: &str) -> AdapterError {
    AdapterError::new(BridgeErrorCode::AgentRuntimeNotReady, message.to_owned())
}

fn disconnected(message: &str) -> AdapterError {
    AdapterError::new(
        BridgeErrorCode::AgentProviderDisconnected,
        message.to_owned(),
    )
}

/// The adapter's error for a failed request of ours. The provider's own
/// message is not passed on: it may name host paths the core cannot
/// attribute to a workdir.
pub fn request_failed(what: &str, failure: &RpcFailure) -> AdapterError {
    match failure {
        RpcFailure::Error { code, .. } => AdapterError::new(
            BridgeErrorCode::AgentProviderError,
            format!("Codex refused {what} (JSON-RPC error {code})"),
        ),
        RpcFailure::Timeout => disconnected(&format!("Codex did not answer {what} in time")),
        RpcFailure::Closed => disconnected("Codex App Server connection was lost"),
    }
}

/// One initialized connection.
pub struct Connection {
    /// Our side of the JSON-RPC session, shared with the tasks that serve
    /// server requests and with steering.
    pub peer: Arc<RpcPeer>,
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
        cwd: &Path,
        host: Option<&dyn Host>,
    ) -> Result<Connection, AdapterError> {
        let (wire, child) = match &config.transport {
            CodexTransport::Stdio => {
                let mut child =
                    config
                        .command(cwd)
                        .args(["app-server"])
                        .spawn()
                        .map_err(|error| {
                            AdapterError::new(error.code(), "codex could not be started")
                        })?;
                if let Some(host) = host
                    && let Err(error) = host.record_process_group(child.process_group()).await
                {
                    let _stopped = child.terminate(STOP_GRACE).await;
                    return Err(error);
                }
                let (Some(stdin), Some(stdout)) = (child.take_stdin(), child.take_stdout()) else {
                    let _stopped = child.terminate(STOP_GRACE).await;
                    return Err(not_ready("codex app-server has no stdio"));
                };
                (Wire::Stdio { stdin, stdout }, Some(child))
            }
            CodexTransport::Daemon { autostart } => (
                Wire::WebSocket(Box::new(connect_daemon(config, *autostart).await?)),
                None,
            ),
        };
        let (peer, incoming) = RpcPeer::start(wire, config.request_timeout);
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

    async fn initialize(&mut self) -> Result<(), AdapterError> {
        let result = self
            .peer
            .request(
                "initialize",
                json!({
                    "clientInfo": {
                        "name": "serverfs-agent-bridge",
                        "title": "ServerFS Agent Bridge",
                        "version": env!("CARGO_PKG_VERSION"),
                    },
                    // Needed for `availableDecisions` and
                    // `additionalPermissions` on approvals.
                    "capabilities": { "experimentalApi": true },
                }),
            )
            .await
            .map_err(|failure| request_failed("initialize", &failure))?;
        self.user_agent = result
            .get("userAgent")
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.peer.notify("initialized", json!({}));
        Ok(())
    }

    /// Closes the connection (once every other holder of the peer let go);
    /// a Bridge-owned child is stopped as a group.
    pub async fn close(self) {
        let Connection { peer, child, .. } = self;
        drop(peer);
        if let Some(mut child) = child {
            let stopped = child.terminate(STOP_GRACE).await;
            if !stopped.group_gone {
                tracing::warn!("codex app-server could not be proven stopped");
            }
        }
    }
}

/// Connects to the managed daemon, starting it once when allowed.
async fn connect_daemon(
    config: &CodexConfig,
    autostart: bool,
) -> Result<tokio_tungstenite::WebSocketStream<UnixStream>, AdapterError> {
    match websocket(&config.control_socket()).await {
        Ok(socket) => return Ok(socket),
        Err(error) if !autostart => return Err(error),
        Err(_) => {}
    }
    start_daemon(config).await?;
    websocket(&config.control_socket()).await
}

async fn websocket(
    socket: &Path,
) -> Result<tokio_tungstenite::WebSocketStream<UnixStream>, AdapterError> {
    let unavailable = || not_ready("Codex App Server daemon control socket is unavailable");
    let stream = tokio::time::timeout(CONNECT_BUDGET, UnixStream::connect(socket))
        .await
        .map_err(|_| unavailable())?
        .map_err(|_| unavailable())?;
    // Client handshake only: no TLS, no permessage-deflate (offering it
    // makes the daemon drop the connection).
    let (socket, _response) = tokio::time::timeout(
        CONNECT_BUDGET,
        tokio_tungstenite::client_async("ws://localhost/rpc", stream),
    )
    .await
    .map_err(|_| unavailable())?
    .map_err(|_| unavailable())?;
    Ok(socket)
}

/// Runs the official `codex app-server daemon start` (never anything
/// else: the Bridge installs nothing).
async fn start_daemon(config: &CodexConfig) -> Result<(), AdapterError> {
    let cwd = config.home.clone();
    let mut child = config
        .command(&cwd)
        .args(["app-server", "daemon", "start"])
        .spawn()
        .map_err(|error| AdapterError::new(error.code(), "codex could not be started"))?;
    // The command prints status lines; nothing in them is needed.
    drop(child.take_stdout());
    drop(child.take_stdin());
    match tokio::time::timeout(DAEMON_START_BUDGET, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(_) => Err(not_ready("official Codex daemon start failed")),
        Err(_) => {
            let _stopped = child.terminate(STOP_GRACE).await;
            Err(not_ready("official Codex daemon start timed out"))
        }
    }
}
