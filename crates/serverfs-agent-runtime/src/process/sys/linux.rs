//! Linux process containment: POSIX process groups, `kill(2)` and `/proc`.
//!
//! Kernel features: `setpgid(2)` (done by the standard library between fork
//! and exec, so no `pre_exec` hook and no `unsafe`), `kill(2)` with a
//! negative pid ([man 2 kill](https://man7.org/linux/man-pages/man2/kill.2.html)),
//! and `/proc/<pid>/stat` ([man 5 proc_pid_stat](https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html)).
//! All exist on every kernel Rust supports; there is no fallback. When
//! `/proc` is missing or shows another PID namespace, liveness falls back to
//! `kill(-pgid, 0)` alone, which only errs on the side of "alive".
//!
//! A process group is not a cage: a member can leave it with `setsid(2)` or
//! `setpgid(2)`. Providers do not do that; a cgroup per provider would catch
//! those too and is the next step if one ever does.

use std::fs;
use std::io;
use std::process;

use rustix::io::Errno;
use rustix::process::{Pid, Signal, getpgrp, kill_process_group, test_kill_process_group};

use super::{Delivery, GroupSignal};
use crate::process::ProcessGroupId;

/// Makes the child the leader of a new process group whose id is its pid,
/// before it executes anything: every process it starts inherits the
/// group, so one `kill(-pgid, …)` reaches the whole tree (npm wrappers,
/// language servers, commands the agent runs).
pub(crate) fn contain(command: &mut tokio::process::Command) {
    command.process_group(0);
}

/// Sends `signal` to every member of `group`.
///
/// # Errors
///
/// `InvalidInput` for a group id this function refuses to signal (see
/// [`checked_pid`]); the OS error when `kill(2)` fails for another reason
/// than "no such group" (`EPERM`: no member may be signalled by us).
pub(crate) fn signal_group(group: ProcessGroupId, signal: GroupSignal) -> io::Result<Delivery> {
    let pgid = checked_pid(group)?;
    let signal = match signal {
        GroupSignal::Terminate => Signal::TERM,
        GroupSignal::Continue => Signal::CONT,
        GroupSignal::Kill => Signal::KILL,
    };
    match kill_process_group(pgid, signal) {
        Ok(()) => Ok(Delivery::Delivered),
        Err(Errno::SRCH) => Ok(Delivery::NoSuchGroup),
        Err(err) => Err(err.into()),
    }
}

/// Whether any member of `group` may still run code.
///
/// `kill(-pgid, 0)` failing with `ESRCH` proves the group empty. Success
/// does not prove anyone runs: it also counts zombies, members that exited
/// but that their parent — often init, for orphaned grandchildren — has not
/// reaped yet, which may take seconds under a lazy init. A zombie runs no
/// code, so `/proc` decides: the group is alive if a member is in any state
/// but zombie/dead, or is a zombie thread-group leader whose other threads
/// still run. Whenever the answer cannot be established, it is "alive".
pub(crate) fn group_has_live_member(group: ProcessGroupId) -> bool {
    let Ok(pgid) = checked_pid(group) else {
        return true;
    };
    match test_kill_process_group(pgid) {
        Err(Errno::SRCH) => false,
        // EPERM: members exist that we may not signal; we could not kill
        // them either, so they can never count as gone.
        Err(_) => true,
        Ok(()) => scan_for_live_member(pgid.as_raw_pid()).unwrap_or(true),
    }
}

/// Refuses the group ids whose signalling would hit more than a provider:
/// `kill(-1, …)` reaches every process we may signal, and our own group
/// would be the Bridge itself. [`ProcessGroupId`] already excludes ids
/// below 2; this keeps the check next to the syscall.
fn checked_pid(group: ProcessGroupId) -> io::Result<Pid> {
    Pid::from_raw(group.as_raw())
        .filter(|pid| *pid != Pid::INIT && *pid != getpgrp())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "refusing to signal this process group",
            )
        })
}

/// Scans `/proc` for a member of `pgid` that is not a zombie.
fn scan_for_live_member(pgid: i32) -> io::Result<bool> {
    // The pids under /proc are those of the PID namespace that mounted it;
    // if that is not ours, they say nothing about our group.
    let own_pid = fs::read_link("/proc/self")?;
    if own_pid.as_os_str() != process::id().to_string().as_str() {
        return Err(io::Error::other("/proc belongs to another PID namespace"));
    }
    for entry in fs::read_dir("/proc")? {
        let name = entry?.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        let stat = match fs::read(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat,
            // Exited and reaped while we looked: not a member any more.
            Err(err) if vanished(&err) => continue,
            Err(err) => return Err(err),
        };
        let (state, member_pgid) = parse_stat(&stat)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unparsable /proc stat"))?;
        if member_pgid != pgid {
            continue;
        }
        match state {
            b'Z' | b'X' => {
                if has_other_threads(pid)? {
                    return Ok(true);
                }
            }
            _ => return Ok(true),
        }
    }
    Ok(false)
}

/// Whether thread-group `pid` has threads besides its leader. A leader that
/// called `pthread_exit` shows as a zombie while its other threads run;
/// a process that really exited lists only the leader under `task/`.
fn has_other_threads(pid: u32) -> io::Result<bool> {
    let tasks = match fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(tasks) => tasks,
        Err(err) if vanished(&err) => return Ok(false),
        Err(err) => return Err(err),
    };
    let mut count = 0_usize;
    for task in tasks {
        task?;
        count += 1;
    }
    Ok(count > 1)
}

/// A `/proc` read failed because the process is gone (reaped meanwhile).
fn vanished(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::NotFound || err.raw_os_error() == Some(Errno::SRCH.raw_os_error())
}

/// Extracts the state and the process group from `/proc/<pid>/stat`:
/// `pid (comm) state ppid pgrp …`. The command name may contain spaces and
/// parentheses, so parsing starts after the last `)`.
fn parse_stat(stat: &[u8]) -> Option<(u8, i32)> {
    let close = stat.iter().rposition(|byte| *byte == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::parse_stat;

    #[test]
    fn parses_state_and_group_past_a_hostile_command_name() {
        let stat = b"4242 (a) b) Z (c) S 1 4240 4240 0 -1 4194560 107 0 0 0";
        assert_eq!(parse_stat(stat), Some((b'S', 4240)));
        assert_eq!(parse_stat(b"7 (sleep) Z 1 6 6 0"), Some((b'Z', 6)));
        assert_eq!(parse_stat(b"7 (sleep"), None);
        assert_eq!(parse_stat(b"7 (sleep) R 1"), None);
    }
}
