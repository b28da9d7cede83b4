//! The process table as `/proc` shows it, and what it tells about one
//! provider: the members of its group, the processes that carry its task
//! marker, and every descendant of either, whichever session or group they
//! moved to.
//!
//! `/proc/<pid>/stat` ([man 5 proc_pid_stat]) gives the state, parent,
//! group and start time; `/proc/<pid>/environ` the environment a process
//! was started with (readable for our own user's processes only, which are
//! the only ones a provider can start).
//!
//! [man 5 proc_pid_stat]: https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::process;

use rustix::io::Errno;

/// One process of a provider, named so that a recycled pid is not taken
/// for it: the pid and the process's start time (clock ticks after boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Member {
    /// The process id.
    pub(crate) pid: i32,
    /// Field 22 of `/proc/<pid>/stat`.
    pub(crate) start_time: u64,
}

/// What `/proc/<pid>/stat` says about one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    pid: i32,
    state: u8,
    ppid: i32,
    pgrp: i32,
    start_time: u64,
}

impl Entry {
    fn member(&self) -> Member {
        Member {
            pid: self.pid,
            start_time: self.start_time,
        }
    }

    /// Whether the process may still run code. A zombie runs nothing,
    /// unless it is a thread-group leader that called `pthread_exit` while
    /// its other threads run.
    fn is_live(&self) -> bool {
        match self.state {
            b'Z' | b'X' => has_other_threads(self.pid).unwrap_or(true),
            _ => true,
        }
    }
}

/// A snapshot of every process in our PID namespace.
pub(crate) struct ProcessTable {
    entries: Vec<Entry>,
}

impl ProcessTable {
    /// Reads `/proc`.
    ///
    /// # Errors
    ///
    /// The OS error when `/proc` cannot be read, or `Other` when it belongs
    /// to another PID namespace (its pids would say nothing about ours).
    pub(crate) fn read() -> io::Result<ProcessTable> {
        let own_pid = fs::read_link("/proc/self")?;
        if own_pid.as_os_str() != process::id().to_string().as_str() {
            return Err(io::Error::other("/proc belongs to another PID namespace"));
        }
        let mut entries = Vec::new();
        for entry in fs::read_dir("/proc")? {
            let name = entry?.file_name();
            let Some(pid) = name.to_str().and_then(|name| name.parse::<i32>().ok()) else {
                continue;
            };
            let stat = match fs::read(format!("/proc/{pid}/stat")) {
                Ok(stat) => stat,
                // Exited and reaped while we looked.
                Err(err) if vanished(&err) => continue,
                Err(err) => return Err(err),
            };
            let entry = parse_stat(pid, &stat).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "unparsable /proc stat")
            })?;
            entries.push(entry);
        }
        Ok(ProcessTable { entries })
    }

    /// Whether a process of group `pgid` may still run code.
    pub(crate) fn group_has_live_member(&self, pgid: i32) -> bool {
        self.entries
            .iter()
            .any(|entry| entry.pgrp == pgid && entry.is_live())
    }

    /// The live processes of one provider: those in `pgid`, those whose
    /// environment holds the entry `marker` (`NAME=value`), those in
    /// `known` (a pid only while its start time matches), those in `roots`
    /// (its cgroup's), and every descendant of any of them.
    pub(crate) fn provider_members(
        &self,
        pgid: Option<i32>,
        marker: Option<&[u8]>,
        known: &HashSet<Member>,
        roots: &[i32],
    ) -> Vec<Member> {
        let mut children: HashMap<i32, Vec<&Entry>> = HashMap::new();
        for entry in &self.entries {
            children.entry(entry.ppid).or_default().push(entry);
        }
        let mut found: HashSet<i32> = HashSet::new();
        let mut pending: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|entry| {
                pgid == Some(entry.pgrp)
                    || known.contains(&entry.member())
                    || roots.contains(&entry.pid)
                    || marker.is_some_and(|marker| carries(entry.pid, marker))
            })
            .collect();
        let mut members = Vec::new();
        while let Some(entry) = pending.pop() {
            if !found.insert(entry.pid) {
                continue;
            }
            if entry.is_live() {
                members.push(entry.member());
            }
            if let Some(kids) = children.get(&entry.pid) {
                pending.extend(kids.iter().copied());
            }
        }
        members
    }

    /// Our children that are zombies, for the orphan reaper.
    pub(crate) fn zombie_children(&self) -> Vec<i32> {
        let own = i32::try_from(process::id()).unwrap_or(i32::MAX);
        self.entries
            .iter()
            .filter(|entry| entry.ppid == own && matches!(entry.state, b'Z' | b'X'))
            .map(|entry| entry.pid)
            .collect()
    }
}

/// Whether `/proc/<pid>/environ` holds the entry `marker` exactly. A
/// process we may not read (another user's) is not ours.
fn carries(pid: i32, marker: &[u8]) -> bool {
    match fs::read(format!("/proc/{pid}/environ")) {
        Ok(environ) => environ
            .split(|byte| *byte == 0)
            .any(|entry| entry == marker),
        Err(_) => false,
    }
}

/// Whether thread-group `pid` has threads besides its leader. A leader that
/// called `pthread_exit` shows as a zombie while its other threads run;
/// a process that really exited lists only the leader under `task/`.
fn has_other_threads(pid: i32) -> io::Result<bool> {
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

/// Parses `/proc/<pid>/stat`: `pid (comm) state ppid pgrp session tty_nr
/// tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
/// priority nice num_threads itrealvalue starttime …`. The command name may
/// contain spaces and parentheses, so parsing starts after the last `)`.
fn parse_stat(pid: i32, stat: &[u8]) -> Option<Entry> {
    let close = stat.iter().rposition(|byte| *byte == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().take(20).collect();
    Some(Entry {
        pid,
        state: *fields.first()?.as_bytes().first()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::{Entry, parse_stat};

    #[test]
    fn parses_past_a_hostile_command_name() {
        let stat =
            b"4242 (a) b) Z (c) S 1 4240 4240 0 -1 4194560 107 0 0 0 1 2 0 0 20 0 1 0 98765 0";
        assert_eq!(
            parse_stat(4242, stat),
            Some(Entry {
                pid: 4242,
                state: b'S',
                ppid: 1,
                pgrp: 4240,
                start_time: 98765,
            })
        );
        assert_eq!(parse_stat(7, b"7 (sleep"), None);
        assert_eq!(parse_stat(7, b"7 (sleep) R 1 6 6 0"), None);
    }
}
