//! Start-up failures of the RPC transport and their stable codes.
//!
//! `Display` never names the socket path or any other host path
//! (ARCHITECTURE.md invariants 4 and 9): the operator knows which path they
//! configured, and the message may reach a log shipped elsewhere. The OS
//! error, when there is one, travels in [`std::error::Error::source`].

use std::fmt;
use std::io;

use serverfs_protocol::bridge::BridgeErrorCode;
use thiserror::Error;

/// Why the socket's parent directory was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DirectoryProblem {
    /// The directory, or the first existing ancestor of a missing one, is a
    /// symbolic link or not a directory.
    NotADirectory,
    /// The directory is owned by another user.
    NotOwned,
    /// The directory is group-writable or accessible to other users.
    TooPermissive,
    /// The directory could not be created, opened or inspected.
    Unusable,
    /// The directory or socket could not be given the configured group.
    GroupNotSet,
}

impl DirectoryProblem {
    fn describe(self) -> &'static str {
        match self {
            DirectoryProblem::NotADirectory => "a path component is a symlink or not a directory",
            DirectoryProblem::NotOwned => "the directory is owned by another user",
            DirectoryProblem::TooPermissive => {
                "the directory is group-writable or accessible to other users"
            }
            DirectoryProblem::Unusable => "the directory could not be created or inspected",
            DirectoryProblem::GroupNotSet => "the configured group could not be applied",
        }
    }
}

impl fmt::Display for DirectoryProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Why the socket path itself was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathProblem {
    /// Something other than a socket (a symlink, a file, a directory) sits
    /// at the path; it is never deleted.
    NotASocket,
    /// The socket at the path belongs to another user.
    ForeignOwner,
    /// A process answers on the socket although it holds no Bridge lock
    /// (for example a Bridge that predates the lock file).
    Live,
    /// The stale socket changed while it was being recovered.
    Changed,
    /// The lock file next to the socket could not be opened, is not a
    /// regular file of ours, or could not be locked.
    LockUnusable,
    /// The socket could not be created or bound.
    BindFailed,
}

impl PathProblem {
    fn describe(self) -> &'static str {
        match self {
            PathProblem::NotASocket => "something other than a socket occupies the path",
            PathProblem::ForeignOwner => "the socket belongs to another user",
            PathProblem::Live => "another process is listening on the socket",
            PathProblem::Changed => "the stale socket changed during recovery",
            PathProblem::LockUnusable => "the socket lock file is unusable",
            PathProblem::BindFailed => "the socket could not be bound",
        }
    }
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A failure to set up or run the Bridge's listening socket.
#[derive(Debug, Error)]
pub enum RpcError {
    /// The socket path is relative or names no file.
    #[error("the socket path must be an absolute path naming a file")]
    InvalidPath,
    /// The socket path does not fit a Unix socket address (`sun_path`).
    #[error("the socket path is longer than a Unix socket address allows")]
    PathTooLong,
    /// The socket's parent directory is unsafe.
    #[error("the socket directory is unsafe: {problem}")]
    DirectoryUnsafe {
        /// What is wrong with it.
        problem: DirectoryProblem,
        /// The OS error, if one caused it.
        #[source]
        source: Option<io::Error>,
    },
    /// Another Bridge holds the socket's lock: it is running, and this one
    /// must not take its socket over.
    #[error("another Agent Bridge is already serving this socket")]
    AlreadyRunning,
    /// The socket path is occupied or unsafe to recover.
    #[error("the socket path is in use: {problem}")]
    PathInUse {
        /// What occupies it.
        problem: PathProblem,
        /// The OS error, if one caused it.
        #[source]
        source: Option<io::Error>,
    },
    /// The bound socket could not be handed to the async runtime.
    #[error("the listening socket could not be registered")]
    Listen(#[source] io::Error),
}

impl RpcError {
    /// The stable code of this error (spec-agent-bridge.md §11).
    pub fn code(&self) -> BridgeErrorCode {
        match self {
            RpcError::InvalidPath => BridgeErrorCode::BridgeConfigInvalid,
            RpcError::PathTooLong => BridgeErrorCode::SocketPathTooLong,
            RpcError::DirectoryUnsafe { .. } => BridgeErrorCode::SocketDirectoryUnsafe,
            RpcError::AlreadyRunning | RpcError::PathInUse { .. } => {
                BridgeErrorCode::SocketPathInUse
            }
            RpcError::Listen(_) => BridgeErrorCode::BridgeProtocolError,
        }
    }

    #[cold]
    pub(crate) fn directory(problem: DirectoryProblem, source: Option<io::Error>) -> RpcError {
        RpcError::DirectoryUnsafe { problem, source }
    }

    #[cold]
    pub(crate) fn in_use(problem: PathProblem, source: Option<io::Error>) -> RpcError {
        RpcError::PathInUse { problem, source }
    }
}
