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

use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, FileType, statat};
use rustix::io::Errno;

use crate::FsError;

/// Classifies an `ENOTDIR` met while opening `name` beneath `dir` as a
/// directory: Linux reports a symlink opened with `O_DIRECTORY |
/// O_NOFOLLOW` as `ENOTDIR`, so a supplementary no-follow stat tells a
/// symlink (refused as such) from a plain non-directory.
pub(crate) fn classify_not_dir(dir: BorrowedFd<'_>, name: &str) -> FsError {
    match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => FsError::Symlink,
        Ok(_) => FsError::NotADirectory,
        Err(errno) => FsError::from_errno(errno),
    }
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
