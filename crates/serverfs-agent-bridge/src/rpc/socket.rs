//! Claiming the socket path (spec-agent-bridge.md §2.1), made race-free by
//! a lock file.
//!
//! # Order of operations
//!
//! 1. The parent directory: missing components are created (0750), the
//!    parent is opened `O_NOFOLLOW | O_DIRECTORY` and checked through that
//!    descriptor: owned by us; when we created it, set to exactly 0750;
//!    when it already existed, neither group-writable nor accessible to
//!    others at all (`mode & 0o027 == 0`, so 0750 or stricter). With a
//!    configured gid its group becomes that gid. Everything after this
//!    step is relative to the descriptor, so the checked directory is the
//!    one used.
//! 2. The lock: `<socket name>.lock` in that directory, opened
//!    `O_NOFOLLOW`, a regular file of ours, `flock`ed exclusively without
//!    waiting. If another process holds it, a Bridge is running there and
//!    we refuse with `SOCKET_PATH_IN_USE` instead of taking its socket.
//!    The lock file is never deleted: unlinking a lock file lets two
//!    processes hold "the" lock on two different inodes.
//! 3. A leftover at the socket path: a symlink or non-socket is never
//!    touched (`SOCKET_PATH_IN_USE`), nor a socket of another user. A
//!    socket of ours is stale since we hold the lock, unless something
//!    still answers on it (a Bridge that predates the lock file): it is
//!    probed with a non-blocking `connect`, and only `ECONNREFUSED` or
//!    `ENOENT` lets it be unlinked, after re-checking it is the same inode.
//! 4. Bind, confirm the new socket sits in the checked directory, set its
//!    group (when configured) and mode 0660.
//!
//! # Why chmod after bind, not umask
//!
//! `bind(2)` creates the socket file with `0777 & !umask`, and `fchmod` on
//! a socket descriptor changes the socket inode, not the file; the file is
//! changed with `fchmodat` relative to the checked directory. Setting the
//! umask around `bind` would be process-wide and race with every other
//! thread creating files. Between `bind` and `fchmodat` the file may be
//! briefly more permissive, which is harmless: the directory is 0750 and
//! ours, so only we and our group can reach it; every connection is
//! checked with `SO_PEERCRED` anyway; and the lock keeps any other Bridge
//! from touching the path meanwhile.
//!
//! # Clean-up
//!
//! On drop (and at shutdown) the socket file is unlinked only if it is still
//! the socket we bound (same device and inode), then the lock is released
//! by closing its descriptor. A crash skips the unlink; the next Bridge
//! finds the stale socket and recovers it as in step 3.
//!
//! The socket path is never logged nor put into an error message.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixListener;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Gid, Mode, OFlags, Stat};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

use super::error::{DirectoryProblem, PathProblem, RpcError};
use super::peer::PeerPolicy;
use crate::platform;

/// The mode of a socket directory we create.
pub const SOCKET_DIRECTORY_MODE: u32 = 0o750;

/// Bits an existing socket directory must not have: group write, and any
/// access by others.
pub const SOCKET_DIRECTORY_FORBIDDEN_BITS: u32 = 0o027;

/// The mode of the socket file: owner and group may connect.
const SOCKET_MODE: u32 = 0o660;

/// The mode of the lock file when we create it.
const LOCK_MODE: u32 = 0o600;

/// The suffix appended to the socket's file name to name its lock file.
const LOCK_SUFFIX: &str = ".lock";

/// A bound, not yet serving, Bridge socket that this process owns
/// exclusively.
///
/// Serve it with [`BridgeListener::serve`]. Dropping it without serving
/// removes the socket file and releases the lock.
///
/// # Security
///
/// The socket lives in a directory that is ours and closed to other users,
/// has mode 0660, and is never taken over from a running Bridge; every
/// connection is checked against the [`PeerPolicy`] before anything is read
/// from it.
#[derive(Debug)]
pub struct BridgeListener {
    pub(super) listener: UnixListener,
    pub(super) policy: PeerPolicy,
    pub(super) claim: SocketClaim,
}

impl BridgeListener {
    /// Claims `socket_path` and binds a Unix stream socket there, serving
    /// only peers that `allowed` permits.
    ///
    /// Must be called with the privileges the Bridge will run with; it
    /// needs no async runtime.
    ///
    /// # Errors
    ///
    /// - `BRIDGE_CONFIG_INVALID`: the path is relative or names no file;
    /// - `SOCKET_PATH_TOO_LONG`: it does not fit a socket address;
    /// - `SOCKET_DIRECTORY_UNSAFE`: its directory (or the first existing
    ///   ancestor of a missing one) is a symlink or not a directory, belongs
    ///   to another user, is group-writable or open to others, cannot be
    ///   created, or cannot be given the configured group;
    /// - `SOCKET_PATH_IN_USE`: another Bridge holds the lock
    ///   ([`RpcError::AlreadyRunning`]), or the path holds something that is
    ///   not our stale socket, or binding fails.
    pub fn bind(
        socket_path: impl AsRef<Path>,
        allowed: PeerPolicy,
    ) -> Result<BridgeListener, RpcError> {
        let path = socket_path.as_ref();
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(RpcError::InvalidPath);
        };
        if !path.is_absolute() {
            return Err(RpcError::InvalidPath);
        }
        if !platform::fits_socket_address(path) {
            return Err(RpcError::PathTooLong);
        }
        let uid = platform::effective_uid();
        let gid = allowed.allowed_gid().map(Gid::from_raw);
        let dir = prepare_directory(parent, uid, gid)?;
        let lock = claim_lock(&dir, name, uid)?;
        clear_stale_socket(&dir, name, path, uid)?;

