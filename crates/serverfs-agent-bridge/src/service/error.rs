//! The task service's error is the kit's [`AgentError`]: one coded type
//! from the adapter up to the wire. This module converts the Bridge's own
//! errors into it.
//!
//! The message is shown to the client: it never carries a host path, a
//! prompt or a secret. Every conversion below keeps to that: the store's
//! and the lease crate's `Display` texts are client-safe by contract, and
//! OS detail stays in their `source()`.

use serverfs_agent_runtime::AgentError;
use serverfs_lease::{LeaseError, LeaseErrorCode};
use serverfs_protocol::bridge::{BridgeErrorCode, Response};

use crate::store::StoreError;

/// The failure response carrying `error` to the request `request_id`.
pub(super) fn error_response(error: AgentError, request_id: String) -> Response {
    Response::error(Some(request_id), error.code, error.message)
}

impl From<StoreError> for AgentError {
    fn from(error: StoreError) -> AgentError {
        AgentError::new(error.code(), error.to_string())
    }
}

/// The service's view of a lease failure (a function, not `From`: both
/// types live in other crates).
pub(super) fn lease_error(error: LeaseError) -> AgentError {
    let code = match error.code() {
        LeaseErrorCode::WorkdirBusy => BridgeErrorCode::WorkdirBusy,
        LeaseErrorCode::WorkdirRecoveryRequired => BridgeErrorCode::WorkdirRecoveryRequired,
        // The reader-side code cannot come from the owner's calls; if it
        // ever did, the artifacts are unusable, which is the owner's
        // "unsafe lock path".
        LeaseErrorCode::AgentLockUnavailable | LeaseErrorCode::LockPathUnsafe => {
            BridgeErrorCode::LockPathUnsafe
        }
        LeaseErrorCode::InvalidLeaseId => BridgeErrorCode::BridgeConfigInvalid,
    };
    AgentError::new(code, error.to_string())
}

/// Shorthand for results of the service.
pub type ServiceResult<T> = Result<T, AgentError>;
