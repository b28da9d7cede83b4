//! Resolution one component at a time with `openat(2)` and `O_NOFOLLOW`.
//!
//! Each step opens the next name relative to the previous step's
//! descriptor, so the kernel never re-resolves a caller-derived path
//! string. Components are plain names (never `.`, `..` or containing `/`;
//! `RelPath` guarantees it), so no step can climb out. At most two
//! descriptors are open at any time.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, openat};
use rustix::io::Errno;

use crate::FsError;

/// Opens the directory at `components` beneath `root` as an `O_PATH`
/// descriptor.
pub(crate) fn open_dir(root: BorrowedFd<'_>, components: &[String]) -> Result<OwnedFd, FsError> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut current = openat(root, ".", flags, Mode::empty()).map_err(FsError::from_errno)?;
    for name in components {
        let next = match openat(current.as_fd(), name.as_str(), flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOTDIR) => return Err(super::classify_not_dir(current.as_fd(), name)),
            Err(errno) => return Err(FsError::from_errno(errno)),
        };
        current = next;
    }
    Ok(current)
}
