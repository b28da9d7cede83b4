//! A raw MCP client over a spawned server's stdio: one JSON line out, read
//! JSON lines until the answer, nothing between the clock and the pipes
//! but `serde_json`. Both servers are measured through it, so a client
//! library's own cost does not dilute the servers' difference.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use serde_json::{Value, json};

/// Every answer is bounded, so that a wedged server fails the run instead
/// of hanging it.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// A spawned MCP server (stderr discarded) after its handshake.
pub struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    /// Bytes read but not yet returned as a line.
    pending: Vec<u8>,
    next_id: u64,
    /// From spawning to the answer of the first `tools/list`.
    pub cold_start: Duration,
}

impl StdioServer {
    /// Spawns `program args…` with `env` added, then initializes and lists
    /// the tools.
    pub fn spawn(program: &str, args: &[String], env: &[(&str, &str)]) -> Result<Self, String> {
        Self::spawn_with_stderr(program, args, env, Stdio::null())
    }

    /// [`spawn`](Self::spawn)s serverfs and reads the audit lines it logs
    /// on stderr.
    pub fn spawn_audited(
        program: &str,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Result<(Self, AuditLines), String> {
        let mut server = Self::spawn_with_stderr(program, args, env, Stdio::piped())?;
        let stderr = server.child.stderr.take().ok_or("no stderr pipe")?;
        let (send, receive) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let read_at = Instant::now();
                let Ok(log) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if log["event"] == "tool_call" && send.send((read_at, log)).is_err() {
                    break;
                }
            }
        });
        Ok((server, AuditLines(receive)))
    }

    /// Like [`StdioServer::spawn`], with the server's stderr (its log)
    /// going to `stderr`.
    pub fn spawn_with_stderr(
        program: &str,
        args: &[String],
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> Result<Self, String> {
        let started = Instant::now();
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("spawning {program}: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("{program}: no pipes"));
        };
        let mut server = StdioServer {
            child,
            stdin,
            stdout,
            pending: Vec::new(),
            next_id: 0,
            cold_start: Duration::ZERO,
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "serverfs-bench", "version": "1"}}),
        )?;
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        server.request("tools/list", json!({}))?;
        server.cold_start = started.elapsed();
        Ok(server)
    }

    /// Calls a tool; fails on protocol errors and on `isError` results.
    /// Returns the structured content.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, String> {
        let mut result =
            self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if result["isError"] == json!(true) {
            return Err(format!("{tool} returned an error: {}", result["content"]));
        }
        Ok(result
            .get_mut("structuredContent")
            .map(Value::take)
            .unwrap_or_default())
    }

    /// Calls a tool and returns the whole answer, error or not: the
    /// JSON-RPC `result` (with its `isError`) or `error` object.
    pub fn call_any(&mut self, tool: &str, arguments: Value) -> Result<Value, String> {
        self.request_any("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Sends any request and returns its `result`, or its `error` object
    /// as a value (not as a failure).
    pub fn request_any(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.start(method, params)?;
        match self.message(id, method)? {
            Ok(result) | Err(result) => Ok(result),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's peak resident set size (`VmHWM`), in MiB.
    pub fn peak_rss_mib(&self) -> Option<f64> {
        crate::rss::peak_rss_mib(self.child.id())
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.start(method, params)?;
        self.answer(id, method)
    }

    /// Sends a request without waiting for its answer; its id.
    pub fn start(&mut self, method: &str, params: Value) -> Result<u64, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Reads until the answer to request `id` (of `method`), skipping what
    /// else the server sends; a JSON-RPC error is a failure.
    fn answer(&mut self, id: u64, method: &str) -> Result<Value, String> {
        self.message(id, method)?
            .map_err(|error| format!("{method} failed: {error}"))
    }

    /// The answer to request `id`: its `result`, or its `error` object.
    fn message(&mut self, id: u64, method: &str) -> Result<Result<Value, Value>, String> {
        loop {
            let line = self.line()?;
            let mut message: Value = serde_json::from_slice(&line)
                .map_err(|e| format!("{method}: answer is not JSON: {e}"))?;
            // Notifications and requests from the server are not answers.
            if message["id"] != json!(id) || message.get("method").is_some() {
                continue;
            }
            // Taken, not cloned: the client's own work stays one parse.
            if let Some(error) = message.get_mut("error") {
                return Ok(Err(error.take()));
            }
            return Ok(Ok(message
                .get_mut("result")
                .map(Value::take)
                .unwrap_or_default()));
        }
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut frame = message.to_string().into_bytes();
        frame.push(b'\n');
        self.stdin
            .write_all(&frame)
            .map_err(|e| format!("writing to the server: {e}"))
    }

    /// The next line from the server, waiting at most [`ANSWER_TIMEOUT`]
    /// for each read.
    fn line(&mut self) -> Result<Vec<u8>, String> {
        let mut scanned = 0;
        loop {
            if let Some(at) = self.pending[scanned..].iter().position(|b| *b == b'\n') {
                let rest = self.pending.split_off(scanned + at + 1);
                let mut line = std::mem::replace(&mut self.pending, rest);
                line.pop();
                return Ok(line);
            }
            scanned = self.pending.len();
            let timeout = Timespec::try_from(ANSWER_TIMEOUT).map_err(|e| e.to_string())?;
            let mut fds = [PollFd::new(&self.stdout, PollFlags::IN)];
            let ready = poll(&mut fds, Some(&timeout)).map_err(|e| format!("poll: {e}"))?;
            if ready == 0 {
                return Err(format!("no answer within {ANSWER_TIMEOUT:?}"));
            }
            let mut chunk = [0u8; 64 * 1024];
            let read = self
                .stdout
                .read(&mut chunk)
                .map_err(|e| format!("reading from the server: {e}"))?;
            if read == 0 {
                return Err("the server closed its stdout".to_owned());
            }
            self.pending.extend_from_slice(&chunk[..read]);
        }
    }
}

/// The `tool_call` audit lines a server logs, each with the moment it was
/// read: when a call ended, even one that gets no answer (a cancelled one).
pub struct AuditLines(Receiver<(Instant, Value)>);

impl AuditLines {
    /// The next audit line, waiting at most [`ANSWER_TIMEOUT`].
    pub fn next(&self) -> Result<(Instant, Value), String> {
        self.0.recv_timeout(ANSWER_TIMEOUT).map_err(|e| match e {
            RecvTimeoutError::Timeout => format!("no audit line within {ANSWER_TIMEOUT:?}"),
            RecvTimeoutError::Disconnected => "the server closed its stderr".to_owned(),
        })
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        // The measurements are over: nothing to wait for.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
