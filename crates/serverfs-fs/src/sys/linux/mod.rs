//! Linux resolution beneath a root descriptor.
//!
//! Two resolvers, identical in what they accept and in how they classify
//! failures:
//!
//! - [`openat2`]: one `openat2(2)` call with `RESOLVE_BENEATH |
//!   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` (Linux ≥ 5.6). The kernel
//!   itself refuses every symlink and every escape during the lookup.
//! - [`walk`]: one `openat(2)` per component with `O_NOFOLLOW | O_DIRECTORY`,
//!   each relative to the previous component's descriptor. Used where
//!   `openat2` is missing (`ENOSYS`, old kernels) or filtered by a seccomp
//!   policy (`EPERM`).

pub(crate) mod openat2;
pub(crate) mod walk;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, openat, statat};
use rustix::io::Errno;

use crate::FsError;

/// How many times an open that raced a concurrent replacement is retried
/// before the caller is told the object changed under it.
const RACE_RETRIES: usize = 3;

/// Opens `name` beneath `dir` as a directory (`O_DIRECTORY | O_NOFOLLOW`
/// plus `extra` flags), classifying failures precisely.
///
/// Linux reports a symlink opened with `O_DIRECTORY | O_NOFOLLOW` as
/// `ENOTDIR`, so a supplementary no-follow stat tells a symlink (refused as
/// such) from a plain non-directory. If that stat finds a directory, the
/// name was swapped between the two calls; the open is retried a few times
/// and then reported as `FILE_CHANGED_DURING_READ`, never misreported.
pub(crate) fn open_dir_component(
    dir: BorrowedFd<'_>,
    name: &str,
    extra: OFlags,
) -> Result<OwnedFd, FsError> {
    let flags = extra | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for _ in 0..RACE_RETRIES {
        match openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => return Ok(fd),
            Err(Errno::NOTDIR) => match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
                    FileType::Symlink => return Err(FsError::Symlink),
                    FileType::Directory => continue,
                    _ => return Err(FsError::NotADirectory),
                },
                Err(errno) => return Err(FsError::from_errno(errno)),
            },
            Err(errno) => return Err(FsError::from_errno(errno)),
        }
    }
    Err(FsError::ChangedDuringRead)
}

/// In debug builds, re-derives where `fd` lives through `/proc` and panics
/// with "sandbox escape" if it is not beneath `root`. Release builds trust
/// the kernel checks above; tests run debug builds, so every test open is
/// double-checked.
pub(crate) fn debug_assert_beneath(root: impl AsFd, fd: impl AsFd) {
    if cfg!(debug_assertions) {
        use std::os::fd::AsRawFd;
        let link = |raw: i32| std::fs::read_link(format!("/proc/self/fd/{raw}"));
        let (Ok(root_path), Ok(path)) =
            (link(root.as_fd().as_raw_fd()), link(fd.as_fd().as_raw_fd()))
        else {
            return; // no /proc: nothing to compare against
        };
        assert!(
            path.starts_with(&root_path),
            "sandbox escape: {} is not beneath {}",
            path.display(),
            root_path.display()
        );
    }
}

/// True for the errors that mean "this kernel cannot do `openat2` here".
pub(crate) fn openat2_unavailable(errno: Errno) -> bool {
    errno == Errno::NOSYS || errno == Errno::PERM
}
