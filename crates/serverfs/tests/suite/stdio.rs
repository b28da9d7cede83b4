//! The stdio transport's streams: pipes are driven without the blocking
//! pool but never changed for the process that passed them; anything else
//! still works.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;

use crate::common::binary;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const TOOLS_LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn serve(tree: &TempWorkdir) -> Command {
    let mut command = Command::new(binary());
    command
        .args(["serve", "--workdir"])
        .arg(format!("w={}", tree.root().display()))
        .env_clear()
        .stderr(Stdio::null());
    command
}

fn ids(output: &str) -> Vec<Value> {
    output
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].clone())
        .collect()
}

/// The server reads its requests from a pipe the test also holds open:
/// after it has answered (so its streams are set up), the pipe's read side
/// as the test sees it is still blocking.
#[test]
fn a_shared_stdin_pipe_stays_blocking_for_its_other_holders() {
    let tree = TempWorkdir::new();
    let (reader, mut writer) = std::io::pipe().unwrap();
    let kept = reader.try_clone().unwrap();
    let mut child = serve(&tree)
        .stdin(reader)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(writer, "{INITIALIZE}").unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(ids(&line), vec![json!(1)], "{line}");
    let flags = rustix::fs::fcntl_getfl(&kept).unwrap();
    assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK), "{flags:?}");
    drop(writer);
    assert!(child.wait().unwrap().success());
}

/// Requests from a regular file, answers into one: the blocking fallback.
#[test]
fn files_as_stdin_and_stdout_still_work() {
    let tree = TempWorkdir::new();
    let scratch = tempfile::tempdir().unwrap();
    let (input, output) = (scratch.path().join("in"), scratch.path().join("out"));
    std::fs::write(&input, format!("{INITIALIZE}\n{TOOLS_LIST}\n")).unwrap();
    let status = serve(&tree)
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let answers = std::fs::read_to_string(&output).unwrap();
    assert_eq!(ids(&answers), vec![json!(1), json!(2)], "{answers}");
}
