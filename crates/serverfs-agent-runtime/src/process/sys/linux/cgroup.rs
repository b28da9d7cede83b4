//! Linux cgroup v2: a cgroup per provider, below one per task, in a subtree
//! the Bridge was delegated.
//!
//! Kernel features: the unified hierarchy (`cgroup2`, Linux 4.5), writing
//! `0` to `cgroup.procs` to move the writer, `cgroup.events`' `populated`
//! (4.5) and `cgroup.kill` (5.14; on older kernels every listed process is
//! sent `SIGKILL` instead). See
//! [the kernel's cgroup-v2 documentation](https://docs.kernel.org/admin-guide/cgroup-v2.html).
//! No controller is enabled: the cgroups only hold processes, which is what
//! makes creating them beneath a cgroup that itself holds the Bridge legal
//! (the "no internal processes" rule concerns controllers only).
//!
//! Unlike a process group or session, a cgroup cannot be left by an
//! unprivileged process: moving out needs write access to a cgroup outside
//! the delegated subtree. Every process a provider starts, however it
//! detaches, stays in its cgroup until it exits.

use std::fs;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// `f_type` of a cgroup v2 file system (`statfs(2)`).
const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;

/// The extended attributes systemd sets to `1` on a cgroup it delegated
/// to a unit (`Delegate=yes`; systemd 251 and later): `trusted.` for the
/// system manager, `user.` for a user manager.
const DELEGATION_MARKS: [&str; 2] = ["trusted.delegate", "user.delegate"];

/// Whether `dir` is a directory of a cgroup v2 hierarchy.
pub(crate) fn is_cgroup2(dir: &Path) -> bool {
    rustix::fs::statfs(dir).is_ok_and(|fs| {
        // `f_type`'s integer type differs between architectures.
        #[allow(clippy::useless_conversion)]
        let kind = u64::try_from(fs.f_type).unwrap_or(0);
        kind == CGROUP2_SUPER_MAGIC
    })
}

/// The directory of this process's own cgroup v2, if it runs in the
/// unified hierarchy and that hierarchy is mounted in its mount namespace.
pub(crate) fn own_cgroup() -> Option<PathBuf> {
    let membership = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let relative = unified_path(&membership)?;
    let mount = cgroup2_mount(&mounts)?;
    Some(mount.join(relative.trim_start_matches('/')))
}

/// Whether systemd delegated `dir` (see [`DELEGATION_MARKS`]).
pub(crate) fn is_delegated(dir: &Path) -> bool {
    DELEGATION_MARKS.iter().any(|name| {
        let mut value = [0u8; 8];
        matches!(rustix::fs::getxattr(dir, *name, &mut value), Ok(1) if value[0] == b'1')
    })
}

/// The unified hierarchy's path in `/proc/self/cgroup` (the `0::<path>`
/// line).
fn unified_path(membership: &str) -> Option<&str> {
    membership
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .filter(|path| path.starts_with('/'))
}

/// The mount point of the first `cgroup2` file system in
/// `/proc/self/mountinfo` (field 5 is the mount point; the file system
/// type follows the ` - ` separator).
fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (mount, fs) = line.split_once(" - ")?;
        if fs.split(' ').next()? != "cgroup2" {
            return None;
        }
        let point = mount.split(' ').nth(4)?;
        Some(PathBuf::from(unescape_octal(point)))
    })
}

/// Undoes mountinfo's `\ooo` escapes (space, tab, newline, backslash).
fn unescape_octal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|digits| u8::from_str_radix(digits, 8).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// One cgroup the Bridge created, open for moving a process into it.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
    /// `cgroup.procs`, opened for writing before any fork, so the child
    /// only has to `write(2)` to it (see the `pre_exec` module).
    procs: Arc<OwnedFd>,
}

