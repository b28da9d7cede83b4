//! The Bridge RPC transport over real Unix sockets: claiming the socket
//! path, peer authorization, framing and envelope errors, concurrency and
//! graceful shutdown.

use std::io::{BufRead, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_agent_bridge::BridgeErrorCode;
use serverfs_agent_bridge::rpc::{
    BridgeListener, BridgeService, DirectoryProblem, PathProblem, PeerInfo, PeerPolicy, RpcError,
    ServeOptions, ServiceFuture, ShutdownTrigger, shutdown_channel,
};
use serverfs_protocol::bridge::{BridgeRequest, MAX_FRAME_BYTES, Request, Response};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use serverfs_testkit::within;

/// How long the `slow` request of the test service takes.
const SLOW: Duration = Duration::from_millis(700);

/// Echoes the method name, records every call, and misbehaves on request
/// (`task.get` with a special `task_id`).
#[derive(Default)]
struct Echo {
    calls: Mutex<Vec<(PeerInfo, String)>>,
    slow_started: Notify,
    slow_finished: AtomicBool,
}

impl Echo {
    fn calls(&self) -> Vec<(PeerInfo, String)> {
        self.calls.lock().unwrap().clone()
    }
}

impl BridgeService for Echo {
    fn handle(&self, peer: PeerInfo, request: Request) -> ServiceFuture<'_> {
        Box::pin(async move {
            let method = request.method().as_str();
            self.calls.lock().unwrap().push((peer, method.to_owned()));
            if let BridgeRequest::TaskGet(params) = &request.call {
                match params.task_id.as_str() {
                    "slow" => {
                        self.slow_started.notify_one();
                        tokio::time::sleep(SLOW).await;
                        self.slow_finished.store(true, Ordering::SeqCst);
                    }
                    "panic" => panic!("the test service panics on purpose"),
                    "wrong-id" => return Response::success("someone-else", &json!({})),
                    other => {
                        if let Some(ms) = other.strip_prefix("jitter-") {
                            let ms = ms.parse::<u64>().unwrap();
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                        }
                    }
                }
            }
            Response::success(request.request_id, &json!({ "method": method }))
        })
    }
}

/// A serving Bridge socket in a temporary directory.
struct Server {
    _temp: TempDir,
    socket: PathBuf,
    service: Arc<Echo>,
    stop: ShutdownTrigger,
    task: JoinHandle<Result<(), RpcError>>,
}

impl Server {
    async fn start() -> Server {
        Server::start_with(PeerPolicy::current_user(), &ServeOptions::default()).await
    }

    async fn start_with(policy: PeerPolicy, options: &ServeOptions) -> Server {
        let temp = tempfile::tempdir().unwrap();
        let socket = temp.path().join("run").join("bridge.sock");
        let listener = BridgeListener::bind(&socket, policy).unwrap();
        let service = Arc::new(Echo::default());
        let (stop, signal) = shutdown_channel();
        let task = tokio::spawn({
            let service: Arc<dyn BridgeService> = service.clone();
            let options = options.clone();
            async move { listener.serve_with(service, signal, &options).await }
        });
        Server {
            _temp: temp,
            socket,
            service,
            stop,
            task,
        }
    }

    async fn client(&self) -> Client {
        Client::connect(&self.socket).await
    }

    /// Triggers shutdown and waits for the server to finish.
    async fn shut_down(self) -> TempDir {
        self.stop.trigger();
        within("server shutdown", self.task).await.unwrap().unwrap();
        self._temp
    }
}

struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Client {
    async fn connect(socket: &Path) -> Client {
        let stream = within("connect", UnixStream::connect(socket))
            .await
            .unwrap();
        let (reader, writer) = stream.into_split();
        Client {
            reader: BufReader::new(reader),
            writer,
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        within("send", self.writer.write_all(bytes)).await.unwrap();
    }

    /// The next response, or `None` once the server closed.
    async fn receive(&mut self) -> Option<Value> {
        receive_line(&mut self.reader).await
    }

    async fn call(&mut self, line: &str) -> Value {
        self.send(line.as_bytes()).await;
        self.receive().await.expect("a response")
    }
}

/// The next response line, or `None` once the server closed.
async fn receive_line(reader: &mut BufReader<OwnedReadHalf>) -> Option<Value> {
    let mut line = String::new();
    match within("receive", reader.read_line(&mut line)).await {
        Ok(0) => None,
        Ok(_) => {
            assert!(line.ends_with('\n'), "a response ends with a newline");
            Some(serde_json::from_str(&line).unwrap())
        }
        // Closing with our unread bytes still queued makes the kernel
        // report a reset instead of end-of-file; both mean closed.
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => None,
        Err(error) => panic!("reading a response failed: {error}"),
    }
}

fn request(id: &str, method: &str, params: Value) -> String {
    let mut line = json!({
        "protocol_version": 1,
        "request_id": id,
        "method": method,
        "params": params,
    })
    .to_string();
    line.push('\n');
    line
}

fn ok(id: &str, method: &str) -> Value {
    json!({ "request_id": id, "ok": true, "result": { "method": method } })
}

/// The code of an error response, with its echoed id.
fn error_of(response: &Value) -> (Value, &str) {
    assert_eq!(response["ok"], json!(false), "{response}");
    (
        response["request_id"].clone(),
        response["error"]["code"].as_str().unwrap(),
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

// ---------------------------------------------------------------------
// Claiming the socket path

#[test]
fn the_directory_and_socket_get_their_modes() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("state").join("run");
    let socket = dir.join("bridge.sock");
    let listener = BridgeListener::bind(&socket, PeerPolicy::current_user()).unwrap();

    assert_eq!(mode(&dir), 0o750);
    assert!(
        std::fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket()
    );
    assert_eq!(mode(&socket), 0o660);
    assert_eq!(mode(&dir.join("bridge.sock.lock")), 0o600);

    // Dropped without serving: the socket goes, the lock file stays (it is
    // never deleted, see socket.rs).
    drop(listener);
    assert!(!socket.exists());
    assert!(dir.join("bridge.sock.lock").exists());
}

#[tokio::test]
async fn a_second_bridge_is_refused_while_the_first_runs() {
    let server = Server::start().await;
    let second = BridgeListener::bind(&server.socket, PeerPolicy::current_user()).unwrap_err();
    assert!(matches!(second, RpcError::AlreadyRunning), "{second:?}");
    assert_eq!(second.code(), BridgeErrorCode::SocketPathInUse);
    assert_eq!(second.code().as_str(), "SOCKET_PATH_IN_USE");
    // The message never names the path.
    assert!(!second.to_string().contains("bridge.sock"));

    // The first one was not disturbed.
    let mut client = server.client().await;
    let answer = client.call(&request("r1", "runtime.list", json!({}))).await;
    assert_eq!(answer, ok("r1", "runtime.list"));

    let socket = server.socket.clone();
    let temp = server.shut_down().await;
    assert!(!socket.exists());
    let third = BridgeListener::bind(&socket, PeerPolicy::current_user()).unwrap();
    drop(third);
    drop(temp);
}

#[tokio::test]
async fn a_stale_socket_without_a_lock_holder_is_recovered() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
    let socket = dir.join("bridge.sock");
    // A crashed Bridge: its socket file remains, nobody listens, and its
    // lock died with it.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());

    let listener = BridgeListener::bind(&socket, PeerPolicy::current_user()).unwrap();
    let (stop, signal) = shutdown_channel();
    let server = tokio::spawn(listener.serve(Arc::new(Echo::default()), signal));
    let mut client = Client::connect(&socket).await;
    let answer = client
        .call(&request("r1", "task.cancel", json!({"task_id": "t"})))
        .await;
    assert_eq!(answer, ok("r1", "task.cancel"));
    stop.trigger();
    within("shutdown", server).await.unwrap().unwrap();
}

#[tokio::test]
async fn occupied_or_unsafe_paths_are_refused() {
    let temp = tempfile::tempdir().unwrap();
    let policy = PeerPolicy::current_user();
    let dir = temp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();

    // A regular file is never deleted.
    let file = dir.join("file.sock");
    std::fs::write(&file, "keep me").unwrap();
    let refused = BridgeListener::bind(&file, policy).unwrap_err();
    assert!(matches!(
        refused,
        RpcError::PathInUse {
            problem: PathProblem::NotASocket,
            ..
        }
    ));
    assert_eq!(refused.code().as_str(), "SOCKET_PATH_IN_USE");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");

    // Nor is a symlink.
    let link = dir.join("link.sock");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let refused = BridgeListener::bind(&link, policy).unwrap_err();
    assert_eq!(refused.code(), BridgeErrorCode::SocketPathInUse);
    assert!(std::fs::symlink_metadata(&link).is_ok());

    // A live listener that holds no lock (a Bridge from before the lock
    // file) is not taken over.
    let live = dir.join("live.sock");
    let foreign = std::os::unix::net::UnixListener::bind(&live).unwrap();
    let refused = BridgeListener::bind(&live, policy).unwrap_err();
    assert!(matches!(
        refused,
        RpcError::PathInUse {
            problem: PathProblem::Live,
            ..
        }
    ));
    drop(foreign);

    // A symlinked directory.
    let real = temp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o750)).unwrap();
    let linked = temp.path().join("linked");
    std::os::unix::fs::symlink(&real, &linked).unwrap();
    let refused = BridgeListener::bind(linked.join("bridge.sock"), policy).unwrap_err();
    assert!(matches!(
        refused,
        RpcError::DirectoryUnsafe {
            problem: DirectoryProblem::NotADirectory,
            ..
        }
    ));
    assert_eq!(refused.code().as_str(), "SOCKET_DIRECTORY_UNSAFE");

    // A directory open to others, or writable by the group.
    for open in [0o755, 0o770] {
        let wide = temp.path().join(format!("wide-{open:o}"));
        std::fs::create_dir(&wide).unwrap();
        std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(open)).unwrap();
        let refused = BridgeListener::bind(wide.join("bridge.sock"), policy).unwrap_err();
        assert!(matches!(
            refused,
            RpcError::DirectoryUnsafe {
                problem: DirectoryProblem::TooPermissive,
                ..
            }
        ));
        assert!(!wide.join("bridge.sock").exists());
    }

    // A relative path, and one too long for a socket address.
    let refused = BridgeListener::bind("run/bridge.sock", policy).unwrap_err();
    assert_eq!(refused.code().as_str(), "BRIDGE_CONFIG_INVALID");
    let long = dir.join("x".repeat(120));
    let refused = BridgeListener::bind(&long, policy).unwrap_err();
    assert_eq!(refused.code().as_str(), "SOCKET_PATH_TOO_LONG");
}

