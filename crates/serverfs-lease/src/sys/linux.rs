//! Linux lease primitives: `flock(2)` on pre-created artifacts, descriptor-
//! relative (`openat(2)` family) artifact handling, and process-group
//! probing with `kill(2)`.
//!
//! # `flock(2)` semantics this crate relies on
//!
//! - A lock belongs to the **open file description**, not to the process or
//!   the path: two descriptors from two `open` calls conflict even inside one
//!   process (the Bridge relies on that to refuse a second workspace-write
//!   task on a workdir), while `dup`'d or inherited descriptors share the
//!   lock. Every descriptor here is `O_CLOEXEC`, so a spawned provider never
//!   inherits (and so never prolongs) a lease.
//! - The lock is released by `LOCK_UN` or when the last descriptor of the
//!   description is closed — including when the holder crashes or is
//!   killed, which is why the separate, persistent recovery guard exists.
//! - `flock` does not care about the access mode: `LOCK_EX` on an
//!   `O_RDONLY` descriptor works, so the MCP reader can lock through a
//!   read-only bind mount of the lock directory; the lock is on the inode,
//!   which both mounts share.
//! - `LOCK_NB` turns contention into `EWOULDBLOCK` instead of sleeping; no
//!   caller of this crate ever waits for a lease.
//! - NFS: since Linux 2.6.12 `flock` on NFS is emulated with whole-file
//!   `fcntl` byte-range locks, which are visible to other clients but need a
//!   descriptor open for writing for `LOCK_EX` (a read-only reader gets
//!   `EBADF`) and can be lost on server reboot. Keep the lock directory on a
//!   local filesystem (`/run` or the user's runtime directory); anything
//!   unexpected fails closed.
//!
//! Minimum kernel: `renameat2(RENAME_NOREPLACE)` needs Linux 3.15 and
//! filesystem support; where it reports `EINVAL` the create-only guard
//! publication falls back to `linkat(2)` + `unlinkat(2)`, which is just as
//! exclusive. Everything else is POSIX.
//!
//! No `unsafe` here: every call goes through rustix's safe wrappers.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{
    AtFlags, FileType, FlockOperation, Gid, Mode, OFlags, RenameFlags, fchmod, fchown, flock,
    fstat, fsync, linkat, mkdirat, openat, renameat, renameat_with, statat, unlinkat,
};
use rustix::io::Errno;
use rustix::process::{Pid, geteuid, test_kill_process_group};
use rustix::rand::{GetRandomFlags, getrandom};

use super::{DirAccess, FileAccess, Kind, LockAttempt, Meta, OpenFailure, ProcessGroup};

/// Classifies an OS error from one of the functions below.
pub(crate) fn classify(err: &io::Error) -> OpenFailure {
    match Errno::from_io_error(err) {
        Some(Errno::NOENT) => OpenFailure::Missing,
        Some(Errno::LOOP) => OpenFailure::Symlink,
        Some(Errno::NOTDIR) => OpenFailure::NotDirectory,
        Some(Errno::ISDIR) => OpenFailure::IsDirectory,
        _ => OpenFailure::Other,
    }
}

fn dir_flags(access: DirAccess) -> OFlags {
    let base = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match access {
        // O_PATH needs no read permission on the directory itself: the MCP
        // reader only looks names up in it.
        DirAccess::Lookup => base | OFlags::PATH,
        // fsync(2) and readdir need a real descriptor.
        DirAccess::Read => base | OFlags::RDONLY,
    }
}

/// Opens an absolute directory path without following a symlink in its
/// final component (`O_DIRECTORY | O_NOFOLLOW`). Linux reports a final
/// symlink as `ENOTDIR` here; callers that must tell the two apart
/// [`lstat_at`] afterwards.
pub(crate) fn open_dir(path: &Path, access: DirAccess) -> io::Result<OwnedFd> {
    Ok(openat(
        rustix::fs::CWD,
        path,
        dir_flags(access),
        Mode::empty(),
    )?)
}

/// Opens the directory `name` beneath `dir`, never following a symlink.
pub(crate) fn open_subdir(
    dir: BorrowedFd<'_>,
    name: &str,
    access: DirAccess,
) -> io::Result<OwnedFd> {
    Ok(openat(dir, name, dir_flags(access), Mode::empty())?)
}

/// Creates the directory `name` beneath `dir` with `mode` (less the umask).
/// Returns whether this call created it; an existing entry of any type is
/// `Ok(false)` and must be checked by opening it.
pub(crate) fn make_dir(dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<bool> {
    match mkdirat(dir, name, Mode::from_raw_mode(mode)) {
        Ok(()) => Ok(true),
        Err(Errno::EXIST) => Ok(false),
        Err(errno) => Err(errno.into()),
    }
}

/// Opens (creating if absent, with `mode` less the umask) the regular file
/// `name` beneath `dir`, read-write. `O_NOFOLLOW` makes a symlink at `name`
/// — dangling or not — fail with `ELOOP` instead of creating or opening its
/// target; `O_NONBLOCK` keeps a planted FIFO from blocking the open.
pub(crate) fn open_or_create_file(
    dir: BorrowedFd<'_>,
    name: &str,
    mode: u32,
) -> io::Result<OwnedFd> {
    let flags = OFlags::RDWR
        | OFlags::CREATE
        | OFlags::NOFOLLOW
        | OFlags::CLOEXEC
        | OFlags::NONBLOCK
        | OFlags::NOCTTY;
    Ok(openat(dir, name, flags, Mode::from_raw_mode(mode))?)
}

/// Opens the existing file `name` beneath `dir`; never creates, never
/// follows a symlink, never blocks on a FIFO (`O_NONBLOCK` has no effect on
/// regular files).
pub(crate) fn open_existing_file(
    dir: BorrowedFd<'_>,
    name: &str,
    access: FileAccess,
) -> io::Result<OwnedFd> {
    let mode = match access {
        FileAccess::Read => OFlags::RDONLY,
        FileAccess::ReadWrite => OFlags::RDWR,
    };
    let flags = mode | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    Ok(openat(dir, name, flags, Mode::empty())?)
}

/// Exclusively creates the file `name` beneath `dir` for writing.
pub(crate) fn create_new_file(dir: BorrowedFd<'_>, name: &str, mode: u32) -> io::Result<OwnedFd> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(openat(dir, name, flags, Mode::from_raw_mode(mode))?)
}

fn meta_of(stat: &rustix::fs::Stat) -> Meta {
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Kind::Regular,
        FileType::Directory => Kind::Directory,
        FileType::Symlink => Kind::Symlink,
        FileType::Fifo
        | FileType::Socket
        | FileType::CharacterDevice
        | FileType::BlockDevice
        | FileType::Unknown => Kind::Other,
    };
    Meta {
        kind,
        mode: stat.st_mode & 0o7777,
        uid: stat.st_uid,
        gid: stat.st_gid,
    }
}

