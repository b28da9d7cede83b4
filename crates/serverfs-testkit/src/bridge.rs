//! The real `serverfs-agent-bridge` binary, run as a black box: a

//! configuration builder, a spawned daemon that is stopped on drop, two
//! clients of its socket, and what a test reads beside it (the writer
//! lease, recovery guards, a provider process tree). The one Bridge
//! harness of every crate's tests; the binary comes from
//! [`crate::binaries`].
//!
//! # Shape
//!
//! ```ignore
//! let setup = Setup::new().agent("max_active_tasks", "2");
//! let daemon = setup.start();                 // waits for the socket
//! let task = daemon.submit("fake: approval ls");
//! let view = daemon.wait_status(&task, "waiting_for_approval");
//! let error = daemon.call("task.get", json!({"task_id": "agt_x"})).unwrap_err();
//! assert_eq!(error.code, "AGENT_TASK_NOT_FOUND");
//! let status = daemon.stop();                 // SIGTERM, waits for exit
//! let again = setup.start();                  // same state dir: a restart
//! ```
//!
//! - [`Setup`] owns one temporary directory (`work/`, `state/`, `run/`,
//!   `serverfs.toml`), removed when the last `Setup`/`Daemon` holding it is
//!   dropped. Its default config has one writable workdir `demo`
//!   (`agent_mode = "workspace-write"`, runtime `fake`); `agent()` adds or
//!   overrides `[agent]` keys (raw TOML values), `workdir()` adds workdirs,
//!   `env()` adds variables for the daemon's environment.
//! - The daemon runs with a cleared environment: only `PATH`, `HOME` (the
//!   temporary directory) and whatever `Setup::env` added.
//! - [`Daemon`] SIGTERMs the process on drop, then SIGKILLs it if it has
//!   not exited within 10 s. Its stderr (JSON log lines) is collected and
//!   available through [`Daemon::stderr`].
//! - Clients: [`Daemon::call`] (one JSON request on a fresh connection,
//!   returns `result` or the error's code and message), [`RawConn`] (raw
//!   lines for malformed-frame tests, blocking std I/O with a read
//!   timeout) and [`Daemon::client`] (the typed async
//!   `serverfs_protocol::bridge::client::BridgeClient`).
//! - Polling: [`Daemon::wait_status`] / [`Daemon::wait_task`] poll
//!   `task.get` every 20 ms until a condition holds, failing after
//!   [`WAIT`].
//!
//! Everything except [`Daemon::client`] is blocking; from a
//! `#[tokio::test]` use `flavor = "multi_thread"` if you mix both.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test harness: a failed set-up step is the test failing"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use serde_json::{Value, json};
use serverfs_lease::{LeaseId, list_guards, try_acquire};
use serverfs_protocol::bridge::TaskStatus;
use serverfs_protocol::bridge::client::{BridgeClient, ClientOptions};
use tempfile::TempDir;

use crate::process::{cmdline, group_members, runs_in_group};

/// How long polling helpers wait for a condition before failing.
pub const WAIT: Duration = Duration::from_secs(10);

/// Read timeout of [`RawConn`] and call timeout of the typed client.
pub const IO_TIMEOUT: Duration = Duration::from_secs(15);

/// How long the daemon gets to create its socket, and then to serve.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The log line the daemon writes once it serves (`src/cli/serve.rs` of
/// the Bridge).
pub const SERVING: &str = "agent bridge serving";

/// How long the daemon gets to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// One `[[workdirs]]` entry. `path` is relative to the setup's root.
#[derive(Debug, Clone)]
pub struct Workdir {
    /// The alias.
    pub alias: String,
    /// Relative to [`Setup::root`]; created by [`Setup::workdir`].
    pub path: String,
    /// `read_only`.
    pub read_only: bool,
    /// `"disabled"`, `"review"` or `"workspace-write"`.
    pub agent_mode: String,
    /// `agent_runtimes`.
    pub agent_runtimes: Vec<String>,
    /// Raw TOML lines that replace the `agent_mode` and `agent_runtimes`
    /// lines when set (a workdir without an agent policy, or one written
    /// as a test wants it).
    pub raw_lines: Option<String>,
}