// ---------------------------------------------------------------------
// Framing and envelope errors

#[tokio::test]
async fn malformed_requests_get_their_code_and_the_connection_stays_usable() {
    let server = Server::start().await;
    let mut client = server.client().await;

    let cases: [(&str, String, Value, &str); 6] = [
        (
            "not JSON",
            "{this is not json\n".to_owned(),
            Value::Null,
            "INVALID_REQUEST",
        ),
        (
            "unknown method",
            request("m1", "task.explode", json!({})),
            json!("m1"),
            "METHOD_NOT_FOUND",
        ),
        (
            "unknown envelope field",
            format!(
                "{}\n",
                json!({"protocol_version": 1, "request_id": "e1", "method": "runtime.list",
                       "params": {}, "extra": true})
            ),
            json!("e1"),
            "INVALID_REQUEST",
        ),
        (
            "wrong protocol version",
            format!(
                "{}\n",
                json!({"protocol_version": 2, "request_id": "v2", "method": "runtime.list",
                       "params": {}})
            ),
            json!("v2"),
            "PROTOCOL_VERSION_UNSUPPORTED",
        ),
        (
            "wrong parameter type",
            request("p1", "task.get", json!({"task_id": 5})),
            json!("p1"),
            "INVALID_REQUEST",
        ),
        (
            "unknown parameter",
            request("p2", "runtime.list", json!({"verbose": true})),
            json!("p2"),
            "INVALID_REQUEST",
        ),
    ];
    for (what, line, id, code) in &cases {
        let response = client.call(line).await;
        assert_eq!(error_of(&response), (id.clone(), *code), "{what}");
        // The connection still works after each one.
        let answer = client
            .call(&request("after", "runtime.list", json!({})))
            .await;
        assert_eq!(answer, ok("after", "runtime.list"), "after {what}");
    }
    // Only the valid requests reached the service.
    assert_eq!(server.service.calls().len(), cases.len());
    server.shut_down().await;
}

