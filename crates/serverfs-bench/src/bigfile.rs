//! Pages of the big log against the reference's `tail` and `head`, with
//! the peak RSS of both.
//!
//! The reference can only read from either end: its `tail: 200` is the
//! anchor of our last page, and its `head: M + 199` — everything up to the
//! end of the page — the only way it has to show a page in the middle. Each
//! phase runs on fresh processes, so each one's peak RSS is that phase's.
//! Our first read at line M costs a scan to M (the line index is empty):
//! each round first touches the log, which gives it a new revision and so
//! drops its index. The repeated read then finds a checkpoint near M, and is
//! compared with a cursor read of the same page, which never scans; reads
//! that do not scan are repeated per round ([`REPEATS`]).

use std::cell::RefCell;
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::measure::{Paired, SERVERFS_ENV, Setup, median, round, timed};
use crate::report::Row;
use crate::stdio::StdioServer;

/// Lines per page, both sides.
const PAGE: u64 = 200;
/// Calls per round of the reads that do not scan: a round's value is their
/// median, so it does not hinge on one call made just after the other
/// side's.
const REPEATS: usize = 5;

/// The big-file rows.
pub fn rows(setup: &Setup) -> Result<Vec<Row>, String> {
    let log_dir = &setup.corpora.log_dir;
    let log = log_dir.join("big.log");
    let log_str = crate::measure::path_str(&log)?;
    let size_mib = std::fs::metadata(&log).map_err(|e| e.to_string())?.len() >> 20;
    let serve = setup.serve(&[("b", log_dir)])?;
    let peer_command = setup.reference_for(log_dir)?;
    let spawn_peer = || match &peer_command {
        Some((program, args)) => StdioServer::spawn(program, args, &[]).map(Some),
        None => Ok(None),
    };
    let mut rows = Vec::new();

    // The last page.
    let mut ours = StdioServer::spawn(&setup.serverfs, &serve, SERVERFS_ENV)?;
    let mut peer = spawn_peer()?;
    let mut last = Paired::default();
    let tail = json!({"workdir": "b", "path": "big.log", "tail_lines": PAGE});
    let peer_tail = json!({"path": log_str, "tail": PAGE});
    for index in 0..setup.runs {
        let ((page, mine), theirs) = round(
            index,
            || repeated(|| timed(|| ours.call("read_text_file", tail.clone()))),
            || match peer.as_mut() {
                Some(peer) => repeated(|| peer_read(peer, peer_tail.clone())).map(Some),
                None => Ok(None),
            },
        )?;
        if let Some((text, _)) = &theirs {
            same_lines(&page, text, "the last page")?;
        }
        last.push(mine, theirs.map(|(_, ms)| ms));
    }
    rows.push(last.row(
        format!("last page of a {size_mib} MiB log: tail_lines {PAGE} (vs tail {PAGE})"),
        "ms",
        "≤ 1×",
    ));
    rows.push(rss_row(&ours, peer.as_ref(), "last-page rows"));
    drop((ours, peer));

    // A page in the middle.
    let middle = (setup.corpora.log_lines / 2).max(PAGE + 1);
    let head = middle + PAGE - 1;
    let at = |line: u64| json!({"workdir": "b", "path": "big.log", "start_line": line, "max_lines": PAGE});
    let mut ours = StdioServer::spawn(&setup.serverfs, &serve, SERVERFS_ENV)?;
    let mut peer = spawn_peer()?;
    let (mut first, mut again, mut cursor) =
        (Paired::default(), Paired::default(), Paired::default());
    for index in 0..setup.runs {
        // A new revision: the index starts empty.
        std::fs::File::options()
            .write(true)
            .open(&log)
            .and_then(|f| f.set_modified(SystemTime::now()))
            .map_err(|e| format!("touching the log: {e}"))?;
        let ((page, cold), theirs) = round(
            index,
            || timed(|| ours.call("read_text_file", at(middle))),
            || match peer.as_mut() {
                Some(peer) => peer_read(peer, json!({"path": log_str, "head": head})).map(Some),
                None => Ok(None),
            },
        )?;
        if let Some((text, _)) = &theirs {
            same_lines(&page, text, "the middle page")?;
        }
        let peer_ms = theirs.map(|(_, ms)| ms);
        first.push(cold, peer_ms);
        // The same page by cursor, from the page before it.
        let before = ours.call("read_text_file", at(middle - PAGE))?;
        let by_cursor = json!({"workdir": "b", "path": "big.log",
            "cursor": before["next_cursor"], "max_lines": PAGE});
        // Both sides of this pair are ours, one after the other.
        let shared = RefCell::new(&mut ours);
        let ((repeat, warm), (same, cursor_ms)) = round(
            index,
            || repeated(|| timed(|| shared.borrow_mut().call("read_text_file", at(middle)))),
            || {
                repeated(|| {
                    timed(|| {
                        shared
                            .borrow_mut()
                            .call("read_text_file", by_cursor.clone())
                    })
                })
            },
        )?;
        if repeat["content"] != page["content"] || same["content"] != page["content"] {
            return Err(
                "the repeated or cursor read of the middle page returned other lines".into(),
            );
        }
        again.push(warm, peer_ms);
        cursor.push(warm, Some(cursor_ms));
    }
    rows.push(first.row(
        format!("middle page (line {middle}), first start_line read (vs head {head})"),
        "ms",
        "",
    ));
    rows.push(again.row(
        format!("middle page, repeated start_line read (vs head {head})"),
        "ms",
        "",
    ));
    rows.push(cursor.row(
        "middle page, repeated start_line read (vs by cursor)".to_owned(),
        "ms",
        "≤ 2×",
    ));
    rows.push(rss_row(&ours, peer.as_ref(), "middle-page rows"));
    Ok(rows)
}

