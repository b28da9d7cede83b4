//! `serverfs-bench bridge`: the Agent Bridge's RPC latency over its real
//! Unix socket.
//!
//! The release `serverfs-agent-bridge` is started on a throw-away
//! configuration (fake runtime only, `max_active_tasks = 64`, every path
//! under one temporary directory, an environment holding nothing but
//! `PATH` and `HOME`) and spoken to in raw JSON lines, the way the MCP
//! server's client will: one request, one response line, in order, on a
//! persistent connection. No client library sits between the clock and the
//! socket, so the figures are the Bridge's, not a client's.
//!
//! Measured, in one run:
//!
//! * `task.get` round trip of a finished task, on one connection, then with
//!   N concurrent clients (one connection each);
//! * submit → first event: from sending `task.submit` (`fake: complete x`,
//!   profile `review`, so no writer lease is involved) until `task.events`
//!   first returns an event, polling back to back on the same connection;
//!   each task is then waited for (untimed) before the client submits the
//!   next;
//! * the baseline, at the same concurrency, in rounds alternating with the
//!   `task.get` ones: `runtime.list` (the same framing, decoding, dispatch
//!   and encoding, but no store access), shown as the baseline column so
//!   each figure also reads as a ratio; plus a raw Unix-socket line echo
//!   inside this process, the floor any socket protocol pays here.
//!
//! The Bridge is started here rather than with `serverfs-testkit`'s
//! harness (`bridge::Setup`) and binary locator (`binaries`): the testkit
//! is a dev-dependency only (with the mock model and the mock Codex App
//! Server, the WebSocket stack among them), and this benchmark is an
//! ordinary binary, so using it would put test fixtures into a release
//! build. The locator would not fit either: it builds the binary in the
//! profile of a running test (`target/<profile>/deps`), while this measures
//! the release binary it is given.
//!
//! Clients and Bridge share the machine's cores, as the MCP server and the
//! Bridge will; with 50 clients on two cores the figures are dominated by
//! queueing, which is what they are meant to show. Every store operation
//! runs on the store's one thread and every commit is fsynced, so with 50
//! clients the pollers themselves are most of the load a submission waits
//! behind.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::process::{Child, Command};
use tokio::sync::Barrier;
use tokio::task::JoinSet;

use crate::BridgeArgs;
use crate::measure::percentile;
use crate::report::Row;
use crate::rss::peak_rss_mib;

/// Every request is bounded, so a wedged Bridge fails the run instead of
/// hanging it.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the Bridge may take to answer its first `runtime.list`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a graceful stop (SIGTERM) may take; the Bridge's own bounds
/// add up to well under this.
const STOP_TIMEOUT: Duration = Duration::from_secs(45);

/// The Bridge's own ceiling on active tasks is configured to this, the
/// configuration's maximum; each client has at most one task active.
const MAX_ACTIVE_TASKS: usize = 64;

/// The target the `task.get` p50 is compared with (printed, never
/// asserted).
const TASK_GET_TARGET: &str = "≤ 0.5 ms";

/// The prompt of every benchmark task: one directive, no interaction.
const PROMPT: &str = "fake: complete x";

/// Rounds per round-trip figure; each round measures `task.get` and then
/// `runtime.list`, so drift on the machine affects both alike.
const ROUNDS: usize = 2;

/// Counts as requested on the command line, with `--quick` applied.
struct Plan {
    calls: usize,
    clients: usize,
    submits: usize,
}

impl Plan {
    fn of(args: &BridgeArgs) -> Result<Plan, String> {
        let plan = Plan {
            calls: args.calls.unwrap_or(if args.quick { 200 } else { 2000 }),
            clients: args.clients,
            submits: args.submits.unwrap_or(if args.quick { 5 } else { 20 }),
        };
        if plan.clients == 0 || plan.clients > MAX_ACTIVE_TASKS {
            return Err(format!(
                "--clients must be 1..={MAX_ACTIVE_TASKS} (each client keeps one task active)"
            ));
        }
        if plan.calls < ROUNDS || plan.submits == 0 {
            return Err(format!(
                "--calls must be at least {ROUNDS} and --submits at least 1"
            ));
        }
        Ok(plan)
    }
}

