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
//! `setpgid(2)`, and Codex starts every command that way. So a provider is
//! more than its group: every descendant of its members, wherever it
//! moved, and every process carrying its task's marker in its environment
//! (`procfs`); with the Bridge as child subreaper
//! ([`become_subreaper`]), an orphaned descendant is re-parented to the
//! Bridge, not to init. Where the Bridge was delegated a cgroup subtree, a
//! provider also runs in a cgroup of its own (`cgroup`), which no process
//! can leave.

mod cgroup;
mod pre_exec;
mod procfs;

use std::collections::HashSet;
use std::io;

use rustix::io::Errno;
use rustix::process::{
    Pid, Signal, WaitOptions, getpgrp, getpid, kill_process, kill_process_group,
    set_child_subreaper, test_kill_process_group, waitpid,
};

pub(crate) use self::cgroup::{
    Cgroup, is_cgroup2, is_delegated, own_cgroup, populated, remove_if_empty,
};
pub(crate) use self::pre_exec::join_cgroup_before_exec;
pub(crate) use self::procfs::Member;
use self::procfs::ProcessTable;
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
    match kill_process_group(pgid, signal.as_signal()) {
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
        Ok(()) => ProcessTable::read()
            .map(|table| table.group_has_live_member(pgid.as_raw_pid()))
            .unwrap_or(true),
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

/// The live processes of one provider (see
/// [`ProcessTable::provider_members`]); `roots` are pids known to be the
/// provider's (its cgroup's).
///
/// # Errors
///
/// When `/proc` cannot be read or shows another PID namespace; the caller
/// must then treat the provider as running.
pub(crate) fn provider_members(
    group: Option<ProcessGroupId>,
    marker: Option<&[u8]>,
    known: &HashSet<Member>,
    roots: &[i32],
) -> io::Result<Vec<Member>> {
    let table = ProcessTable::read()?;
    Ok(table.provider_members(group.map(ProcessGroupId::as_raw), marker, known, roots))
}

/// Sends `signal` to one process; one that is gone already is no failure.
pub(crate) fn signal_member(member: Member, signal: GroupSignal) -> io::Result<()> {
    let Some(pid) = Pid::from_raw(member.pid).filter(|pid| *pid != Pid::INIT) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing to signal this process",
        ));
    };
    match kill_process(pid, signal.as_signal()) {
        Ok(()) | Err(Errno::SRCH) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// Makes this process the child subreaper of everything it starts: a
/// provider's process whose parent exits is re-parented to us instead of
/// to init, so it stays ours to find and to reap.
pub(crate) fn become_subreaper() -> io::Result<()> {
    set_child_subreaper(Some(getpid()))?;
    Ok(())
}

/// Reaps our zombie children that `is_spawned` does not claim (those have
/// a handle that reaps them and reads their status); returns how many.
pub(crate) fn reap_adopted_zombies(is_spawned: impl Fn(i32) -> bool) -> io::Result<usize> {
    let table = ProcessTable::read()?;
    let mut reaped = 0;
    for pid in table.zombie_children() {
        if is_spawned(pid) {
            continue;
        }
        let Some(pid) = Pid::from_raw(pid) else {
            continue;
        };
        if let Ok(Some(_)) = waitpid(Some(pid), WaitOptions::NOHANG) {
            reaped += 1;
        }
    }
    Ok(reaped)
}

impl GroupSignal {
    fn as_signal(self) -> Signal {
        match self {
            GroupSignal::Terminate => Signal::TERM,
            GroupSignal::Continue => Signal::CONT,
            GroupSignal::Kill => Signal::KILL,
        }
    }
}
