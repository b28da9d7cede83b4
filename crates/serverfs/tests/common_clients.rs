//! What the client suites share (`newcomer`, `clients_e2e`): `serverfs
//! serve --http` as a child, and bearer tokens made with the real CLI.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::common::{TIMEOUT, binary};

/// A `serverfs serve --http 127.0.0.1:0 …` child (killed when dropped)
/// and every line it printed, stdout and stderr alike.
pub struct HttpServe {
    _child: tokio::process::Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl HttpServe {
    /// Starts `serverfs serve --http 127.0.0.1:0 <args>` with only `PATH`
    /// and `env` in its environment, once it listens.
    pub async fn start(args: &[&str], env: &[(&str, &str)]) -> HttpServe {
        let mut child = tokio::process::Command::new(binary())
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn serverfs");
        let lines = Arc::new(Mutex::new(Vec::new()));
        collect(child.stdout.take().expect("stdout"), &lines);
        collect(child.stderr.take().expect("stderr"), &lines);
        let address = tokio::time::timeout(TIMEOUT, async {
            loop {
                let listening = lines.lock().unwrap().iter().find_map(|line| {
                    let event: Value = serde_json::from_str(line).ok()?;
                    (event["event"] == "http_listening")
                        .then(|| event["address"].as_str().map(str::to_owned))?
                });
                if let Some(address) = listening {
                    return address;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("never listened: {:?}", lines.lock().unwrap()));
        HttpServe {
            _child: child,
            url: format!("http://{address}/mcp"),
            lines,
        }
    }

    /// Every line printed so far.
    pub fn output(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

/// Collects `pipe`'s lines into `lines` as they come.
fn collect(pipe: impl AsyncRead + Unpin + Send + 'static, lines: &Arc<Mutex<Vec<String>>>) {
    let sink = lines.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(pipe).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            if std::env::var_os("SERVERFS_TEST_SHOW_STDERR").is_some() {
                eprintln!("[serverfs] {line}");
            }
            sink.lock().unwrap().push(line);
        }
    });
}

/// Creates a token named `name` in `file` with `serverfs token create`
/// and returns it.
pub fn create_token(file: &Path, name: &str) -> String {
    let out = std::process::Command::new(binary())
        .args(["token", "create", name, "--token-file"])
        .arg(file)
        .env_clear()
        .output()
        .expect("run serverfs token create");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}
