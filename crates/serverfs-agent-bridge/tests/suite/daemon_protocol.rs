//! The Bridge RPC envelope, framing and peer check through the real daemon
//! (spec-agent-bridge.md §2.2–§2.4): every refusal has its code, echoes the
//! request id only when the spec says so, and leaves the connection (or,
//! after an oversized frame, the daemon) serving.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use serverfs_protocol::bridge::{RuntimeListParams, TaskGetParams, TaskStatus, TaskSubmitParams};

use serverfs_testkit::bridge::{RawConn, Setup, WAIT, error_code};

/// `MAX_REQUEST_BYTES`: the longest request line, newline included.
const MAX_LINE: usize = 1_048_576;

/// Asserts that `conn` still answers a valid request.
fn assert_serving(conn: &mut RawConn, after: &str) {
    let response = conn.request("runtime.list", json!({}));
    assert_eq!(
        response["ok"], true,
        "runtime.list after {after} failed: {response}"
    );
    assert_eq!(response["result"]["runtimes"][0]["name"], "fake");
}

#[test]
fn daemon_malformed_requests_get_their_codes_and_the_connection_survives() {
    let mut daemon = Setup::new().start();
    let mut conn = daemon.connect();
    // (case, raw line, code, echoed request_id)
    let cases: &[(&str, &[u8], &str, Value)] = &[
        ("not JSON", b"{not json", "INVALID_REQUEST", Value::Null),
        (
            "invalid UTF-8",
            b"{\"protocol_version\":1,\"request_id\":\"u\xff\"}",
            "INVALID_REQUEST",
            Value::Null,
        ),
        (
            "NaN",
            br#"{"protocol_version":NaN,"request_id":"n","method":"runtime.list","params":{}}"#,
            "INVALID_REQUEST",
            Value::Null,
        ),
        ("a JSON array", b"[1,2]", "INVALID_REQUEST", Value::Null),
        ("an empty object", b"{}", "INVALID_REQUEST", Value::Null),
        (
            "unknown method",
            br#"{"protocol_version":1,"request_id":"m1","method":"task.explode","params":{}}"#,
            "METHOD_NOT_FOUND",
            json!("m1"),
        ),
        (
            "unknown top-level field",
            br#"{"protocol_version":1,"request_id":"f1","method":"runtime.list","params":{},"extra":1}"#,
            "INVALID_REQUEST",
            json!("f1"),
        ),
        (
            "missing params",
            br#"{"protocol_version":1,"request_id":"f2","method":"runtime.list"}"#,
            "INVALID_REQUEST",
            json!("f2"),
        ),
        (
            "unknown parameter",
            br#"{"protocol_version":1,"request_id":"f3","method":"task.get","params":{"task_id":"agt_000000000000000000000000","verbose":true}}"#,
            "INVALID_REQUEST",
            json!("f3"),
        ),
        (
            "runtime.list with a parameter",
            br#"{"protocol_version":1,"request_id":"f4","method":"runtime.list","params":{"x":1}}"#,
            "INVALID_REQUEST",
            json!("f4"),
        ),
        (
            "missing required parameter",
            br#"{"protocol_version":1,"request_id":"f5","method":"task.get","params":{}}"#,
            "INVALID_REQUEST",
            json!("f5"),
        ),
        (
            "protocol version 2",
            br#"{"protocol_version":2,"request_id":"v1","method":"runtime.list","params":{}}"#,
            "PROTOCOL_VERSION_UNSUPPORTED",
            json!("v1"),
        ),
        (
            "protocol version 0",
            br#"{"protocol_version":0,"request_id":"v2","method":"runtime.list","params":{}}"#,
            "PROTOCOL_VERSION_UNSUPPORTED",
            json!("v2"),
        ),
        (
            "protocol version as a string",
            br#"{"protocol_version":"1","request_id":"v3","method":"runtime.list","params":{}}"#,
            "INVALID_REQUEST",
            json!("v3"),
        ),
        (
            "protocol version as a boolean",
            br#"{"protocol_version":true,"request_id":"v4","method":"runtime.list","params":{}}"#,
            "INVALID_REQUEST",
            json!("v4"),
        ),
        (
            "protocol version as a float",
            br#"{"protocol_version":1.5,"request_id":"v5","method":"runtime.list","params":{}}"#,
            "INVALID_REQUEST",
            json!("v5"),
        ),
        (
            "request_id as a number",
            br#"{"protocol_version":1,"request_id":7,"method":"runtime.list","params":{}}"#,
            "INVALID_REQUEST",
            Value::Null,
        ),
        (
            "empty request_id",
            br#"{"protocol_version":1,"request_id":"","method":"runtime.list","params":{}}"#,
            "INVALID_REQUEST",
            Value::Null,
        ),
        (
            "method as a number",
            br#"{"protocol_version":1,"request_id":"t1","method":3,"params":{}}"#,
            "INVALID_REQUEST",
            json!("t1"),
        ),
        (
            "params as an array",
            br#"{"protocol_version":1,"request_id":"t2","method":"runtime.list","params":[]}"#,
            "INVALID_REQUEST",
            json!("t2"),
        ),
        (
            "task_id as a number",
            br#"{"protocol_version":1,"request_id":"t3","method":"task.get","params":{"task_id":5}}"#,
            "INVALID_REQUEST",
            json!("t3"),
        ),
        (
            "prompt as a list",
            br#"{"protocol_version":1,"request_id":"t4","method":"task.submit","params":{"runtime":"fake","workdir":"demo","path":"","profile":"review","prompt":["x"]}}"#,
            "INVALID_REQUEST",
            json!("t4"),
        ),
        (
            "granted_permission_ids with a number",
            br#"{"protocol_version":1,"request_id":"t5","method":"task.approval.respond","params":{"task_id":"agt_000000000000000000000000","request_id":"req_1","decision":"deny","granted_permission_ids":[1]}}"#,
            "INVALID_REQUEST",
            json!("t5"),
        ),
    ];
    for (case, line, code, echoed) in cases {
        let mut frame = line.to_vec();
        frame.push(b'\n');
        conn.send_bytes(&frame).expect("write");
        let response = conn.read_json();
        assert_eq!(error_code(&response), *code, "{case}: {response}");
        assert_eq!(response["request_id"], *echoed, "{case}: {response}");
        let message = response["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{case}: an empty message");
        assert!(
            !message.contains(daemon.setup().root().to_str().unwrap()),
            "{case}: a host path in {message:?}"
        );
        assert_serving(&mut conn, case);
    }
    daemon.assert_alive();
    // And no request created a task.
    assert!(
        daemon.inspect().contains("tasks: 0 shown"),
        "{}",
        daemon.inspect()
    );
}

