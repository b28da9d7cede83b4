//! The stderr capture stays bounded, keeps the tail and never blocks the
//! provider.

use serverfs_agent_runtime::{DEFAULT_STDERR_CAPACITY, ProviderCommand};

use serverfs_testkit::within;

/// One MiB of `x`, then a marker, all on stderr.
const FLOOD: &str = "head -c 1048576 /dev/zero | tr '\\0' x >&2; printf TAIL-END >&2";
const FLOOD_BYTES: u64 = 1024 * 1024 + 8;

async fn flood(command: &mut ProviderCommand) -> serverfs_agent_runtime::StderrTail {
    let mut child = command.args(["-c", FLOOD]).spawn().unwrap();
    // Exiting at all shows the pipe was drained: unread, it would block the
    // writer at 64 KiB.
    let status = within("the flooding child to exit", child.wait())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    within("stderr to close", child.stderr().closed()).await;
    child.stderr().snapshot()
}

#[tokio::test]
async fn one_mebibyte_of_stderr_keeps_only_the_default_tail() {
    let workdir = tempfile::tempdir().unwrap();
    let tail = flood(&mut ProviderCommand::new("/bin/sh", workdir.path())).await;

    assert_eq!(tail.bytes.len(), DEFAULT_STDERR_CAPACITY);
    assert_eq!(tail.total_bytes, FLOOD_BYTES);
    assert!(tail.truncated());
    let (body, marker) = tail.bytes.split_at(tail.bytes.len() - 8);
    assert_eq!(marker, b"TAIL-END");
    assert!(body.iter().all(|byte| *byte == b'x'));
}

#[tokio::test]
async fn a_configured_bound_is_respected() {
    let workdir = tempfile::tempdir().unwrap();
    let tail = flood(ProviderCommand::new("/bin/sh", workdir.path()).stderr_capacity(1000)).await;
    assert_eq!(tail.bytes.len(), 1000);
    assert_eq!(tail.total_bytes, FLOOD_BYTES);
    assert!(tail.bytes.ends_with(b"xxTAIL-END"));
}

#[tokio::test]
async fn short_output_is_kept_whole() {
    let workdir = tempfile::tempdir().unwrap();
    let mut child = ProviderCommand::new("/bin/sh", workdir.path())
        .args(["-c", "printf 'warning: something\\n' >&2"])
        .spawn()
        .unwrap();
    assert!(within("sh to exit", child.wait()).await.unwrap().success());
    within("stderr to close", child.stderr().closed()).await;
    let tail = child.stderr().snapshot();
    assert_eq!(tail.bytes, b"warning: something\n");
    assert!(!tail.truncated());
    // Diagnostics stay out of Debug output (it may end up in logs).
    assert!(!format!("{tail:?} {:?}", child.stderr()).contains("warning"));
}
