//! The Bridge client against tiny in-test servers on a real Unix socket:
//! typed results, Bridge errors, every transport and protocol failure, the
//! timeouts, connection reuse and its one safe retry, and concurrency.

use std::future::Future;
use std::net::Shutdown;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use serverfs_protocol::bridge::client::{
    BridgeClient, ClientError, ClientOptions, ProtocolFailure,
};
use serverfs_protocol::bridge::{
    BridgeErrorCode, BridgeMethod, FrameDecoder, InFlightRecovery, MAX_FRAME_BYTES, ModelDiscovery,
    Request, Response, RuntimeInfo, RuntimeListParams, RuntimeListResult, TaskCancelParams,
    TaskCancelResult, TaskGetParams, TaskStatus,
};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;

/// The bound on every await of a test, so a bug fails instead of hanging.
const TEST_BOUND: Duration = Duration::from_secs(20);

/// A listening socket in its own directory, counting accepted connections
/// and handing each to `handler` in its own task.
struct Server {
    /// Keeps the socket's directory alive.
    _dir: TempDir,
    path: PathBuf,
    accepts: Arc<AtomicUsize>,
    accept_loop: tokio::task::JoinHandle<()>,
}

impl Server {
    fn start<F, Fut>(handler: F) -> Server
    where
        F: Fn(UnixStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bridge.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let accepts = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepts);
        let accept_loop = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(handler(stream));
            }
        });
        Server {
            _dir: dir,
            path,
            accepts,
            accept_loop,
        }
    }

    fn client(&self, options: ClientOptions) -> BridgeClient {
        BridgeClient::new(self.path.clone(), options)
    }

    fn accepts(&self) -> usize {
        self.accepts.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

/// Short timeouts, so that a failing test fails fast.
fn quick() -> ClientOptions {
    ClientOptions {
        connect_timeout: Duration::from_secs(2),
        call_timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    }
}

async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(TEST_BOUND, future)
        .await
        .expect("the test exceeded its bound")
}

/// The next request on `stream`, or `None` once the client closed it.
async fn next_request(stream: &mut UnixStream, frames: &mut FrameDecoder) -> Option<Request> {
    let mut chunk = [0_u8; 4096];
    loop {
        if let Some(frame) = frames.next_frame().unwrap() {
            return Some(Request::from_frame(&frame).unwrap());
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(count) => frames.push(&chunk[..count]),
        }
    }
}

/// A handler answering every request on its connection with `answer`.
fn answering(
    answer: impl Fn(&Request) -> Response + Send + Sync + 'static,
) -> impl Fn(UnixStream) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static
{
    let answer = Arc::new(answer);
    move |mut stream| {
        let answer = Arc::clone(&answer);
        Box::pin(async move {
            let mut frames = FrameDecoder::new();
            while let Some(request) = next_request(&mut stream, &mut frames).await {
                let frame = answer(&request).into_frame();
                if stream.write_all(&frame).await.is_err() {
                    return;
                }
            }
        })
    }
}

fn cancelled(request: &Request) -> Response {
    Response::success(
        request.request_id.clone(),
        &TaskCancelResult {
            task_id: "agt_1".into(),
            status: TaskStatus::Cancelled,
            correlation_id: None,
        },
    )
}

fn cancel() -> TaskCancelParams {
    TaskCancelParams {
        task_id: "agt_1".into(),
    }
}

fn codex() -> RuntimeInfo {
    RuntimeInfo {
        name: "codex".into(),
        available: true,
        version: Some("0.160.0".into()),
        persistent_session: true,
        live_steer: true,
        interactive_approval: true,
        interactive_question: true,
        in_flight_recovery: InFlightRecovery::SessionResume,
        model_override: true,
        model_discovery: ModelDiscovery::RuntimeCatalog,
        capability_state: None,
        capabilities_measured_at: None,
    }
}

/// Neither the error's text nor its debug form (source included) names the
/// socket's directory.
#[track_caller]
fn hides(error: &ClientError, dir: &Path) {
    let dir = dir.to_str().unwrap();
    let shown = format!("{error} / {error:?}");
    assert!(!shown.contains(dir), "{shown} names {dir}");
}

