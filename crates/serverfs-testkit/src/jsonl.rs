//! What the scripted fake CLIs and agents share: their stdin read on a
//! thread (so they can wait with a timeout), and the JSON-lines log each
//! run appends to and a test reads back.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::mpsc;

use serde_json::Value;

/// The lines of stdin, read on a thread of their own until it closes.
pub(crate) fn stdin_lines() -> mpsc::Receiver<String> {
    let (lines, incoming) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    incoming
}

/// Appends `entry` as one line to the log at `path`, if there is one. A
/// log that cannot be written is left out: the fake's behaviour must not
/// depend on it, and the test reading it fails on what is missing.
pub(crate) fn append(path: Option<&Path>, entry: &Value) {
    let Some(path) = path else { return };
    let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    else {
        return;
    };
    // One write of the whole line: a formatted `writeln!` on an unbuffered
    // file is many small writes, and a reader polling the log meanwhile
    // would see half an entry.
    let _ = file.write_all(format!("{entry}\n").as_bytes());
}

/// Every complete entry of the log at `path`, in order (none when it does
/// not exist); `what` names it in a panic. A last line without its newline
/// is still being written and is left for the next read.
///
/// # Panics
///
/// On an unreadable log or a complete line that is not JSON.
pub(crate) fn read(path: &Path, what: &str) -> Vec<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) => text
            .split_inclusive('\n')
            .filter_map(|line| line.strip_suffix('\n'))
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("bad log line {line}: {e}"))
            })
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => panic!("reading {what}: {error}"),
    }
}
