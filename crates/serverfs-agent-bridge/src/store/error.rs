//! The store's one error type and its mapping onto the Bridge's stable codes.
//!
//! `Display` is safe to show a client: it names parts of the state
//! directory by role ("the result spool directory"), never by host path,
//! and never repeats a prompt, payload or result text (ARCHITECTURE.md
//! invariants 4 and 9). SQLite and OS detail travel in
//! [`std::error::Error::source`], for logs only.

use std::fmt;
use std::io;

use serverfs_protocol::bridge::{BridgeErrorCode, InteractionKind, TaskStatus};
use thiserror::Error;

/// A part of the private state directory, named by role in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatePart {
    /// The state directory itself.
    StateDirectory,
    /// `state.sqlite3`.
    Database,
    /// `state.sqlite3-wal`.
    WriteAheadLog,
    /// `state.sqlite3-shm`.
    SharedMemoryIndex,
    /// `results/`.
    ResultSpoolDirectory,
}

impl fmt::Display for StatePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StatePart::StateDirectory => "the state directory",
            StatePart::Database => "the state database",
            StatePart::WriteAheadLog => "the state database's write-ahead log",
            StatePart::SharedMemoryIndex => "the state database's shared-memory index",
            StatePart::ResultSpoolDirectory => "the result spool directory",
        })
    }
}

/// Why a part of the state directory was refused (refused, never repaired:
/// spec-agent-bridge.md §7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnsafeReason {
    /// It is a symbolic link.
    Symlink,
    /// It is not a directory (or, for a file part, not a regular file).
    WrongType,
    /// Another user owns it.
    NotOwned,
    /// Group or other users have some access to it.
    GroupOrWorldAccess,
}

impl fmt::Display for UnsafeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnsafeReason::Symlink => "is a symbolic link",
            UnsafeReason::WrongType => "has the wrong file type",
            UnsafeReason::NotOwned => "is not owned by the Bridge user",
            UnsafeReason::GroupOrWorldAccess => "is accessible to group or other users",
        })
    }
}

/// Why writing or reading a spooled result failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpoolProblem {
    /// The spool file is a symlink, not a regular file, not owned by the
    /// Bridge user, or accessible to others.
    UnsafeFile,
    /// The spool file's size differs from the recorded size.
    SizeMismatch,
    /// The spool file's name already exists (never overwritten).
    AlreadyExists,
    /// The spool file is not valid UTF-8.
    NotUtf8,
    /// The operating system refused a read, write or delete.
    Io,
}

impl fmt::Display for SpoolProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpoolProblem::UnsafeFile => "the spool file is unsafe",
            SpoolProblem::SizeMismatch => "the spool file does not match its recorded size",
            SpoolProblem::AlreadyExists => "the spool file already exists",
            SpoolProblem::NotUtf8 => "the spool file is not valid UTF-8",
            SpoolProblem::Io => "the spool file could not be accessed",
        })
    }
}

