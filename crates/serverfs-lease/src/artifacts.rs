//! The lock directory and its artifacts, created by the owner (the Bridge)
//! before it serves (spec-agent-bridge.md §8.2, §8.4):
//!
//! ```text
//! <lock_dir>/                 0700 private | 0750 shared (group = shared gid)
//! <lock_dir>/<stem>.lock      0600 private | 0640 shared — the flock target
//! <lock_dir>/active/          same rules as <lock_dir>
//! <lock_dir>/active/<stem>    recovery guard, present only between a
//!                             workspace-write submit and a proven stop
//! ```
//!
//! The MCP server never creates anything here; it opens existing lock files
//! read-only.

use std::fs::DirBuilder;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use crate::error::{ArtifactProblem, LeaseError};
use crate::identity::LeaseId;
use crate::sys::{self, DirAccess, Kind, Meta, OpenFailure};

/// Name of the recovery-guard directory inside the lock directory.
pub(crate) const ACTIVE_DIR: &str = "active";

const LOCK_DIR_SUBJECT: &str = "the lock directory";
const ACTIVE_DIR_SUBJECT: &str = "the recovery guard directory";

/// Who may use the lease artifacts besides their owner.
///
/// The production Linux shape always has a shared group (the measured peer
/// gid of the MCP process); a single-user development setup may keep
/// everything private.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArtifactAccess {
    /// Owner only: directories `0700`, files `0600`.
    Private,
    /// Owner plus one group that may read and lock: directories `0750`,
    /// files `0640`, group set to `gid`.
    Shared {
        /// The group of the reader (the MCP server process).
        gid: u32,
    },
}

impl ArtifactAccess {
    /// Mode of the lock directory and of `active/`.
    pub fn dir_mode(self) -> u32 {
        match self {
            ArtifactAccess::Private => 0o700,
            ArtifactAccess::Shared { .. } => 0o750,
        }
    }

    /// Mode of lock files and guard files.
    pub fn file_mode(self) -> u32 {
        match self {
            ArtifactAccess::Private => 0o600,
            ArtifactAccess::Shared { .. } => 0o640,
        }
    }

    /// Bits an existing directory must not have (spec §8.2: private refuses
    /// any group/other bit; shared refuses group-write and every world bit).
    pub fn forbidden_dir_bits(self) -> u32 {
        match self {
            ArtifactAccess::Private => 0o077,
            ArtifactAccess::Shared { .. } => 0o027,
        }
    }

    fn gid(self) -> Option<u32> {
        match self {
            ArtifactAccess::Private => None,
            ArtifactAccess::Shared { gid } => Some(gid),
        }
    }

    /// The access an existing `active/` directory was prepared with: shared
    /// with its group if it grants the group anything, else private. Guard
    /// files inherit it, so publishing needs no configuration.
    pub(crate) fn of_directory(meta: &Meta) -> ArtifactAccess {
        if meta.mode & 0o070 == 0 {
            ArtifactAccess::Private
        } else {
            ArtifactAccess::Shared { gid: meta.gid }
        }
    }
}

/// Creates (or checks) the lock directory, its `active/` directory and the
/// lock file of every id in `ids`. Idempotent: preparing twice changes
/// nothing.
///
/// Missing parents of `lock_dir` are created with the directory mode. A
/// directory this call creates gets its exact mode (and group) set through
/// its own descriptor, so the umask cannot narrow it; an existing directory
/// is only checked and, when too permissive, refused — never repaired. Lock
/// files are opened (created if absent) without following symlinks and set
/// to the file mode and group, as spec §8.2 requires.
///
/// The spec's Bridge also pre-creates all sixteen `01.lock`..`16.lock`; pass
/// [`LeaseId::legacy_slots`] among `ids` to interoperate with a legacy MCP
/// container.
///
/// # Security
///
/// `lock_dir` itself and `active/` must not be symlinks and must be owned by
/// the effective user; every artifact is opened beneath the lock
/// directory's descriptor with `O_NOFOLLOW`, so a planted symlink is refused
/// rather than followed.
///
/// # Errors
///
/// `LOCK_PATH_UNSAFE` when `lock_dir` is not absolute, a directory or
/// artifact is a symlink, of the wrong type, owned by someone else or too
/// permissive, or any creation step fails.
pub fn prepare_artifacts(
    lock_dir: &Path,
    access: ArtifactAccess,
    ids: &[LeaseId],
) -> Result<(), LeaseError> {
    let dir_fail =
        |problem, source| LeaseError::unsafe_path(LOCK_DIR_SUBJECT.to_owned(), problem, source);
    let (Some(parent), Some(_)) = (lock_dir.parent(), lock_dir.file_name()) else {
        return Err(dir_fail(ArtifactProblem::NotAbsolute, None));
    };
    if !lock_dir.is_absolute() {
        return Err(dir_fail(ArtifactProblem::NotAbsolute, None));
    }
    DirBuilder::new()
        .recursive(true)
        .mode(access.dir_mode())
        .create(parent)
        .map_err(|err| dir_fail(ArtifactProblem::Io, Some(err)))?;
    let created = match DirBuilder::new().mode(access.dir_mode()).create(lock_dir) {
        Ok(()) => true,
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => false,
        Err(err) => return Err(dir_fail(ArtifactProblem::Io, Some(err))),
    };
    let lock_fd = sys::open_dir(lock_dir, DirAccess::Read).map_err(|err| {
        let problem = match sys::classify(&err) {
            // O_DIRECTORY | O_NOFOLLOW reports a final symlink as ENOTDIR.
            OpenFailure::NotDirectory => match std::fs::symlink_metadata(lock_dir) {
                Ok(meta) if meta.file_type().is_symlink() => ArtifactProblem::Symlink,
                _ => ArtifactProblem::NotDirectory,
            },
            OpenFailure::Symlink => ArtifactProblem::Symlink,
            OpenFailure::Missing => ArtifactProblem::Missing,
            OpenFailure::IsDirectory | OpenFailure::Other => ArtifactProblem::Io,
        };
        dir_fail(problem, Some(err))
    })?;
    settle_dir(lock_fd.as_fd(), created, access, LOCK_DIR_SUBJECT)?;

    let active_fd = ensure_subdir(lock_fd.as_fd(), ACTIVE_DIR, access, ACTIVE_DIR_SUBJECT)?;

    for id in ids {
        prepare_lock_file(lock_fd.as_fd(), id, access)?;
    }
    // Make the created names durable: a lease artifact that vanishes after
    // a power cut would turn every reader into AGENT_LOCK_UNAVAILABLE.
    for fd in [&active_fd, &lock_fd] {
        sys::sync(fd.as_fd()).map_err(|err| dir_fail(ArtifactProblem::Io, Some(err)))?;
    }
    Ok(())
}

