//! The hook through which every mutation takes the cross-process writer
//! lease of its workdir.
//!
//! With the Agent Bridge enabled, an agent task writing in a workdir holds
//! that workdir's lease, and ServerFS mutations must not interleave with
//! it: [`BridgeLease`] takes the lease (non-blocking) for the whole
//! filesystem part of each mutation. With the Bridge disabled, [`NoLease`]
//! is used and the base surface never touches a lock file. Reads never take
//! a lease.

use std::path::PathBuf;

use serverfs_config::WorkdirConfig;
use serverfs_lease::{LeaseError, LeaseErrorCode, LeaseId};
use serverfs_protocol::ErrorCode;

use crate::mcp::error::ToolError;

/// Held for the whole filesystem part of one mutation; releasing the lease
/// is dropping the guard.
pub type LeaseGuard = Box<dyn Send>;

/// Acquires a workdir's writer lease, without blocking: a busy lease is an
/// immediate coded error (`WORKDIR_BUSY`, …), never a wait.
pub trait WriterLease: Send + Sync + std::fmt::Debug {
    /// Takes the lease of `workdir` for one mutation.
    fn acquire(&self, workdir: &WorkdirConfig) -> Result<LeaseGuard, ToolError>;
}

/// The lease when the Agent Bridge is disabled: always granted, touches
/// nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLease;

impl WriterLease for NoLease {
    fn acquire(&self, _workdir: &WorkdirConfig) -> Result<LeaseGuard, ToolError> {
        Ok(Box::new(()))
    }
}

/// The lease when the Agent Bridge is enabled: the workdir's lock artifact
/// in the Bridge's lock directory, which ServerFS only opens (never creates
/// or changes). Slot workdirs (container mode) use the legacy `slot:NN`
/// identity, all others `alias:<alias>`.
#[derive(Debug, Clone)]
pub struct BridgeLease {
    lock_dir: PathBuf,
}

impl BridgeLease {
    /// A reader of the lease artifacts in `lock_dir`.
    pub fn new(lock_dir: PathBuf) -> BridgeLease {
        BridgeLease { lock_dir }
    }
}

impl WriterLease for BridgeLease {
    fn acquire(&self, workdir: &WorkdirConfig) -> Result<LeaseGuard, ToolError> {
        let guard = lease_id(workdir)
            .and_then(|id| serverfs_lease::try_acquire(&self.lock_dir, &id))
            .map_err(|e| lease_error(&e))?;
        Ok(Box::new(guard))
    }
}

/// The lease identity of a workdir, shared with the Bridge
/// ([`LeaseId::of_workdir`]).
pub fn lease_id(workdir: &WorkdirConfig) -> Result<LeaseId, LeaseError> {
    LeaseId::of_workdir(workdir.alias.as_str(), workdir.legacy_slot)
}

/// The lease's refusal as the client sees it: the lease crate's messages
/// name the workdir, never a host path.
fn lease_error(error: &LeaseError) -> ToolError {
    let code = match error.code() {
        LeaseErrorCode::WorkdirBusy => ErrorCode::WorkdirBusy,
        LeaseErrorCode::WorkdirRecoveryRequired => ErrorCode::WorkdirRecoveryRequired,
        LeaseErrorCode::AgentLockUnavailable
        | LeaseErrorCode::LockPathUnsafe
        | LeaseErrorCode::InvalidLeaseId => ErrorCode::AgentLockUnavailable,
    };
    ToolError {
        code: code.into(),
        message: error.to_string(),
    }
}
