//! Timeouts, pipe readers and `/proc` inspection shared by the suites.

use std::fs;
use std::future::Future;
use std::time::Duration;

use serverfs_agent_bridge::ProviderChild;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// Generous: these bound hangs, they do not measure speed.
const LIMIT: Duration = Duration::from_secs(30);

/// Awaits `future`, failing the test if it takes longer than [`LIMIT`].
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// Everything the provider writes to stdout, until it closes it.
pub async fn read_stdout(child: &mut ProviderChild) -> String {
    let mut stdout = child.take_stdout().expect("stdout is piped");
    let mut text = String::new();
    within("reading stdout", stdout.read_to_string(&mut text))
        .await
        .unwrap();
    text
}

/// Reads one line from the provider's stdout and hands the reader back.
pub async fn first_line(
    child: &mut ProviderChild,
) -> (String, BufReader<tokio::process::ChildStdout>) {
    let mut reader = BufReader::new(child.take_stdout().expect("stdout is piped"));
    let mut line = String::new();
    within("reading a line", reader.read_line(&mut line))
        .await
        .unwrap();
    (line, reader)
}

/// State letter and process group of `pid`, from `/proc/<pid>/stat`;
/// `None` once the process is reaped.
pub fn stat(pid: u32) -> Option<(u8, i32)> {
    let stat = fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|byte| *byte == b')')?;
    let rest = String::from_utf8(stat[close + 1..].to_vec()).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.as_bytes()[0];
    let _ppid = fields.next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// Every process (zombies included) whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in fs::read_dir("/proc").unwrap() {
        let Some(pid) = entry
            .unwrap()
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if stat(pid).is_some_and(|(_, group)| group == pgid) {
            members.push(pid);
        }
    }
    members
}

/// Whether `pid` is still a running (non-zombie) member of `pgid`.
pub fn runs_in_group(pid: u32, pgid: i32) -> bool {
    matches!(stat(pid), Some((state, group)) if group == pgid && state != b'Z' && state != b'X')
}

/// Polls until `pgid` has at least `count` members.
pub async fn await_members(pgid: i32, count: usize) -> Vec<u32> {
    within("group members to appear", async {
        loop {
            let members = group_members(pgid);
            if members.len() >= count {
                return members;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}
