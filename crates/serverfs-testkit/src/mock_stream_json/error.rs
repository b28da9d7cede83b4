//! Why a fake CLI run stopped early. A refused invocation (argv, auth
//! payload) exits with status 2, a protocol problem with 1: either fails
//! the Bridge's turn, which is how a regression shows.

use serde_json::Value;

/// Why the fake gave up.
#[derive(Debug, thiserror::Error)]
pub enum FakeError {
    /// An argument the Bridge must not send in native mode, or a required
    /// one that is missing or has the wrong value.
    #[error("refused: argument {argument:?} {problem}")]
    Argv {
        /// The argument as given (or the missing flag).
        argument: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// The authentication payload file is missing, not private, or not a
    /// payload the fake accepts.
    #[error("refused: auth payload: {0}")]
    AuthPayload(String),
    /// stdin ended while the fake waited for something.
    #[error("input ended waiting for {0}")]
    InputEnded(&'static str),
    /// A line on stdin that is not JSON.
    #[error("unreadable input: {0}")]
    Unreadable(#[from] serde_json::Error),
    /// A message the protocol does not allow here, or an answer the
    /// scenario did not expect.
    #[error("unexpected message while waiting for {expected}: {got}")]
    Unexpected {
        /// What the fake waited for.
        expected: &'static str,
        /// What came instead.
        got: Value,
    },
    /// The fake's own files or signal handling.
    #[error("{what}: {source}")]
    Io {
        /// What the fake was doing.
        what: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl FakeError {
    /// The process exit status this error ends the fake with.
    pub fn exit_status(&self) -> u8 {
        match self {
            FakeError::Argv { .. } | FakeError::AuthPayload(_) => 2,
            FakeError::InputEnded(_)
            | FakeError::Unreadable(_)
            | FakeError::Unexpected { .. }
            | FakeError::Io { .. } => 1,
        }
    }

    /// An [`Io`](FakeError::Io) error while doing `what`.
    pub(super) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> FakeError {
        move |source| FakeError::Io { what, source }
    }

    /// An [`Unexpected`](FakeError::Unexpected) `got` while waiting for
    /// `expected`.
    pub(super) fn unexpected(expected: &'static str, got: &Value) -> FakeError {
        FakeError::Unexpected {
            expected,
            got: got.clone(),
        }
    }
}
