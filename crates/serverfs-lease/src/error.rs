//! The crate's one error type and its stable codes.
//!
//! `Display` is safe to show a client: it names the workdir by its label
//! (`workdir <alias>` / `workdir slot NN`) and never a host path. OS detail
//! travels in [`std::error::Error::source`], for logs only.

use std::fmt;
use std::io;

use thiserror::Error;

/// The stable wire codes of lease failures (spec-agent-bridge.md §11).
///
/// The MCP file surface's `ErrorCode` lives in `serverfs-protocol`; this
/// crate does not depend on it, so callers map [`LeaseErrorCode::as_str`]
/// (or the variant) onto their own enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseErrorCode {
    /// Another process holds the writer lease.
    WorkdirBusy,
    /// A recovery guard is present, unreadable, invalid, or could not be
    /// written: the workdir is blocked until reconciliation proves the
    /// provider stopped.
    WorkdirRecoveryRequired,
    /// Reader side (the MCP server): the lease artifact or guard is missing
    /// or unusable.
    AgentLockUnavailable,
    /// Owner side (the Bridge): the lock directory or an artifact is missing,
    /// not of the right type, or has an unsafe owner or mode.
    LockPathUnsafe,
    /// A lease id or lease key failed validation. Raised while configuration
    /// is checked; not a spec wire code (the spec leaves it to "fail
    /// closed").
    InvalidLeaseId,
}

impl LeaseErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [LeaseErrorCode; 5] = [
        LeaseErrorCode::WorkdirBusy,
        LeaseErrorCode::WorkdirRecoveryRequired,
        LeaseErrorCode::AgentLockUnavailable,
        LeaseErrorCode::LockPathUnsafe,
        LeaseErrorCode::InvalidLeaseId,
    ];

    /// The wire string, e.g. `"WORKDIR_BUSY"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseErrorCode::WorkdirBusy => "WORKDIR_BUSY",
            LeaseErrorCode::WorkdirRecoveryRequired => "WORKDIR_RECOVERY_REQUIRED",
            LeaseErrorCode::AgentLockUnavailable => "AGENT_LOCK_UNAVAILABLE",
            LeaseErrorCode::LockPathUnsafe => "LOCK_PATH_UNSAFE",
            LeaseErrorCode::InvalidLeaseId => "INVALID_LEASE_ID",
        }
    }
}

impl fmt::Display for LeaseErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a lease id or lease key was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseIdProblem {
    /// The id is empty.
    Empty,
    /// The id is longer than 256 characters.
    TooLong,
    /// The id contains a control character.
    ControlCharacter,
    /// The id contains `/` or `\`.
    Separator,
    /// The id starts with neither `slot:` nor `alias:`.
    UnknownPrefix,
    /// The slot part is not exactly two ASCII digits.
    SlotFormat,
    /// The slot is outside `01`..`16`.
    SlotOutOfRange,
    /// The alias part is empty.
    EmptyAlias,
    /// The alias contains `:`.
    AliasColon,
    /// The lease key is `slot` but the workdir has no slot.
    MissingSlot,
    /// A lease key other than `alias` or `slot`.
    UnknownKey,
}

impl fmt::Display for LeaseIdProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LeaseIdProblem::Empty => "the lease id is empty",
            LeaseIdProblem::TooLong => "the lease id is longer than 256 characters",
            LeaseIdProblem::ControlCharacter => "the lease id contains a control character",
            LeaseIdProblem::Separator => "the lease id contains a path separator",
            LeaseIdProblem::UnknownPrefix => "the lease id must start with `slot:` or `alias:`",
            LeaseIdProblem::SlotFormat => "the slot must be exactly two digits",
            LeaseIdProblem::SlotOutOfRange => "the slot must be between 01 and 16",
            LeaseIdProblem::EmptyAlias => "the alias is empty",
            LeaseIdProblem::AliasColon => "the alias contains `:`",
            LeaseIdProblem::MissingSlot => "the lease key is `slot` but the workdir has no slot",
            LeaseIdProblem::UnknownKey => "the lease key must be `alias` or `slot`",
        })
    }
}

/// Why a workdir needs recovery before it can be written again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecoveryReason {
    /// A guard is present (an earlier workspace-write task ended without
    /// proof that its provider stopped).
    Present,
    /// The guard path is not a regular file.
    Unsafe,
    /// The guard could not be read, or is not valid JSON.
    Unreadable,
    /// The guard's content is not a valid schema-1 record for this lease.
    Invalid,
    /// The guard records a different task.
    ForeignTask,
    /// A guard could not be written.
    Persist,
}

impl fmt::Display for RecoveryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecoveryReason::Present => "has unresolved Agent recovery state",
            RecoveryReason::Unsafe => "has an unsafe Agent recovery state file",
            RecoveryReason::Unreadable => "has unreadable Agent recovery state",
            RecoveryReason::Invalid => "has invalid Agent recovery state",
            RecoveryReason::ForeignTask => "has Agent recovery state that belongs to another task",
            RecoveryReason::Persist => "could not persist Agent recovery state",
        })
    }
}

/// What was wrong with a lease artifact or the lock directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArtifactProblem {
    /// The lock directory path is not absolute.
    NotAbsolute,
    /// The path is missing.
    Missing,
    /// The path is a symbolic link.
    Symlink,
    /// A directory was expected.
    NotDirectory,
    /// A regular file was expected.
    NotRegular,
    /// The owner is not this process's effective user.
    WrongOwner,
    /// The mode grants more than the configured access allows.
    PermissiveMode,
    /// Any other operating-system failure (see the error's source).
    Io,
}