#[tokio::test]
async fn requests_on_one_connection_are_answered_in_order_even_when_pipelined() {
    let server = Server::start().await;
    let mut client = server.client().await;
    let mut burst = String::new();
    burst.push_str(&request("a", "task.get", json!({"task_id": "slow"})));
    burst.push_str("not json\n");
    burst.push_str(&request("c", "task.get", json!({"task_id": "fast"})));
    client.send(burst.as_bytes()).await;
    assert_eq!(client.receive().await.unwrap(), ok("a", "task.get"));
    assert_eq!(
        error_of(&client.receive().await.unwrap()),
        (Value::Null, "INVALID_REQUEST")
    );
    assert_eq!(client.receive().await.unwrap(), ok("c", "task.get"));
    server.shut_down().await;
}

#[tokio::test]
async fn a_frame_of_exactly_one_mebibyte_is_served_and_one_byte_more_closes() {
    let server = Server::start().await;

    // Pad with JSON whitespace inside the object: the line, newline
    // included, is exactly MAX_FRAME_BYTES.
    let padded = |id: &str, length: usize| {
        let compact = request(id, "runtime.list", json!({}));
        let body = compact.trim_end_matches('\n');
        let padding = length - 1 - body.len();
        format!("{{{}{}\n", " ".repeat(padding), &body[1..])
    };
    let exact = padded("big", MAX_FRAME_BYTES);
    assert_eq!(exact.len(), MAX_FRAME_BYTES);
    let mut client = server.client().await;
    assert_eq!(client.call(&exact).await, ok("big", "runtime.list"));
    // Still usable.
    let answer = client
        .call(&request("next", "runtime.list", json!({})))
        .await;
    assert_eq!(answer, ok("next", "runtime.list"));

    let over = padded("bigger", MAX_FRAME_BYTES + 1);
    assert_eq!(over.len(), MAX_FRAME_BYTES + 1);
    let Client {
        mut reader,
        mut writer,
    } = client;
    // The server may close before it has read everything: write in the
    // background and ignore a broken pipe.
    let writing = tokio::spawn(async move {
        let _ = writer.write_all(over.as_bytes()).await;
    });
    let refusal = receive_line(&mut reader).await.unwrap();
    assert_eq!(error_of(&refusal), (Value::Null, "REQUEST_TOO_LARGE"));
    assert_eq!(
        receive_line(&mut reader).await,
        None,
        "closed after the refusal"
    );
    within("the writer", writing).await.unwrap();

    // The server keeps serving new connections.
    let mut fresh = server.client().await;
    let answer = fresh.call(&request("r", "runtime.list", json!({}))).await;
    assert_eq!(answer, ok("r", "runtime.list"));
    let calls = server.service.calls();
    assert_eq!(
        calls.len(),
        3,
        "the oversized request never reached the service"
    );
    server.shut_down().await;
}

// ---------------------------------------------------------------------
// The service

