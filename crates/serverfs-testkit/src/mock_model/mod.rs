//! A scripted model endpoint on 127.0.0.1 for driving real agent CLIs
//! offline (spec-adapters.md §6).
//!
//! Plain std threads, no async runtime: the agents under test are separate
//! processes, so the server only has to answer a handful of HTTP requests,
//! and a thread per connection keeps slow (delayed) replies independent.

mod anthropic;
mod chat;
mod http;
mod responses;
mod script;

use std::io::{self, BufReader};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::{Value, json};

pub use script::{Reply, Rule, Script};

use http::{BadRequest, HttpRequest};
use script::Exchange;

/// How long a connection may sit idle while its request is read or its
/// reply written; a stuck client then frees its thread instead of keeping
/// it for the rest of the test run.
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// A running mock model server. Dropping it stops the server: no new
/// connections are served and delayed replies still waiting are dropped
/// unanswered.
///
/// Routes (anything else is a 404 with a JSON error body, recorded too):
///
/// | request | answer |
/// |---|---|
/// | `POST /v1/responses` | OpenAI Responses SSE from the [`Script`] |
/// | `POST /v1/chat/completions` | OpenAI Chat Completions chunks (`data:` lines, then `data: [DONE]`) from the script, or one JSON completion when `stream` is not `true`; a failure is an HTTP error |
/// | `POST /v1/messages` (any query, e.g. `?beta=true`) | Anthropic Messages SSE from the script, or one JSON message when `stream` is not `true` |
/// | `POST /v1/messages/count_tokens` | `{"input_tokens": N}` |
/// | `GET /v1/models` | `{"data": [], "has_more": false}` |
///
/// Every response carries `connection: close` and the server closes the
/// connection after it, which is what ends an SSE stream. Ids are unique
/// per server: the `n`th model reply uses `resp_n`, `msg_n`, `call_n`,
/// `toolu_n`.
///
/// # Example
///
/// ```
/// use std::io::{Read, Write};
/// use serde_json::json;
/// use serverfs_testkit::{MockModel, Reply, Script};
///
/// # fn main() -> std::io::Result<()> {
/// let model = MockModel::start(Script::new().on(
///     "make-file",
///     Reply::tool_call("exec_command", json!({"cmd": "echo hi > f.txt"})),
///     Reply::text("DONE"),
/// ))?;
/// // Point the agent at it: Codex's `base_url` is `model.base_url()`,
/// // Claude Code's `ANTHROPIC_BASE_URL` is `model.origin()`. Here, by hand:
/// let body = json!({"stream": true, "input": [
///     {"type": "message", "role": "user",
///      "content": [{"type": "input_text", "text": "please make-file"}]}]})
/// .to_string();
/// let mut conn = std::net::TcpStream::connect(model.addr())?;
/// write!(
///     conn,
///     "POST /v1/responses HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}",
///     body.len()
/// )?;
/// let mut reply = String::new();
/// conn.read_to_string(&mut reply)?; // ends: the server closes the stream
/// assert!(reply.contains(r#""name":"exec_command""#));
/// assert_eq!(model.requests()[0].path, "/v1/responses");
/// # Ok(())
/// # }
/// ```
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept_thread: Option<JoinHandle<()>>,
}

/// One request as the mock model received it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The target's path without its query (`/v1/messages`).
    pub path: String,
    /// The query string after `?` (`beta=true`), if any.
    pub query: Option<String>,
    /// Headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when empty, and a JSON string of the
    /// (lossily decoded) bytes when it is not JSON.
    pub body: Value,
}

impl RecordedRequest {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        http::header(&self.headers, &name.to_ascii_lowercase())
    }
}

/// State shared by the accept loop and the connection threads.
struct Shared {
    script: Script,
    log: Mutex<Vec<RecordedRequest>>,
    /// Signalled whenever a request is recorded.
    logged: Condvar,
    stopping: Mutex<bool>,
    /// Signalled when the server stops, to cut delayed replies short.
    stopped: Condvar,
    /// The last model reply number handed out.
    replies: AtomicU64,
}