/// Runs every Bridge measurement and returns the table rows.
pub async fn run(args: &BridgeArgs) -> Result<Vec<Row>, String> {
    let plan = Plan::of(args)?;
    let binary =
        std::path::absolute(&args.bridge).map_err(|e| format!("{}: {e}", args.bridge.display()))?;
    if !binary.exists() {
        return Err(format!(
            "{} not found; run `cargo build --release -p serverfs-agent-bridge` first",
            binary.display()
        ));
    }
    // Short, so the socket path fits `sun_path`; 0700, so the Bridge's
    // directory checks pass.
    let scratch = tempfile::Builder::new()
        .prefix("sfbb")
        .tempdir()
        .map_err(|e| format!("creating a temporary directory: {e}"))?;
    let layout = Layout::create(scratch.path())?;
    let mut bridge = Bridge::start(&binary, &layout).await?;
    let measured = measure(&plan, &layout, &bridge).await;
    let stopped = bridge.stop().await;
    let mut rows = match measured {
        Ok(rows) => rows,
        Err(e) => return Err(format!("{e}{}", tail_of(&layout.log))),
    };
    stopped.map_err(|e| format!("{e}{}", tail_of(&layout.log)))?;
    if let Some(rss) = bridge.peak_rss_mib {
        rows.push(Row {
            figure: "Bridge peak RSS over the run".to_owned(),
            serverfs: rss,
            peer: None,
            ratio: None,
            unit: "MiB",
            target: "",
        });
    }
    Ok(rows)
}

async fn measure(plan: &Plan, layout: &Layout, bridge: &Bridge) -> Result<Vec<Row>, String> {
    let mut rows = vec![Row {
        figure: "cold start to the first runtime.list answer".to_owned(),
        serverfs: millis(bridge.cold_start),
        peer: None,
        ratio: None,
        unit: "ms",
        target: "",
    }];
    let task_id = finished_task(&layout.socket).await?;
    let get = json!({ "task_id": task_id });
    let list = json!({});
    // runtime.list p50 and p95 at each concurrency: the baseline of every
    // figure measured at that concurrency.
    let mut baselines = Vec::new();

    for clients in [1, plan.clients] {
        let calls = plan.calls / ROUNDS;
        let (mut gets, mut lists) = (Vec::new(), Vec::new());
        let (mut get_time, mut list_time) = (Duration::ZERO, Duration::ZERO);
        for _ in 0..ROUNDS {
            let (samples, wall) =
                round_trips(&layout.socket, clients, calls, "task.get", &get).await?;
            gets.extend(samples);
            get_time += wall;
            let (samples, wall) =
                round_trips(&layout.socket, clients, calls, "runtime.list", &list).await?;
            lists.extend(samples);
            list_time += wall;
        }
        let baseline = (percentile(&lists, 0.5), percentile(&lists, 0.95));
        baselines.push(baseline);
        let who = clients_label(clients);
        rows.push(Row {
            figure: format!("task.get p50, {who} (vs runtime.list)"),
            serverfs: percentile(&gets, 0.5),
            peer: Some(baseline.0),
            ratio: None,
            unit: "ms",
            target: TASK_GET_TARGET,
        });
        rows.push(Row {
            figure: format!("task.get p95, {who} (vs runtime.list)"),
            serverfs: percentile(&gets, 0.95),
            peer: Some(baseline.1),
            ratio: None,
            unit: "ms",
            target: "",
        });
        if clients > 1 {
            rows.push(Row {
                figure: format!("task.get throughput, {who} (vs runtime.list)"),
                serverfs: gets.len() as f64 / get_time.as_secs_f64(),
                peer: Some(lists.len() as f64 / list_time.as_secs_f64()),
                ratio: None,
                unit: "calls/s",
                target: "",
            });
        }
    }

    for (clients, baseline) in [1, plan.clients].into_iter().zip(baselines) {
        let firsts = first_events(&layout.socket, clients, plan.submits).await?;
        let who = clients_label(clients);
        rows.push(Row {
            figure: format!("submit → first event p50, {who} (vs runtime.list)"),
            serverfs: percentile(&firsts, 0.5),
            peer: Some(baseline.0),
            ratio: None,
            unit: "ms",
            target: "",
        });
        rows.push(Row {
            figure: format!("submit → first event p95, {who} (vs runtime.list)"),
            serverfs: percentile(&firsts, 0.95),
            peer: Some(baseline.1),
            ratio: None,
            unit: "ms",
            target: "",
        });
    }

    for clients in [1, plan.clients] {
        let echoes = echo_round_trips(&layout.echo_socket, clients, plan.calls).await?;
        rows.push(Row {
            figure: format!(
                "raw Unix-socket line echo p50, {}, in-process (floor)",
                clients_label(clients)
            ),
            serverfs: percentile(&echoes, 0.5),
            peer: None,
            ratio: None,
            unit: "ms",
            target: "",
        });
    }
    Ok(rows)
}

