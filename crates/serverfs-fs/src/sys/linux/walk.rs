//! Resolution one component at a time with `openat(2)` and `O_NOFOLLOW`.
//!
//! Each step opens the next name relative to the previous step's
//! descriptor, so the kernel never re-resolves a caller-derived path
//! string. Components are plain names (never `.`, `..` or containing `/`;
//! `RelPath` guarantees it), so no step can climb out. At most two
//! descriptors are open at any time.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, openat};

use crate::FsError;

/// Opens the directory at `components` beneath `root` as an `O_PATH`
/// descriptor.
pub(crate) fn open_dir(root: BorrowedFd<'_>, components: &[String]) -> Result<OwnedFd, FsError> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut current = openat(root, ".", flags, Mode::empty()).map_err(FsError::from_errno)?;
    for name in components {
        current = super::open_dir_component(current.as_fd(), name, OFlags::PATH)?;
    }
    Ok(current)
}
