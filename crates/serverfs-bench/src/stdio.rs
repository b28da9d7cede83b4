//! A raw MCP client over a spawned server's stdio: one JSON line out, read
//! JSON lines until the answer, nothing between the clock and the pipes
//! but `serde_json`. Both servers are measured through it, so a client
//! library's own cost does not dilute the servers' difference.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
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
        Self::spawn_logging(program, args, env, Stdio::null())
    }

    /// Like [`StdioServer::spawn`], with the server's stderr (its log)
    /// going to `stderr`.
    pub fn spawn_logging(
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
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if result["isError"] == json!(true) {
            return Err(format!("{tool} returned an error: {}", result["content"]));
        }
        Ok(result["structuredContent"].clone())
    }

    /// Calls a tool and returns the whole answer, error or not: the
    /// JSON-RPC `result` (with its `isError`) or `error` object.
    pub fn call_any(&mut self, tool: &str, arguments: Value) -> Result<Value, String> {
        self.request_any("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Sends any request and returns its `result` or `error` object.
    pub fn request_any(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send_request(method, params)?;
        let answer = self.answer(method, id)?;
        Ok(answer
            .get("error")
            .or_else(|| answer.get("result"))
            .cloned()
            .unwrap_or(Value::Null))
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
        let id = self.send_request(method, params)?;
        let message = self.answer(method, id)?;
        if let Some(error) = message.get("error") {
            return Err(format!("{method} failed: {error}"));
        }
        Ok(message["result"].clone())
    }

    fn send_request(&mut self, method: &str, params: Value) -> Result<u64, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// The answer to request `id`, skipping the server's notifications.
    fn answer(&mut self, method: &str, id: u64) -> Result<Value, String> {
        loop {
            let line = self.line()?;
            let message: Value = serde_json::from_slice(&line)
                .map_err(|e| format!("{method}: answer is not JSON: {e}"))?;
            // Notifications and requests from the server are not answers.
            if message["id"] != json!(id) || message.get("method").is_some() {
                continue;
            }
            return Ok(message);
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

impl Drop for StdioServer {
    fn drop(&mut self) {
        // The measurements are over: nothing to wait for.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