fn clients_label(clients: usize) -> String {
    if clients == 1 {
        "1 client".to_owned()
    } else {
        format!("{clients} clients")
    }
}

/// Where everything of one run lives, under one temporary directory.
struct Layout {
    config: PathBuf,
    socket: PathBuf,
    echo_socket: PathBuf,
    log: PathBuf,
}

impl Layout {
    /// Writes the configuration: one read-write workdir allowing only the
    /// fake runtime, the Bridge's socket, locks and state beside it.
    fn create(root: &Path) -> Result<Layout, String> {
        let workdir = root.join("work");
        std::fs::create_dir(&workdir).map_err(|e| format!("creating the workdir: {e}"))?;
        let socket = root.join("run").join("bridge.sock");
        let config = root.join("serverfs.toml");
        let text = format!(
            "[server]\n\
             log_level = \"warning\"\n\
             \n\
             [agent]\n\
             enabled = true\n\
             socket = {socket}\n\
             lock_dir = {locks}\n\
             state_dir = {state}\n\
             max_active_tasks = {MAX_ACTIVE_TASKS}\n\
             \n\
             [[workdirs]]\n\
             alias = \"bench\"\n\
             path = {workdir}\n\
             read_only = false\n\
             agent_mode = \"workspace-write\"\n\
             agent_runtimes = [\"fake\"]\n",
            socket = toml_string(&socket)?,
            locks = toml_string(&root.join("run").join("locks"))?,
            state = toml_string(&root.join("state"))?,
            workdir = toml_string(&workdir)?,
        );
        std::fs::write(&config, text).map_err(|e| format!("writing the configuration: {e}"))?;
        Ok(Layout {
            config,
            socket,
            echo_socket: root.join("echo.sock"),
            log: root.join("bridge.log"),
        })
    }
}

/// A path as a TOML basic string (JSON string syntax is a subset of it).
fn toml_string(path: &Path) -> Result<String, String> {
    let text = path
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8", path.display()))?;
    serde_json::to_string(text).map_err(|e| e.to_string())
}

/// The running daemon.
struct Bridge {
    child: Child,
    cold_start: Duration,
    peak_rss_mib: Option<f64>,
}

impl Bridge {
    /// Starts `serve` and waits until `runtime.list` is answered.
    async fn start(binary: &Path, layout: &Layout) -> Result<Bridge, String> {
        let log = std::fs::File::create(&layout.log)
            .map_err(|e| format!("creating the Bridge log: {e}"))?;
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .arg("--config")
            .arg(&layout.config)
            // Nothing of the caller's environment (a proxy endpoint, a
            // SERVERFS_CONFIG) may change what is measured.
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", layout.config.parent().unwrap_or(Path::new("/")))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        loop {
            if let Ok(mut client) = Client::connect(&layout.socket).await
                && client.call("runtime.list", &json!({})).await.is_ok()
            {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                let tail = tail_of(&layout.log);
                return Err(format!("the Bridge exited at start-up ({status}){tail}"));
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "the Bridge did not answer within {START_TIMEOUT:?}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(Bridge {
            child,
            cold_start: started.elapsed(),
            peak_rss_mib: None,
        })
    }

    /// Reads the peak RSS, then stops the Bridge with SIGTERM, as systemd
    /// would, and expects a clean exit and the socket removed.
    async fn stop(&mut self) -> Result<(), String> {
        let pid = self
            .child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
            .ok_or("the Bridge has already exited")?;
        self.peak_rss_mib = peak_rss_mib(pid.as_raw_nonzero().get().unsigned_abs());
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)
            .map_err(|e| format!("signalling the Bridge: {e}"))?;
        let status = tokio::time::timeout(STOP_TIMEOUT, self.child.wait())
            .await
            .map_err(|_| format!("the Bridge did not stop within {STOP_TIMEOUT:?}"))?
            .map_err(|e| format!("waiting for the Bridge: {e}"))?;
        if !status.success() {
            return Err(format!("the Bridge stopped with {status}"));
        }
        Ok(())
    }
}

