//! Start-up removal of temporary files abandoned by a crash.

use std::os::fd::AsFd;

use rustix::fs::{AtFlags, Dir, FileType, unlinkat};

use crate::publish::temp_owner_pid;
use crate::{RelPath, Workdir};

/// What a cleanup pass found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Directories scanned.
    pub directories: u64,
    /// Abandoned temporary files removed.
    pub removed: u64,
    /// True when the scan stopped at its entry budget.
    pub truncated: bool,
}

impl Workdir {
    /// Removes ServerFS temporary files whose creating process no longer
    /// exists, anywhere beneath the root, visiting at most `max_entries`
    /// entries. Symlinks are never followed; directories are re-opened from
    /// the root one at a time, so descriptor use stays constant. Errors on
    /// individual directories are skipped: cleanup is best effort.
    pub fn remove_stale_temp_files(&self, max_entries: u64) -> CleanupReport {
        let mut report = CleanupReport::default();
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
                if let Some(pid) = temp_owner_pid(name) {
                    if entry.file_type() == FileType::RegularFile
                        && !process_alive(pid)
                        && unlinkat(dir_fd.as_fd(), name, AtFlags::empty()).is_ok()
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

/// True when a process with this id exists (our own process counts: a
/// temporary file of this very process is never stale).
fn process_alive(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}
