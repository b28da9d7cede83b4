//! One agent process and the initialized ACP connection to it: spawned
//! through the kit (authorized cwd, own process group recorded before it
//! acts, scrubbed environment, proxy policy, bounded stderr), newline
//! framing with a cap over its stdio, the kit's JSON-RPC peer, and
//! `initialize` with the smallest client capabilities. Closing is graceful
//! and then proven: stdin closed, a bounded wait for the exit, then
//! `SIGTERM` and `SIGKILL` to the group (spec-adapters.md §5.1 step 8).

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, FileSystemCapabilities, Implementation, InitializeRequest,
    InitializeResponse,
};
use serverfs_agent_runtime::jsonrpc::{Incoming, JsonRpcPeer, RpcFailure};
use serverfs_agent_runtime::lines::{MAX_LINE_BYTES, read_lines, write_lines};
use serverfs_agent_runtime::spawn::{STOP_GRACE, spawn_with_stdio};
use serverfs_agent_runtime::{AgentError, BridgeErrorCode, Host, ProviderChild, ProviderCommand};
use tokio::sync::mpsc;

use crate::wire::{CallFailure, call};

/// The longest agent name or version kept from `initialize`.
const MAX_AGENT_TEXT: usize = 256;

/// What the agent said of itself in `initialize`, as far as the Bridge
/// uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handshake {
    /// `agentInfo.name`, bounded.
    pub agent_name: Option<String>,
    /// `agentInfo.version`, bounded: the runtime's version.
    pub agent_version: Option<String>,
    /// `agentCapabilities.loadSession`.
    pub load_session: bool,
    /// `agentCapabilities.sessionCapabilities.resume` is present.
    pub resume_session: bool,
}

impl Handshake {
    fn of(answer: &InitializeResponse) -> Handshake {
        let bounded = |text: &str| -> String {
            serverfs_agent_runtime::bounds::utf8_prefix(text, MAX_AGENT_TEXT).to_owned()
        };
        let capabilities = &answer.agent_capabilities;
        Handshake {
            agent_name: answer.agent_info.as_ref().map(|info| bounded(&info.name)),
            agent_version: answer
                .agent_info
                .as_ref()
                .map(|info| bounded(&info.version))
                .filter(|version| !version.is_empty()),
            load_session: capabilities.load_session,
            resume_session: capabilities.session_capabilities.resume.is_some(),
        }
    }
}

/// An initialized connection to one agent process.
pub(crate) struct Connection {
    /// Our side of the JSON-RPC session, shared with the handlers serving
    /// the agent's requests.
    pub peer: Arc<JsonRpcPeer>,
    /// The agent's requests and notifications, in arrival order.
    pub incoming: mpsc::UnboundedReceiver<Incoming>,
    /// What `initialize` answered.
    pub handshake: Handshake,
    child: ProviderChild,
}

/// Why the agent could not be made ready.
pub(crate) fn request_failed(runtime: &str, what: &str, failure: &CallFailure) -> AgentError {
    match failure {
        // The agent's own message is not passed on: it may name host
        // paths or echo configuration.
        CallFailure::Rpc(RpcFailure::Error { code, .. }) => {
            AgentError::provider(format!("{runtime} refused {what} (JSON-RPC error {code})"))
        }
        CallFailure::Rpc(RpcFailure::Timeout) => AgentError::new(
            BridgeErrorCode::AgentProviderDisconnected,
            format!("{runtime} did not answer {what} in time"),
        ),
        CallFailure::Rpc(RpcFailure::Closed) => AgentError::new(
            BridgeErrorCode::AgentProviderDisconnected,
            format!("{runtime} exited or closed its output during {what}"),
        ),
        CallFailure::Unreadable => AgentError::provider(format!(
            "{runtime} answered {what} with an unreadable result"
        )),
    }
}

impl Connection {
    /// Spawns `command` in its working directory (recording the process
    /// group with `host` first, when given) and initializes ACP v1,
    /// waiting at most `timeout` for the answer. `runtime` names the agent
    /// in errors.
    ///
    /// # Errors
    ///
    /// The spawn's code; `AGENT_RUNTIME_UNAVAILABLE` when the agent speaks
    /// another protocol version; the request's failure otherwise. The
    /// agent is stopped before an error is returned.
    pub(crate) async fn open(
        command: &ProviderCommand,
        host: Option<&dyn Host>,
        runtime: &str,
        timeout: Duration,
        shutdown: Duration,
    ) -> Result<Connection, AgentError> {
        let (child, stdin, stdout) = spawn_with_stdio(command, host, runtime).await?;
        let (peer, incoming) = JsonRpcPeer::start(
            timeout,
            |mut router| async move {
                read_lines(stdout, MAX_LINE_BYTES, |line| router.keep_reading(line)).await;
            },
            |queue| write_lines(stdin, queue),
        );
        let peer = Arc::new(peer);
        match initialize(&peer, runtime, timeout).await {
            Ok(handshake) => Ok(Connection {
                peer,
                incoming,
                handshake,
                child,
            }),
            Err(error) => {
                drop(peer);
                stop(child, shutdown).await;
                Err(error)
            }
        }
    }

    /// Closes the connection (once every other holder of the peer let go,
    /// the agent's stdin closes), gives the agent `shutdown` to exit, then
    /// stops its whole group; `true` when the group is proven gone.
    pub(crate) async fn close(self, shutdown: Duration) -> bool {
        let Connection { peer, child, .. } = self;
        drop(peer);
        stop(child, shutdown).await
    }
}

/// The graceful stop of an agent whose stdin is (being) closed: a bounded
/// wait for its own exit, then the group's `SIGTERM`, grace and `SIGKILL`.
async fn stop(mut child: ProviderChild, shutdown: Duration) -> bool {
    let _exited = tokio::time::timeout(shutdown, child.wait()).await;
    let stopped = child.terminate(STOP_GRACE).await;
    if !stopped.tree_gone {
        tracing::warn!("an ACP agent could not be proven stopped");
    }
    stopped.tree_gone
}

/// `initialize` with the smallest client capabilities: no file system, no
/// terminal, no session extensions, no elicitation (seed 002 §10): the
/// agent works with its own tools in the task's directory, and no second
/// file or execution channel through the Bridge exists. Version 1 only.
async fn initialize(
    peer: &JsonRpcPeer,
    runtime: &str,
    timeout: Duration,
) -> Result<Handshake, AgentError> {
    let request = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new()
                .fs(FileSystemCapabilities::new())
                .terminal(false),
        )
        .client_info(
            Implementation::new("serverfs-agent-bridge", env!("CARGO_PKG_VERSION"))
                .title("ServerFS Agent Bridge".to_owned()),
        );
    let answer = call(peer, &request, timeout)
        .await
        .map_err(|failure| request_failed(runtime, "initialize", &failure))?;
    if answer.protocol_version != ProtocolVersion::V1 {
        // No fallback to a version the adapter does not implement.
        return Err(AgentError::new(
            BridgeErrorCode::AgentRuntimeUnavailable,
            format!(
                "{runtime} speaks ACP protocol version {}, the Bridge only version 1",
                serde_json::to_string(&answer.protocol_version).unwrap_or_default()
            ),
        ));
    }
    Ok(Handshake::of(&answer))
}