        let listener = UnixListener::bind(path)
            .map_err(|error| RpcError::in_use(PathProblem::BindFailed, Some(error)))?;
        let mut claim = SocketClaim {
            dir,
            name: name.to_owned(),
            bound: None,
            _lock: lock,
        };
        // The bind went through the path; make sure it landed in the
        // directory we checked (an ancestor could have been swapped).
        let bound = match rustix::fs::statat(&claim.dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if is_type(&stat, FileType::Socket) && stat.st_uid == uid => stat,
            Ok(_) => return Err(RpcError::in_use(PathProblem::Changed, None)),
            Err(errno) => return Err(RpcError::in_use(PathProblem::Changed, Some(errno.into()))),
        };
        claim.bound = Some(bound);
        if let Some(gid) = gid {
            rustix::fs::chownat(&claim.dir, name, None, Some(gid), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|errno| {
                    RpcError::directory(DirectoryProblem::GroupNotSet, Some(errno.into()))
                })?;
        }
        // fchmodat follows a final symlink, but the name was just checked
        // to be our socket, in a directory only we can write to.
        rustix::fs::chmodat(
            &claim.dir,
            name,
            Mode::from_raw_mode(SOCKET_MODE),
            AtFlags::empty(),
        )
        .map_err(|errno| RpcError::in_use(PathProblem::BindFailed, Some(errno.into())))?;
        listener
            .set_nonblocking(true)
            .map_err(|error| RpcError::in_use(PathProblem::BindFailed, Some(error)))?;
        Ok(BridgeListener {
            listener,
            policy: allowed,
            claim,
        })
    }

    /// The peers this listener serves.
    pub fn policy(&self) -> PeerPolicy {
        self.policy
    }
}

/// Our hold on the socket path: the checked directory, the socket we bound
/// in it, and the lock.
#[derive(Debug)]
pub(super) struct SocketClaim {
    dir: OwnedFd,
    name: OsString,
    /// The socket file we bound, until it is removed.
    bound: Option<Stat>,
    /// Closed after `Drop::drop` has removed the socket, releasing the
    /// `flock` only once the path is clean.
    _lock: OwnedFd,
}

impl SocketClaim {
    /// Unlinks the socket file if it is still the one we bound; at most
    /// once.
    pub(super) fn remove_socket(&mut self) {
        let Some(bound) = self.bound.take() else {
            return;
        };
        match rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(now) if is_type(&now, FileType::Socket) && same_file(&now, &bound) => {
                if let Err(errno) = rustix::fs::unlinkat(&self.dir, &self.name, AtFlags::empty()) {
                    tracing::warn!(error = %errno, "could not remove the Bridge socket file");
                }
            }
            Ok(_) => tracing::warn!("the Bridge socket file was replaced; leaving it in place"),
            Err(Errno::NOENT) => {}
            Err(errno) => {
                tracing::warn!(error = %errno, "could not inspect the Bridge socket file");
            }
        }
    }
}

impl Drop for SocketClaim {
    fn drop(&mut self) {
        self.remove_socket();
    }
}