impl Workdir {
    /// A writable workdir at `<root>/<alias>` with the given agent mode and
    /// runtimes.
    pub fn new(alias: &str, agent_mode: &str, runtimes: &[&str]) -> Workdir {
        Workdir {
            alias: alias.to_owned(),
            path: alias.to_owned(),
            read_only: false,
            agent_mode: agent_mode.to_owned(),
            agent_runtimes: runtimes.iter().map(|r| (*r).to_owned()).collect(),
            raw_lines: None,
        }
    }

    /// A writable workdir at `<root>/<path>` whose agent policy is
    /// `lines`, raw TOML (may be empty).
    pub fn with_lines(alias: &str, path: &str, lines: &str) -> Workdir {
        Workdir {
            path: path.to_owned(),
            raw_lines: Some(lines.to_owned()),
            ..Workdir::new(alias, "disabled", &[])
        }
    }
}

/// A daemon's configuration and directory. Cheap to clone (the directory
/// is shared); each clone can `start` the daemon on the same state.
#[derive(Debug, Clone)]
pub struct Setup {
    dir: Arc<TempDir>,
    server: BTreeMap<String, String>,
    agent: BTreeMap<String, String>,
    workdirs: Vec<Workdir>,
    env: BTreeMap<String, String>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup::new()
    }
}

impl Setup {
    /// A fresh temporary directory with the default configuration: the
    /// `demo` workdir (`<root>/work`, workspace-write, `fake`).
    pub fn new() -> Setup {
        let dir = tempfile::Builder::new()
            .prefix("sfab")
            .tempdir()
            .expect("temp dir");
        std::fs::create_dir_all(dir.path().join("work")).expect("work dir");
        Setup {
            dir: Arc::new(dir),
            server: BTreeMap::new(),
            agent: BTreeMap::new(),
            workdirs: vec![Workdir {
                alias: "demo".to_owned(),
                path: "work".to_owned(),
                read_only: false,
                agent_mode: "workspace-write".to_owned(),
                agent_runtimes: vec!["fake".to_owned()],
                raw_lines: None,
            }],
            env: BTreeMap::new(),
        }
    }

    /// Sets an `[agent]` key to a raw TOML value, e.g.
    /// `.agent("max_active_tasks", "2")` or `.agent("peer_gid", "65534")`
    /// or `.agent("proxy_runtimes", r#"["fake"]"#)`. Strings must carry
    /// their quotes. `enabled`, `socket`, `lock_dir` and `state_dir` are
    /// preset and may be overridden too.
    pub fn agent(mut self, key: &str, toml_value: &str) -> Setup {
        self.agent.insert(key.to_owned(), toml_value.to_owned());
        self
    }

    /// Sets a `[server]` key (a default every workdir inherits) to a raw
    /// TOML value, e.g. `.server("approval_paths", r#""redacted""#)`.
    pub fn server(mut self, key: &str, toml_value: &str) -> Setup {
        self.server.insert(key.to_owned(), toml_value.to_owned());
        self
    }

    /// Adds a workdir; its directory is created.
    pub fn workdir(mut self, workdir: Workdir) -> Setup {
        std::fs::create_dir_all(self.root().join(&workdir.path)).expect("workdir dir");
        self.workdirs.push(workdir);
        self
    }

    /// Replaces the default `demo` workdir (and any added ones) with none;
    /// chain [`Setup::workdir`] after it.
    pub fn without_workdirs(mut self) -> Setup {
        self.workdirs.clear();
        self
    }

    /// Adds an environment variable for the daemon.
    pub fn env(mut self, key: &str, value: &str) -> Setup {
        self.env.insert(key.to_owned(), value.to_owned());
        self
    }

    /// The temporary directory everything lives in.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The default workdir's directory (`<root>/work`).
    pub fn work_dir(&self) -> PathBuf {
        self.root().join("work")
    }

