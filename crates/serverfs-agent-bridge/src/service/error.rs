//! The task service's error: a stable code and a client-safe message.

use serverfs_lease::{LeaseError, LeaseErrorCode};
use serverfs_protocol::bridge::{BridgeErrorCode, Response};

use crate::adapter::AdapterError;
use crate::store::StoreError;

/// A refusal or failure of a Bridge method.
///
/// The message is shown to the client: it never carries a host path, a
/// prompt or a secret. Every conversion below keeps to that: the store's,
/// the lease crate's and the adapters' `Display` texts are client-safe by
/// contract, and OS detail stays in their `source()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    /// The stable code.
    pub code: BridgeErrorCode,
    /// A short, client-safe description.
    pub message: String,
}

impl ServiceError {
    /// An error with `code` and `message`.
    pub fn new(code: BridgeErrorCode, message: impl Into<String>) -> ServiceError {
        ServiceError {
            code,
            message: message.into(),
        }
    }

    /// The failure response to the request `request_id`.
    pub fn into_response(self, request_id: String) -> Response {
        Response::error(Some(request_id), self.code, self.message)
    }
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ServiceError {}

impl From<StoreError> for ServiceError {
    fn from(error: StoreError) -> ServiceError {
        ServiceError::new(error.code(), error.to_string())
    }
}

impl From<AdapterError> for ServiceError {
    fn from(error: AdapterError) -> ServiceError {
        ServiceError::new(error.code, error.message)
    }
}

impl From<LeaseError> for ServiceError {
    fn from(error: LeaseError) -> ServiceError {
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
        ServiceError::new(code, error.to_string())
    }
}

/// Shorthand for results of the service.
pub type ServiceResult<T> = Result<T, ServiceError>;
