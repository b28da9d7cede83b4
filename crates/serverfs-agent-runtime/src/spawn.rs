//! Starting a provider for a turn: spawned through [`ProviderCommand`]
//! and its process group recorded with the host before the adapter writes
//! a byte to it, so that after a Bridge crash the recovery guard is
//! removed only once that group is proven gone (spec-agent-bridge.md
//! §8.4). A provider that cannot be recorded is stopped again.

use std::time::Duration;

use serverfs_protocol::bridge::BridgeErrorCode;
use tokio::process::{ChildStdin, ChildStdout};

use crate::{AgentError, Host, ProviderChild, ProviderCommand};

/// `SIGTERM` grace of a provider the adapter stops, before `SIGKILL`.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// Spawns `command`; with a `host`, records the child's process group
/// there before handing the child back. `what` names the provider in the
/// client-safe error (`"codex could not be started"`).
///
/// # Errors
///
/// The spawn's code (`AGENT_RUNTIME_UNAVAILABLE`, `AGENT_RUNTIME_NOT_READY`)
/// with `"<what> could not be started"`, or the host's error when the group
/// could not be recorded (the child is stopped first).
pub async fn spawn_provider(
    command: &ProviderCommand,
    host: Option<&dyn Host>,
    what: &str,
) -> Result<ProviderChild, AgentError> {
    let mut child = command
        .spawn()
        .map_err(|error| AgentError::new(error.code(), format!("{what} could not be started")))?;
    if let Some(host) = host
        && let Err(error) = host.record_process_group(child.process_group()).await
    {
        let _stopped = child.terminate(STOP_GRACE).await;
        return Err(error);
    }
    Ok(child)
}

/// [`spawn_provider`] for a provider whose protocol runs over its stdio:
/// the child with its stdin and stdout taken.
///
/// # Errors
///
/// As [`spawn_provider`], and `AGENT_RUNTIME_NOT_READY` with `"<what> has
/// no stdio"` when a pipe is missing (the child is stopped first).
pub async fn spawn_with_stdio(
    command: &ProviderCommand,
    host: Option<&dyn Host>,
    what: &str,
) -> Result<(ProviderChild, ChildStdin, ChildStdout), AgentError> {
    let mut child = spawn_provider(command, host, what).await?;
    match (child.take_stdin(), child.take_stdout()) {
        (Some(stdin), Some(stdout)) => Ok((child, stdin, stdout)),
        _ => {
            let _stopped = child.terminate(STOP_GRACE).await;
            Err(AgentError::new(
                BridgeErrorCode::AgentRuntimeNotReady,
                format!("{what} has no stdio"),
            ))
        }
    }
}
