//! The kit's two error types, each with its stable code.
//!
//! * [`AgentError`]: what adapters, the host and the Bridge's task service
//!   report to a client — a stable [`BridgeErrorCode`] and a client-safe
//!   message, displayed as `CODE: message`.
//! * [`ProcessError`]: why a provider process could not be started or
//!   waited for; it maps to a code with [`ProcessError::code`].
//!
//! `Display` is safe to show a client: it never names a host path, an
//! environment value, a prompt or a proxy endpoint (ARCHITECTURE.md
//! invariants 4 and 9). OS detail travels in
//! [`std::error::Error::source`], for logs only.

use std::fmt;
use std::io;

use serverfs_protocol::bridge::BridgeErrorCode;
use thiserror::Error;

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

/// A failure to start or watch a provider process.
#[derive(Debug, Error)]
pub enum ProcessError {
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

impl ProcessError {
    /// The stable code of this error.
    pub fn code(&self) -> BridgeErrorCode {
        match self {
            ProcessError::InvalidCommand(_) => BridgeErrorCode::AgentRuntimeUnavailable,
            ProcessError::ProxyEndpointMissing => BridgeErrorCode::AgentRuntimeNotReady,
            ProcessError::Spawn(_) => BridgeErrorCode::AgentRuntimeUnavailable,
            ProcessError::Wait(_) => BridgeErrorCode::AgentProviderError,
        }
    }
}

/// A refusal or failure with its stable code, as a client sees it: the
/// one error type of the adapter contract ([`crate::Adapter`],
/// [`crate::Host`]) and of the Bridge's task service.
///
/// The message is client-safe by contract: no host path, prompt or secret.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {message}", code.as_str())]
pub struct AgentError {
    /// The stable code.
    pub code: BridgeErrorCode,
    /// A short, client-safe description.
    pub message: String,
}

impl AgentError {
    /// An error with `code` and a client-safe `message`.
    pub fn new(code: BridgeErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// `AGENT_PROVIDER_ERROR`: the provider failed or answered something
    /// the adapter cannot use.
    pub fn provider(message: impl Into<String>) -> Self {
        Self::new(BridgeErrorCode::AgentProviderError, message)
    }
}

impl From<ProcessError> for AgentError {
    /// The process error's code and its client-safe text; the OS detail
    /// stays behind (it may name host paths).
    fn from(error: ProcessError) -> Self {
        AgentError::new(error.code(), error.to_string())
    }
}
