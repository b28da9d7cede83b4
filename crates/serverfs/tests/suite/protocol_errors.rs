//! Broken JSON-RPC from a client gets a JSON-RPC answer, over stdio and
//! HTTP, and the connection keeps serving; nothing a client sends makes a
//! log line that repeats it unbounded (issue 14, items 7 and 8).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;

use crate::common::binary;
use crate::common::http::{create_token, setup};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// How long a line-by-line test waits for one answer before it fails
/// (instead of hanging the whole run on a lost request).
const ANSWER_WAIT: Duration = Duration::from_secs(60);

/// A stdio server driven line by line.
struct RawStdio {
    child: Child,
    stdin: ChildStdin,
    /// The server's output lines, read by a thread of their own so that a
    /// wait for one can time out.
    answers: mpsc::Receiver<String>,
    stderr_file: tempfile::NamedTempFile,
    _tree: TempWorkdir,
}

impl RawStdio {
    fn start() -> RawStdio {
        let tree = TempWorkdir::new();
        tree.file("a.txt", "alpha\n");
        let stderr_file = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(binary())
            .args(["serve", "--workdir"])
            .arg(format!("w={}", tree.root().display()))
            .env_clear()
            .env("SERVERFS_LOG_LEVEL", "debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr_file.reopen().unwrap())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (send_answer, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if send_answer.send(line).is_err() {
                    return;
                }
            }
        });
        let mut raw = RawStdio {
            child,
            stdin,
            answers,
            stderr_file,
            _tree: tree,
        };
        raw.send(INITIALIZE.as_bytes());
        assert_eq!(raw.answer()["id"], 1);
        raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        raw
    }

    fn send(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the server writes, as JSON.
    fn answer(&mut self) -> Value {
        let line = self
            .answers
            .recv_timeout(ANSWER_WAIT)
            .unwrap_or_else(|e| panic!("no answer within {ANSWER_WAIT:?}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// The server still answers a ping after whatever came before.
    fn still_serves(&mut self, id: u64) {
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
                .to_string()
                .as_bytes(),
        );
        let answer = self.answer();
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer.get("result").is_some(), "{answer}");
    }

    fn stop(mut self) -> String {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        std::fs::read_to_string(self.stderr_file.path()).unwrap()
    }
}

/// Asserts `answer` is a JSON-RPC error with `code` and `id`.
fn assert_error(answer: &Value, code: i64, id: &Value) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(&answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], code, "{answer}");
}

#[test]
fn stdio_answers_undecodable_lines_and_keeps_serving() {
    let mut raw = RawStdio::start();
    let mut next_id = 100;
    let cases: Vec<(Vec<u8>, i64, Value)> = vec![
        (b"{bad json".to_vec(), -32700, Value::Null),
        (b"\xff\xfe{\"jsonrpc\":\"2.0\"}".to_vec(), -32700, Value::Null),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"\ud800"}}"#.to_vec(),
            -32700,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#.to_vec(),
            -32700,
            Value::Null,
        ),
        (b"[]".to_vec(), -32600, Value::Null),
        (
            br#"[{"jsonrpc":"2.0","id":8,"method":"ping"}]"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (b"null".to_vec(), -32600, Value::Null),
        (br#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#.to_vec(), -32600, json!(9)),
        // Longer than the 4 MiB message bound: skipped, not held.
        (
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
                "x".repeat(5 << 20)
            )
            .into_bytes(),
            -32600,
            Value::Null,
        ),
    ];
    for (line, code, id) in cases {
        raw.send(&line);
        let answer = raw.answer();
        assert_error(&answer, code, &id);
        raw.still_serves(next_id);
        next_id += 1;
    }
    // A broken notification gets no answer: the next line is the ping's.
    raw.send(br#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#);
    raw.still_serves(next_id);
    raw.stop();
}

#[test]
fn stdio_bad_tool_call_params_are_invalid_params() {
    let mut raw = RawStdio::start();
    for (id, params) in [
        (20, None),
        (21, Some(json!({"name": "stat_file", "arguments": [1, 2]}))),
        (
            22,
            Some(json!({"name": "stat_file", "arguments": "w/a.txt"})),
        ),
        (23, Some(json!({"arguments": {}}))),
    ] {
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"});
        if let Some(params) = params {
            request["params"] = params;
        }
        raw.send(request.to_string().as_bytes());
        let answer = raw.answer();
        assert_error(&answer, -32602, &json!(id));
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("tools/call")),
            "{answer}"
        );
    }
    // Params that are not a structured value make no JSON-RPC request.
    raw.send(br#"{"jsonrpc":"2.0","id":26,"method":"tools/call","params":"stat_file"}"#);
    assert_error(&raw.answer(), -32600, &json!(26));
    // An unknown method stays "method not found".
    raw.send(br#"{"jsonrpc":"2.0","id":24,"method":"tools/run","params":{}}"#);
    assert_error(&raw.answer(), -32601, &json!(24));
    raw.still_serves(25);
    raw.stop();
}

#[test]
fn a_huge_resource_uri_is_never_repeated_in_the_log() {
    let mut raw = RawStdio::start();
    let marker = format!("HUGE{}", "q".repeat(5000));
    let uris = [
        format!("serverfs://w/{marker}"),
        format!("file:///{marker}"),
        format!("serverfs://{marker}/x"),
    ];
    for (i, uri) in uris.iter().enumerate() {
        let id = 30 + i as u64;
        raw.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}})
                .to_string()
                .as_bytes(),
        );
        let answer = raw.answer();
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer.get("error").is_some(), "{answer}");
        // The answer itself echoes a bounded prefix only.
        assert!(
            answer.to_string().len() < 2_000,
            "{}",
            answer.to_string().len()
        );
    }
    let log = raw.stop();
    assert!(!log.is_empty(), "the debug log has lines");
    for line in log.lines() {
        assert!(line.len() <= 8 * 1024, "a {}-byte log line", line.len());
        assert!(!line.contains("qqqqqqqqqqqqqqqqqqqq"), "{line}");
    }
}

#[tokio::test]
async fn http_answers_broken_bodies_with_json_rpc_errors() {
    let s = setup(&[]).await;
    let token = create_token(&s.token_file, "laptop");
    let post = |body: &'static [u8]| {
        let url = s.server.url.clone();
        let token = token.clone();
        async move {
            reqwest::Client::new()
                .post(url)
                .header("authorization", format!("Bearer {token}"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body)
                .send()
                .await
                .unwrap()
        }
    };
    for (body, code) in [
        (&b"{bad json"[..], -32700),
        (br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#, -32700),
        (b"[]", -32600),
        (br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600),
        (b"null", -32600),
        (br#"{"jsonrpc":"2.0","method":7}"#, -32600),
    ] {
        let response = post(body).await;
        assert_eq!(response.status(), 400, "{}", String::from_utf8_lossy(body));
        assert_eq!(response.headers()["content-type"], "application/json");
        let answer: Value = response.json().await.unwrap();
        assert_error(&answer, code, &Value::Null);
    }
    // A sound message still reaches rmcp.
    let sound = crate::common::http::raw_initialize(
        &s.server.url,
        &[("authorization", &format!("Bearer {token}"))],
        None,
    )
    .await;
    assert_eq!(sound.status(), 200);
    let stderr = s.server.stderr();
    assert!(stderr.contains("jsonrpc_rejected"), "{stderr}");
}
