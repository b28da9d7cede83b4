//! The Bridge's directories (socket, lock, state: owner, mode, free space)
//! and the lock artifact of every writable workdir (owner and mode).
//!
//! The rules are the ones the Bridge itself applies at start-up (the same
//! constants): everything private to its user, the socket directory and,
//! with `peer_gid`, the lock directory readable by one group, never
//! anything for other users.

use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use serverfs_agent_bridge::rpc::{SOCKET_DIRECTORY_FORBIDDEN_BITS, SOCKET_DIRECTORY_MODE};
use serverfs_agent_bridge::store::STATE_DIR_FORBIDDEN_BITS;
use serverfs_config::DoctorReport;

use super::super::bridge_config::BridgeConfig;

/// Below this much free space the task database and result spools may
/// fill the file system during a task.
const LOW_SPACE_BYTES: u64 = 256 * 1024 * 1024;

pub(super) fn check<W: std::io::Write>(report: &mut DoctorReport<W>, config: &BridgeConfig) {
    let agent = &config.config.agent;
    let socket_dir = agent.bridge_socket.parent().unwrap_or(Path::new("/"));
    let access = config.artifact_access();
    let dirs = [
        (
            "socket directory",
            socket_dir,
            Private {
                forbidden: SOCKET_DIRECTORY_FORBIDDEN_BITS,
                created: SOCKET_DIRECTORY_MODE,
            },
        ),
        (
            "lock directory",
            agent.lock_dir.as_path(),
            Private {
                forbidden: access.forbidden_dir_bits(),
                created: access.dir_mode(),
            },
        ),
        (
            "state directory",
            config.state_dir.as_path(),
            Private {
                forbidden: STATE_DIR_FORBIDDEN_BITS,
                created: 0o700,
            },
        ),
    ];
    for (check, dir, private) in dirs {
        check_dir(report, check, dir, private);
    }
    check_lock_artifacts(report, config);
}

/// The Bridge's rule for one of its directories: the permission bits it
/// refuses at start-up, and the mode it creates the directory with.
#[derive(Clone, Copy)]
struct Private {
    forbidden: u32,
    created: u32,
}

/// One directory: it exists (or the Bridge will create it), is ours, and
/// has none of the bits the Bridge refuses.
fn check_dir<W: std::io::Write>(
    report: &mut DoctorReport<W>,
    check: &str,
    dir: &Path,
    private: Private,
) {
    let wanted = format!("{:04o}", private.created);
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => {
            return report.warn(
                check,
                format!(
                    "{} does not exist yet; the Bridge creates it (mode {wanted}) when it starts",
                    dir.display()
                ),
            );
        }
        Err(error) => {
            return report.fail(
                check,
                format!(
                    "{} cannot be inspected ({}); make it readable by the Bridge's user",
                    dir.display(),
                    error.kind()
                ),
            );
        }
    };
    if !meta.is_dir() {
        return report.fail(
            check,
            format!(
                "{} is not a directory (a symbolic link or a file); remove it or choose another \
                 path: the Bridge refuses it",
                dir.display()
            ),
        );
    }
    let own = rustix::process::geteuid().as_raw();
    if meta.uid() != own {
        return report.fail(
            check,
            format!(
                "{} belongs to uid {}, not to the Bridge's user (uid {own}); the Bridge refuses \
                 it: chown it to uid {own} or choose another directory",
                dir.display(),
                meta.uid()
            ),
        );
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & private.forbidden != 0 {
        let who = if mode & 0o007 != 0 {
            "every user"
        } else {
            "its group"
        };
        return report.fail(
            check,
            format!(
                "{} has mode {mode:04o}, which lets {who} in, and the Bridge refuses it: run \
                 chmod {wanted} {}",
                dir.display(),
                dir.display()
            ),
        );
    }
    match free_bytes(dir) {
        Some(free) if free < LOW_SPACE_BYTES => report.warn(
            check,
            format!(
                "{} (mode {mode:04o}) has only {} MiB free; free space on its file system or \
                 move it",
                dir.display(),
                free / (1024 * 1024)
            ),
        ),
        Some(free) => report.ok(
            check,
            format!(
                "{} owned by uid {own}, mode {mode:04o}, {} MiB free",
                dir.display(),
                free / (1024 * 1024)
            ),
        ),
        None => report.ok(
            check,
            format!("{} owned by uid {own}, mode {mode:04o}", dir.display()),
        ),
    }
}

fn free_bytes(dir: &Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(dir).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// The lock file of every lease the Bridge prepares: ours, a regular file,
/// exactly the mode the Bridge creates it with.
fn check_lock_artifacts<W: std::io::Write>(report: &mut DoctorReport<W>, config: &BridgeConfig) {
    let ids = match config.lease_ids() {
        Ok(ids) => ids,
        Err(error) => return report.fail("lock artifacts", error),
    };
    if ids.is_empty() {
        return report.ok(
            "lock artifacts",
            "no writable workdir, so no writer lease to prepare",
        );
    }
    let lock_dir = &config.config.agent.lock_dir;
    let wanted = config.artifact_access().file_mode();
    let own = rustix::process::geteuid().as_raw();
    for id in ids {
        let check = format!("lock artifact {}", id.label());
        let path = lock_dir.join(id.lock_file_name());
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(error) if error.kind() == ErrorKind::NotFound => {
                report.warn(
                    &check,
                    format!(
                        "{} does not exist yet; the Bridge creates it when it starts (until \
                         then ServerFS mutations there fail with AGENT_LOCK_UNAVAILABLE)",
                        path.display()
                    ),
                );
                continue;
            }
            Err(error) => {
                report.fail(
                    &check,
                    format!("{} cannot be inspected ({})", path.display(), error.kind()),
                );
                continue;
            }
        };
        let mode = meta.permissions().mode() & 0o7777;
        if !meta.is_file() {
            report.fail(
                &check,
                format!(
                    "{} is not a regular file; stop the Bridge and remove it (the Bridge \
                     recreates it)",
                    path.display()
                ),
            );
        } else if meta.uid() != own {
            report.fail(
                &check,
                format!(
                    "{} belongs to uid {}, not to the Bridge's user (uid {own}); stop the Bridge \
                     and remove it (the Bridge recreates it)",
                    path.display(),
                    meta.uid()
                ),
            );
        } else if mode != wanted {
            report.fail(
                &check,
                format!(
                    "{} has mode {mode:04o}, expected {wanted:04o}: run chmod {wanted:04o} {}",
                    path.display(),
                    path.display()
                ),
            );
        } else {
            report.ok(&check, format!("{} mode {mode:04o}", path.display()));
        }
    }
}