/// A reference `read_text_file` call: its text and how long it took.
fn peer_read(peer: &mut StdioServer, arguments: Value) -> Result<(String, f64), String> {
    let (result, ms) = timed(|| peer.call("read_text_file", arguments))?;
    let text = result["content"]
        .as_str()
        .ok_or("the reference returned no content")?
        .to_owned();
    Ok((text, ms))
}

/// [`REPEATS`] timed calls: the last answer and the median time.
fn repeated<T>(mut call: impl FnMut() -> Result<(T, f64), String>) -> Result<(T, f64), String> {
    let mut times = Vec::with_capacity(REPEATS);
    let mut answer = None;
    for _ in 0..REPEATS {
        let (value, ms) = call()?;
        times.push(ms);
        answer = Some(value);
    }
    let answer = answer.ok_or("no call made")?;
    Ok((answer, median(&times)))
}

/// Both sides returned the same lines: the reference's text ends with our
/// page. (Its `tail` drops the file's final newline and with it one line,
/// so only the lines both have are compared.)
fn same_lines(ours: &Value, theirs: &str, what: &str) -> Result<(), String> {
    let page = ours["content"].as_str().ok_or("no content")?;
    let page = page.trim_end_matches('\n').as_bytes();
    let theirs = theirs.trim_end_matches('\n').as_bytes();
    let shorter = page.len().min(theirs.len());
    if shorter == 0 || page[page.len() - shorter..] != theirs[theirs.len() - shorter..] {
        return Err(format!(
            "{what}: ServerFS and the reference returned different lines"
        ));
    }
    Ok(())
}

fn rss_row(ours: &StdioServer, peer: Option<&StdioServer>, phase: &str) -> Row {
    let mut rss = Paired::default();
    rss.push(
        ours.peak_rss_mib().unwrap_or(0.0),
        peer.map(|p| p.peak_rss_mib().unwrap_or(0.0)),
    );
    rss.row(
        format!("peak RSS over the {phase} (vs the reference's)"),
        "MiB",
        "≤ 16 MiB",
    )
}
