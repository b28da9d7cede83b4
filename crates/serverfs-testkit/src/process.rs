//! What `/proc` says about processes and process groups, for tests that
//! check a provider tree was started in its own group and stopped as a
//! whole (zombies included, which a liveness check must not count).

use std::fs;

/// State letter and process group of `pid`, from `/proc/<pid>/stat`;
/// `None` once the process is reaped.
pub fn stat(pid: u32) -> Option<(u8, i32)> {
    let stat = fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after
    // the last `)`.
    let close = stat.iter().rposition(|byte| *byte == b')')?;
    let rest = String::from_utf8(stat.get(close + 1..)?.to_vec()).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let _ppid = fields.next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// Every process (zombies included) whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<u32> {
    all_pids()
        .filter(|pid| stat(*pid).is_some_and(|(_, group)| group == pgid))
        .collect()
}

/// Whether `pid` is still a running (non-zombie) member of `pgid`.
pub fn runs_in_group(pid: u32, pgid: i32) -> bool {
    matches!(stat(pid), Some((state, group)) if group == pgid && state != b'Z' && state != b'X')
}

/// The parent pid of `pid`, from `/proc/<pid>/stat`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|byte| *byte == b')')?;
    let rest = String::from_utf8(stat.get(close + 1..)?.to_vec()).ok()?;
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The command line of `pid`, arguments joined by spaces; empty for a
/// zombie or a vanished process.
pub fn cmdline(pid: u32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .trim_end_matches('\0')
                .replace('\0', " ")
        })
        .unwrap_or_default()
}

/// Whether `pid` exists and is not a zombie.
pub fn is_running(pid: u32) -> bool {
    matches!(stat(pid), Some((state, _)) if state != b'Z' && state != b'X')
}

/// The running processes whose environment holds `NAME=value` exactly
/// (the Bridge's task marker, say), read from `/proc/<pid>/environ`.
pub fn running_with_env(name: &str, value: &str) -> Vec<u32> {
    let entry = format!("{name}={value}");
    all_pids()
        .filter(|pid| has_env_entry(*pid, &entry))
        .filter(|pid| is_running(*pid))
        .collect()
}

/// Live (non-zombie) processes whose command line contains `program` and
/// whose environment has `HOME=<home>`: the provider processes one test's
/// Bridge started (its daemon runs with the test's directory as `HOME`),
/// and no other test's.
pub fn live_with_home(program: &str, home: &std::path::Path) -> Vec<u32> {
    let entry = format!("HOME={}", home.display());
    all_pids()
        .filter(|pid| cmdline(*pid).contains(program))
        .filter(|pid| is_running(*pid))
        .filter(|pid| has_env_entry(*pid, &entry))
        .collect()
}

/// Every pid listed in `/proc` (none when it cannot be read).
fn all_pids() -> impl Iterator<Item = u32> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
}

/// Whether `pid`'s environment holds `entry` (`NAME=value`) exactly.
fn has_env_entry(pid: u32, entry: &str) -> bool {
    fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
        environ
            .split(|byte| *byte == 0)
            .any(|item| item == entry.as_bytes())
    })
}

/// Waits (up to 10 s) until at least `count` processes carry `NAME=value`
/// in their environment and their session is not `not_session`; returns
/// them. Panics on timeout.
pub fn await_escaped(name: &str, value: &str, count: usize, not_session: u32) -> Vec<u32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let escaped: Vec<u32> = running_with_env(name, value)
            .into_iter()
            .filter(|pid| session_of(*pid).is_some_and(|session| session != not_session))
            .collect();
        if escaped.len() >= count {
            return escaped;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {} processes escaped their session",
            escaped.len()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The session id of `pid`, from `/proc/<pid>/stat`.
pub fn session_of(pid: u32) -> Option<u32> {
    let stat = fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|byte| *byte == b')')?;
    let rest = String::from_utf8(stat.get(close + 1..)?.to_vec()).ok()?;
    rest.split_ascii_whitespace().nth(3)?.parse().ok()
}

/// SIGKILLs its processes when dropped: a test that orphans processes
/// cleans them up even when it fails.
#[derive(Debug)]
pub struct KillOnDrop(pub Vec<u32>);

impl KillOnDrop {
    /// SIGKILLs every process now and waits (up to 10 s) until none runs.
    pub fn kill_now(&self) {
        for pid in &self.0 {
            kill(*pid);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.0.iter().any(|pid| is_running(*pid)) {
            assert!(
                std::time::Instant::now() < deadline,
                "processes outlived SIGKILL"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in &self.0 {
            kill(*pid);
        }
    }
}

fn kill(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// The children of `parent` that are zombies (exited, not reaped).
pub fn zombie_children(parent: u32) -> Vec<u32> {
    all_pids()
        .filter(|pid| parent_of(*pid) == Some(parent))
        .filter(|pid| matches!(stat(*pid), Some((b'Z', _))))
        .collect()
}