/// A failure of the task store.
///
/// Every variant maps to one [`BridgeErrorCode`] through [`StoreError::code`]
/// (an exhaustive match: a new variant does not compile without a code).
#[derive(Debug, Error)]
pub enum StoreError {
    // State directory and database.
    /// A part of the state directory is unsafe; it is refused, not repaired.
    #[error("{part} {reason}")]
    UnsafeState {
        /// Which part.
        part: StatePart,
        /// What is wrong with it.
        reason: UnsafeReason,
    },
    /// A part of the state directory could not be created or inspected.
    #[error("{part} could not be created or inspected")]
    StateUnavailable {
        /// Which part.
        part: StatePart,
        /// The OS error (logs only).
        #[source]
        source: io::Error,
    },
    /// SQLite failed.
    #[error("the task store failed")]
    Database(#[from] rusqlite::Error),
    /// The database was written by a newer Bridge; it is never downgraded.
    #[error(
        "the state database has schema version {found}, newer than this Bridge supports ({supported}); upgrade the Bridge"
    )]
    SchemaTooNew {
        /// `PRAGMA user_version` of the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The database holds tables but no schema version: not a Bridge store.
    #[error("the state database has no schema version but is not empty; refusing to adopt it")]
    SchemaUnknown,
    /// A stored value could not be decoded (the database was edited or is damaged).
    #[error("the task store holds an undecodable {what}")]
    Corrupt {
        /// What could not be decoded, e.g. `"event payload"`.
        what: &'static str,
    },
    /// The store's limits contradict each other.
    #[error("invalid task store limits: {0}")]
    InvalidLimits(&'static str),
    /// The database thread has stopped (the store was closed).
    #[error("the task store is closed")]
    Closed,
    /// An operation panicked on the database thread; its transaction was
    /// rolled back.
    #[error("a task store operation failed unexpectedly")]
    Panicked,
    /// The kernel's random source failed.
    #[error("no randomness for a new identifier")]
    Entropy(#[source] io::Error),
    /// An identifier does not have the expected form (`agt_`/`req_` + 24 hex).
    #[error("invalid {0} id")]
    InvalidId(&'static str),

    // Tasks.
    /// The task id is unknown or was purged.
    #[error("task not found")]
    TaskNotFound,
    /// A new task id collided with an existing one.
    #[error("a task with this id already exists")]
    TaskExists,
    /// The maximum number of active tasks is reached.
    #[error("the maximum of {limit} active tasks is reached")]
    TaskLimitReached {
        /// The limit.
        limit: u32,
    },
    /// The idempotency key was used before for a different request.
    #[error("the idempotency key was already used for a different request")]
    IdempotencyConflict,
    /// The transition is not in the frozen table (spec §3.1).
    #[error("task cannot transition from {} to {}", status_name(*from), status_name(*to))]
    InvalidTransition {
        /// Current status.
        from: TaskStatus,
        /// Requested status.
        to: TaskStatus,
    },
    /// Compare-and-set failed: the task is no longer in the expected status.
    #[error("task is {}, not {}", status_name(*actual), status_name(*expected))]
    StatusChanged {
        /// The status the caller expected.
        expected: TaskStatus,
        /// The status the task has.
        actual: TaskStatus,
    },
    /// A waiting state is entered only by presenting an interaction.
    #[error("task enters {} only by presenting an interaction", status_name(*to))]
    WaitingNeedsInteraction {
        /// The waiting status requested.
        to: TaskStatus,
    },
    /// The task cannot take an interaction in its current status.
    #[error("task is {} and cannot take an interaction", status_name(*status))]
    TaskNotActive {
        /// The task's status.
        status: TaskStatus,
    },

    // Events.
    /// An event payload is larger than the per-event cap.
    #[error("event payload of {bytes} bytes exceeds the limit of {limit} bytes")]
    EventTooLarge {
        /// Size of the payload's JSON.
        bytes: usize,
        /// The cap.
        limit: usize,
    },
    /// The task's event log has no room left for this class of event.
    #[error("the task reached its event limit")]
    EventLimitReached,
    /// An event cursor or page limit is out of range.
    #[error("invalid event cursor or limit")]
    InvalidEventPage,

    // Interactions.
    /// The request id is unknown (or belongs to another task).
    #[error("request not found")]
    RequestNotFound,
    /// The request was already resolved (or another answer won the race).
    #[error("request already resolved")]
    RequestAlreadyResolved,
    /// The request is stale: withdrawn, superseded, or its task ended.
    #[error("request is stale")]
    RequestStale,
    /// The request's interaction deadline has passed.
    #[error("request expired")]
    RequestExpired,
    /// A request with this id already exists.
    #[error("a request with this id already exists")]
    RequestExists,
    /// The resolution's kind does not match the request's kind.
    #[error("the request is not {}", kind_name(*kind))]
    WrongInteractionKind {
        /// The kind the resolution was for (the request has the other one).
        kind: InteractionKind,
    },
    /// An interaction payload or resolution is larger than its cap.
    #[error("interaction of {bytes} bytes exceeds the limit of {limit} bytes")]
    InteractionTooLarge {
        /// Size of the JSON.
        bytes: usize,
        /// The cap.
        limit: usize,
    },

    // Results.
    /// The final result is larger than the spool cap.
    #[error("result of {bytes} bytes exceeds the limit of {limit} bytes")]
    ResultTooLarge {
        /// Size of the result.
        bytes: usize,
        /// The cap.
        limit: usize,
    },
    /// The result is not spooled (or the task has none, or the file is gone).
    #[error("the result is not retrievable")]
    ResultNotRetrievable,
    /// Writing, reading or deleting a spool file failed or was unsafe.
    #[error("result storage failed: {problem}")]
    ResultStorage {
        /// What went wrong.
        problem: SpoolProblem,
        /// The OS error, if any (logs only).
        #[source]
        source: Option<io::Error>,
    },
    /// A result offset is negative, past the end, or inside a character.
    #[error("invalid result offset")]
    InvalidResultOffset,
    /// A result chunk limit is out of range or too small for one character.
    #[error("invalid result limit")]
    InvalidResultLimit,
}

fn status_name(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Queued => "queued",
        TaskStatus::Starting => "starting",
        TaskStatus::Running => "running",
        TaskStatus::WaitingForApproval => "waiting_for_approval",
        TaskStatus::WaitingForQuestion => "waiting_for_question",
        TaskStatus::Succeeded => "succeeded",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        TaskStatus::Interrupted => "interrupted",
    }
}

fn kind_name(kind: InteractionKind) -> &'static str {
    match kind {
        InteractionKind::Approval => "an approval",
        InteractionKind::Question => "a question",
    }
}

impl StoreError {
    /// The stable code of this error.
    pub fn code(&self) -> BridgeErrorCode {
        match self {
            StoreError::UnsafeState { .. } => BridgeErrorCode::PrivateStateUnsafe,
            StoreError::StateUnavailable { .. } => BridgeErrorCode::DataHomeUnavailable,
            // Internal failures carry no detail on the wire (spec §11).
            StoreError::Database(_)
            | StoreError::SchemaTooNew { .. }
            | StoreError::SchemaUnknown
            | StoreError::Corrupt { .. }
            | StoreError::Panicked
            | StoreError::Entropy(_) => BridgeErrorCode::BridgeProtocolError,
            StoreError::InvalidLimits(_) => BridgeErrorCode::BridgeConfigInvalid,
            StoreError::Closed => BridgeErrorCode::BridgeClosed,
            StoreError::InvalidId(_) => BridgeErrorCode::InvalidRequest,
            StoreError::TaskNotFound => BridgeErrorCode::AgentTaskNotFound,
            StoreError::TaskExists => BridgeErrorCode::AgentTaskExists,
            StoreError::TaskLimitReached { .. } => BridgeErrorCode::AgentTaskLimitReached,
            StoreError::IdempotencyConflict => BridgeErrorCode::AgentIdempotencyConflict,
            StoreError::InvalidTransition { .. }
            | StoreError::StatusChanged { .. }
            | StoreError::WaitingNeedsInteraction { .. } => BridgeErrorCode::InvalidTaskTransition,
            StoreError::TaskNotActive { .. } => BridgeErrorCode::AgentTaskNotActive,
            StoreError::EventTooLarge { .. } => BridgeErrorCode::AgentEventTooLarge,
            StoreError::EventLimitReached => BridgeErrorCode::AgentEventLimitReached,
            StoreError::InvalidEventPage => BridgeErrorCode::InvalidLimit,
            StoreError::RequestNotFound => BridgeErrorCode::RequestNotFound,
            StoreError::RequestAlreadyResolved => BridgeErrorCode::RequestAlreadyResolved,
            StoreError::RequestStale | StoreError::RequestExpired => BridgeErrorCode::RequestStale,
            StoreError::RequestExists => BridgeErrorCode::RequestExists,
            StoreError::WrongInteractionKind { kind } => match kind {
                InteractionKind::Approval => BridgeErrorCode::InvalidApprovalDecision,
                InteractionKind::Question => BridgeErrorCode::InvalidQuestionAnswer,
            },
            StoreError::InteractionTooLarge { .. } => BridgeErrorCode::AgentInteractionTooLarge,
            StoreError::ResultTooLarge { .. } => BridgeErrorCode::AgentResultTooLarge,
            StoreError::ResultNotRetrievable => BridgeErrorCode::AgentResultNotRetrievable,
            StoreError::ResultStorage { .. } => BridgeErrorCode::AgentResultStorageError,
            StoreError::InvalidResultOffset => BridgeErrorCode::InvalidResultOffset,
            StoreError::InvalidResultLimit => BridgeErrorCode::InvalidResultLimit,
        }
    }

    #[cold]
    pub(crate) fn spool(problem: SpoolProblem, source: Option<io::Error>) -> StoreError {
        StoreError::ResultStorage { problem, source }
    }

    #[cold]
    pub(crate) fn corrupt(what: &'static str) -> StoreError {
        StoreError::Corrupt { what }
    }
}