impl Cgroup {
    /// Creates (or reuses) the cgroup `dir`, whose parent must exist, and
    /// opens its `cgroup.procs`.
    ///
    /// # Errors
    ///
    /// The OS error of `mkdir(2)` or `open(2)`: typically `EACCES` when
    /// `base` was not delegated to us.
    pub(crate) fn create(dir: PathBuf) -> io::Result<Cgroup> {
        match rustix::fs::mkdir(&dir, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(err) => return Err(err.into()),
        }
        let procs = rustix::fs::open(
            dir.join("cgroup.procs"),
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Cgroup {
            dir,
            procs: Arc::new(procs),
        })
    }

    /// The open `cgroup.procs`, for the child to write itself into.
    pub(crate) fn procs(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.procs)
    }

    /// The pids in the cgroup itself (not its children).
    pub(crate) fn pids(&self) -> io::Result<Vec<i32>> {
        pids_in(&self.dir)
    }

    /// Kills every process in the cgroup and its children.
    ///
    /// # Errors
    ///
    /// The OS error of writing `cgroup.kill`, or of reading `cgroup.procs`
    /// on kernels without `cgroup.kill`.
    pub(crate) fn kill(&self) -> io::Result<()> {
        match fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.kill"))
        {
            Ok(mut kill) => kill.write_all(b"1"),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                for pid in self.pids()? {
                    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
                        continue;
                    };
                    match rustix::process::kill_process(pid, rustix::process::Signal::KILL) {
                        Ok(()) | Err(Errno::SRCH) => {}
                        Err(err) => return Err(err.into()),
                    }
                }
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    /// Removes the cgroup if it is empty; one that still holds a process
    /// (`EBUSY`) or is gone already is left as it is.
    pub(crate) fn remove(&self) {
        remove_if_empty(&self.dir);
    }
}

/// Whether the cgroup at `dir` or one below it holds a process
/// (`populated 1` in `cgroup.events`); `None` when `dir` does not exist.
///
/// # Errors
///
/// Any other failure to read `cgroup.events`.
pub(crate) fn populated(dir: &Path) -> io::Result<Option<bool>> {
    match fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => Ok(Some(events.lines().any(|line| line == "populated 1"))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Removes the empty cgroup `dir` (cgroup directories are removed with
/// `rmdir(2)`, their interface files with them); anything else is left.
pub(crate) fn remove_if_empty(dir: &Path) {
    match rustix::fs::rmdir(dir) {
        Ok(()) | Err(Errno::NOENT) | Err(Errno::BUSY) | Err(Errno::NOTEMPTY) => {}
        Err(err) => tracing::debug!(error = %err, "removing a cgroup failed"),
    }
}

/// The pids `cgroup.procs` of `dir` lists.
fn pids_in(dir: &Path) -> io::Result<Vec<i32>> {
    match fs::read_to_string(dir.join("cgroup.procs")) {
        Ok(procs) => Ok(procs.lines().filter_map(|line| line.parse().ok()).collect()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unified_line_names_the_cgroup() {
        let membership = "12:pids:/user.slice\n0::/system.slice/bridge.service\n";
        assert_eq!(
            unified_path(membership),
            Some("/system.slice/bridge.service")
        );
        assert_eq!(unified_path("4:memory:/x\n"), None);
        assert_eq!(unified_path("0::bogus\n"), None);
    }

    #[test]
    fn the_cgroup2_mount_is_found_and_unescaped() {
        let mountinfo = "\
25 30 0:23 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
26 30 0:24 / /sys/fs/cgroup/with\\040space rw,relatime shared:10 - cgroup2 cgroup2 rw
27 30 0:25 / /other rw - cgroup2 cgroup2 rw
";
        assert_eq!(
            cgroup2_mount(mountinfo),
            Some(PathBuf::from("/sys/fs/cgroup/with space"))
        );
        assert_eq!(
            cgroup2_mount("25 30 0:23 / /x rw - ext4 /dev/vda rw\n"),
            None
        );
    }

    #[test]
    fn bad_escapes_stay_as_written() {
        assert_eq!(unescape_octal("a\\9zz\\"), "a\\9zz\\");
        assert_eq!(unescape_octal("tab\\011end"), "tab\tend");
    }
}
