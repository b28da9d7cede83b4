//! Writer lease and recovery guard of ServerFS workdirs, shared by the two
//! processes: the Agent Bridge (**owner**: creates the artifacts, holds a
//! workdir's lease for a whole workspace-write task, publishes and removes
//! its recovery guard) and the MCP server (**reader**: takes the lease
//! around each file mutation, never creates or modifies anything).
//!
//! A workdir's lease is a [`LeaseId`] (`alias:<alias>` or legacy
//! `slot:NN`, chosen by one [`LeaseKey`] per deployment). Its artifacts live
//! in the lock directory: `<stem>.lock`, the `flock(2)` target, and
//! `active/<stem>`, the recovery guard that keeps the workdir blocked after
//! a task whose provider may still be running — the kernel drops a crashed
//! holder's lock, but the guard persists until a provider stop is proven.
//! Guard removal is decided by one function, [`may_remove_guard`], from an
//! explicit [`ProviderLiveness`].
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use serverfs_lease::{
//!     ArtifactAccess, GuardRecord, GuardRemoval, GuardWrite, LeaseErrorCode, LeaseId,
//!     ProviderLiveness, hold, prepare_artifacts, try_acquire,
//! };
//!
//! let tmp = tempfile::tempdir()?;
//! let lock_dir = tmp.path().join("locks");
//! let id = LeaseId::alias("repo")?;
//! assert_eq!(id.stem(), "255b6be1a22d261f7c81e80e37b195e16c9212de");
//!
//! // Bridge, before serving: create the directory and the lock file.
//! prepare_artifacts(&lock_dir, ArtifactAccess::Private, &[id.clone()])?;
//!
//! // Bridge, for a workspace-write task: hold the lease, publish the guard.
//! let lease = hold(&lock_dir, &id)?;
//! lease.publish_guard(&GuardRecord::new("agt_1", "codex", 1_767_225_600_000), GuardWrite::Create)?;
//!
//! // MCP server, for a mutation meanwhile: refused.
//! let busy = try_acquire(&lock_dir, &id).map(drop).map_err(|err| err.code());
//! assert_eq!(busy, Err(LeaseErrorCode::WorkdirBusy));
//!
//! // The provider returned and its process group is gone: clear and release.
//! let removed = lease.remove_guard("agt_1", ProviderLiveness::ProvenStopped)?;
//! assert_eq!(removed, GuardRemoval::Removed);
//! drop(lease);
//!
//! // Now the mutation may proceed while it holds `guard`.
//! let guard = try_acquire(&lock_dir, &id)?;
//! drop(guard);
//! # Ok(()) }
//! ```
//!
//! The rules are spec-agent-bridge.md §8 (identity, lock directory, `flock`
//! semantics, guard files, reconciliation) and spec-mcp-filesystem.md §10.2
//! (the reader); ARCHITECTURE.md §6 fixes the single guard-removal
//! decision. Every error is a [`LeaseError`] with a stable
//! [`LeaseErrorCode`]; the MCP surface maps those onto its own wire codes.
//! The operating-system calls live behind a platform seam (`sys`), Linux
//! only for now.

#![warn(missing_docs)]

mod artifacts;
mod error;
mod guard;
mod identity;
mod liveness;
mod owner;
mod reader;
mod sys;

pub use artifacts::{ArtifactAccess, prepare_artifacts};
pub use error::{ArtifactProblem, LeaseError, LeaseErrorCode, LeaseIdProblem, RecoveryReason};
pub use guard::{GuardRecord, list_guards, probe_recorded_group, read_guard};
pub use identity::{LeaseId, LeaseKey, is_guard_name};
pub use liveness::{ProviderLiveness, may_remove_guard, probe_process_group};
pub use owner::{GuardRemoval, GuardWrite, HeldLease, Reconciliation, hold, reconcile};
pub use reader::{LeaseGuard, try_acquire};