#[tokio::test]
async fn a_call_decodes_the_typed_result() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let server = Server::start(answering(move |request| {
        log.lock().unwrap().push(request.clone());
        Response::success(
            request.request_id.clone(),
            &RuntimeListResult {
                runtimes: vec![codex()],
            },
        )
    }));
    let client = server.client(quick());

    let result = bounded(client.call(RuntimeListParams {})).await.unwrap();

    assert_eq!(
        result,
        RuntimeListResult {
            runtimes: vec![codex()]
        }
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method(), BridgeMethod::RuntimeList);
    assert!(
        seen[0].request_id.starts_with("mcp_"),
        "{}",
        seen[0].request_id
    );
}

#[tokio::test]
async fn a_bridge_error_keeps_its_code_and_message_and_the_connection() {
    let server = Server::start(answering(|request| {
        Response::error(
            Some(request.request_id.clone()),
            BridgeErrorCode::AgentTaskNotFound,
            "task not found",
        )
    }));
    let client = server.client(quick());

    for _ in 0..2 {
        let error = bounded(client.call(TaskGetParams {
            task_id: "agt_404".into(),
        }))
        .await
        .unwrap_err();
        assert!(
            matches!(
                &error,
                ClientError::Bridge { code: BridgeErrorCode::AgentTaskNotFound, message }
                    if message == "task not found"
            ),
            "{error:?}"
        );
        assert_eq!(error.code(), BridgeErrorCode::AgentTaskNotFound);
        assert_eq!(
            format!("{}: {error}", error.code().as_str()),
            "AGENT_TASK_NOT_FOUND: task not found"
        );
    }
    // A well-formed error answer is a clean exchange: the connection stays.
    assert_eq!(server.accepts(), 1);
}

/// A Bridge that refuses every peer as an unauthorized one (spec §2.2):
/// one frame with `request_id: null`, without reading a byte, then close.
fn refusing_bridge() -> Server {
    Server::start(|mut stream: UnixStream| async move {
        let refusal = Response::error(
            None,
            BridgeErrorCode::PeerNotAuthorized,
            "peer is not authorized",
        );
        let _ = stream.write_all(&refusal.into_frame()).await;
    })
}

#[tokio::test]
async fn a_connection_refusal_with_a_null_id_is_the_bridges_answer() {
    let server = refusing_bridge();
    let client = server.client(quick());

    for _ in 0..2 {
        let error = bounded(client.call(cancel())).await.unwrap_err();
        assert!(
            matches!(
                &error,
                ClientError::Bridge { code: BridgeErrorCode::PeerNotAuthorized, message }
                    if message == "peer is not authorized"
            ),
            "{error:?}"
        );
    }
    // The refused connection is never reused.
    assert_eq!(server.accepts(), 2);
}

/// The Bridge refuses a peer without reading a byte, so a request larger
/// than the socket buffer cannot be written whole: the write fails, and
/// the refusal waiting in the socket is still the answer (not "connection
/// closed"), without a retry.
#[tokio::test]
async fn a_refusal_that_beats_the_request_is_still_the_answer() {
    let server = refusing_bridge();
    let client = server.client(quick());
    let long = TaskGetParams {
        task_id: "t".repeat(MAX_FRAME_BYTES - 1024),
    };
    let error = bounded(client.call(long)).await.unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::Bridge {
                code: BridgeErrorCode::PeerNotAuthorized,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(server.accepts(), 1, "a refusal is final: no retry");
}

#[tokio::test]
async fn a_missing_socket_is_unavailable_at_once_without_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let client = BridgeClient::new(dir.path().join("bridge.sock"), ClientOptions::default());

    let started = Instant::now();
    let error = bounded(client.call(cancel())).await.unwrap_err();

    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(&error, ClientError::Unavailable { source } if source.kind() == std::io::ErrorKind::NotFound),
        "{error:?}"
    );
    assert_eq!(error.code(), BridgeErrorCode::AgentBridgeUnavailable);
    assert_eq!(error.to_string(), "Agent Bridge is unavailable");
    hides(&error, dir.path());
}