/// The last lines of the Bridge's log, for an error message.
fn tail_of(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(10)..].join("\n");
    if tail.is_empty() {
        String::new()
    } else {
        format!("\nBridge log (last lines):\n{tail}")
    }
}

/// One persistent connection speaking raw JSON lines.
struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    next_id: u64,
    line: String,
}

impl Client {
    async fn connect(socket: &Path) -> Result<Client, String> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|e| format!("connecting to the socket: {e}"))?;
        let (reader, writer) = stream.into_split();
        Ok(Client {
            reader: BufReader::new(reader),
            writer,
            next_id: 0,
            line: String::new(),
        })
    }

    /// Writes `frame` (one line) and waits for one line back; the elapsed
    /// time covers exactly the socket round trip. The answer is left in
    /// `self.line`.
    async fn round_trip(&mut self, frame: &[u8]) -> Result<Duration, String> {
        self.line.clear();
        let started = Instant::now();
        let exchange = async {
            self.writer.write_all(frame).await?;
            self.reader.read_line(&mut self.line).await
        };
        let read = tokio::time::timeout(CALL_TIMEOUT, exchange)
            .await
            .map_err(|_| "a request timed out".to_owned())?
            .map_err(|e| format!("socket error: {e}"))?;
        let elapsed = started.elapsed();
        if read == 0 {
            return Err("the Bridge closed the connection".to_owned());
        }
        Ok(elapsed)
    }

    /// One Bridge request; returns the round trip and the `result`, or the
    /// error code as the error.
    async fn call(&mut self, method: &str, params: &Value) -> Result<(Duration, Value), String> {
        self.next_id += 1;
        let mut frame = serde_json::to_vec(&json!({
            "protocol_version": 1,
            "request_id": format!("b{}", self.next_id),
            "method": method,
            "params": params,
        }))
        .map_err(|e| e.to_string())?;
        frame.push(b'\n');
        let elapsed = self.round_trip(&frame).await?;
        let mut response: Value = serde_json::from_str(&self.line)
            .map_err(|e| format!("{method}: the response is not JSON: {e}"))?;
        if response["ok"] != json!(true) {
            return Err(format!("{method} failed: {}", response["error"]));
        }
        Ok((elapsed, response["result"].take()))
    }
}

/// Submits one task and waits until it has finished: the subject of the
/// `task.get` figures (a finished task's view is the largest: manifest,
/// result summary).
async fn finished_task(socket: &Path) -> Result<String, String> {
    let mut client = Client::connect(socket).await?;
    let task_id = submit(&mut client).await?;
    wait_finished(&mut client, &task_id).await?;
    Ok(task_id)
}

