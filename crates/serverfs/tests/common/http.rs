//! A `serverfs serve --http` child and raw HTTP helpers, shared by the
//! HTTP suites.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{TIMEOUT, binary};

/// A `serverfs serve --http 127.0.0.1:0` child and what it printed.
pub struct HttpServer {
    pub child: tokio::process::Child,
    pub url: String,
    stderr: Arc<Mutex<Vec<String>>>,
    stdout: Arc<Mutex<Vec<String>>>,
}

/// Collects the lines of a child's pipe as they come.
fn collect_lines(
    pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(pipe).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

impl HttpServer {
    pub async fn start(args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        HttpServer::start_under(&[], args, env).await
    }

    /// Like [`HttpServer::start`], with `wrapper` (a program and its
    /// arguments, such as `prlimit --nofile=128:128`) running the server.
    pub async fn start_under(wrapper: &[&str], args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut command = match wrapper.split_first() {
            Some((program, wrapper_args)) => {
                let mut command = tokio::process::Command::new(program);
                command.args(wrapper_args).arg(binary());
                command
            }
            None => tokio::process::Command::new(binary()),
        };
        command
            .arg("serve")
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn serverfs");
        let stdout = collect_lines(child.stdout.take().expect("stdout"));
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (address_tx, address_rx) = tokio::sync::oneshot::channel();
        {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut address_tx = Some(address_tx);
                let mut reader = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if let Ok(event) = serde_json::from_str::<Value>(&line)
                        && event["event"] == "http_listening"
                        && let Some(tx) = address_tx.take()
                    {
                        let _ = tx.send(event["address"].as_str().unwrap_or_default().to_owned());
                    }
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let address = tokio::time::timeout(TIMEOUT, address_rx)
            .await
            .expect("server did not start listening")
            .expect("server exited before listening");
        HttpServer {
            child,
            url: format!("http://{address}/mcp"),
            stderr: lines,
            stdout,
        }
    }

    /// The first stdout line containing `needle`, waiting (bounded) for
    /// it: stdout is read by another task than the one that saw the
    /// server listening.
    pub async fn stdout_line(&self, needle: &str) -> String {
        let found = || {
            self.stdout
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.contains(needle))
                .cloned()
        };
        tokio::time::timeout(TIMEOUT, async {
            loop {
                if let Some(line) = found() {
                    return line;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no stdout line with {needle:?}: {:?}",
                self.stdout.lock().unwrap()
            )
        })
    }

    pub async fn client(
        &self,
        token: Option<&str>,
        version: Option<ProtocolVersion>,
    ) -> RunningService<RoleClient, ClientConfig> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.clone());
        if let Some(token) = token {
            config = config.auth_header(token.to_owned());
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("http-test", "1"),
        );
        if let Some(version) = version {
            info = info.with_protocol_version(version);
        }
        tokio::time::timeout(TIMEOUT, info.serve(transport))
            .await
            .expect("initialize timed out")
            .expect("initialize failed")
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }
}

/// Creates a token with the real CLI and returns it.
pub fn create_token(file: &std::path::Path, name: &str) -> String {
    let out = std::process::Command::new(binary())
        .args(["token", "create", name, "--token-file"])
        .arg(file)
        .env_clear()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

pub async fn call(
    client: &RunningService<RoleClient, ClientConfig>,
    tool: &str,
    args: Value,
) -> Value {
    let Value::Object(args) = args else { panic!() };
    let result = tokio::time::timeout(
        TIMEOUT,
        client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_ne!(result.is_error, Some(true), "{tool}: {:?}", result.content);
    result.structured_content.unwrap()
}

/// A raw `initialize` POST, for status-code checks.
pub async fn raw_initialize(
    url: &str,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> reqwest::Response {
    let body = body.unwrap_or_else(|| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string()
    });
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    tokio::time::timeout(TIMEOUT, request.send())
        .await
        .unwrap()
        .unwrap()
}

pub struct Setup {
    pub tree: TempWorkdir,
    _tokens: tempfile::TempDir,
    pub token_file: std::path::PathBuf,
    pub server: HttpServer,
}

pub async fn setup(extra_env: &[(&str, &str)]) -> Setup {
    let tree = TempWorkdir::new();
    tree.file("docs/readme.md", "hello over http\n");
    let tokens = tempfile::tempdir().unwrap();
    let token_file = tokens.path().join("tokens.json");
    let spec = format!("w={}:rw", tree.root().display());
    let token_env = token_file.display().to_string();
    let mut env = vec![("SERVERFS_TOKEN_FILE", token_env.as_str())];
    env.extend_from_slice(extra_env);
    let server = HttpServer::start(&["--http", "127.0.0.1:0", "--workdir", &spec], &env).await;
    Setup {
        tree,
        _tokens: tokens,
        token_file,
        server,
    }
}