    /// `<root>/state`, the Bridge's state directory.
    pub fn state_dir(&self) -> PathBuf {
        self.root().join("state")
    }

    /// `<root>/run/bridge.sock`.
    pub fn socket(&self) -> PathBuf {
        self.root().join("run").join("bridge.sock")
    }

    /// `<root>/run/locks`, the lease lock directory.
    pub fn lock_dir(&self) -> PathBuf {
        self.root().join("run").join("locks")
    }

    /// `<root>/serverfs.toml` (written by [`Setup::write_config`]).
    pub fn config_path(&self) -> PathBuf {
        self.root().join("serverfs.toml")
    }

    /// The configuration file's text.
    pub fn config_text(&self) -> String {
        let mut agent = BTreeMap::new();
        agent.insert("enabled".to_owned(), "true".to_owned());
        agent.insert("socket".to_owned(), toml_str(&self.socket()));
        agent.insert("lock_dir".to_owned(), toml_str(&self.lock_dir()));
        agent.insert("state_dir".to_owned(), toml_str(&self.state_dir()));
        agent.extend(self.agent.clone());
        let mut text = String::new();
        if !self.server.is_empty() {
            text.push_str("[server]\n");
            for (key, value) in &self.server {
                let _ = writeln!(text, "{key} = {value}");
            }
            text.push('\n');
        }
        text.push_str("[agent]\n");
        for (key, value) in &agent {
            let _ = writeln!(text, "{key} = {value}");
        }
        for workdir in &self.workdirs {
            let policy = workdir.raw_lines.clone().unwrap_or_else(|| {
                let runtimes: Vec<String> = workdir
                    .agent_runtimes
                    .iter()
                    .map(|r| format!("{r:?}"))
                    .collect();
                format!(
                    "agent_mode = {:?}\nagent_runtimes = [{}]",
                    workdir.agent_mode,
                    runtimes.join(", ")
                )
            });
            let _ = write!(
                text,
                "\n[[workdirs]]\nalias = {:?}\npath = {}\nread_only = {}\n{policy}\n",
                workdir.alias,
                toml_str(&self.root().join(&workdir.path)),
                workdir.read_only,
            );
        }
        text
    }

    /// Writes `serverfs.toml` and returns its path.
    pub fn write_config(&self) -> PathBuf {
        let path = self.config_path();
        std::fs::write(&path, self.config_text()).expect("write config");
        path
    }

