//! Progress and cancellation of long calls (issue 17), through rmcp's
//! client (which puts a `progressToken` on every request):
//!
//! - a search over a tree of 60,000 files reports `notifications/progress`
//!   at a bounded rate, and none when the request carries no token (a raw
//!   JSON-RPC client); a client's `notifications/cancelled` ends a search
//!   or a find under way, with `REQUEST_CANCELLED` and its descriptors
//!   closed;
//! - a large ranged download reports the bytes read and stops when
//!   cancelled;
//! - a large upload reports the bytes decoded, out of its decoded size;
//! - a long-poll of an agent task (fake runtime) sends a heartbeat while it
//!   waits and ends at once when cancelled.
//!
//! Tests make no timing assertions: how soon a cancelled search ends is a
//! row of the benchmark (`scripts/bench.sh`, against the 200 ms).
//! A `REQUEST_CANCELLED` outcome is itself the proof that the operation
//! stopped part-way: one that ran to its end would have succeeded.

use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
};
use rmcp::service::{PeerRequestOptions, RequestHandle};
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::agent::start_long_task;
use crate::common::bridge::AgentEnv;
use crate::common::{Server, TIMEOUT, binary};

/// Files in the tree: over the 50,000 the issue asks for.
const FILES: usize = 60_000;

/// `FILES` small files in 600 directories, none of which holds the
/// regular expression searched for nor the name pattern found, so every
/// search and find visits them all. Shared by the tests that run at the
/// same time (writing it is most of their cost), and removed when the last
/// of them is done with it.
fn big_tree() -> Arc<TempWorkdir> {
    static SHARED: Mutex<Weak<TempWorkdir>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(tree) = shared.upgrade() {
        return tree;
    }
    let t = TempWorkdir::new();
    let body = "some words on a line\nand another line of text\n";
    for dir in 0..600 {
        let path = t.root().join(format!("d{dir:03}"));
        std::fs::create_dir(&path).unwrap();
        for file in 0..FILES / 600 {
            std::fs::write(path.join(format!("f{file:03}.txt")), body).unwrap();
        }
    }
    let tree = Arc::new(t);
    *shared = Arc::downgrade(&tree);
    tree
}

/// A search that reads every file of [`big_tree`] and finds nothing.
fn slow_search() -> Value {
    json!({"workdir": "demo", "query": "z[0-9]+q", "mode": "regex"})
}

fn call_request(tool: &str, args: Value) -> ClientRequest {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new(tool.to_owned()).with_arguments(args),
    ))
}

/// The `tool_call` audit lines of `tool` logged so far.
fn audits(server: &Server, tool: &str) -> Vec<Value> {
    server
        .log_events("tool_call")
        .into_iter()
        .filter(|line| line["tool"] == tool)
        .collect()
}