/// Locks `mutex`, carrying on after a panic elsewhere: the data (a request
/// log, a flag) stays meaningful, and the panic itself already fails the test.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MockModel {
    /// Binds 127.0.0.1 on a free port and starts serving `script`.
    ///
    /// # Errors
    ///
    /// Binding the socket or spawning the accept thread failed.
    pub fn start(script: Script) -> io::Result<MockModel> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script,
            log: Mutex::new(Vec::new()),
            logged: Condvar::new(),
            stopping: Mutex::new(false),
            stopped: Condvar::new(),
            replies: AtomicU64::new(0),
        });
        let accept_shared = Arc::clone(&shared);
        let accept_thread = thread::Builder::new()
            .name("mock-model-accept".to_owned())
            .spawn(move || accept_loop(&listener, &accept_shared))?;
        Ok(MockModel {
            addr,
            shared,
            accept_thread: Some(accept_thread),
        })
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`: Codex's
    /// `model_providers.<id>.base_url` (it appends `/responses`), and an
    /// OpenAI-compatible provider's `baseURL` (it appends
    /// `/chat/completions`).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// `http://127.0.0.1:PORT`, without `/v1`: Claude Code's
    /// `ANTHROPIC_BASE_URL` (it appends `/v1/messages`).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in arrival order. A request is
    /// recorded as soon as it is read, before its reply (and any delay).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.log).clone()
    }

    /// Waits until at least `count` requests have arrived or `timeout`
    /// passes, and returns the requests so far (fewer than `count` on
    /// timeout). Lets a test act while a delayed reply is pending, e.g.
    /// interrupt the turn once the model has been asked.
    pub fn wait_for_requests(&self, count: usize, timeout: Duration) -> Vec<RecordedRequest> {
        let log = lock(&self.shared.log);
        let (log, _) = self
            .shared
            .logged
            .wait_timeout_while(log, timeout, |log| log.len() < count)
            .unwrap_or_else(PoisonError::into_inner);
        log.clone()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        *lock(&self.shared.stopping) = true;
        self.shared.stopped.notify_all();
        // `accept` blocks until a connection arrives; make one so the loop
        // sees the flag. If even that fails, leave the thread detached
        // rather than hang the test in `join`.
        let woke = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5)).is_ok();
        if let Some(handle) = self.accept_thread.take()
            && woke
        {
            // A panic in the accept loop has nothing left to report here.
            let _ = handle.join();
        }
    }
}

impl Shared {
    fn is_stopping(&self) -> bool {
        *lock(&self.stopping)
    }

    /// Sleeps for `delay`, or less if the server stops; true when the full
    /// delay passed and the reply should still be sent.
    fn sleep(&self, delay: Duration) -> bool {
        let stopping = lock(&self.stopping);
        let (stopping, _) = self
            .stopped
            .wait_timeout_while(stopping, delay, |stopping| !*stopping)
            .unwrap_or_else(PoisonError::into_inner);
        !*stopping
    }

    fn record(&self, request: RecordedRequest) {
        lock(&self.log).push(request);
        self.logged.notify_all();
    }