    /// A `Command` for the binary with `args` and the controlled
    /// environment (the config is written but not passed: add
    /// `--config` yourself, see [`Setup::run`]).
    pub fn command(&self, args: &[&str]) -> Command {
        self.write_config();
        let mut command = Command::new(crate::binaries::workspace_binary(
            "serverfs-agent-bridge",
            "serverfs-agent-bridge",
        ));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root())
            .envs(&self.env)
            .current_dir(self.root())
            .stdin(Stdio::null());
        command
    }

    /// Runs a one-shot subcommand (`check-config`, `inspect`, ...) with
    /// `--config <file>` appended to `args`; returns status, stdout and
    /// stderr.
    pub fn run(&self, args: &[&str]) -> (ExitStatus, String, String) {
        let config = self.write_config();
        let mut all: Vec<&str> = args.to_vec();
        let config = config.to_str().expect("utf-8 path").to_owned();
        all.extend(["--config", config.as_str()]);
        let output = self.command(&all).output().expect("run the binary");
        (
            output.status,
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Spawns `serve --config <file>` without waiting for the socket.
    pub fn spawn(&self) -> Daemon {
        let config = self.write_config();
        let mut child = self
            .command(&["serve", "--config", config.to_str().expect("utf-8 path")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serverfs-agent-bridge");
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr piped");
        let sink = Arc::clone(&stderr);
        let reader = std::thread::spawn(move || {
            let mut lines = BufReader::new(pipe);
            let mut line = String::new();
            let echo = std::env::var_os("SERVERFS_TEST_SHOW_STDERR").is_some();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                if echo {
                    eprint!("[bridge] {line}");
                }
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Daemon {
            child: Some(child),
            stderr,
            reader: Some(reader),
            setup: self.clone(),
        }
    }

    /// Spawns the daemon and waits until its socket accepts connections.
    /// Panics (with the daemon's stderr) if it exits or times out first.
    pub fn start(&self) -> Daemon {
        let mut daemon = self.spawn();
        daemon.wait_ready();
        daemon
    }

    /// [`start`](Self::start), then waits for the log line the daemon
    /// writes once its lock artifacts, store and start-up reconciliation
    /// are ready ([`SERVING`]): the socket accepts connections before
    /// that, and a client's first call would wait.
    pub fn start_serving(&self) -> Daemon {
        let mut daemon = self.start();
        let deadline = Instant::now() + START_TIMEOUT;
        while !daemon.stderr().contains(SERVING) {
            if let Some(status) = daemon.try_exit() {
                daemon.join_reader();
                panic!(
                    "the daemon exited before serving ({status}); stderr:\n{}",
                    daemon.stderr()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not start serving in time; stderr:\n{}",
                daemon.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }
}

fn toml_str(path: &Path) -> String {
    format!("{:?}", path.to_str().expect("utf-8 path"))
}

/// A bridge error as the wire carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// The stable code.
    pub code: String,
    /// The message.
    pub message: String,
}

/// A running daemon; SIGTERMed (then SIGKILLed) on drop.
#[derive(Debug)]
pub struct Daemon {
    child: Option<Child>,
    stderr: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
    setup: Setup,
}

impl Daemon {
    /// The setup it was started from (same directory).
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The socket path.
    pub fn socket(&self) -> PathBuf {
        self.setup.socket()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Everything the daemon wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// `Some(status)` once the process has exited (reaps it).
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|child| child.try_wait().expect("try_wait"))
    }

    /// Panics unless the process is still running.
    pub fn assert_alive(&mut self) {
        if let Some(status) = self.try_exit() {
            panic!("the daemon exited ({status}); stderr:\n{}", self.stderr());
        }
    }

    /// Waits until a connection to the socket succeeds.
    pub fn wait_ready(&mut self) {
        self.wait_connectable(Duration::from_millis(20));
    }

    /// Waits until a connection to the socket succeeds, trying every
    /// `pause` (with none, it only yields between tries: for a test that
    /// must act at the first moment the socket accepts).
    pub fn wait_connectable(&mut self, pause: Duration) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.try_exit() {
                self.join_reader();
                panic!(
                    "the daemon exited before serving ({status}); stderr:\n{}",
                    self.stderr()
                );
            }
            if UnixStream::connect(self.socket()).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not create its socket in time; stderr:\n{}",
                self.stderr()
            );
            if pause.is_zero() {
                std::thread::yield_now();
            } else {
                std::thread::sleep(pause);
            }
        }
    }

    /// Sends `signal` (e.g. `rustix::process::Signal::TERM`) to the daemon.
    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.pid()).expect("pid"))
            .expect("nonzero pid");
        let _ = rustix::process::kill_process(pid, signal);
    }

    /// Waits up to `limit` for the process to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.try_exit() {
                self.join_reader();
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then waits for the exit (SIGKILL and panic after 10 s).
    /// Returns the exit status; the daemon is gone afterwards and
    /// `setup().start()` may start a new one on the same state.
    pub fn stop(&mut self) -> ExitStatus {
        if let Some(status) = self.try_exit() {
            self.join_reader();
            return status;
        }
        self.signal(rustix::process::Signal::TERM);
        match self.wait_exit(STOP_TIMEOUT) {
            Some(status) => status,
            None => {
                self.kill();
                panic!(
                    "the daemon did not exit within {STOP_TIMEOUT:?} of SIGTERM; stderr:\n{}",
                    self.stderr()
                );
            }
        }
    }

    /// SIGKILL and reap (a crash, for recovery tests).
    pub fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.join_reader();
    }

    fn join_reader(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }

    /// A raw connection to the socket.
    pub fn connect(&self) -> RawConn {
        RawConn::connect(&self.socket())
    }

    /// The typed async client (call timeout [`IO_TIMEOUT`]).
    pub fn client(&self) -> BridgeClient {
        BridgeClient::new(
            self.socket(),
            ClientOptions {
                call_timeout: IO_TIMEOUT,
                ..ClientOptions::default()
            },
        )
    }

    /// Calls `method` with `params` on a fresh connection; `Ok(result)` or
    /// `Err` with the wire error. Panics on a malformed response.
    pub fn call(&self, method: &str, params: Value) -> Result<Value, WireError> {
        self.connect().call(method, params)
    }

    /// `call`, panicking on an error.
    pub fn ok(&self, method: &str, params: Value) -> Value {
        self.call(method, params.clone())
            .unwrap_or_else(|error| panic!("{method} {params} failed: {error:?}"))
    }

    /// `call`, expecting an error; returns its code.
    pub fn err(&self, method: &str, params: Value) -> String {
        match self.call(method, params.clone()) {
            Ok(result) => panic!("{method} {params} succeeded: {result}"),
            Err(error) => error.code,
        }
    }

    /// `task.submit` with the given params merged over the defaults
    /// (`runtime fake`, workdir `demo`, path `""`, profile
    /// `workspace-write`); the raw result.
    pub fn submit_with(&self, overrides: Value) -> Result<Value, WireError> {
        let mut params = json!({
            "runtime": "fake",
            "workdir": "demo",
            "path": "",
            "profile": "workspace-write",
            "prompt": "fake: complete done",
        });
        if let (Some(params), Some(overrides)) = (params.as_object_mut(), overrides.as_object()) {
            for (key, value) in overrides {
                params.insert(key.clone(), value.clone());
            }
        }
        self.call("task.submit", params)
    }

    /// Submits `prompt` with the defaults; returns the task id.
    pub fn submit(&self, prompt: &str) -> String {
        let result = self
            .submit_with(json!({ "prompt": prompt }))
            .unwrap_or_else(|error| panic!("submit {prompt:?} failed: {error:?}"));
        result["task_id"].as_str().expect("task_id").to_owned()
    }

    /// [`Daemon::submit_with`], retried while it fails with `WORKDIR_BUSY`
    /// (a cancelled or interrupted task's runner holds the writer lease
    /// until its provider is stopped, after the task turned terminal; the
    /// Bridge's submission waits for that only so long); returns the task
    /// id. Panics on any other error or after [`WAIT`].
    pub fn wait_submit(&self, overrides: Value) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.submit_with(overrides.clone()) {
                Ok(result) => return result["task_id"].as_str().expect("task_id").to_owned(),
                Err(error) if error.code == "WORKDIR_BUSY" && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(error) => panic!("submit {overrides} failed: {error:?}"),
            }
        }
    }

    /// `task.get`, panicking on an error.
    pub fn task(&self, task_id: &str) -> Value {
        self.ok("task.get", json!({ "task_id": task_id }))
    }

    /// Polls `task.get` until `done(view)` holds; returns that view.
    /// Panics after [`WAIT`] with the last view and the daemon's stderr.
    pub fn wait_task(&self, task_id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        self.wait_task_within(task_id, what, WAIT, done)
    }

    /// [`Daemon::wait_terminal`] with its own bound, for tasks whose ending
    /// takes longer than [`WAIT`]. A task still queued or starting has not
    /// ended.
    pub fn wait_terminal_within(&self, task_id: &str, limit: Duration) -> Value {
        self.wait_task_within(task_id, "a terminal status", limit, |view| {
            serde_json::from_value::<TaskStatus>(view["status"].clone())
                .is_ok_and(TaskStatus::is_terminal)
        })
    }

    fn wait_task_within(
        &self,
        task_id: &str,
        what: &str,
        limit: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let view = self.task(task_id);
            if done(&view) {
                return view;
            }
            assert!(
                Instant::now() < deadline,
                "task {task_id} never reached {what}; last view: {view}\nstderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Polls until the task's `status` is `status`.
    pub fn wait_status(&self, task_id: &str, status: &str) -> Value {
        self.wait_task(task_id, status, |view| view["status"] == status)
    }

    /// Polls until the task has a pending interaction; returns it
    /// (`view["pending_request"]`: `request_id`, `kind`, `payload`, ...).
    pub fn wait_pending(&self, task_id: &str) -> Value {
        self.wait_task(task_id, "a pending request", |view| {
            view["pending_request"].is_object()
        })["pending_request"]
            .clone()
    }

    /// Every event of the task, following the cursor (pages of 100).
    pub fn events(&self, task_id: &str) -> Vec<Value> {
        let mut events = Vec::new();
        let mut after: Option<i64> = None;
        loop {
            let mut params = json!({ "task_id": task_id, "limit": 100 });
            if let Some(after) = after {
                params["after_event_id"] = json!(after);
            }
            let page = self.ok("task.events", params);
            let batch = page["events"].as_array().expect("events").clone();
            let next = page["next_after_event_id"].as_i64();
            let empty = batch.is_empty();
            events.extend(batch);
            if empty || next.is_none() || next == after {
                return events;
            }
            after = next;
        }
    }

    /// Polls `task.events` until an event of `event_type` exists; returns
    /// the first one.
    pub fn wait_event(&self, task_id: &str, event_type: &str) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let events = self.events(task_id);
            if let Some(event) = events.iter().find(|e| e["event_type"] == event_type) {
                return event.clone();
            }
            assert!(
                Instant::now() < deadline,
                "task {task_id} never had a {event_type} event; events: {events:?}\nstderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The payloads of the task's events of type `event_type`, in order.
    pub fn payloads(&self, task_id: &str, event_type: &str) -> Vec<Value> {
        self.events(task_id)
            .into_iter()
            .filter(|event| event["event_type"] == event_type)
            .map(|event| event["payload"].clone())
            .collect()
    }

    /// `task.approval.respond` with `decision` for `request`.
    pub fn respond(
        &self,
        task_id: &str,
        request: &str,
        decision: &str,
    ) -> Result<Value, WireError> {
        self.respond_option(task_id, request, decision, None)
    }

    /// `task.approval.respond` with `decision` and, when given, the exact
    /// option `option_id` of a request that offers options.
    pub fn respond_option(
        &self,
        task_id: &str,
        request: &str,
        decision: &str,
        option_id: Option<&str>,
    ) -> Result<Value, WireError> {
        let mut params = json!({ "task_id": task_id, "request_id": request, "decision": decision });
        if let Some(option_id) = option_id {
            params["option_id"] = json!(option_id);
        }
        self.call("task.approval.respond", params)
    }

    /// `task.question.answer` with `answers` for `request`.
    pub fn answer(&self, task_id: &str, request: &str, answers: Value) -> Result<Value, WireError> {
        self.call(
            "task.question.answer",
            json!({ "task_id": task_id, "request_id": request, "answers": answers }),
        )
    }

    /// Polls until the task has finished (any terminal status).
    pub fn wait_terminal(&self, task_id: &str) -> Value {
        self.wait_terminal_within(task_id, WAIT)
    }

    /// `inspect --config <file>`'s stdout (the daemon may be running).
    pub fn inspect(&self) -> String {
        let (status, stdout, stderr) = self.setup.run(&["inspect"]);
        assert!(status.success(), "inspect failed: {status}\n{stderr}");
        stdout
    }

    /// The `event_type` of every event of the task, in order.
    pub fn event_types(&self, task_id: &str) -> Vec<String> {
        self.events(task_id)
            .iter()
            .map(|event| event["event_type"].as_str().unwrap_or("?").to_owned())
            .collect()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.try_exit().is_none() {
            self.signal(rustix::process::Signal::TERM);
            if self.wait_exit(STOP_TIMEOUT).is_none() {
                self.kill();
            }
        }
        self.join_reader();
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// One connection, raw lines in and out (blocking, [`IO_TIMEOUT`] reads).
#[derive(Debug)]
pub struct RawConn {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
    next_id: u64,
}

impl RawConn {
    /// Connects to `socket`.
    pub fn connect(socket: &Path) -> RawConn {
        let stream = UnixStream::connect(socket).expect("connect to the bridge");
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("read timeout");
        stream
            .set_write_timeout(Some(IO_TIMEOUT))
            .expect("write timeout");
        let reader = BufReader::new(stream.try_clone().expect("clone stream"));
        RawConn {
            stream,
            reader,
            next_id: 1,
        }
    }

    /// Writes `bytes` as they are (add the newline yourself). A write
    /// error (the daemon closed) is returned, not panicked on.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Writes `line` plus a newline.
    pub fn send_line(&mut self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.send_bytes(&bytes).expect("write a request");
    }

    /// Reads one line (without its newline); `None` at EOF. Panics on a
    /// read timeout.
    pub fn read_line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => {
                assert!(line.ends_with('\n'), "a response frame without newline");
                line.pop();
                Some(line)
            }
            // A reset after the daemon closed on us counts as EOF.
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => None,
            Err(error) => panic!("reading a response: {error}"),
        }
    }

    /// Reads one line and parses it as JSON; panics at EOF.
    pub fn read_json(&mut self) -> Value {
        let line = self.read_line().expect("a response, not EOF");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}"))
    }

    /// True if the daemon closed the connection (EOF, no more bytes).
    pub fn at_eof(&mut self) -> bool {
        let mut rest = Vec::new();
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => rest.is_empty(),
            Err(error) => error.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }

    /// Sends a full request envelope (`protocol_version` 1, a fresh
    /// `request_id`) and returns the whole response envelope.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let request_id = format!("t{}", self.next_id);
        self.next_id += 1;
        let envelope = json!({
            "protocol_version": 1,
            "request_id": request_id,
            "method": method,
            "params": params,
        });
        self.send_line(&envelope.to_string());
        let response = self.read_json();
        assert_eq!(
            response["request_id"], request_id,
            "response for another request: {response}"
        );
        response
    }

    /// [`RawConn::request`], unpacked: `Ok(result)` or the wire error.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, WireError> {
        unpack(self.request(method, params))
    }
}