/// `fstat(2)`.
pub(crate) fn metadata(fd: BorrowedFd<'_>) -> io::Result<Meta> {
    Ok(meta_of(&fstat(fd)?))
}

/// `lstat` of `name` beneath `dir` (`fstatat(AT_SYMLINK_NOFOLLOW)`);
/// `Ok(None)` when nothing is there.
pub(crate) fn lstat_at(dir: BorrowedFd<'_>, name: &str) -> io::Result<Option<Meta>> {
    match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(meta_of(&stat))),
        Err(Errno::NOENT) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}

/// `fchmod(2)`: sets the permission bits exactly, whatever the umask was.
pub(crate) fn set_mode(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    Ok(fchmod(fd, Mode::from_raw_mode(mode))?)
}

/// `fchown(2)` of the group only.
pub(crate) fn set_group(fd: BorrowedFd<'_>, gid: u32) -> io::Result<()> {
    Ok(fchown(fd, None, Some(Gid::from_raw(gid)))?)
}

/// `flock(LOCK_EX | LOCK_NB)`.
pub(crate) fn try_lock_exclusive(fd: BorrowedFd<'_>) -> io::Result<LockAttempt> {
    match flock(fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(LockAttempt::Acquired),
        Err(Errno::WOULDBLOCK) => Ok(LockAttempt::WouldBlock),
        Err(errno) => Err(errno.into()),
    }
}

/// `flock(LOCK_UN)`. Closing the descriptor would release the lock too;
/// unlocking first makes the release independent of any descriptor a
/// caller might have duplicated.
pub(crate) fn unlock(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(flock(fd, FlockOperation::Unlock)?)
}

/// Renames `from` over `to` inside `dir` (atomic replacement).
pub(crate) fn rename_replace(dir: BorrowedFd<'_>, from: &str, to: &str) -> io::Result<()> {
    Ok(renameat(dir, from, dir, to)?)
}

/// Renames `from` to `to` inside `dir`, failing with `EEXIST` if `to`
/// exists. `renameat2(RENAME_NOREPLACE)` where the filesystem supports it;
/// otherwise (`EINVAL`) a hard link, which is equally exclusive, then
/// removal of the temporary name.
pub(crate) fn rename_noreplace(dir: BorrowedFd<'_>, from: &str, to: &str) -> io::Result<()> {
    match renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::INVAL) => {
            linkat(dir, from, dir, to, AtFlags::empty())?;
            Ok(unlinkat(dir, from, AtFlags::empty())?)
        }
        Err(errno) => Err(errno.into()),
    }
}

/// Unlinks the non-directory `name` beneath `dir`.
pub(crate) fn remove_file(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    Ok(unlinkat(dir, name, AtFlags::empty())?)
}

/// `fsync(2)`; on a directory, makes created, renamed and removed entries
/// durable.
pub(crate) fn sync(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(fsync(fd)?)
}

/// The names in directory `dir` that are valid UTF-8 (no guard name is
/// anything else), without `.` and `..`.
pub(crate) fn list_names(dir: BorrowedFd<'_>) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        if let Ok(name) = entry.file_name().to_str()
            && name != "."
            && name != ".."
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// 16 lowercase hex characters from `getrandom(2)`, for temporary names.
pub(crate) fn random_hex() -> io::Result<String> {
    let mut bytes = [0u8; 8];
    let mut filled = 0;
    while filled < bytes.len() {
        filled += getrandom(&mut bytes[filled..], GetRandomFlags::empty())?;
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The effective user id.
pub(crate) fn effective_uid() -> u32 {
    geteuid().as_raw()
}

/// Probes a process group with `kill(-pgid, 0)` (no signal is sent).
///
/// `ESRCH` proves no process of the group exists any more. Success or
/// `EPERM` proves one does (possibly a zombie not yet reaped, or an
/// unrelated group that reused the id — both read as alive, the safe
/// direction). `pgid` ≤ 1 is never probed: `kill(-1, …)` addresses every
/// process, and 0 means the caller's own group.
pub(crate) fn probe_process_group(pgid: i32) -> ProcessGroup {
    // Checked before `Pid::from_raw`, which asserts a non-negative id.
    if pgid <= 1 {
        return ProcessGroup::Unknown;
    }
    let Some(pid) = Pid::from_raw(pgid) else {
        return ProcessGroup::Unknown;
    };
    match test_kill_process_group(pid) {
        Ok(()) | Err(Errno::PERM) => ProcessGroup::Exists,
        Err(Errno::SRCH) => ProcessGroup::Gone,
        Err(_) => ProcessGroup::Unknown,
    }
}