/// Creates `name` beneath `parent` if needed, opens it without following a
/// symlink and settles its owner, mode and group.
fn ensure_subdir(
    parent: BorrowedFd<'_>,
    name: &str,
    access: ArtifactAccess,
    subject: &str,
) -> Result<OwnedFd, LeaseError> {
    let fail = |problem, source| LeaseError::unsafe_path(subject.to_owned(), problem, source);
    let created = sys::make_dir(parent, name, access.dir_mode())
        .map_err(|err| fail(ArtifactProblem::Io, Some(err)))?;
    let fd = sys::open_subdir(parent, name, DirAccess::Read).map_err(|err| {
        let problem = match sys::classify(&err) {
            OpenFailure::NotDirectory | OpenFailure::Symlink => match sys::lstat_at(parent, name) {
                Ok(Some(Meta {
                    kind: Kind::Symlink,
                    ..
                })) => ArtifactProblem::Symlink,
                _ => ArtifactProblem::NotDirectory,
            },
            OpenFailure::Missing => ArtifactProblem::Missing,
            OpenFailure::IsDirectory | OpenFailure::Other => ArtifactProblem::Io,
        };
        fail(problem, Some(err))
    })?;
    settle_dir(fd.as_fd(), created, access, subject)?;
    Ok(fd)
}

/// Checks an opened directory: ours, and — if it existed before — no more
/// permissive than `access` allows. A directory this process just created
/// gets its exact mode (the umask may have removed the group bits a shared
/// reader needs); for a shared setup the group is set either way, as spec
/// §8.2 requires.
fn settle_dir(
    fd: BorrowedFd<'_>,
    created: bool,
    access: ArtifactAccess,
    subject: &str,
) -> Result<(), LeaseError> {
    let fail = |problem, source| LeaseError::unsafe_path(subject.to_owned(), problem, source);
    let meta = sys::metadata(fd).map_err(|err| fail(ArtifactProblem::Io, Some(err)))?;
    if meta.kind != Kind::Directory {
        return Err(fail(ArtifactProblem::NotDirectory, None));
    }
    if meta.uid != sys::effective_uid() {
        return Err(fail(ArtifactProblem::WrongOwner, None));
    }
    if created {
        sys::set_mode(fd, access.dir_mode()).map_err(|err| fail(ArtifactProblem::Io, Some(err)))?;
    } else if meta.mode & access.forbidden_dir_bits() != 0 {
        return Err(fail(ArtifactProblem::PermissiveMode, None));
    }
    if let Some(gid) = access.gid().filter(|gid| *gid != meta.gid) {
        sys::set_group(fd, gid).map_err(|err| fail(ArtifactProblem::Io, Some(err)))?;
    }
    Ok(())
}

fn prepare_lock_file(
    lock_dir: BorrowedFd<'_>,
    id: &LeaseId,
    access: ArtifactAccess,
) -> Result<(), LeaseError> {
    let fail = |problem, source| LeaseError::unsafe_path(id.label(), problem, source);
    let fd = sys::open_or_create_file(lock_dir, &id.lock_file_name(), access.file_mode()).map_err(
        |err| {
            let problem = match sys::classify(&err) {
                OpenFailure::Symlink => ArtifactProblem::Symlink,
                OpenFailure::Missing => ArtifactProblem::Missing,
                OpenFailure::IsDirectory => ArtifactProblem::NotRegular,
                OpenFailure::NotDirectory | OpenFailure::Other => ArtifactProblem::Io,
            };
            fail(problem, Some(err))
        },
    )?;
    let meta = sys::metadata(fd.as_fd()).map_err(|err| fail(ArtifactProblem::Io, Some(err)))?;
    if meta.kind != Kind::Regular {
        return Err(fail(ArtifactProblem::NotRegular, None));
    }
    if meta.uid != sys::effective_uid() {
        return Err(fail(ArtifactProblem::WrongOwner, None));
    }
    if let Some(gid) = access.gid().filter(|gid| *gid != meta.gid) {
        sys::set_group(fd.as_fd(), gid).map_err(|err| fail(ArtifactProblem::Io, Some(err)))?;
    }
    if meta.mode != access.file_mode() {
        sys::set_mode(fd.as_fd(), access.file_mode())
            .map_err(|err| fail(ArtifactProblem::Io, Some(err)))?;
    }
    Ok(())
}