/// Splits a response envelope into `Ok(result)` or the wire error.
pub fn unpack(response: Value) -> Result<Value, WireError> {
    match response["ok"].as_bool() {
        Some(true) => Ok(response["result"].clone()),
        Some(false) => Err(WireError {
            code: response["error"]["code"]
                .as_str()
                .expect("error.code")
                .to_owned(),
            message: response["error"]["message"]
                .as_str()
                .expect("error.message")
                .to_owned(),
        }),
        None => panic!("not a response envelope: {response}"),
    }
}

/// The `code` of an error response envelope; panics if it is not one.
pub fn error_code(response: &Value) -> String {
    assert_eq!(response["ok"], false, "expected an error: {response}");
    response["error"]["code"]
        .as_str()
        .expect("error.code")
        .to_owned()
}

/// The `request_id` of a pending request (`view["pending_request"]`).
pub fn request_id(pending: &Value) -> String {
    pending["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned()
}

/// The code of an expected error; panics on success.
pub fn code<T: std::fmt::Debug>(result: Result<T, WireError>) -> String {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(error) => error.code,
    }
}

/// Panics unless `expected` occur in `types` in this order (others may
/// come between).
pub fn assert_in_order(types: &[String], expected: &[&str]) {
    let mut rest = types.iter();
    for wanted in expected {
        assert!(
            rest.any(|t| t == wanted),
            "event {wanted} missing or out of order in {types:?}"
        );
    }
}

