//! The crate's one error type and its stable codes.
//!
//! `Display` is safe to show a client: it never names a host path, an
//! environment value or a proxy endpoint (ARCHITECTURE.md invariants 4 and
//! 9). OS detail travels in [`std::error::Error::source`], for logs only.

use std::fmt;
use std::io;

use thiserror::Error;

/// The stable wire codes of Bridge failures (spec-agent-bridge.md §11).
///
/// Only the codes this crate raises so far are listed. `serverfs-protocol`
/// does not carry the Bridge codes yet; once it does, [`BridgeError::code`]
/// maps onto that enum instead and this one goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BridgeErrorCode {
    /// The provider could not be started: the command is unusable or the
    /// executable could not be spawned.
    AgentRuntimeUnavailable,
    /// The runtime needs something that is not there yet; here: it is
    /// configured to use the agent egress proxy and no endpoint is known.
    AgentRuntimeNotReady,
    /// The provider process misbehaved after it started (here: waiting for
    /// it failed).
    AgentProviderError,
}

impl BridgeErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [BridgeErrorCode; 3] = [
        BridgeErrorCode::AgentRuntimeUnavailable,
        BridgeErrorCode::AgentRuntimeNotReady,
        BridgeErrorCode::AgentProviderError,
    ];

    /// The wire string, e.g. `"AGENT_RUNTIME_NOT_READY"`.
    pub fn as_str(self) -> &'static str {
        match self {
            BridgeErrorCode::AgentRuntimeUnavailable => "AGENT_RUNTIME_UNAVAILABLE",
            BridgeErrorCode::AgentRuntimeNotReady => "AGENT_RUNTIME_NOT_READY",
            BridgeErrorCode::AgentProviderError => "AGENT_PROVIDER_ERROR",
        }
    }
}

impl fmt::Display for BridgeErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a provider command was refused before anything was spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandProblem {
    /// The executable path is not absolute. The Bridge resolves provider
    /// CLIs once, at start-up; the spawn helper never searches `PATH`.
    ExecutableNotAbsolute,
    /// The working directory is not an absolute path.
    WorkingDirectoryNotAbsolute,
    /// An adapter-supplied environment name is empty or contains `=` or NUL.
    InvalidEnvironmentName,
    /// An adapter-supplied environment value contains NUL.
    InvalidEnvironmentValue,
    /// An adapter-supplied environment name is a proxy variable or carries a
    /// reserved prefix: proxy policy belongs to [`crate::ProxyPolicy`] alone
    /// (spec-agent-bridge.md §10.5).
    ForbiddenEnvironmentName,
}

impl CommandProblem {
    fn describe(self) -> &'static str {
        match self {
            CommandProblem::ExecutableNotAbsolute => {
                "the provider executable is not an absolute path"
            }
            CommandProblem::WorkingDirectoryNotAbsolute => {
                "the provider working directory is not an absolute path"
            }
            CommandProblem::InvalidEnvironmentName => "a provider environment name is malformed",
            CommandProblem::InvalidEnvironmentValue => "a provider environment value contains NUL",
            CommandProblem::ForbiddenEnvironmentName => {
                "a provider environment name is reserved for the Bridge's proxy policy"
            }
        }
    }
}

impl fmt::Display for CommandProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A failure of the Agent Bridge.
#[derive(Debug, Error)]
pub enum BridgeError {
    /// The provider command was refused before spawning.
    #[error("provider command refused: {0}")]
    InvalidCommand(CommandProblem),
    /// The runtime must use the agent egress proxy, but no endpoint is
    /// configured: fail closed rather than let the provider reach the
    /// network directly.
    #[error("the runtime requires the agent egress proxy, but no proxy endpoint is configured")]
    ProxyEndpointMissing,
    /// The operating system refused to start the provider.
    #[error("the provider process could not be started")]
    Spawn(#[source] io::Error),
    /// Waiting for the provider process failed.
    #[error("waiting for the provider process failed")]
    Wait(#[source] io::Error),
}

impl BridgeError {
    /// The stable code of this error.
    pub fn code(&self) -> BridgeErrorCode {
        match self {
            BridgeError::InvalidCommand(_) => BridgeErrorCode::AgentRuntimeUnavailable,
            BridgeError::ProxyEndpointMissing => BridgeErrorCode::AgentRuntimeNotReady,
            BridgeError::Spawn(_) => BridgeErrorCode::AgentRuntimeUnavailable,
            BridgeError::Wait(_) => BridgeErrorCode::AgentProviderError,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BridgeErrorCode;

    #[test]
    fn codes_are_pinned() {
        let wire: Vec<&str> = BridgeErrorCode::ALL
            .iter()
            .map(|code| code.as_str())
            .collect();
        assert_eq!(
            wire,
            [
                "AGENT_RUNTIME_UNAVAILABLE",
                "AGENT_RUNTIME_NOT_READY",
                "AGENT_PROVIDER_ERROR"
            ]
        );
    }
}
