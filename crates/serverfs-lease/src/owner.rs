//! The owner side: the Agent Bridge holds a workdir's lease for a whole
//! workspace-write task and publishes, updates and removes its recovery
//! guard (spec-agent-bridge.md §8.3–§8.5).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use crate::artifacts::ArtifactAccess;
use crate::error::{ArtifactProblem, LeaseError, RecoveryReason};
use crate::guard::{GuardRecord, MAX_GUARD_BYTES, open_active, read_guard_in};
use crate::identity::LeaseId;
use crate::liveness::{ProviderLiveness, may_remove_guard};
use crate::sys::{self, DirAccess, FileAccess, Kind, LockAttempt, OpenFailure};

/// How [`HeldLease::publish_guard`] treats an existing guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuardWrite {
    /// At submit: the guard must not exist yet. An existing guard means
    /// unresolved recovery state (`WORKDIR_RECOVERY_REQUIRED`); the check
    /// and the publication are one atomic rename, not check-then-write.
    Create,
    /// While the task runs (native ids or the provider's process group
    /// became known): replaces the guard, which must belong to the same
    /// task. A guard that has gone missing is written again — the task is
    /// still live, so the workdir must stay protected.
    Update,
}

/// What [`HeldLease::remove_guard`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuardRemoval {
    /// The guard was removed (and the removal made durable).
    Removed,
    /// The guard stays: the provider is not proven stopped.
    Kept {
        /// The liveness that kept it.
        liveness: ProviderLiveness,
    },
    /// There was no guard.
    Absent,
}

/// What [`HeldLease::reconcile`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconciliation {
    /// No guard: the workdir is free of recovery state.
    NoGuard,
    /// The provider was proven stopped and the guard removed.
    Removed {
        /// The guard's content before removal.
        record: GuardRecord,
    },
    /// The guard stays; the workdir remains blocked.
    Kept {
        /// The guard's content.
        record: GuardRecord,
        /// The probe's answer.
        liveness: ProviderLiveness,
    },
}

/// A writer lease held by the Bridge. Dropping it unlocks and closes the
/// lock file; a recovery guard, if published, stays until removed.
#[derive(Debug)]
#[must_use = "the lease is released as soon as it is dropped"]
pub struct HeldLease {
    id: LeaseId,
    lock_dir: OwnedFd,
    file: OwnedFd,
}

/// Takes the writer lease of `id` for the owner, without waiting: the
/// existing lock file is opened read-write, close-on-exec, no-follow beneath
/// the lock directory, checked to be regular and locked with
/// `flock(LOCK_EX | LOCK_NB)`.
///
/// Because the lock is per open file description, a second `hold` of the
/// same lease in the same process is `WORKDIR_BUSY` too; the Bridge relies
/// on this.
///
/// # Errors
///
/// - `WORKDIR_BUSY` — another open file description holds the lock;
/// - `LOCK_PATH_UNSAFE` — `lock_dir` is relative, missing or a symlink; the
///   lock file is missing (the Bridge never creates it here: that is
///   [`prepare_artifacts`](crate::prepare_artifacts)' job), a symlink or not
///   regular; or locking failed otherwise.
pub fn hold(lock_dir: &Path, id: &LeaseId) -> Result<HeldLease, LeaseError> {
    let dir_fail =
        |problem, source| LeaseError::unsafe_path("the lock directory".to_owned(), problem, source);
    let file_fail = |problem, source| LeaseError::unsafe_path(id.label(), problem, source);
    if !lock_dir.is_absolute() {
        return Err(dir_fail(ArtifactProblem::NotAbsolute, None));
    }
    let dir = sys::open_dir(lock_dir, DirAccess::Read).map_err(|err| {
        let problem = match sys::classify(&err) {
            OpenFailure::Missing => ArtifactProblem::Missing,
            OpenFailure::NotDirectory | OpenFailure::Symlink => ArtifactProblem::NotDirectory,
            OpenFailure::IsDirectory | OpenFailure::Other => ArtifactProblem::Io,
        };
        dir_fail(problem, Some(err))
    })?;
    let file = sys::open_existing_file(dir.as_fd(), &id.lock_file_name(), FileAccess::ReadWrite)
        .map_err(|err| {
            let problem = match sys::classify(&err) {
                OpenFailure::Missing => ArtifactProblem::Missing,
                OpenFailure::Symlink => ArtifactProblem::Symlink,
                OpenFailure::IsDirectory => ArtifactProblem::NotRegular,
                OpenFailure::NotDirectory | OpenFailure::Other => ArtifactProblem::Io,
            };
            file_fail(problem, Some(err))
        })?;
    let meta =
        sys::metadata(file.as_fd()).map_err(|err| file_fail(ArtifactProblem::Io, Some(err)))?;
    if meta.kind != Kind::Regular {
        return Err(file_fail(ArtifactProblem::NotRegular, None));
    }
    match sys::try_lock_exclusive(file.as_fd()) {
        Ok(LockAttempt::Acquired) => Ok(HeldLease {
            id: id.clone(),
            lock_dir: dir,
            file,
        }),
        Ok(LockAttempt::WouldBlock) => Err(LeaseError::busy(id.label())),
        Err(err) => Err(file_fail(ArtifactProblem::Io, Some(err))),
    }
}

