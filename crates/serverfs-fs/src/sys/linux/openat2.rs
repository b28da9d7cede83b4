//! Resolution with `openat2(2)`.
//!
//! See <https://man7.org/linux/man-pages/man2/openat2.2.html>. Needs
//! Linux 5.6; the caller falls back to [`super::walk`] when this returns
//! `None`.

use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::FsError;

/// Set once the kernel answered `ENOSYS`: later calls go straight to the
/// walker instead of paying for a failing syscall each time.
static MISSING: AtomicBool = AtomicBool::new(false);

/// `openat2` returns `EAGAIN` when a concurrent rename anywhere on the
/// system races the lookup (`RESOLVE_BENEATH` cannot then prove the result
/// is beneath the root). Retry a few times, then let the caller fall back,
/// so a busy host cannot stall a request.
const EAGAIN_RETRIES: usize = 3;

/// Opens the directory `path` (components joined by `/`, already
/// normalized) beneath `root` as an `O_PATH` descriptor.
///
/// Returns `Ok(None)` when `openat2` cannot be used here (missing, filtered
/// by seccomp, or starved by renames) or cannot name the failing component
/// (`ENOTDIR`); the caller then uses the walker.
pub(crate) fn open_dir(root: BorrowedFd<'_>, path: &str) -> Result<Option<OwnedFd>, FsError> {
    if MISSING.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..EAGAIN_RETRIES {
        match rustix::fs::openat2(root, path, flags, Mode::empty(), resolve) {
            Ok(fd) => return Ok(Some(fd)),
            Err(Errno::AGAIN) | Err(Errno::INTR) => continue,
            Err(Errno::NOSYS) => {
                MISSING.store(true, Ordering::Relaxed);
                return Ok(None);
            }
            Err(errno) if super::openat2_unavailable(errno) => return Ok(None),
            // RESOLVE_NO_SYMLINKS makes an intermediate symlink ELOOP, but
            // O_NOFOLLOW exempts the final one, which then fails O_DIRECTORY
            // with ENOTDIR like a plain file would. Which component it was
            // is known only to the walker, so let it classify.
            Err(Errno::NOTDIR) => return Ok(None),
            Err(errno) => return Err(FsError::from_errno(errno)),
        }
    }
    Ok(None)
}
