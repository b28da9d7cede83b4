//! The portable entry point for "open this directory beneath the root".

use rustix::fd::{BorrowedFd, OwnedFd};

use crate::FsError;
use crate::sys::linux;

/// How directory components are resolved beneath a workdir root.
///
/// Both strategies refuse symlinks in every component and can never leave
/// the root; they differ only in which kernel interface enforces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resolver {
    /// `openat2` where the kernel offers it, the walker otherwise.
    #[default]
    Auto,
    /// The component-by-component `O_NOFOLLOW` walker only. Selectable so
    /// that tests (and operators on odd kernels) exercise the fallback.
    Walk,
}

impl Resolver {
    /// Opens the directory made of `components` beneath `root` as an
    /// `O_PATH` descriptor (usable as the base of further `*at` calls).
    ///
    /// # Security
    ///
    /// Never resolves outside `root`; a symlink in any component is
    /// refused with `SYMLINK_NOT_ALLOWED`.
    pub(crate) fn open_dir(
        self,
        root: BorrowedFd<'_>,
        components: &[String],
    ) -> Result<OwnedFd, FsError> {
        let fd = match self {
            Resolver::Auto if !components.is_empty() => {
                match linux::openat2::open_dir(root, &components.join("/"))? {
                    Some(fd) => fd,
                    None => linux::walk::open_dir(root, components)?,
                }
            }
            Resolver::Auto | Resolver::Walk => linux::walk::open_dir(root, components)?,
        };
        linux::debug_assert_beneath(root, &fd);
        Ok(fd)
    }
}

/// True when this kernel resolves with `openat2` (so [`Resolver::Auto`]
/// exercises it rather than the walker).
pub fn openat2_available() -> bool {
    let Ok(dir) = rustix::fs::open(
        ".",
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
        rustix::fs::Mode::empty(),
    ) else {
        return false;
    };
    matches!(
        linux::openat2::open_dir(rustix::fd::AsFd::as_fd(&dir), "."),
        Ok(Some(_))
    )
}
