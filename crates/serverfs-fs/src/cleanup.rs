//! Start-up removal of temporary files abandoned by a crash.
//!
//! The files are ServerFS's own (reserved names no tool shows), so they are
//! removed from every workdir the server may delete them in, whatever the
//! workdir's policy: read-only limits what clients may change, and a
//! workdir switched to read-only after a crash would otherwise keep its
//! debris forever (issue 14, item 12).

use std::os::fd::AsFd;

use rustix::fd::BorrowedFd;
use rustix::fs::{
    AtFlags, Dir, FileType, FlockOperation, Mode, OFlags, StatVfsMountFlags, flock, fstatvfs,
    openat, unlinkat,
};

use crate::{RESERVED_TEMP_PREFIX, RelPath, Workdir};

/// What a cleanup pass found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Directories scanned.
    pub directories: u64,
    /// Abandoned temporary files removed.
    pub removed: u64,
    /// True when the scan stopped at its entry budget.
    pub truncated: bool,
    /// True when the root's filesystem is mounted read-only, so nothing
    /// could be removed and nothing was scanned.
    pub read_only_filesystem: bool,
}

impl Workdir {
    /// Removes ServerFS temporary files that no writer holds (a writer
    /// keeps its temporary file `flock`ed until it publishes or gives up),
    /// anywhere beneath the root, visiting at most `max_entries`
    /// entries. Symlinks are never followed; directories are re-opened from
    /// the root one at a time, so descriptor use stays constant. Errors on
    /// individual directories and files are skipped (a directory the
    /// server may not write keeps its files): cleanup is best effort. A
    /// root on a read-only mount is not scanned at all.
    pub fn remove_stale_temp_files(&self, max_entries: u64) -> CleanupReport {
        let mut report = CleanupReport::default();
        // A read-only bind mount (the container's read-only slots) cannot
        // lose a file: spare the walk of what may be a large tree.
        if fstatvfs(self.root_fd()).is_ok_and(|fs| fs.f_flag.contains(StatVfsMountFlags::RDONLY)) {
            report.read_only_filesystem = true;
            return report;
        }
        let mut visited = 0u64;
        let mut pending = vec![RelPath::root()];
        while let Some(dir_path) = pending.pop() {
            let Ok(dir_fd) = self.open_directory(&dir_path) else {
                continue;
            };
            let Ok(mut dir) = Dir::read_from(dir_fd.as_fd()) else {
                continue;
            };
            report.directories += 1;
            while let Some(Ok(entry)) = dir.read() {
                visited += 1;
                if visited > max_entries {
                    report.truncated = true;
                    return report;
                }
                let Ok(name) = entry.file_name().to_str() else {
                    continue;
                };
                if name == "." || name == ".." {
                    continue;
                }
                if name.starts_with(RESERVED_TEMP_PREFIX) {
                    if entry.file_type() == FileType::RegularFile
                        && remove_if_abandoned(dir_fd.as_fd(), name)
                    {
                        report.removed += 1;
                    }
                } else if entry.file_type() == FileType::Directory {
                    pending.push(dir_path.join(name));
                }
            }
        }
        report
    }
}

/// Removes the temporary file `name` if no writer holds its lock. The
/// lock is taken (without waiting) and kept across the unlink, so a file
/// in use by a live ServerFS — in this process or any other, in any PID
/// namespace — is never removed.
fn remove_if_abandoned(dir: BorrowedFd<'_>, name: &str) -> bool {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let Ok(fd) = openat(dir, name, flags, Mode::empty()) else {
        return false;
    };
    if flock(&fd, FlockOperation::NonBlockingLockExclusive).is_err() {
        return false; // a live writer holds it
    }
    unlinkat(dir, name, AtFlags::empty()).is_ok()
}
