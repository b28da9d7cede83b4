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
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
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