/// The audit line of the call of `tool` after the first `seen`, once it is
/// logged (which is when the call is over).
async fn audit_after(server: &Server, tool: &str, seen: usize) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(line) = audits(server, tool).into_iter().nth(seen) {
            return line;
        }
        assert!(Instant::now() < deadline, "no audit line for {tool}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The server's open descriptors once its start-up cleanup (a walk of the
/// workdir for abandoned temporary files, in the background) is over.
async fn descriptors_at_rest(server: &Server) -> Vec<String> {
    let deadline = Instant::now() + TIMEOUT;
    let cleaned = |line: &String| {
        serde_json::from_str::<Value>(line).is_ok_and(|l| l["event"] == "temp_cleanup")
    };
    while !server.stderr().iter().any(cleaned) {
        assert!(Instant::now() < deadline, "no temp_cleanup log line");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.open_descriptors()
}

/// Starts a call of `tool(args)` cancellable with `notifications/cancelled`.
async fn start_call(server: &Server, tool: &str, args: Value) -> RequestHandle<RoleClient> {
    server
        .client()
        .peer()
        .send_cancellable_request(call_request(tool, args), PeerRequestOptions::no_options())
        .await
        .unwrap()
}

/// Calls `tool(args)`, waits for its first progress report, cancels it
/// with `notifications/cancelled`, and returns the reports received and
/// the call's audit line. Fails if the call ends before it reports.
async fn cancel_after_first_progress(
    server: &Server,
    tool: &str,
    args: Value,
) -> (Vec<ProgressNotificationParam>, Value) {
    server.clear_progress();
    let seen = audits(server, tool).len();
    let handle = start_call(server, tool, args).await;
    let token = handle.progress_token.clone();
    let deadline = Instant::now() + TIMEOUT;
    while server.progress().is_empty() {
        assert_eq!(
            audits(server, tool).len(),
            seen,
            "{tool} ended before it reported any progress"
        );
        assert!(Instant::now() < deadline, "{tool} never reported progress");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    handle.cancel(Some("test".to_owned())).await.unwrap();
    let line = audit_after(server, tool, seen).await;
    let progress = server.progress();
    assert!(
        progress.iter().all(|p| p.progress_token == token),
        "{progress:?}"
    );
    (progress, line)
}

/// The counts of `progress`, checked to grow strictly.
fn growing(progress: &[ProgressNotificationParam]) -> Vec<f64> {
    let counts: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    assert!(
        counts.first().is_some_and(|c| *c > 0.0) && counts.windows(2).all(|w| w[0] < w[1]),
        "not growing from above zero: {counts:?}"
    );
    counts
}

fn messages_end_with(progress: &[ProgressNotificationParam], what: &str) {
    assert!(
        progress
            .iter()
            .all(|p| p.message.as_deref().is_some_and(|m| m.ends_with(what))),
        "{progress:?}"
    );
}

#[tokio::test]
async fn a_long_search_reports_progress_and_stops_when_cancelled() {
    let t = big_tree();
    let server = Server::with_workdir("demo", &t.root()).await;

    // With a token: progress arrives at a bounded rate while the search
    // runs, and the answer is complete.
    let started = Instant::now();
    server.ok("search_text", slow_search()).await;
    let took = started.elapsed();
    let progress = server.progress();
    assert!(
        !progress.is_empty(),
        "no progress in a search of {FILES} files that took {took:?}"
    );
    let counts = growing(&progress);
    messages_end_with(&progress, "entries walked");
    // At most one report per 250 ms interval (plus one for the edges).
    let bound = took.as_millis() / 250 + 1;
    assert!(
        counts.len() as u128 <= bound,
        "{} reports in {took:?}",
        counts.len()
    );
    eprintln!(
        "progress: {} reports in {took:?} over {FILES} files, last at {} entries",
        counts.len(),
        counts[counts.len() - 1]
    );

    // Cancelled once under way: the search ends, and every descriptor it
    // opened is closed again.
    let before = descriptors_at_rest(&server).await;
    let (_, line) = cancel_after_first_progress(&server, "search_text", slow_search()).await;
    assert_eq!(line["error_code"], "REQUEST_CANCELLED", "{line}");
    assert_eq!(server.open_descriptors(), before, "descriptors left open");
}

#[tokio::test]
async fn a_cancelled_find_stops_and_frees_its_descriptors() {
    let t = big_tree();
    let server = Server::with_workdir("demo", &t.root()).await;
    let before = descriptors_at_rest(&server).await;
    // A find reads directories only: over this tree it is over in a few
    // progress intervals at most, so it is cancelled shortly after it
    // starts rather than after its first report. A find that a stalled
    // test thread let finish before the cancel proves nothing either way:
    // it is tried again, a few times.
    let mut outcomes = Vec::new();
    for attempt in 0..5 {
        let handle = start_call(
            &server,
            "find_files",
            json!({"workdir": "demo", "pattern": "*.nowhere"}),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        handle.cancel(Some("test".to_owned())).await.unwrap();
        let line = audit_after(&server, "find_files", attempt).await;
        let finished_first = line["success"] == true;
        outcomes.push(line);
        if !finished_first {
            break;
        }
    }
    let line = outcomes.last().unwrap();
    assert_eq!(
        line["error_code"], "REQUEST_CANCELLED",
        "the find was not stopped (each attempt may have ended before its cancel): {outcomes:?}"
    );
    assert_eq!(server.open_descriptors(), before, "descriptors left open");
    // The server serves on.
    let found = server
        .ok(
            "find_files",
            json!({"workdir": "demo", "pattern": "f000.txt", "path": "d000"}),
        )
        .await;
    assert_eq!(found["returned"], 1, "{found}");
}

/// The largest binary transfer a workdir may allow (1 GiB).
const MAX_TRANSFER: u64 = 1 << 30;

/// A server over `t` as `demo`, read-write, with binary transfers of up to
/// [`MAX_TRANSFER`].
async fn binary_server(t: &TempWorkdir) -> Server {
    let spec = format!("demo={}:rw", t.root().display());
    let limit = MAX_TRANSFER.to_string();
    Server::start(
        &["--workdir", &spec],
        &[
            ("SERVERFS_BINARY_TRANSFER_ENABLED", "true"),
            ("SERVERFS_MAX_BINARY_TRANSFER_BYTES", &limit),
        ],
    )
    .await
}

#[tokio::test]
async fn a_large_ranged_download_reports_progress_and_stops_when_cancelled() {
    // A sparse file of 1 GiB: no disk used, and a range of all but its
    // first page reads (and hashes) for far longer than one progress
    // interval.
    let t = TempWorkdir::new();
    std::fs::File::create(t.root().join("big.bin"))
        .unwrap()
        .set_len(MAX_TRANSFER)
        .unwrap();
    let server = binary_server(&t).await;
    let before = descriptors_at_rest(&server).await;
    let (progress, line) = cancel_after_first_progress(
        &server,
        "download_binary_file",
        json!({"workdir": "demo", "path": "big.bin", "offset": 4096,
               "max_bytes": MAX_TRANSFER - 4096}),
    )
    .await;
    let counts = growing(&progress);
    messages_end_with(&progress, "bytes read");
    assert!(
        counts.iter().all(|c| *c < (MAX_TRANSFER - 4096) as f64),
        "the whole range was read before the cancel: {counts:?}"
    );
    assert_eq!(line["error_code"], "REQUEST_CANCELLED", "{line}");
    assert_eq!(server.open_descriptors(), before, "descriptors left open");
}

#[tokio::test]
async fn a_large_upload_reports_the_bytes_it_decoded() {
    // 10 MiB: decoding and hashing it takes a few progress intervals, and
    // its base64 stays under the 16 MiB line that rmcp's stdio transport
    // accepts.
    let t = TempWorkdir::new();
    let server = binary_server(&t).await;
    let data: Vec<u8> = (0..=250u8).cycle().take(10 << 20).collect();
    let uploaded = server
        .ok(
            "upload_binary_file",
            json!({"workdir": "demo", "path": "up.bin", "data_base64": STANDARD.encode(&data)}),
        )
        .await;
    let sha256: String = Sha256::digest(&data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(uploaded["bytes_written"], data.len(), "{uploaded}");
    assert_eq!(uploaded["sha256"], sha256);
    assert!(std::fs::read(t.root().join("up.bin")).unwrap() == data);
    let progress = server.progress();
    assert!(!progress.is_empty(), "no progress in a 10 MiB upload");
    let counts = growing(&progress);
    assert!(counts.iter().all(|c| *c <= data.len() as f64), "{counts:?}");
    assert!(
        progress.iter().all(|p| p.total == Some(data.len() as f64)
            && p.message
                .as_deref()
                .is_some_and(|m| m.contains("bytes decoded"))),
        "{progress:?}"
    );
}

#[tokio::test]
async fn a_long_poll_of_an_agent_task_sends_a_heartbeat_and_stops_when_cancelled() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = start_long_task(&server).await;

    // The task runs on for a minute: a 7 s long-poll waits it out, with one
    // heartbeat at 5 s (the heartbeat's step) out of 7.
    server.clear_progress();
    let view = server
        .ok(
            "get_agent_task",
            json!({"task_id": task, "wait_seconds": 7}),
        )
        .await;
    assert_eq!(view["status"], "running", "{view}");
    let beats = server.progress();
    let seen: Vec<(f64, Option<f64>)> = beats.iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(seen, [(5.0, Some(7.0))], "{beats:?}");
    messages_end_with(&beats, "for the task to change");

    // Cancelled after its first heartbeat, a long-poll of 30 s ends at once.
    let (beats, line) = cancel_after_first_progress(
        &server,
        "get_agent_task",
        json!({"task_id": task, "wait_seconds": 30}),
    )
    .await;
    assert_eq!(beats.len(), 1, "{beats:?}");
    assert_eq!(line["error_code"], "REQUEST_CANCELLED", "{line}");
    server
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
}

#[tokio::test]
async fn without_a_progress_token_no_progress_is_sent() {
    // rmcp's client always sends a token, so this speaks JSON-RPC itself.
    let t = big_tree();
    let spec = format!("demo={}", t.root().display());
    let mut child = tokio::process::Command::new(binary())
        .args(["serve", "--workdir", &spec])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = async |message: Value| {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    // The same search twice: without a token, then with one. The second
    // shows the search is long enough to report progress, so the first
    // one's silence is the missing token's doing, whatever the machine's
    // speed.
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search_text", "arguments": slow_search()}}))
    .await;
    let without = progress_until_answer(&mut stdout, 2).await;
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "search_text", "arguments": slow_search(),
                           "_meta": {"progressToken": "with-token"}}}))
    .await;
    let with = progress_until_answer(&mut stdout, 3).await;
    assert!(without.is_empty(), "progress without a token: {without:?}");
    assert!(!with.is_empty(), "no progress even with a token");
    assert!(
        with.iter()
            .all(|p| p["params"]["progressToken"] == "with-token"),
        "{with:?}"
    );
    eprintln!(
        "progress: none without a token, {} reports with one",
        with.len()
    );
}

/// Reads the raw client's stdout until the answer to request `id`, which
/// must be a success; the progress notifications seen on the way.
async fn progress_until_answer(
    stdout: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    id: u64,
) -> Vec<Value> {
    let mut progress = Vec::new();
    loop {
        let line = tokio::time::timeout(TIMEOUT, stdout.next_line())
            .await
            .unwrap()
            .unwrap()
            .expect("the server closed stdout");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            assert_eq!(message["result"]["isError"], json!(false), "{message}");
            return progress;
        }
        if message["method"] == "notifications/progress" {
            progress.push(message);
        }
    }
}
