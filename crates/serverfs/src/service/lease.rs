//! The hook through which every mutation takes the cross-process writer
//! lease of its workdir.
//!
//! With the Agent Bridge enabled, an agent task writing in a workdir holds
//! that workdir's lease, and ServerFS mutations must not interleave with
//! it. The lease reader that implements this arrives with the agent tools;
//! until then, and whenever the Bridge is disabled, [`NoLease`] is used and
//! the base surface never touches a lock file.

use serverfs_config::WorkdirConfig;

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