/// A `task.get` line of exactly `len` bytes (newline included), padded in
/// its `task_id`.
fn padded_task_get(len: usize) -> Vec<u8> {
    let frame = |pad: usize| {
        format!(
            r#"{{"protocol_version":1,"request_id":"big","method":"task.get","params":{{"task_id":"agt_{}"}}}}"#,
            "0".repeat(pad)
        )
    };
    let base = frame(0).len() + 1;
    let line = frame(len - base);
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    assert_eq!(bytes.len(), len);
    bytes
}

#[test]
fn daemon_request_of_exactly_one_mebibyte_is_read() {
    let mut daemon = Setup::new().start();
    let mut conn = daemon.connect();
    conn.send_bytes(&padded_task_get(MAX_LINE)).expect("write");
    let response = conn.read_json();
    assert_eq!(response["request_id"], "big", "{response}");
    let code = error_code(&response);
    assert_ne!(code, "REQUEST_TOO_LARGE", "{response}");
    assert!(
        code == "AGENT_TASK_NOT_FOUND" || code == "INVALID_REQUEST",
        "an unexpected refusal: {response}"
    );
    assert_serving(&mut conn, "a 1 MiB request");
    daemon.assert_alive();
}

#[test]
fn daemon_request_one_byte_over_is_refused_and_the_connection_closed() {
    let mut daemon = Setup::new().start();
    let mut conn = daemon.connect();
    // The Bridge may answer and close before the whole line is written;
    // a failed write is then expected, the answer must still be there.
    let _ = conn.send_bytes(&padded_task_get(MAX_LINE + 1));
    let response = conn.read_json();
    assert_eq!(error_code(&response), "REQUEST_TOO_LARGE", "{response}");
    assert_eq!(response["request_id"], Value::Null, "{response}");
    assert!(conn.at_eof(), "the connection stayed open");
    daemon.assert_alive();
    assert_serving(&mut daemon.connect(), "REQUEST_TOO_LARGE");
}

#[test]
fn daemon_endless_line_without_newline_is_refused() {
    let mut daemon = Setup::new().start();
    let mut conn = daemon.connect();
    let junk = vec![b'x'; MAX_LINE + 4096];
    let _ = conn.send_bytes(&junk);
    let response = conn.read_json();
    assert_eq!(error_code(&response), "REQUEST_TOO_LARGE", "{response}");
    assert_eq!(response["request_id"], Value::Null);
    assert!(conn.at_eof(), "the connection stayed open");
    daemon.assert_alive();
    assert_serving(&mut daemon.connect(), "an endless line");
}