#[tokio::test]
async fn a_socket_nobody_listens_on_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bridge.sock");
    // Binding leaves the socket file behind; with the listener gone,
    // connecting is refused.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let client = BridgeClient::new(path, ClientOptions::default());

    let error = bounded(client.call(cancel())).await.unwrap_err();

    assert!(
        matches!(&error, ClientError::Unavailable { source } if source.kind() == std::io::ErrorKind::ConnectionRefused),
        "{error:?}"
    );
    assert_eq!(error.code(), BridgeErrorCode::AgentBridgeUnavailable);
    hides(&error, dir.path());
}

#[tokio::test]
async fn a_silent_bridge_times_out_within_the_call_timeout() {
    let server = Server::start(|mut stream: UnixStream| async move {
        // Read everything, answer nothing, keep the connection open.
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
    });
    let client = server.client(ClientOptions {
        call_timeout: Duration::from_millis(200),
        ..ClientOptions::default()
    });

    let started = Instant::now();
    let error = bounded(client.call(cancel())).await.unwrap_err();
    let elapsed = started.elapsed();

    assert!(matches!(error, ClientError::Timeout), "{error:?}");
    assert_eq!(error.code(), BridgeErrorCode::AgentBridgeUnavailable);
    assert!(elapsed >= Duration::from_millis(200), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[tokio::test]
async fn an_answer_for_another_request_is_a_protocol_error() {
    let server = Server::start(answering(|_| {
        Response::success(
            "someone-else",
            &TaskCancelResult {
                task_id: "agt_1".into(),
                status: TaskStatus::Cancelled,
                correlation_id: None,
            },
        )
    }));
    let client = server.client(quick());

    for _ in 0..2 {
        let error = bounded(client.call(cancel())).await.unwrap_err();
        assert!(
            matches!(
                error,
                ClientError::Protocol(ProtocolFailure::RequestIdMismatch)
            ),
            "{error:?}"
        );
        assert_eq!(error.code(), BridgeErrorCode::AgentBridgeProtocolError);
    }
    // A connection that carried a bad answer is dropped, not reused.
    assert_eq!(server.accepts(), 2);
}

#[tokio::test]
async fn garbage_is_a_protocol_error() {
    let server = Server::start(|mut stream: UnixStream| async move {
        let mut frames = FrameDecoder::new();
        if next_request(&mut stream, &mut frames).await.is_some() {
            let _ = stream.write_all(b"this is not json\n").await;
        }
    });
    let client = server.client(quick());

    let error = bounded(client.call(cancel())).await.unwrap_err();

    assert!(
        matches!(error, ClientError::Protocol(ProtocolFailure::Malformed)),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "Agent Bridge protocol failure: malformed response"
    );
}

#[tokio::test]
async fn a_result_of_the_wrong_shape_is_a_protocol_error() {
    let server = Server::start(answering(|request| {
        Response::success(request.request_id.clone(), &json!({"runtimes": 5}))
    }));
    let client = server.client(quick());

    let error = bounded(client.call(RuntimeListParams {}))
        .await
        .unwrap_err();

    assert!(
        matches!(
            error,
            ClientError::Protocol(ProtocolFailure::ResultMismatch)
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_endless_response_line_is_cut_at_the_limit() {
    let written = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&written);
    let server = Server::start(move |mut stream: UnixStream| {
        let counter = Arc::clone(&counter);
        async move {
            let mut frames = FrameDecoder::new();
            if next_request(&mut stream, &mut frames).await.is_none() {
                return;
            }
            // Never a newline, never an end: only a bounded reader stops.
            let chunk = vec![b'a'; 64 * 1024];
            while stream.write_all(&chunk).await.is_ok() {
                counter.fetch_add(chunk.len(), Ordering::SeqCst);
            }
        }
    });
    let client = server.client(ClientOptions {
        call_timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    });

    let error = bounded(client.call(cancel())).await.unwrap_err();

    assert!(
        matches!(error, ClientError::Protocol(ProtocolFailure::TooLarge)),
        "{error:?}"
    );
    // The client stopped reading near the limit: what the server managed
    // to write is the limit plus socket buffers, not an unbounded stream.
    let written = written.load(Ordering::SeqCst);
    assert!(written < 8 * MAX_FRAME_BYTES, "{written} bytes written");
}

#[tokio::test]
async fn an_answer_cut_mid_line_is_a_protocol_error() {
    let server = Server::start(|mut stream: UnixStream| async move {
        let mut frames = FrameDecoder::new();
        if next_request(&mut stream, &mut frames).await.is_some() {
            let _ = stream.write_all(b"{\"request_id\":").await;
        }
    });
    let client = server.client(quick());

    let error = bounded(client.call(cancel())).await.unwrap_err();

    assert!(
        matches!(error, ClientError::Protocol(ProtocolFailure::Truncated)),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_bridge_closing_after_reading_the_request_is_unavailable_and_not_retried() {
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&requests);
    let server = Server::start(move |mut stream: UnixStream| {
        let counter = Arc::clone(&counter);
        async move {
            let mut frames = FrameDecoder::new();
            if next_request(&mut stream, &mut frames).await.is_some() {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let client = server.client(quick());

    let error = bounded(client.call(cancel())).await.unwrap_err();

    assert!(
        matches!(error, ClientError::Disconnected { source: None }),
        "{error:?}"
    );
    assert_eq!(error.code(), BridgeErrorCode::AgentBridgeUnavailable);
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert_eq!(server.accepts(), 1);
}

#[tokio::test]
async fn sequential_calls_share_one_connection_with_unique_ids() {
    let ids = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&ids);
    let server = Server::start(answering(move |request| {
        log.lock().unwrap().push(request.request_id.clone());
        cancelled(request)
    }));
    let client = server.client(quick());

    for _ in 0..3 {
        let result = bounded(client.call(cancel())).await.unwrap();
        assert_eq!(result.status, TaskStatus::Cancelled);
    }

    assert_eq!(server.accepts(), 1);
    let mut ids = ids.lock().unwrap().clone();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
}

#[tokio::test]
async fn an_idle_connection_older_than_max_idle_is_not_reused() {
    let server = Server::start(answering(cancelled));
    let client = server.client(ClientOptions {
        max_idle: Duration::ZERO,
        ..quick()
    });

    bounded(client.call(cancel())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    bounded(client.call(cancel())).await.unwrap();

    assert_eq!(server.accepts(), 2);
}

#[tokio::test]
async fn an_idle_connection_the_bridge_closed_is_replaced() {
    // One answer per connection, then close, reporting each close.
    let (closed_tx, mut closed) = mpsc::unbounded_channel();
    let server = Server::start(move |mut stream: UnixStream| {
        let closed_tx = closed_tx.clone();
        async move {
            let mut frames = FrameDecoder::new();
            if let Some(request) = next_request(&mut stream, &mut frames).await {
                let _ = stream.write_all(&cancelled(&request).into_frame()).await;
            }
            drop(stream);
            let _ = closed_tx.send(());
        }
    });
    let client = server.client(quick());

    bounded(client.call(cancel())).await.unwrap();
    bounded(closed.recv()).await.unwrap();
    let result = bounded(client.call(cancel())).await.unwrap();

    assert_eq!(result.status, TaskStatus::Cancelled);
    assert_eq!(server.accepts(), 2);
}

#[tokio::test]
async fn a_reused_connection_refusing_the_write_is_retried_once() {
    // After one answer the server stops reading but keeps the connection
    // open: the idle probe sees nothing wrong, and the next write fails with
    // EPIPE, so the request provably was not read.
    let (parked_tx, mut parked) = mpsc::unbounded_channel();
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&requests);
    let server = Server::start(move |mut stream: UnixStream| {
        let parked_tx = parked_tx.clone();
        let counter = Arc::clone(&counter);
        async move {
            let mut frames = FrameDecoder::new();
            let Some(request) = next_request(&mut stream, &mut frames).await else {
                return;
            };
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(&cancelled(&request).into_frame()).await;
            let stream = stream.into_std().unwrap();
            stream.shutdown(Shutdown::Read).unwrap();
            // Hand the half-closed stream to the test, which keeps it open.
            let _ = parked_tx.send(stream);
        }
    });
    let client = server.client(quick());

    bounded(client.call(cancel())).await.unwrap();
    let first = bounded(parked.recv()).await.unwrap();
    let result = bounded(client.call(cancel())).await.unwrap();

    assert_eq!(result.status, TaskStatus::Cancelled);
    assert_eq!(server.accepts(), 2);
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    // The first connection stayed open on the server side until now: the
    // retry was caused by the refused write, not by a close.
    drop(first);
}

#[tokio::test]
async fn a_reused_connection_closed_after_the_request_is_not_retried() {
    // First request answered; the second read in full, then the connection
    // closes without an answer. The Bridge may have acted on it, so the
    // client must not send it again.
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&requests);
    let server = Server::start(move |mut stream: UnixStream| {
        let counter = Arc::clone(&counter);
        async move {
            let mut frames = FrameDecoder::new();
            while let Some(request) = next_request(&mut stream, &mut frames).await {
                if counter.fetch_add(1, Ordering::SeqCst) > 0 {
                    return;
                }
                let _ = stream.write_all(&cancelled(&request).into_frame()).await;
            }
        }
    });
    let client = server.client(quick());

    bounded(client.call(cancel())).await.unwrap();
    let error = bounded(client.call(cancel())).await.unwrap_err();

    assert!(
        matches!(error, ClientError::Disconnected { source: None }),
        "{error:?}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    assert_eq!(server.accepts(), 1);
}

#[tokio::test]
async fn concurrent_calls_do_not_wait_for_each_other() {
    // The server answers no call until all eight are in: a client that
    // waited for one answer before sending the next call would never see
    // one, and the bound below fails the test. No clock is involved.
    const CALLS: usize = 8;
    let all_in = Arc::new(tokio::sync::Barrier::new(CALLS));
    let server = Server::start(move |mut stream: UnixStream| {
        let all_in = Arc::clone(&all_in);
        async move {
            let mut frames = FrameDecoder::new();
            while let Some(request) = next_request(&mut stream, &mut frames).await {
                all_in.wait().await;
                if stream
                    .write_all(&cancelled(&request).into_frame())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    });
    let client = Arc::new(server.client(quick()));

    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..CALLS {
        let client = Arc::clone(&client);
        calls.spawn(async move { client.call(cancel()).await });
    }
    let results = bounded(calls.join_all()).await;

    assert_eq!(results.len(), CALLS);
    for result in results {
        assert_eq!(result.unwrap().status, TaskStatus::Cancelled);
    }
}

#[tokio::test]
async fn an_oversized_request_is_refused_without_connecting() {
    // No socket at all: had the client tried to connect, it would report
    // `Unavailable`.
    let dir = tempfile::tempdir().unwrap();
    let client = BridgeClient::new(dir.path().join("bridge.sock"), quick());
    let huge = TaskGetParams {
        task_id: "x".repeat(MAX_FRAME_BYTES),
    };

    let error = bounded(client.call(huge)).await.unwrap_err();

    assert!(matches!(error, ClientError::RequestTooLarge), "{error:?}");
    assert_eq!(error.code(), BridgeErrorCode::AgentBridgeProtocolError);
    assert_eq!(
        error.to_string(),
        "Agent Bridge request exceeds 1048576 bytes"
    );
}

#[test]
fn the_default_options_follow_the_spec() {
    assert_eq!(
        ClientOptions::default(),
        ClientOptions {
            connect_timeout: Duration::from_secs(2),
            call_timeout: Duration::from_secs(30),
            max_idle: Duration::from_secs(30),
        }
    );
}