/// How many of `types` are `wanted`.
pub fn count(types: &[String], wanted: &str) -> usize {
    types.iter().filter(|t| *t == wanted).count()
}

/// Polls `check` every 20 ms until it returns `Some`, failing after `limit`.
pub fn poll<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The writer lease of the default `demo` workdir.
pub fn demo_lease() -> LeaseId {
    LeaseId::of_workdir("demo", None).expect("the demo lease id")
}

/// What the ServerFS MCP server gets when it tries to mutate `demo` now:
/// `Ok(())` (the lease was free; released again at once) or the code.
pub fn mcp_mutation(setup: &Setup) -> Result<(), &'static str> {
    try_acquire(&setup.lock_dir(), &demo_lease())
        .map(drop)
        .map_err(|error| error.code().as_str())
}

/// `(task_id, provider_pgid)` of every recovery guard in the lock dir.
pub fn guards(setup: &Setup) -> Vec<(String, Option<i32>)> {
    list_guards(&setup.lock_dir())
        .expect("list the recovery guards")
        .into_iter()
        .map(|(_, record)| (record.task_id, record.provider_pgid))
        .collect()
}

/// Waits until the MCP side may mutate `demo` again and no recovery guard
/// is left: the provider of the task ended `after` is proven stopped.
pub fn wait_workdir_free(setup: &Setup, after: &str) {
    poll(
        WAIT,
        &format!("the workdir to be free after {after}"),
        || (mcp_mutation(setup).is_ok() && guards(setup).is_empty()).then_some(()),
    );
}

