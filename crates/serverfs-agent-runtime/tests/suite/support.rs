//! Timeouts and pipe readers shared by the suites (`/proc` inspection is
//! `serverfs_testkit::process`).

use std::time::Duration;

use serverfs_agent_runtime::ProviderChild;
use serverfs_testkit::process::group_members;
use serverfs_testkit::within;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

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
