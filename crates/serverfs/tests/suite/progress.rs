//! Progress and cancellation of long calls (issue 17): a search over a
//! tree of 60,000 files reports `notifications/progress` when the request
//! carries a `progressToken` (rmcp's client puts one on every request) and
//! none when it does not (a raw JSON-RPC client); a client's
//! `notifications/cancelled` ends the search, with its descriptors closed
//! (the delay is printed: the bound is 200 ms, and tests make no
//! timing assertions).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::{TIMEOUT, binary};

/// Files in the tree: over the 50,000 the issue asks for.
const FILES: usize = 60_000;

/// The tree: `FILES` small files in 600 directories, none of which holds
/// the regular expression searched for, so every search reads them all.
fn big_tree() -> TempWorkdir {
    let t = TempWorkdir::new();
    let body = "some words on a line\nand another line of text\n";
    for dir in 0..600 {
        let path = t.root().join(format!("d{dir:03}"));
        std::fs::create_dir(&path).unwrap();
        for file in 0..FILES / 600 {
            std::fs::write(path.join(format!("f{file:03}.txt")), body).unwrap();
        }
    }
    t
}

/// A search that reads every file of [`big_tree`] and finds nothing.
fn slow_search() -> Value {
    json!({"workdir": "demo", "query": "z[0-9]+q", "mode": "regex"})
}

/// Records the progress notifications it receives, with their arrival.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<(Instant, ProgressNotificationParam)>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push((Instant::now(), params));
    }
}

/// `serverfs serve` on `root`, an rmcp client that records progress, the
/// child's pid and its stderr lines with their arrival times.
struct Served {
    client: RunningService<RoleClient, Recorder>,
    recorder: Recorder,
    pid: u32,
    stderr: Arc<Mutex<Vec<(Instant, String)>>>,
}

async fn serve(t: &TempWorkdir) -> Served {
    let mut command = tokio::process::Command::new(binary());
    let spec = format!("demo={}", t.root().display());
    command
        .args(["serve", "--workdir", &spec])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = transport.id().expect("a pid");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let mut reader = BufReader::new(stderr.expect("stderr")).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = reader.next_line().await {
            sink.lock().unwrap().push((Instant::now(), line));
        }
    });
    let recorder = Recorder::default();
    let client = tokio::time::timeout(TIMEOUT, recorder.clone().serve(transport))
        .await
        .unwrap()
        .unwrap();
    Served {
        client,
        recorder,
        pid,
        stderr: lines,
    }
}

impl Served {
    /// The `tool_call` audit line of `tool`, once it is logged, and when
    /// it arrived.
    async fn audited(&self, tool: &str) -> (Instant, Value) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let found = self.stderr.lock().unwrap().iter().find_map(|(at, line)| {
                let line: Value = serde_json::from_str(line).ok()?;
                (line["event"] == "tool_call" && line["tool"] == tool).then_some((*at, line))
            });
            if let Some(found) = found {
                return found;
            }
            assert!(Instant::now() < deadline, "no audit line for {tool}");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn open_descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .unwrap()
            .count()
    }
}

fn search_request() -> ClientRequest {
    let Value::Object(args) = slow_search() else {
        unreachable!()
    };
    ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("search_text").with_arguments(args),
    ))
}

#[tokio::test]
async fn a_long_search_reports_progress_and_stops_when_cancelled() {
    let t = big_tree();
    let served = serve(&t).await;
    let peer = served.client.peer().clone();

    // With a token (rmcp sets one on every request): progress arrives at a
    // bounded rate while the search runs, and the answer is complete.
    let started = Instant::now();
    let handle = peer
        .send_cancellable_request(search_request(), PeerRequestOptions::no_options())
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    tokio::time::timeout(TIMEOUT, handle.await_response())
        .await
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    let progress = served.recorder.progress.lock().unwrap().clone();
    assert!(
        !progress.is_empty(),
        "no progress in a search of {FILES} files that took {took:?}"
    );
    let counts: Vec<f64> = progress.iter().map(|(_, p)| p.progress).collect();
    assert!(
        progress.iter().all(|(_, p)| p.progress_token == token),
        "{progress:?}"
    );
    assert!(
        counts.windows(2).all(|w| w[0] < w[1]),
        "not increasing: {counts:?}"
    );
    assert!(
        progress[0]
            .1
            .message
            .as_deref()
            .is_some_and(|m| m.ends_with("entries walked")),
        "{progress:?}"
    );
    // At most one report per 250 ms interval (plus one for the edges).
    let bound = took.as_millis() / 250 + 1;
    assert!(
        counts.len() as u128 <= bound,
        "{} reports in {took:?}",
        counts.len()
    );
    let (_, line) = served.audited("search_text").await;
    assert_eq!(line["success"], true, "{line}");
    eprintln!(
        "progress: {} reports in {took:?} over {FILES} files, last at {} entries",
        counts.len(),
        counts[counts.len() - 1]
    );

    // Cancelled once it is under way: the search ends at once, and every
    // descriptor it opened is closed again.
    served.stderr.lock().unwrap().clear();
    served.recorder.progress.lock().unwrap().clear();
    let before = served.open_descriptors();
    let handle = peer
        .send_cancellable_request(search_request(), PeerRequestOptions::no_options())
        .await
        .unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while served.recorder.progress.lock().unwrap().is_empty() {
        assert!(
            Instant::now() < deadline,
            "the second search never reported progress"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let cancelled_at = Instant::now();
    handle.cancel(Some("test".to_owned())).await.unwrap();
    let (ended_at, line) = served.audited("search_text").await;
    let latency = ended_at - cancelled_at;
    assert_eq!(line["error_code"], "REQUEST_CANCELLED", "{line}");
    // A figure, not an assertion (no timing assertions in tests): the
    // issue's bound is 200 ms.
    eprintln!(
        "cancel: the search ended {latency:?} after the cancellation (it had run {} ms)",
        line["duration_ms"]
    );
    assert_eq!(served.open_descriptors(), before, "descriptors left open");
    served.client.cancel().await.unwrap();
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