impl fmt::Display for ArtifactProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArtifactProblem::NotAbsolute => "the lock directory is not an absolute path",
            ArtifactProblem::Missing => "it is missing",
            ArtifactProblem::Symlink => "it is a symbolic link",
            ArtifactProblem::NotDirectory => "it is not a directory",
            ArtifactProblem::NotRegular => "it is not a regular file",
            ArtifactProblem::WrongOwner => "it is not owned by the Bridge user",
            ArtifactProblem::PermissiveMode => "its mode is too permissive",
            ArtifactProblem::Io => "it could not be opened or updated",
        })
    }
}

/// Every failure of this crate. Each variant has a stable
/// [`code`](LeaseError::code).
#[derive(Debug, Error)]
pub enum LeaseError {
    /// A lease id or lease key failed validation.
    #[error("invalid lease id: {problem}")]
    InvalidLeaseId {
        /// Which rule it broke.
        problem: LeaseIdProblem,
    },
    /// Another open file description holds the lock (`flock` would block).
    #[error("{label} has an active Agent writer")]
    Busy {
        /// `workdir <alias>` or `workdir slot NN`.
        label: String,
    },
    /// The workdir has (or would be left with) unresolved recovery state.
    #[error("{label} {reason}")]
    RecoveryRequired {
        /// `workdir <alias>` or `workdir slot NN`.
        label: String,
        /// What exactly.
        reason: RecoveryReason,
        /// The OS or parse failure behind it, if any.
        #[source]
        source: Option<io::Error>,
    },
    /// Reader side: the lease artifact or guard cannot be used.
    #[error("shared Agent lease for {label} is unavailable")]
    LockUnavailable {
        /// `workdir <alias>` or `workdir slot NN`.
        label: String,
        /// The OS failure behind it, if any.
        #[source]
        source: Option<io::Error>,
    },
    /// Owner side: the lock directory or an artifact is unsafe or unusable.
    #[error("lease artifact for {subject} is unsafe: {problem}")]
    LockPathUnsafe {
        /// `workdir <alias>`, `workdir slot NN`, or `the lock directory`.
        subject: String,
        /// What was wrong.
        problem: ArtifactProblem,
        /// The OS failure behind it, if any.
        #[source]
        source: Option<io::Error>,
    },
}

impl LeaseError {
    /// The stable code of this error.
    pub fn code(&self) -> LeaseErrorCode {
        match self {
            LeaseError::InvalidLeaseId { .. } => LeaseErrorCode::InvalidLeaseId,
            LeaseError::Busy { .. } => LeaseErrorCode::WorkdirBusy,
            LeaseError::RecoveryRequired { .. } => LeaseErrorCode::WorkdirRecoveryRequired,
            LeaseError::LockUnavailable { .. } => LeaseErrorCode::AgentLockUnavailable,
            LeaseError::LockPathUnsafe { .. } => LeaseErrorCode::LockPathUnsafe,
        }
    }

    #[cold]
    pub(crate) fn invalid_id(problem: LeaseIdProblem) -> LeaseError {
        LeaseError::InvalidLeaseId { problem }
    }

    #[cold]
    pub(crate) fn busy(label: String) -> LeaseError {
        LeaseError::Busy { label }
    }

    #[cold]
    pub(crate) fn recovery(
        label: String,
        reason: RecoveryReason,
        source: Option<io::Error>,
    ) -> LeaseError {
        LeaseError::RecoveryRequired {
            label,
            reason,
            source,
        }
    }

    #[cold]
    pub(crate) fn unavailable(label: String, source: Option<io::Error>) -> LeaseError {
        LeaseError::LockUnavailable { label, source }
    }

    #[cold]
    pub(crate) fn unsafe_path(
        subject: String,
        problem: ArtifactProblem,
        source: Option<io::Error>,
    ) -> LeaseError {
        LeaseError::LockPathUnsafe {
            subject,
            problem,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_pinned() {
        let wire: Vec<&str> = LeaseErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            wire,
            [
                "WORKDIR_BUSY",
                "WORKDIR_RECOVERY_REQUIRED",
                "AGENT_LOCK_UNAVAILABLE",
                "LOCK_PATH_UNSAFE",
                "INVALID_LEASE_ID",
            ]
        );
    }

    #[test]
    fn messages_match_the_agent_facing_texts() {
        let busy = LeaseError::busy("workdir repo".into());
        assert_eq!(busy.to_string(), "workdir repo has an active Agent writer");
        assert_eq!(busy.code(), LeaseErrorCode::WorkdirBusy);
        let guard = LeaseError::recovery("workdir repo".into(), RecoveryReason::Present, None);
        assert_eq!(
            guard.to_string(),
            "workdir repo has unresolved Agent recovery state"
        );
        assert_eq!(guard.code(), LeaseErrorCode::WorkdirRecoveryRequired);
        let unavailable = LeaseError::unavailable("workdir repo".into(), None);
        assert_eq!(
            unavailable.to_string(),
            "shared Agent lease for workdir repo is unavailable"
        );
        assert_eq!(unavailable.code(), LeaseErrorCode::AgentLockUnavailable);
    }

    #[test]
    fn os_detail_stays_out_of_display() {
        let source = io::Error::other("/secret/host/path");
        let err = LeaseError::unavailable("workdir repo".into(), Some(source));
        assert!(!err.to_string().contains("/secret"));
        let inner = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(inner.as_deref(), Some("/secret/host/path"));
    }
}
