//! A stdio MCP client around a spawned server, with its process id for
//! memory readings.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// Every call is bounded so that a wedged server fails the run.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// A running server and a client connected to it.
pub struct Connected {
    client: RunningService<RoleClient, ()>,
    pid: Option<u32>,
    /// Time from spawn to the first `tools/list` answer.
    pub cold_start: Duration,
}

impl Connected {
    /// Spawns `program args…` (stderr discarded) and waits for its first
    /// `tools/list` answer.
    pub async fn spawn(
        program: &str,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Result<Connected, String> {
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        for (key, value) in env {
            command.env(key, value);
        }
        let started = Instant::now();
        let (transport, _stderr) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("spawning {program}: {e}"))?;
        let pid = transport.id();
        let client = tokio::time::timeout(CALL_TIMEOUT, ().serve(transport))
            .await
            .map_err(|_| format!("{program}: initialize timed out"))?
            .map_err(|e| format!("{program}: initialize failed: {e}"))?;
        tokio::time::timeout(CALL_TIMEOUT, client.list_all_tools())
            .await
            .map_err(|_| format!("{program}: tools/list timed out"))?
            .map_err(|e| format!("{program}: tools/list failed: {e}"))?;
        Ok(Connected {
            client,
            pid,
            cold_start: started.elapsed(),
        })
    }

    /// Calls a tool; fails on protocol errors and on `isError` results.
    /// Returns the structured content (or the text, as a JSON string).
    pub async fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        let Value::Object(args) = args else {
            return Err("arguments must be an object".to_owned());
        };
        let args: JsonObject = args;
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let result = tokio::time::timeout(CALL_TIMEOUT, self.client.call_tool(request))
            .await
            .map_err(|_| format!("{tool} timed out"))?
            .map_err(|e| format!("{tool} failed: {e}"))?;
        if result.is_error == Some(true) {
            return Err(format!("{tool} returned an error: {:?}", result.content));
        }
        Ok(result.structured_content.unwrap_or(Value::Null))
    }

    /// The server's peak resident set size (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    }

    /// Closes the connection (the child exits on EOF).
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_secs(10), self.client.cancel()).await;
    }
}