#[tokio::test]
async fn a_panicking_or_misbehaving_service_harms_only_its_request() {
    let server = Server::start().await;
    let mut client = server.client().await;
    let mut other = server.client().await;

    let response = client
        .call(&request("boom", "task.get", json!({"task_id": "panic"})))
        .await;
    assert_eq!(
        error_of(&response),
        (json!("boom"), "BRIDGE_PROTOCOL_ERROR")
    );
    assert_eq!(response["error"]["message"], json!("protocol failure"));
    let response = client
        .call(&request("mine", "task.get", json!({"task_id": "wrong-id"})))
        .await;
    assert_eq!(
        error_of(&response),
        (json!("mine"), "BRIDGE_PROTOCOL_ERROR")
    );

    let answer = client.call(&request("r", "runtime.list", json!({}))).await;
    assert_eq!(answer, ok("r", "runtime.list"));
    let answer = other.call(&request("o", "runtime.list", json!({}))).await;
    assert_eq!(answer, ok("o", "runtime.list"));
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_connections_of_twenty_requests_are_all_answered_in_order() {
    let server = Server::start().await;
    let mut clients = Vec::new();
    for connection in 0..50 {
        let socket = server.socket.clone();
        clients.push(tokio::spawn(async move {
            let mut client = Client::connect(&socket).await;
            // Pipelined: all twenty are sent before the first answer.
            let mut burst = String::new();
            for index in 0..20 {
                let id = format!("c{connection}-r{index}");
                let task = format!("jitter-{}", (connection + index) % 3);
                burst.push_str(&request(&id, "task.get", json!({ "task_id": task })));
            }
            client.send(burst.as_bytes()).await;
            for index in 0..20 {
                let id = format!("c{connection}-r{index}");
                assert_eq!(client.receive().await.unwrap(), ok(&id, "task.get"));
            }
        }));
    }
    for client in clients {
        within("a client", client).await.unwrap();
    }
    assert_eq!(server.service.calls().len(), 50 * 20);
    server.shut_down().await;
}

#[tokio::test]
async fn connections_beyond_the_bound_are_refused_politely() {
    let mut options = ServeOptions::default();
    options.max_connections(2);
    let server = Server::start_with(PeerPolicy::current_user(), &options).await;
    let mut first = server.client().await;
    let mut second = server.client().await;
    // Make sure both are admitted before the third arrives.
    for (client, id) in [(&mut first, "1"), (&mut second, "2")] {
        let answer = client.call(&request(id, "runtime.list", json!({}))).await;
        assert_eq!(answer, ok(id, "runtime.list"));
    }

    let mut third = server.client().await;
    let refusal = third.receive().await.unwrap();
    assert_eq!(error_of(&refusal), (Value::Null, "BRIDGE_PROTOCOL_ERROR"));
    assert_eq!(third.receive().await, None);

    // A slot frees up when a connection closes.
    drop(first);
    let answer = within("a freed slot", async {
        loop {
            let mut retry = server.client().await;
            retry
                .send(request("4", "runtime.list", json!({})).as_bytes())
                .await;
            let response = retry.receive().await.unwrap();
            if response["ok"] == json!(true) {
                return response;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(answer, ok("4", "runtime.list"));
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_of_a_flood_beyond_the_bound_gets_its_refusal() {
    let mut options = ServeOptions::default();
    options.max_connections(1);
    let server = Server::start_with(PeerPolicy::current_user(), &options).await;
    let mut admitted = server.client().await;
    let answer = admitted
        .call(&request("1", "runtime.list", json!({})))
        .await;
    assert_eq!(answer, ok("1", "runtime.list"));

    // All connected before the first is read, so refusals pile up at once.
    let mut flood = Vec::new();
    for _ in 0..200 {
        flood.push(server.client().await);
    }
    for (index, client) in flood.iter_mut().enumerate() {
        let refusal = client
            .receive()
            .await
            .unwrap_or_else(|| panic!("refused connection {index} got no frame"));
        assert_eq!(error_of(&refusal), (Value::Null, "BRIDGE_PROTOCOL_ERROR"));
        assert_eq!(client.receive().await, None);
    }
    // The admitted connection was never disturbed.
    let answer = admitted
        .call(&request("2", "runtime.list", json!({})))
        .await;
    assert_eq!(answer, ok("2", "runtime.list"));
    server.shut_down().await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_bound() {
    let mut options = ServeOptions::default();
    options.idle_timeout(Duration::from_millis(300));
    let server = Server::start_with(PeerPolicy::current_user(), &options).await;
    let mut client = server.client().await;
    // Each answered request restarts the bound.
    for id in ["1", "2", "3"] {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let answer = client.call(&request(id, "runtime.list", json!({}))).await;
        assert_eq!(answer, ok(id, "runtime.list"));
    }
    let started = std::time::Instant::now();
    assert_eq!(client.receive().await, None);
    assert!(started.elapsed() >= Duration::from_millis(250));
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_request_is_cut_off_at_the_request_bound() {
    let mut options = ServeOptions::default();
    options
        .idle_timeout(Duration::from_secs(60))
        .request_timeout(Duration::from_millis(400));
    let server = Server::start_with(PeerPolicy::current_user(), &options).await;
    let stream = UnixStream::connect(&server.socket).await.unwrap();
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    let line = request("slowpoke", "runtime.list", json!({}));
    // One byte every 50 ms: the idle bound never passes, the request would
    // take several seconds to arrive.
    let trickle = tokio::spawn(async move {
        for byte in line.as_bytes() {
            if writer.write_all(&[*byte]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    assert_eq!(receive_line(&mut reader).await, None);
    assert!(
        within("the trickle to notice the close", trickle)
            .await
            .unwrap(),
        "the server waited for the whole trickled request"
    );
    assert!(server.service.calls().is_empty());
    server.shut_down().await;
}

// ---------------------------------------------------------------------
// Graceful shutdown

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_completes_the_request_in_flight_and_cleans_up() {
    let server = Server::start().await;
    let mut idle = server.client().await;
    let mut busy = server.client().await;
    busy.send(request("slow", "task.get", json!({"task_id": "slow"})).as_bytes())
        .await;
    within(
        "the slow request to start",
        server.service.slow_started.notified(),
    )
    .await;

    server.stop.trigger();
    // The request in flight is answered, then its connection closes.
    assert_eq!(busy.receive().await.unwrap(), ok("slow", "task.get"));
    assert_eq!(busy.receive().await, None);
    // The idle connection is closed without waiting for the drain bound.
    assert_eq!(idle.receive().await, None);

    let socket = server.socket.clone();
    within("server shutdown", server.task)
        .await
        .unwrap()
        .unwrap();
    assert!(!socket.exists(), "the socket file is removed");
    assert!(UnixStream::connect(&socket).await.is_err());
    // The lock is released: a new Bridge starts.
    drop(BridgeListener::bind(&socket, PeerPolicy::current_user()).unwrap());
}

#[tokio::test]
async fn shutdown_drops_requests_that_outlive_the_drain_bound() {
    let mut options = ServeOptions::default();
    options.drain_timeout(Duration::from_millis(100));
    let server = Server::start_with(PeerPolicy::current_user(), &options).await;
    let mut busy = server.client().await;
    busy.send(request("slow", "task.get", json!({"task_id": "slow"})).as_bytes())
        .await;
    within(
        "the slow request to start",
        server.service.slow_started.notified(),
    )
    .await;
    let socket = server.socket.clone();
    let service = Arc::clone(&server.service);
    server.shut_down().await;
    // Had the call survived, it would have finished by now.
    tokio::time::sleep(SLOW * 2).await;
    assert!(
        !service.slow_finished.load(Ordering::SeqCst),
        "the drain bound cut the request"
    );
    assert_eq!(busy.receive().await, None);
    assert!(!socket.exists());
}

// ---------------------------------------------------------------------
// Peer authorization

#[tokio::test]
async fn a_peer_of_another_uid_or_gid_is_refused_before_dispatch() {
    let our_uid = PeerPolicy::current_user().allowed_uid();
    let our_gid = rustix::process::getegid().as_raw();
    for policy in [
        PeerPolicy::uid(our_uid.wrapping_add(1)),
        PeerPolicy::current_user().with_gid(our_gid.wrapping_add(1)),
    ] {
        if policy.allowed_gid().is_some() && our_uid != 0 {
            // Giving the socket a group we are not in needs root.
            println!("skipped the gid case: not running as root");
            continue;
        }
        let server = Server::start_with(policy, &ServeOptions::default()).await;
        let mut client = server.client().await;
        // Whatever the client sends is never read.
        let response = client.call(&request("r1", "runtime.list", json!({}))).await;
        assert_eq!(
            response,
            json!({"request_id": null, "ok": false,
                   "error": {"code": "PEER_NOT_AUTHORIZED", "message": "peer is not authorized"}})
        );
        assert_eq!(client.receive().await, None, "closed after the refusal");
        assert!(server.service.calls().is_empty(), "nothing was dispatched");
        server.shut_down().await;
    }
}

/// Environment variable that turns [`peer_helper_client`] into a client of
/// the socket it names.
const HELPER_SOCKET: &str = "SERVERFS_RPC_TEST_HELPER_SOCKET";
const HELPER_MARK: &str = "HELPER-RESPONSE:";

/// Not a test on its own: re-executed by
/// [`a_client_process_of_another_uid_is_refused`] under another uid, it
/// sends one request and prints the answer. Without the variable it does
/// nothing.
#[test]
fn peer_helper_client() {
    let Some(socket) = std::env::var_os(HELPER_SOCKET) else {
        return;
    };
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The server may already have closed: a failed write is fine.
    let _ = stream.write_all(request("h1", "runtime.list", json!({})).as_bytes());
    let mut reader = std::io::BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    // libtest may have printed the test name on this line already.
    println!("\n{HELPER_MARK}{}", line.trim_end());
}

#[tokio::test]
async fn a_client_process_of_another_uid_is_refused() {
    if PeerPolicy::current_user().allowed_uid() != 0 {
        println!("skipped: switching a client to another uid needs root");
        return;
    }
    const NOBODY: u32 = 65534;
    let server = Server::start().await;
    // For this test only, let uid 65534 reach the socket: the temporary
    // directory and the socket directory are private by design.
    let dir = server.socket.parent().unwrap();
    for path in [dir.parent().unwrap(), dir] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&server.socket, std::fs::Permissions::from_mode(0o666)).unwrap();

    let mut helper = tokio::process::Command::new(std::env::current_exe().unwrap());
    helper
        .args([
            "--exact",
            "suite::rpc::peer_helper_client",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_SOCKET, &server.socket)
        .uid(NOBODY)
        .gid(NOBODY)
        .kill_on_drop(true);
    let output = match within("the helper client", helper.output()).await {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            println!("skipped: uid {NOBODY} cannot execute the test binary ({error})");
            server.shut_down().await;
            return;
        }
        Err(error) => panic!("starting the helper failed: {error}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "helper failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer = stdout
        .lines()
        .find_map(|line| line.split_once(HELPER_MARK).map(|(_, answer)| answer))
        .unwrap_or_else(|| panic!("no response in the helper's output: {stdout}"));
    let response: Value = serde_json::from_str(answer).unwrap();
    assert_eq!(error_of(&response), (Value::Null, "PEER_NOT_AUTHORIZED"));
    assert!(server.service.calls().is_empty(), "nothing was dispatched");

    // We, the allowed uid, are still served.
    let mut client = server.client().await;
    let answer = client.call(&request("r", "runtime.list", json!({}))).await;
    assert_eq!(answer, ok("r", "runtime.list"));
    server.shut_down().await;
}