/// Takes the lease of `id` just long enough to reconcile its guard with
/// [`HeldLease::reconcile`] (the Bridge's startup scan over
/// [`list_guards`](crate::list_guards)).
///
/// # Errors
///
/// As [`hold`] — notably `WORKDIR_BUSY` when a live task holds the lease, in
/// which case its guard is rightly left alone — and as
/// [`HeldLease::reconcile`].
pub fn reconcile(
    lock_dir: &Path,
    id: &LeaseId,
    probe: impl FnOnce(&GuardRecord) -> ProviderLiveness,
) -> Result<Reconciliation, LeaseError> {
    hold(lock_dir, id)?.reconcile(probe)
}

impl HeldLease {
    /// The lease held.
    pub fn id(&self) -> &LeaseId {
        &self.id
    }

    /// Reads this lease's recovery guard, if any.
    ///
    /// # Errors
    ///
    /// `WORKDIR_RECOVERY_REQUIRED` when `active/` or the guard is unsafe,
    /// unreadable or invalid for this lease.
    pub fn read_guard(&self) -> Result<Option<GuardRecord>, LeaseError> {
        let Some(active) = self.active(DirAccess::Lookup, RecoveryReason::Unsafe)? else {
            return Ok(None);
        };
        let found = read_guard_in(active.as_fd(), self.id.stem(), || self.id.label())?;
        Ok(found.map(|(_, record)| record))
    }

    /// Writes the recovery guard atomically: the canonical record goes to a
    /// fresh temporary `active/.<stem>.<16 hex>.tmp` (exclusive create,
    /// no-follow, close-on-exec), gets the guard mode and group, is
    /// `fsync`ed and renamed into place — without replacing an existing
    /// guard for [`GuardWrite::Create`] — and the directory is `fsync`ed.
    /// A reader sees the old guard, the new guard, or none; never a partial
    /// file. On failure the temporary file is removed.
    ///
    /// The guard's mode and group follow `active/` (as
    /// [`prepare_artifacts`](crate::prepare_artifacts) set it up): `0640`
    /// with its group when the directory is shared, else `0600`.
    ///
    /// # Errors
    ///
    /// `WORKDIR_RECOVERY_REQUIRED` — with reason `Present` when creating and
    /// a guard exists, `ForeignTask` when updating another task's guard,
    /// `Persist` when `active/` is missing or unsafe, the record is larger
    /// than 64 KiB, or any write step fails.
    pub fn publish_guard(&self, record: &GuardRecord, write: GuardWrite) -> Result<(), LeaseError> {
        let persist =
            |source| LeaseError::recovery(self.id.label(), RecoveryReason::Persist, source);
        let bytes = record
            .encode(&self.id)
            .map_err(|err| persist(Some(io::Error::other(err))))?;
        if bytes.len() > MAX_GUARD_BYTES {
            return Err(persist(None));
        }
        let Some(active) = self.active(DirAccess::Read, RecoveryReason::Persist)? else {
            return Err(persist(None));
        };
        let meta = sys::metadata(active.as_fd()).map_err(|err| persist(Some(err)))?;
        // The same rule prepare_artifacts enforces, re-checked because the
        // directory may have been tampered with since: ours, and neither
        // group- nor world-writable.
        if meta.uid != sys::effective_uid() || meta.mode & 0o027 != 0 {
            return Err(persist(None));
        }
        let access = ArtifactAccess::of_directory(&meta);
        if write == GuardWrite::Update {
            let existing = read_guard_in(active.as_fd(), self.id.stem(), || self.id.label())?;
            if existing.is_some_and(|(_, existing)| existing.task_id != record.task_id) {
                return Err(LeaseError::recovery(
                    self.id.label(),
                    RecoveryReason::ForeignTask,
                    None,
                ));
            }
        }
        let temp = format!(
            ".{}.{}.tmp",
            self.id.stem(),
            sys::random_hex().map_err(|err| persist(Some(err)))?
        );
        let file = sys::create_new_file(active.as_fd(), &temp, access.file_mode())
            .map_err(|err| persist(Some(err)))?;
        let published = write_and_rename(
            active.as_fd(),
            file,
            &temp,
            self.id.stem(),
            &bytes,
            access,
            write,
        );
        if published.is_err() {
            // Best effort: after a successful rename the name is gone and
            // this fails harmlessly; a leftover is ignored by guard scans.
            let _ = sys::remove_file(active.as_fd(), &temp);
        }
        match published {
            Ok(()) => Ok(()),
            Err(err)
                if write == GuardWrite::Create && err.kind() == io::ErrorKind::AlreadyExists =>
            {
                Err(LeaseError::recovery(
                    self.id.label(),
                    RecoveryReason::Present,
                    None,
                ))
            }
            Err(err) => Err(persist(Some(err))),
        }
    }