/// How long an orphaned process group may take to disappear: once killed,
/// its members are zombies until init reaps them, which a lazy init (as in
/// some containers and VMs) does only every few seconds.
pub const GONE_LIMIT: Duration = Duration::from_secs(30);

/// The process group of one `fake: child-tree` turn, as its recovery guard
/// records it. Dropping it SIGKILLs whatever still runs of the tree, so a
/// test that orphaned it (by SIGKILLing the Bridge) cleans up even when it
/// fails.
#[derive(Debug)]
pub struct ChildTree {
    pgid: i32,
}

impl ChildTree {
    /// Waits until `task_id`'s guard records the tree's group and its three
    /// processes (the shell and two sleeps) run.
    pub fn wait_for(setup: &Setup, task_id: &str) -> ChildTree {
        let pgid = poll(WAIT, "the guard to record the child tree", || {
            guards(setup)
                .into_iter()
                .find(|(task, _)| task == task_id)
                .and_then(|(_, pgid)| pgid)
        });
        assert!(pgid > 1, "recorded process group {pgid}");
        let tree = ChildTree { pgid };
        poll(WAIT, "the child tree's three processes", || {
            (tree.live_members().len() == 3).then_some(())
        });
        tree
    }

    /// The process group id.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The group's members that can still run code (zombies excluded).
    pub fn live_members(&self) -> Vec<u32> {
        group_members(self.pgid)
            .into_iter()
            .filter(|pid| runs_in_group(*pid, self.pgid))
            .collect()
    }

    /// Whether the kernel knows no process of the group any more
    /// (`kill(-pgid, 0)` → `ESRCH`; zombies still count).
    pub fn is_gone(&self) -> bool {
        Pid::from_raw(self.pgid).is_none_or(|pid| test_kill_process_group(pid) == Err(Errno::SRCH))
    }

    /// Waits until no member can run code (zombies allowed).
    pub fn wait_stopped(&self, limit: Duration) {
        poll(limit, "the child tree to stop", || {
            self.live_members().is_empty().then_some(())
        });
    }

    /// Waits until the group has disappeared, zombies reaped.
    pub fn wait_gone(&self) {
        poll(GONE_LIMIT, "the child tree's group to disappear", || {
            self.is_gone().then_some(())
        });
    }

    /// SIGKILLs the group if it still holds the tree's processes (a reused
    /// group id of an unrelated process is left alone).
    pub fn kill(&self) {
        let ours = group_members(self.pgid).iter().any(|pid| {
            let command = cmdline(*pid);
            command == "sleep 300" || command.ends_with("sleep 300 & sleep 300 & wait")
        });
        if ours && let Some(pid) = Pid::from_raw(self.pgid) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}

impl Drop for ChildTree {
    fn drop(&mut self) {
        self.kill();
    }
}
