//! How soon a cancelled `search_text` ends (issue 17: within 200 ms of the
//! cancellation, over at least 50,000 files).
//!
//! A search for a literal found nowhere reads every file of the largest
//! tree; the client sends `notifications/cancelled` halfway through it
//! (half the duration of a warm-up search left to finish), and the figure
//! is the time from that notification to the call's end. A cancelled
//! request gets no answer, so its end is the audit line the server logs
//! when the call returns (read from its stderr as it is written). The
//! anchor is the same search left to finish. A few rounds only: each
//! costs about two searches of the whole tree.
//!
//! "Halfway" is half the fastest of a few warm-up searches (the first one
//! reads a colder cache). A search that still ends before its
//! cancellation is started again with half the delay, a few times, before
//! the row gives up.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::corpus::ABSENT;
use crate::measure::{Paired, SERVERFS_ENV, Setup, millis, timed};
use crate::report::Row;
use crate::stdio::{AuditLines, StdioServer};

/// Rounds, at most (fewer when `--runs` asks for fewer).
const ROUNDS: usize = 5;
/// Warm-up searches; the fastest sets the delay.
const WARM_UPS: usize = 3;
/// Tries of one cancelled search, each with half the previous delay.
const TRIES: usize = 4;

/// The row.
pub fn rows(setup: &Setup) -> Result<Vec<Row>, String> {
    let tree = setup.corpora.trees.last().ok_or("no tree generated")?;
    let (mut server, audits) = StdioServer::spawn_audited(
        &setup.serverfs,
        &setup.serve(&[("t", &tree.path)])?,
        SERVERFS_ENV,
    )?;
    let arguments = json!({"workdir": "t", "query": ABSENT});
    let mut fastest = f64::INFINITY;
    for _ in 0..WARM_UPS {
        fastest = fastest.min(timed(|| search(&mut server, &audits, &arguments))?.1);
    }
    let halfway = Duration::from_secs_f64(fastest / 2000.0);
    let mut paired = Paired::default();
    for index in 0..setup.runs.min(ROUNDS) {
        // Alternating which goes first, as every row does.
        let (cancel, whole) = if index.is_multiple_of(2) {
            let cancel = cancelled(&mut server, &audits, &arguments, halfway)?;
            (
                cancel,
                timed(|| search(&mut server, &audits, &arguments))?.1,
            )
        } else {
            let whole = timed(|| search(&mut server, &audits, &arguments))?.1;
            (cancelled(&mut server, &audits, &arguments, halfway)?, whole)
        };
        paired.push(cancel, Some(whole));
    }
    Ok(vec![paired.row(
        format!(
            "search_text cancelled halfway, {} files: cancel → call ended (vs the search uncancelled)",
            tree.files
        ),
        "ms",
        "≤ 200 ms",
    )])
}

/// The search left to finish; checks it found nothing, as it must, and
/// takes its audit line (so that the next one read is the next call's).
fn search(server: &mut StdioServer, audits: &AuditLines, arguments: &Value) -> Result<(), String> {
    let result = server.call("search_text", arguments.clone())?;
    if result["returned"] != json!(0) {
        return Err(format!("the search for {ABSENT} found something: {result}"));
    }
    audits.next().map(drop)
}

/// A search cancelled after `after` (halved on each try that ended too
/// soon): the ms from the cancellation to the call's end.
fn cancelled(
    server: &mut StdioServer,
    audits: &AuditLines,
    arguments: &Value,
    after: Duration,
) -> Result<f64, String> {
    let mut delay = after;
    for _ in 0..TRIES {
        if let Some(ms) = cancel_after(server, audits, arguments, delay)? {
            return Ok(ms);
        }
        delay /= 2;
    }
    Err(format!(
        "the search ended before its cancellation {TRIES} times, the last after {delay:?}"
    ))
}

/// Starts the search and cancels it after `after`; `None` when the search
/// had ended (successfully) before the cancellation reached it.
fn cancel_after(
    server: &mut StdioServer,
    audits: &AuditLines,
    arguments: &Value,
    after: Duration,
) -> Result<Option<f64>, String> {
    let id = server.start(
        "tools/call",
        json!({"name": "search_text", "arguments": arguments}),
    )?;
    std::thread::sleep(after);
    let cancelled_at = Instant::now();
    server.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "benchmark"}),
    )?;
    let (ended_at, line) = audits.next()?;
    if line["error_code"] == "REQUEST_CANCELLED" {
        return Ok(Some(millis(
            ended_at.saturating_duration_since(cancelled_at),
        )));
    }
    if line["success"] != true {
        return Err(format!("the cancelled search failed otherwise: {line}"));
    }
    // Its answer went out before the cancellation arrived; the client
    // skips it as an answer to no call it waits for.
    Ok(None)
}