async fn submit(client: &mut Client) -> Result<String, String> {
    let params = json!({
        "runtime": "fake",
        "workdir": "bench",
        "path": "",
        "profile": "review",
        "prompt": PROMPT,
    });
    let (_, result) = client.call("task.submit", &params).await?;
    result["task_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "task.submit returned no task_id".to_owned())
}

/// Polls `task.get` until the task is terminal; it must have succeeded.
async fn wait_finished(client: &mut Client, task_id: &str) -> Result<(), String> {
    let params = json!({ "task_id": task_id });
    let started = Instant::now();
    loop {
        let (_, view) = client.call("task.get", &params).await?;
        match view["status"].as_str() {
            Some("succeeded") => return Ok(()),
            Some("failed" | "cancelled" | "interrupted") => {
                return Err(format!(
                    "a benchmark task ended {} ({})",
                    view["status"], view["error_code"]
                ));
            }
            _ if started.elapsed() > CALL_TIMEOUT => {
                return Err("a benchmark task did not finish".to_owned());
            }
            _ => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
}

/// `clients` connections, each making `calls` sequential calls of
/// `method`; all start together. Returns every round trip and the wall
/// time of the whole phase.
async fn round_trips(
    socket: &Path,
    clients: usize,
    calls: usize,
    method: &'static str,
    params: &Value,
) -> Result<(Vec<Duration>, Duration), String> {
    let gate = Arc::new(Barrier::new(clients + 1));
    let mut workers = JoinSet::new();
    for _ in 0..clients {
        let mut client = Client::connect(socket).await?;
        let gate = Arc::clone(&gate);
        let params = params.clone();
        workers.spawn(async move {
            gate.wait().await;
            let mut samples = Vec::with_capacity(calls);
            for _ in 0..calls {
                samples.push(client.call(method, &params).await?.0);
            }
            Ok::<_, String>(samples)
        });
    }
    gate.wait().await;
    let started = Instant::now();
    let samples = collect(workers).await?;
    Ok((samples, started.elapsed()))
}

/// `clients` connections, each submitting `submits` tasks one after the
/// other and timing submit → first event; a task is waited for (untimed)
/// before the next one, so at most `clients` tasks are active.
async fn first_events(
    socket: &Path,
    clients: usize,
    submits: usize,
) -> Result<Vec<Duration>, String> {
    let gate = Arc::new(Barrier::new(clients + 1));
    let mut workers = JoinSet::new();
    for _ in 0..clients {
        let mut client = Client::connect(socket).await?;
        let gate = Arc::clone(&gate);
        workers.spawn(async move {
            gate.wait().await;
            let mut samples = Vec::with_capacity(submits);
            for _ in 0..submits {
                let started = Instant::now();
                let task_id = submit(&mut client).await?;
                let params = json!({ "task_id": task_id, "limit": 1 });
                loop {
                    let (_, page) = client.call("task.events", &params).await?;
                    if page["events"].as_array().is_some_and(|e| !e.is_empty()) {
                        break;
                    }
                    if started.elapsed() > CALL_TIMEOUT {
                        return Err("no event arrived for a submitted task".to_owned());
                    }
                }
                samples.push(started.elapsed());
                wait_finished(&mut client, &task_id).await?;
            }
            Ok::<_, String>(samples)
        });
    }
    gate.wait().await;
    collect(workers).await
}

/// The floor: a line echoed by a Unix-socket server inside this process,
/// with the same client, the same line length as a `task.get` request and
/// the same concurrency.
async fn echo_round_trips(
    socket: &Path,
    clients: usize,
    calls: usize,
) -> Result<Vec<Duration>, String> {
    let listener = tokio::net::UnixListener::bind(socket)
        .map_err(|e| format!("binding the echo socket: {e}"))?;
    let server = tokio::spawn(async move {
        let mut connections = JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            connections.spawn(async move {
                let (reader, mut writer) = stream.into_split();
                let mut reader = BufReader::new(reader);
                let mut line = String::new();
                while matches!(reader.read_line(&mut line).await, Ok(n) if n > 0) {
                    if writer.write_all(line.as_bytes()).await.is_err() {
                        break;
                    }
                    line.clear();
                }
            });
        }
    });
    let frame = format!(
        "{}\n",
        json!({
            "protocol_version": 1,
            "request_id": "b1",
            "method": "task.get",
            "params": {"task_id": "agt_000000000000000000000000"},
        })
    );
    let gate = Arc::new(Barrier::new(clients + 1));
    let mut workers = JoinSet::new();
    for _ in 0..clients {
        let mut client = Client::connect(socket).await?;
        let gate = Arc::clone(&gate);
        let frame = frame.clone();
        workers.spawn(async move {
            gate.wait().await;
            let mut samples = Vec::with_capacity(calls);
            for _ in 0..calls {
                samples.push(client.round_trip(frame.as_bytes()).await?);
            }
            Ok::<_, String>(samples)
        });
    }
    gate.wait().await;
    let samples = collect(workers).await;
    server.abort();
    let _ = std::fs::remove_file(socket);
    samples
}

/// Every worker's samples, or the first failure.
async fn collect(
    mut workers: JoinSet<Result<Vec<Duration>, String>>,
) -> Result<Vec<Duration>, String> {
    let mut all = Vec::new();
    while let Some(joined) = workers.join_next().await {
        let samples = joined.map_err(|e| format!("a benchmark client failed: {e}"))??;
        all.extend(samples);
    }
    Ok(all)
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