#[test]
fn daemon_answers_pipelined_requests_in_order() {
    let daemon = Setup::new().start();
    let mut conn = daemon.connect();
    let mut batch = Vec::new();
    for i in 0..20 {
        let request = if i % 3 == 0 {
            json!({"protocol_version":1,"request_id":format!("p{i}"),"method":"task.get",
                   "params":{"task_id":"agt_000000000000000000000000"}})
        } else {
            json!({"protocol_version":1,"request_id":format!("p{i}"),"method":"runtime.list",
                   "params":{}})
        };
        batch.extend_from_slice(request.to_string().as_bytes());
        batch.push(b'\n');
    }
    conn.send_bytes(&batch).expect("write");
    for i in 0..20 {
        let response = conn.read_json();
        assert_eq!(response["request_id"], format!("p{i}"), "{response}");
        if i % 3 == 0 {
            assert_eq!(error_code(&response), "AGENT_TASK_NOT_FOUND");
        } else {
            assert_eq!(response["ok"], true, "{response}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_typed_client_round_trip() {
    let daemon = Setup::new().start();
    let client = daemon.client();
    let runtimes = client.call(RuntimeListParams::default()).await.unwrap();
    assert_eq!(runtimes.runtimes.len(), 1);
    let submitted = client
        .call(TaskSubmitParams {
            runtime: "fake".into(),
            workdir: "demo".into(),
            path: String::new(),
            profile: "review".into(),
            prompt: "fake: complete typed".into(),
            model: None,
            continue_from_task_id: None,
            correlation_id: Some("corr-1".into()),
            idempotency_key: None,
        })
        .await
        .unwrap();
    assert_eq!(submitted.status, TaskStatus::Queued);
    assert_eq!(submitted.correlation_id.as_deref(), Some("corr-1"));
    let deadline = tokio::time::Instant::now() + WAIT;
    let view = loop {
        let view = client
            .call(TaskGetParams {
                task_id: submitted.task_id.clone(),
            })
            .await
            .unwrap();
        if view.status.is_terminal() {
            break view;
        }
        assert!(tokio::time::Instant::now() < deadline, "{view:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(view.status, TaskStatus::Succeeded);
    assert_eq!(view.final_response.as_deref(), Some("typed"));
    assert_eq!(view.correlation_id.as_deref(), Some("corr-1"));
    let missing = client
        .call(TaskGetParams {
            task_id: "agt_000000000000000000000000".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code().as_str(), "AGENT_TASK_NOT_FOUND");
}

/// A system Python a process of another uid can run (not a per-user shim).
fn system_python() -> &'static str {
    ["/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
        .expect("the peer test needs a system python3 (/usr/bin/python3)")
}

/// Connects to `socket` as `uid`/`gid`, sends `lines` and closes its
/// sending side; returns every frame received until EOF (the child fails
/// after a 10 s timeout).
fn connect_as(uid: u32, gid: u32, socket: &std::path::Path, lines: &[Value]) -> Vec<Value> {
    const SCRIPT: &str = r#"
import json, socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(10)
sock.connect(sys.argv[1])
payload = sys.stdin.buffer.read()
try:
    sock.sendall(payload)
    sock.shutdown(socket.SHUT_WR)
except OSError:
    pass
data = b""
try:
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
except ConnectionResetError:
    pass
lines = data.split(b"\n")
assert lines[-1] == b"", "a trailing partial line"
print(json.dumps([json.loads(line) for line in lines[:-1]]))
"#;
    let mut input = Vec::new();
    for line in lines {
        input.extend_from_slice(line.to_string().as_bytes());
        input.push(b'\n');
    }
    let mut child = Command::new(system_python())
        .args(["-c", SCRIPT, socket.to_str().unwrap()])
        .env_clear()
        .uid(uid)
        .gid(gid)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn python3");
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the client as {uid}:{gid} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the client's JSON")
}

/// `bridge.peer` needs no task or workdir and answers this connection's
/// measured identity, here the test's own; extra parameters are refused
/// like any method's.
#[test]
fn daemon_answers_the_measured_peer_identity() {
    let daemon = Setup::new().start_serving();
    let measured = daemon.ok("bridge.peer", json!({}));
    assert_eq!(
        measured,
        json!({
            "uid": rustix::process::geteuid().as_raw(),
            "gid": rustix::process::getegid().as_raw(),
        })
    );
    let refused = daemon.err("bridge.peer", json!({"uid": 0}));
    assert_eq!(refused, "INVALID_REQUEST");
}

#[test]
fn daemon_refuses_an_unauthorized_peer_with_one_frame() {
    if !rustix::process::geteuid().is_root() {
        eprintln!(
            "SKIPPED daemon_refuses_an_unauthorized_peer_with_one_frame: needs root to run a \
             client under another uid"
        );
        return;
    }
    const NOBODY: u32 = 65534;
    let setup = Setup::new().agent("peer_gid", &NOBODY.to_string());
    // Let other users traverse the temporary directory down to run/ (which
    // the daemon gives group 65534, 0750).
    std::fs::set_permissions(setup.root(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let daemon = setup.start();
    let socket = daemon.socket();
    let meta = std::fs::metadata(&socket).unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::gid(&meta),
        NOBODY,
        "socket group"
    );
    assert_eq!(
        std::os::unix::fs::MetadataExt::mode(&meta) & 0o777,
        0o660,
        "socket mode"
    );

    let submit = json!({"protocol_version":1,"request_id":"evil","method":"task.submit",
        "params":{"runtime":"fake","workdir":"demo","path":"","profile":"workspace-write",
                  "prompt":"fake: write pwned yes"}});
    // uid 65534 / gid 65534: the group may reach the socket, the uid is
    // not the Bridge's.
    let frames = connect_as(NOBODY, NOBODY, &socket, std::slice::from_ref(&submit));
    assert_eq!(frames.len(), 1, "exactly one frame, then EOF: {frames:?}");
    assert_eq!(error_code(&frames[0]), "PEER_NOT_AUTHORIZED", "{frames:?}");
    assert_eq!(frames[0]["request_id"], Value::Null);

    // The diagnostic is refused like every other method.
    let peer = json!({"protocol_version":1,"request_id":"who","method":"bridge.peer","params":{}});
    let frames = connect_as(NOBODY, NOBODY, &socket, std::slice::from_ref(&peer));
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(error_code(&frames[0]), "PEER_NOT_AUTHORIZED", "{frames:?}");

    // Our own uid in the configured group is served: the submit above had
    // no effect, no task exists and nothing was written. `bridge.peer`
    // answers what the kernel measured for that very connection.
    let get = json!({"protocol_version":1,"request_id":"ok","method":"runtime.list","params":{}});
    let frames = connect_as(0, NOBODY, &socket, &[get, peer]);
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[0]["ok"], true, "{frames:?}");
    assert_eq!(
        frames[1],
        json!({"request_id": "who", "ok": true, "result": {"uid": 0, "gid": NOBODY}})
    );
    // Root's own primary group (0) is not the configured one.
    let mut conn = RawConn::connect(&socket);
    let refused = conn.read_json();
    assert_eq!(error_code(&refused), "PEER_NOT_AUTHORIZED");
    assert!(conn.at_eof());

    assert!(
        daemon.inspect().contains("tasks: 0 shown"),
        "{}",
        daemon.inspect()
    );
    assert!(!setup.work_dir().join("pwned").exists());
}

#[test]
fn daemon_connection_beyond_the_bound_is_refused_with_a_frame_while_the_rest_keep_serving() {
    // The daemon's bound (256, docs/agent-bridge.md); 1024 descriptors by
    // default leave room for the test and the daemon.
    const BOUND: usize = 256;
    let daemon = Setup::new().start_serving();
    let mut served: Vec<RawConn> = (0..BOUND).map(|_| daemon.connect()).collect();
    // Admitted and served: each answers, so all are counted by the daemon.
    for conn in &mut served {
        assert_serving(conn, "filling the bound");
    }
    for attempt in 0..20 {
        let mut extra = daemon.connect();
        let refusal: Value =
            serde_json::from_str(&extra.read_line().expect("a refusal frame")).unwrap();
        assert_eq!(
            error_code(&refusal),
            "BRIDGE_PROTOCOL_ERROR",
            "attempt {attempt}"
        );
        assert_eq!(refusal["request_id"], Value::Null);
        assert_eq!(extra.read_line(), None);
    }
    assert_serving(&mut served[0], "refusing connections beyond the bound");
    // A freed slot is usable again.
    drop(served.pop());
    let mut again = wait_for_admission(&daemon);
    assert_serving(&mut again, "a slot was freed");
}

/// A connection the daemon admits, retried while a freed slot is released.
fn wait_for_admission(daemon: &serverfs_testkit::bridge::Daemon) -> RawConn {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let mut conn = daemon.connect();
        conn.send_line(&json!({"protocol_version": 1, "request_id": "probe", "method": "runtime.list", "params": {}}).to_string());
        let answer: Value = serde_json::from_str(&conn.read_line().expect("an answer")).unwrap();
        if answer["ok"] == true {
            return conn;
        }
        assert!(std::time::Instant::now() < deadline, "no slot was freed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
