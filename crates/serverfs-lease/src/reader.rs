//! The mutation-side lease reader (spec-mcp-filesystem.md §10.2): what the
//! MCP server takes around every file mutation while agent integration is
//! enabled.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use crate::error::{LeaseError, RecoveryReason};
use crate::guard::open_active;
use crate::identity::LeaseId;
use crate::sys::{self, DirAccess, FileAccess, Kind, LockAttempt};

/// A writer lease held by the MCP server for one mutation. Dropping it
/// unlocks and closes the lock file.
#[derive(Debug)]
#[must_use = "the lease is released as soon as the guard is dropped"]
pub struct LeaseGuard {
    id: LeaseId,
    file: OwnedFd,
}

impl LeaseGuard {
    /// The lease this guard holds.
    pub fn id(&self) -> &LeaseId {
        &self.id
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        // Closing the descriptor (right after this) releases the lock even
        // if LOCK_UN fails, so the error carries no information worth
        // surfacing from a destructor.
        let _ = sys::unlock(self.file.as_fd());
    }
}

/// Takes the writer lease of `id` for one mutation, without waiting.
///
/// Lock first, guard second: a live Agent task holds both the lock and the
/// guard, so only "lock acquired + guard present" means recovery state.
///
/// 1. `lock_dir` must be absolute and not a symlink; the lock file
///    `<stem>.lock` is opened beneath it read-only, close-on-exec, no-follow
///    (and non-blocking, so a planted FIFO cannot hang the mutation). It is
///    never created or modified.
/// 2. It must be a regular file; `flock(LOCK_EX | LOCK_NB)`.
/// 3. `active/<stem>` is `lstat`ed: absent → the lease is returned; a
///    regular file → recovery required; anything else → unavailable.
///
/// # Security
///
/// Fails closed: any doubt about the artifacts refuses the mutation. The
/// reader never writes to the lock directory, which may be a read-only
/// mount.
///
/// # Errors
///
/// - `WORKDIR_BUSY` — another open file description holds the lock (an
///   Agent is writing);
/// - `WORKDIR_RECOVERY_REQUIRED` — the lock was free but a guard is present
///   (the lock is released again before returning);
/// - `AGENT_LOCK_UNAVAILABLE` — `lock_dir` is relative, a symlink or
///   missing; the lock file is missing, a symlink or not regular; locking
///   failed otherwise; `active/` or the guard is not what it must be, or
///   could not be examined.
pub fn try_acquire(lock_dir: &Path, id: &LeaseId) -> Result<LeaseGuard, LeaseError> {
    let unavailable = |source| LeaseError::unavailable(id.label(), source);
    if !lock_dir.is_absolute() {
        return Err(unavailable(None));
    }
    let dir = sys::open_dir(lock_dir, DirAccess::Lookup).map_err(|err| unavailable(Some(err)))?;
    let file = sys::open_existing_file(dir.as_fd(), &id.lock_file_name(), FileAccess::Read)
        .map_err(|err| unavailable(Some(err)))?;
    let meta = sys::metadata(file.as_fd()).map_err(|err| unavailable(Some(err)))?;
    if meta.kind != Kind::Regular {
        return Err(unavailable(None));
    }
    match sys::try_lock_exclusive(file.as_fd()) {
        Ok(LockAttempt::Acquired) => {}
        Ok(LockAttempt::WouldBlock) => return Err(LeaseError::busy(id.label())),
        Err(err) => return Err(unavailable(Some(err))),
    }
    // From here on, dropping `lease` releases the lock on every path.
    let lease = LeaseGuard {
        id: id.clone(),
        file,
    };
    let Some(active) =
        open_active(dir.as_fd(), DirAccess::Lookup).map_err(|err| unavailable(Some(err)))?
    else {
        return Ok(lease);
    };
    match sys::lstat_at(active.as_fd(), id.stem()) {
        Ok(None) => Ok(lease),
        Ok(Some(meta)) if meta.kind == Kind::Regular => Err(LeaseError::recovery(
            id.label(),
            RecoveryReason::Present,
            None,
        )),
        Ok(Some(_)) => Err(unavailable(None)),
        Err(err) => Err(unavailable(Some(err))),
    }
}