/// Step 1: the parent directory, created or checked, opened without
/// following a final symlink.
fn prepare_directory(parent: &Path, uid: u32, gid: Option<Gid>) -> Result<OwnedFd, RpcError> {
    let unusable =
        |errno: Errno| RpcError::directory(DirectoryProblem::Unusable, Some(errno.into()));
    // Walk up to the first existing ancestor; it must be a real directory.
    let mut missing = Vec::new();
    let mut cursor = parent;
    loop {
        match rustix::fs::lstat(cursor) {
            Ok(stat) if is_type(&stat, FileType::Directory) => break,
            Ok(_) => return Err(RpcError::directory(DirectoryProblem::NotADirectory, None)),
            Err(Errno::NOENT) => {
                missing.push(cursor);
                cursor = cursor
                    .parent()
                    .ok_or_else(|| RpcError::directory(DirectoryProblem::Unusable, None))?;
            }
            Err(errno) => return Err(unusable(errno)),
        }
    }
    let mut created = false;
    for (depth, dir) in missing.iter().enumerate().rev() {
        match rustix::fs::mkdir(*dir, Mode::from_raw_mode(SOCKET_DIRECTORY_MODE)) {
            Ok(()) => created = depth == 0,
            // Created concurrently: checked below like any existing one.
            Err(Errno::EXIST) => created = false,
            Err(errno) => return Err(unusable(errno)),
        }
    }

    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = rustix::fs::open(parent, flags, Mode::empty()).map_err(|errno| match errno {
        Errno::LOOP | Errno::NOTDIR => {
            RpcError::directory(DirectoryProblem::NotADirectory, Some(errno.into()))
        }
        errno => unusable(errno),
    })?;
    let stat = rustix::fs::fstat(&dir).map_err(unusable)?;
    if stat.st_uid != uid {
        return Err(RpcError::directory(DirectoryProblem::NotOwned, None));
    }
    if created {
        // mkdir applied the umask; set the exact mode.
        rustix::fs::fchmod(&dir, Mode::from_raw_mode(SOCKET_DIRECTORY_MODE)).map_err(unusable)?;
    } else if stat.st_mode & SOCKET_DIRECTORY_FORBIDDEN_BITS != 0 {
        return Err(RpcError::directory(DirectoryProblem::TooPermissive, None));
    }
    if let Some(gid) = gid
        && stat.st_gid != gid.as_raw()
    {
        rustix::fs::fchown(&dir, None, Some(gid)).map_err(|errno| {
            RpcError::directory(DirectoryProblem::GroupNotSet, Some(errno.into()))
        })?;
    }
    Ok(dir)
}

/// Step 2: the exclusive lock next to the socket.
fn claim_lock(dir: &OwnedFd, name: &OsStr, uid: u32) -> Result<OwnedFd, RpcError> {
    let unusable = |error: io::Error| RpcError::in_use(PathProblem::LockUnusable, Some(error));
    let mut lock_name = name.to_owned();
    lock_name.push(LOCK_SUFFIX);
    // NONBLOCK: should a FIFO sit there, opening it must not hang start-up.
    let flags = OFlags::RDWR
        | OFlags::CREATE
        | OFlags::NOFOLLOW
        | OFlags::CLOEXEC
        | OFlags::NOCTTY
        | OFlags::NONBLOCK;
    let lock = rustix::fs::openat(dir, &lock_name, flags, Mode::from_raw_mode(LOCK_MODE))
        .map_err(|errno| unusable(errno.into()))?;
    let stat = rustix::fs::fstat(&lock).map_err(|errno| unusable(errno.into()))?;
    if !is_type(&stat, FileType::RegularFile) || stat.st_uid != uid {
        return Err(RpcError::in_use(PathProblem::LockUnusable, None));
    }
    match platform::try_lock_exclusive(&lock) {
        Ok(true) => Ok(lock),
        Ok(false) => Err(RpcError::AlreadyRunning),
        Err(error) => Err(unusable(error)),
    }
}

/// Step 3: remove our stale socket, refuse anything else.
fn clear_stale_socket(dir: &OwnedFd, name: &OsStr, path: &Path, uid: u32) -> Result<(), RpcError> {
    let found = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(()),
        Err(errno) => {
            return Err(RpcError::in_use(
                PathProblem::NotASocket,
                Some(errno.into()),
            ));
        }
    };
    if !is_type(&found, FileType::Socket) {
        return Err(RpcError::in_use(PathProblem::NotASocket, None));
    }
    if found.st_uid != uid {
        return Err(RpcError::in_use(PathProblem::ForeignOwner, None));
    }
    match probe_listener(path) {
        Ok(false) => {}
        Ok(true) => return Err(RpcError::in_use(PathProblem::Live, None)),
        Err(error) => return Err(RpcError::in_use(PathProblem::Live, Some(error))),
    }
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(again) if is_type(&again, FileType::Socket) && same_file(&again, &found) => {}
        Ok(_) => return Err(RpcError::in_use(PathProblem::Changed, None)),
        Err(Errno::NOENT) => return Ok(()),
        Err(errno) => return Err(RpcError::in_use(PathProblem::Changed, Some(errno.into()))),
    }
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(errno) => Err(RpcError::in_use(PathProblem::Changed, Some(errno.into()))),
    }
}

/// Whether something accepts connections on the socket at `path`.
///
/// The probe socket is non-blocking, so a listener with a full backlog
/// (`EAGAIN`) counts as live instead of stalling start-up; only
/// `ECONNREFUSED` (no listener) and `ENOENT` (already gone) mean stale.
fn probe_listener(path: &Path) -> io::Result<bool> {
    let probe = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )?;
    let address = SocketAddrUnix::new(path)?;
    match rustix::net::connect(&probe, &address) {
        Ok(()) | Err(Errno::AGAIN) => Ok(true),
        Err(Errno::CONNREFUSED | Errno::NOENT) => Ok(false),
        Err(errno) => Err(errno.into()),
    }
}

fn is_type(stat: &Stat, file_type: FileType) -> bool {
    FileType::from_raw_mode(stat.st_mode) == file_type
}

fn same_file(a: &Stat, b: &Stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}