    fn next_reply(&self) -> u64 {
        self.replies.fetch_add(1, Ordering::Relaxed) + 1
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for conn in listener.incoming() {
        if shared.is_stopping() {
            return;
        }
        match conn {
            Ok(stream) => {
                let shared = Arc::clone(shared);
                let spawned = thread::Builder::new()
                    .name("mock-model-conn".to_owned())
                    .spawn(move || serve(stream, &shared));
                if let Err(e) = spawned {
                    eprintln!("mock model: cannot spawn a connection thread: {e}");
                }
            }
            Err(e) => {
                // Transient (a peer reset before accept, out of descriptors):
                // keep serving, but do not spin if it persists.
                eprintln!("mock model: accept failed: {e}");
                thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// Serves one connection: one request, one response, close.
fn serve(stream: TcpStream, shared: &Shared) {
    // Without timeouts a client that never finishes its request would pin
    // this thread for the rest of the run.
    let timeouts = stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(IO_TIMEOUT)));
    if let Err(e) = timeouts {
        eprintln!("mock model: setting socket timeouts: {e}");
        return;
    }
    let mut reader = BufReader::new(stream);
    let outcome = match http::read_request(&mut reader) {
        Ok(None) => Ok(()),
        Ok(Some(request)) => respond(reader.get_mut(), request, shared),
        Err(BadRequest { status, message }) => {
            eprintln!("mock model: bad request ({status}): {message}");
            http::write_json(reader.get_mut(), status, &error_body(status, &message))
        }
    };
    // A client that hung up (an interrupted turn) is normal, not a failure.
    if let Err(e) = outcome
        && !matches!(
            e.kind(),
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
        )
    {
        eprintln!("mock model: writing the response: {e}");
    }
    // Closing is what ends an SSE stream for the client.
    let _ = reader.get_mut().shutdown(Shutdown::Both);
}

/// Records `request` and writes its response.
fn respond(out: &mut TcpStream, request: HttpRequest, shared: &Shared) -> io::Result<()> {
    let body = if request.body.is_empty() {
        Ok(Value::Null)
    } else {
        serde_json::from_slice::<Value>(&request.body)
    };
    let body_bytes = request.body.len();
    let recorded = RecordedRequest {
        method: request.method,
        path: request.path,
        query: request.query,
        headers: request.headers,
        body: match &body {
            Ok(value) => value.clone(),
            Err(_) => Value::String(String::from_utf8_lossy(&request.body).into_owned()),
        },
    };
    let method = recorded.method.clone();
    let path = recorded.path.clone();
    shared.record(recorded);

    let route = match (method.as_str(), path.as_str()) {
        ("POST", "/v1/responses") => Route::Responses,
        ("POST", "/v1/chat/completions") => Route::Chat,
        ("POST", "/v1/messages") => Route::Messages,
        ("POST", "/v1/messages/count_tokens") => {
            return http::write_json(out, 200, &anthropic::count_tokens(body_bytes));
        }
        ("GET", "/v1/models") => {
            return http::write_json(out, 200, &json!({"data": [], "has_more": false}));
        }
        (method, path) => {
            let message = format!("mock model: no route for {method} {path}");
            return http::write_json(out, 404, &error_body(404, &message));
        }
    };
    let body = match body {
        Ok(body) => body,
        Err(e) => {
            let message = format!("mock model: request body is not JSON: {e}");
            return http::write_json(out, 400, &error_body(400, &message));
        }
    };
    let exchange = match route {
        Route::Responses => Exchange::from_responses(&body),
        Route::Messages => Exchange::from_anthropic(&body),
        Route::Chat => Exchange::from_chat(&body),
    };
    let (delay, reply) = shared.script.reply_for(&exchange).split_delay();
    if !delay.is_zero() && !shared.sleep(delay) {
        // Stopped while waiting: the test is over, nobody needs the reply.
        return Ok(());
    }
    let n = shared.next_reply();
    match route {
        Route::Responses => http::write_sse(out, &responses::events(reply, n)),
        Route::Messages => {
            let model = body["model"].as_str().unwrap_or("mock-model");
            if body["stream"] == true {
                http::write_sse(out, &anthropic::stream(reply, n, model))
            } else {
                let (status, message) = anthropic::message(reply, n, model);
                http::write_json(out, status, &message)
            }
        }
        Route::Chat => {
            let model = body["model"].as_str().unwrap_or("mock-model");
            if body["stream"] != true {
                let (status, completion) = chat::completion(reply, n, model);
                return http::write_json(out, status, &completion);
            }
            match chat::chunks(reply, n, model) {
                Some(chunks) => http::write_data_sse(out, &chunks),
                None => {
                    let (status, error) = chat::failure(reply);
                    http::write_json(out, status, &error)
                }
            }
        }
    }
}

/// The scripted endpoints.
#[derive(Clone, Copy)]
enum Route {
    Responses,
    Messages,
    Chat,
}

/// An error body both dialects parse: Anthropic reads `type` and
/// `error.type`, OpenAI clients `error.code` and `error.message`.
fn error_body(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        404 => ("not_found_error", "not_found"),
        413 => ("request_too_large", "request_too_large"),
        _ => ("invalid_request_error", "invalid_request"),
    };
    json!({"type": "error", "error": {"type": kind, "code": code, "message": message}})
}