    /// Removes this lease's recovery guard if, and only if,
    /// [`may_remove_guard`] allows it for `liveness`, and the guard belongs
    /// to `task_id`. This (with [`HeldLease::reconcile`], which calls it) is
    /// the only way this crate deletes a guard.
    ///
    /// # Errors
    ///
    /// `WORKDIR_RECOVERY_REQUIRED` — `ForeignTask` when the guard belongs to
    /// another task; `Unsafe`/`Unreadable`/`Invalid` when it cannot be
    /// validated (it stays); `Persist` when the removal itself fails.
    pub fn remove_guard(
        &self,
        task_id: &str,
        liveness: ProviderLiveness,
    ) -> Result<GuardRemoval, LeaseError> {
        let Some(active) = self.active(DirAccess::Read, RecoveryReason::Unsafe)? else {
            return Ok(GuardRemoval::Absent);
        };
        let Some((_, existing)) =
            read_guard_in(active.as_fd(), self.id.stem(), || self.id.label())?
        else {
            return Ok(GuardRemoval::Absent);
        };
        if existing.task_id != task_id {
            return Err(LeaseError::recovery(
                self.id.label(),
                RecoveryReason::ForeignTask,
                None,
            ));
        }
        if !may_remove_guard(liveness) {
            return Ok(GuardRemoval::Kept { liveness });
        }
        let persist =
            |err| LeaseError::recovery(self.id.label(), RecoveryReason::Persist, Some(err));
        sys::remove_file(active.as_fd(), self.id.stem()).map_err(persist)?;
        sys::sync(active.as_fd()).map_err(persist)?;
        Ok(GuardRemoval::Removed)
    }

    /// Reconciles this lease's guard: reads it, asks `probe` about the
    /// recorded provider (e.g. [`probe_recorded_group`](crate::probe_recorded_group),
    /// or the adapter's `provider_active` through
    /// [`ProviderLiveness::from_provider_active`]) and removes the guard
    /// through [`HeldLease::remove_guard`] — so only when the provider is
    /// proven stopped. Holding the lease guarantees no live task of this
    /// process or another owns the guard meanwhile.
    ///
    /// # Errors
    ///
    /// As [`HeldLease::read_guard`] and [`HeldLease::remove_guard`]; an
    /// unreadable or invalid guard is an error and stays in place.
    pub fn reconcile(
        &self,
        probe: impl FnOnce(&GuardRecord) -> ProviderLiveness,
    ) -> Result<Reconciliation, LeaseError> {
        let Some(record) = self.read_guard()? else {
            return Ok(Reconciliation::NoGuard);
        };
        let liveness = probe(&record);
        match self.remove_guard(&record.task_id, liveness)? {
            GuardRemoval::Removed => Ok(Reconciliation::Removed { record }),
            GuardRemoval::Kept { liveness } => Ok(Reconciliation::Kept { record, liveness }),
            GuardRemoval::Absent => Ok(Reconciliation::NoGuard),
        }
    }

    /// Opens `active/`; `Ok(None)` when it does not exist. Any other failure
    /// is recovery state with `reason`.
    fn active(
        &self,
        access: DirAccess,
        reason: RecoveryReason,
    ) -> Result<Option<OwnedFd>, LeaseError> {
        open_active(self.lock_dir.as_fd(), access)
            .map_err(|err| LeaseError::recovery(self.id.label(), reason, Some(err)))
    }
}

impl Drop for HeldLease {
    fn drop(&mut self) {
        // Closing the descriptor (right after this) releases the lock even
        // if LOCK_UN fails; a destructor has nobody to report to.
        let _ = sys::unlock(self.file.as_fd());
    }
}

/// The steps of [`HeldLease::publish_guard`] after the temporary file
/// exists, so that one error path removes it.
fn write_and_rename(
    active: BorrowedFd<'_>,
    file: OwnedFd,
    temp: &str,
    stem: &str,
    bytes: &[u8],
    access: ArtifactAccess,
    write: GuardWrite,
) -> io::Result<()> {
    let mut file = File::from(file);
    file.write_all(bytes)?;
    if let ArtifactAccess::Shared { gid } = access {
        sys::set_group(file.as_fd(), gid)?;
    }
    // The creation mode went through the umask; set it exactly.
    sys::set_mode(file.as_fd(), access.file_mode())?;
    file.sync_all()?;
    drop(file);
    match write {
        GuardWrite::Create => sys::rename_noreplace(active, temp, stem)?,
        GuardWrite::Update => sys::rename_replace(active, temp, stem)?,
    }
    sys::sync(active)
}
