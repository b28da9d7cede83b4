//! Spawning the real binary and talking MCP to it.

pub mod agent;
pub mod bridge;
pub mod e2e;
pub mod http;
pub mod human;
pub mod surface;

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ElicitRequestParams, ElicitResult,
    JsonObject, ProgressNotificationParam, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Bound on every await: a hung server fails the test instead of the run.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Whether `check` succeeds, i.e. the machine has `what` for a test that
/// needs it; without it the test is skipped with a word, except in CI,
/// which must provide it (`.ci/run` installs it).
pub fn available(what: &str, check: &mut std::process::Command) -> bool {
    let ok = check.output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide {what} (.ci/run installs it)"
        );
        eprintln!("skipped: {what} is missing");
    }
    ok
}

/// [`available`] for python3 with the official MCP SDK (`mcp` 2.3.0 and
/// its `httpx2`).
pub fn python_mcp_sdk() -> bool {
    available(
        "python3 with the mcp SDK (pip install mcp==2.3.0)",
        std::process::Command::new("python3").args(["-c", "import mcp, httpx2"]),
    )
}

/// The binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_serverfs")
}

/// A running `serverfs serve` with an MCP client attached. The child is
/// killed when this is dropped.
pub struct Server {
    client: RunningService<RoleClient, TestClient>,
    handler: TestClient,
    pid: u32,
    stderr: Arc<Mutex<Vec<String>>>,
    tools: Vec<Tool>,
}

/// The client's handler: keeps every `notifications/progress` it receives
/// (rmcp's client puts a `progressToken` on every request) and, as a
/// [`human::Human`], declares what the tests ask for and answers forms.
#[derive(Clone, Default)]
pub struct TestClient {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    human: human::Human,
}

impl ClientHandler for TestClient {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.human.elicited(request).await
    }

    fn get_info(&self) -> ClientConfig {
        self.human.client_config()
    }
}

impl Server {
    /// Starts `serverfs serve <args>` with extra environment variables (the
    /// child inherits nothing that could configure workdirs by accident).
    pub async fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_as(human::Human::default(), args, env).await
    }

    /// [`Server::start`] with a client that declares and answers as
    /// `human` says.
    pub async fn start_as(human: human::Human, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = tokio::process::Command::new(binary());
        command.arg("serve").args(args).env_clear();
        command.env("PATH", std::env::var("PATH").unwrap_or_default());
        for (key, value) in env {
            command.env(key, value);
        }
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serverfs");
        let pid = transport.id().expect("a pid");
        let lines = Arc::new(Mutex::new(Vec::new()));
        if let Some(stderr) = stderr {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if std::env::var_os("SERVERFS_TEST_SHOW_STDERR").is_some() {
                        eprintln!("[serverfs] {line}");
                    }
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let handler = TestClient {
            progress: Arc::default(),
            human,
        };
        let client = tokio::time::timeout(TIMEOUT, handler.clone().serve(transport))
            .await
            .expect("initialize timed out")
            .expect("initialize failed");
        let tools = tokio::time::timeout(TIMEOUT, client.list_all_tools())
            .await
            .expect("tools/list timed out")
            .expect("tools/list failed");
        Server {
            client,
            handler,
            pid,
            stderr: lines,
            tools,
        }
    }

    /// Starts a server over one workdir `alias=path`.
    pub async fn with_workdir(alias: &str, root: &std::path::Path) -> Server {
        let spec = format!("{alias}={}", root.display());
        Server::start(&["--workdir", &spec], &[]).await
    }

    /// The client, for calls the helpers below do not cover.
    pub fn client(&self) -> &RunningService<RoleClient, TestClient> {
        &self.client
    }

    /// The client's human: the forms it was sent.
    pub fn human(&self) -> &human::Human {
        &self.handler.human
    }

    /// The progress notifications received so far, in order.
    pub fn progress(&self) -> Vec<ProgressNotificationParam> {
        self.handler.progress.lock().unwrap().clone()
    }

    /// Forgets the progress notifications received so far.
    pub fn clear_progress(&self) {
        self.handler.progress.lock().unwrap().clear();
    }

    /// What the server process's open descriptors point at, sorted.
    pub fn open_descriptors(&self) -> Vec<String> {
        let mut targets: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", self.pid))
            .expect("the server's /proc/PID/fd")
            .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
            .map(|target| target.display().to_string())
            .collect();
        targets.sort();
        targets
    }

    /// `tools/list` as received at start.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Calls a tool; `args` must be a JSON object.
    pub async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let args: JsonObject = match args {
            Value::Object(map) => map,
            other => panic!("arguments must be an object, got {other}"),
        };
        let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        tokio::time::timeout(TIMEOUT, self.client.call_tool(request))
            .await
            .unwrap_or_else(|_| panic!("{tool} timed out"))
            .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"))
    }

    /// Calls a tool that must succeed; returns its structured content after
    /// validating it against the tool's published `outputSchema`.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args.clone()).await;
        assert_ne!(
            result.is_error,
            Some(true),
            "{tool}({args}) failed: {:?}",
            result.content
        );
        let structured = result
            .structured_content
            .clone()
            .expect("structured content");
        self.assert_matches_output_schema(tool, &structured);
        // One text block (a download adds its bytes as a resource).
        let texts = result.content.iter().filter(|b| b.as_text().is_some());
        assert_eq!(texts.count(), 1, "exactly one text block");
        structured
    }

    /// Calls a tool that must fail; returns its code after checking the
    /// error shape (`CODE: ` text and the structured `error` object).
    pub async fn err(&self, tool: &str, args: Value) -> String {
        let result = self.call(tool, args.clone()).await;
        assert_eq!(
            result.is_error,
            Some(true),
            "{tool}({args}) should fail: {:?}",
            result.structured_content
        );
        let structured = result.structured_content.expect("structured error");
        let code = structured["error"]["code"]
            .as_str()
            .expect("error.code")
            .to_owned();
        let message = structured["error"]["message"]
            .as_str()
            .expect("error.message");
        let text = result.content[0]
            .as_text()
            .expect("text block")
            .text
            .clone();
        assert_eq!(text, format!("{code}: {message}"));
        code
    }

    /// Validates `value` against `tool`'s published `outputSchema`.
    pub fn assert_matches_output_schema(&self, tool: &str, value: &Value) {
        let schema = self
            .tools
            .iter()
            .find(|t| t.name == tool)
            .and_then(|t| t.output_schema.clone())
            .unwrap_or_else(|| panic!("{tool} publishes no outputSchema"));
        let schema = Value::Object((*schema).clone());
        let validator = jsonschema::validator_for(&schema).expect("outputSchema compiles");
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{tool} result violates its outputSchema: {errors:?}\n{value}"
        );
    }

    /// Stderr lines so far (JSON log lines).
    pub fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }

    /// The log lines so far whose `event` is `event`, in order.
    pub fn log_events(&self, event: &str) -> Vec<Value> {
        self.stderr()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|log| log["event"] == event)
            .collect()
    }

    /// Closes the client and waits for the child to exit.
    pub async fn shutdown(self) -> Vec<String> {
        let stderr = self.stderr.clone();
        let _ = tokio::time::timeout(TIMEOUT, self.client.cancel()).await;
        // Give the stderr reader a moment to drain the final lines.
        tokio::time::sleep(Duration::from_millis(100)).await;
        stderr.lock().unwrap().clone()
    }
}
