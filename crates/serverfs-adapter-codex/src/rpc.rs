//! A JSON-RPC peer for the Codex App Server over either transport
//! (spec-adapters.md §2.1): our requests with integer ids and a bounded
//! wait for their responses; the server's requests and notifications
//! handed to the turn loop in arrival order.
//!
//! The server omits `"jsonrpc"`; we send it (the server accepts both). A
//! message with `id` and no `method` is a response, with both a server
//! request, with `method` only a notification. Server request ids are
//! echoed back exactly as received (integer or string).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

/// Largest message accepted from the server (Codex frames can be large:
/// whole file diffs); larger ones end the connection. Messages that are not
/// JSON are skipped.
pub const MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

/// One connection's byte pipe.
pub enum Wire {
    /// A Bridge-owned `codex app-server` child: newline-delimited JSON.
    Stdio {
        /// The child's stdin.
        stdin: ChildStdin,
        /// The child's stdout.
        stdout: ChildStdout,
    },
    /// The managed daemon: one message per WebSocket text frame.
    WebSocket(Box<WebSocketStream<UnixStream>>),
}

/// What the server sent that is not a response to us.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A server request: must be answered (or it hangs the turn).
    Request {
        /// Its id, echoed verbatim.
        id: Value,
        /// The method.
        method: String,
        /// Its params (`{}` when absent).
        params: Value,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// Its params (`{}` when absent).
        params: Value,
    },
}

/// Why a request of ours failed.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcFailure {
    /// The server answered with a JSON-RPC error.
    Error {
        /// Its code.
        code: i64,
        /// Its message (provider text: never shown verbatim to clients
        /// without redaction).
        message: String,
    },
    /// No answer within the request timeout.
    Timeout,
    /// The connection is gone.
    Closed,
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcFailure>>>>>;

fn lock(
    pending: &Pending,
) -> MutexGuard<'_, HashMap<i64, oneshot::Sender<Result<Value, RpcFailure>>>> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Our side of one connection. Dropping it closes the connection.
pub struct RpcPeer {
    outgoing: mpsc::UnboundedSender<String>,
    pending: Pending,
    next_id: AtomicI64,
    timeout: Duration,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for RpcPeer {
    fn drop(&mut self) {
        // The writer is not aborted: dropping `outgoing` ends it once the
        // queued messages (e.g. a final `initialized` or an answer) are
        // written, and it closes the WebSocket properly. A peer that stopped
        // reading makes that write fail when its process or socket goes.
        self.reader.abort();
    }
}

impl RpcPeer {
    /// Starts the reader and writer of `wire`. Server requests and
    /// notifications arrive on the returned receiver, which closes when the
    /// connection does.
    pub fn start(wire: Wire, timeout: Duration) -> (RpcPeer, mpsc::UnboundedReceiver<Incoming>) {
        let (outgoing, to_write) = mpsc::unbounded_channel::<String>();
        let (incoming, received) = mpsc::unbounded_channel();
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let (reader, writer) = match wire {
            Wire::Stdio { stdin, stdout } => (
                tokio::spawn(read_lines(stdout, Arc::clone(&pending), incoming)),
                tokio::spawn(write_lines(stdin, to_write)),
            ),
            Wire::WebSocket(socket) => {
                let (sink, stream) = (*socket).split();
                (
                    tokio::spawn(read_frames(stream, Arc::clone(&pending), incoming)),
                    tokio::spawn(write_frames(sink, to_write)),
                )
            }
        };
        // The writer runs detached; it ends when `outgoing` is dropped.
        drop(writer);
        let peer = RpcPeer {
            outgoing,
            pending,
            next_id: AtomicI64::new(1),
            timeout,
            reader,
        };
        (peer, received)
    }

    /// Sends a request and waits (bounded) for its result.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcFailure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, response) = oneshot::channel();
        lock(&self.pending).insert(id, answer);
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        if self.outgoing.send(message.to_string()).is_err() {
            lock(&self.pending).remove(&id);
            return Err(RpcFailure::Closed);
        }
        match tokio::time::timeout(self.timeout, response).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(RpcFailure::Closed),
            Err(_) => {
                lock(&self.pending).remove(&id);
                Err(RpcFailure::Timeout)
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        let message = json!({ "jsonrpc": "2.0", "method": method, "params": params });
        let _ = self.outgoing.send(message.to_string());
    }

    /// Answers a server request.
    pub fn respond(&self, id: &Value, result: Value) {
        let message = json!({ "jsonrpc": "2.0", "id": id, "result": result });
        let _ = self.outgoing.send(message.to_string());
    }

    /// Refuses a server request.
    pub fn respond_error(&self, id: &Value, code: i64, message: &str) {
        let message = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message },
        });
        let _ = self.outgoing.send(message.to_string());
    }
}

/// What [`route`] made of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Routed {
    /// Delivered (or a stray response, dropped).
    Delivered,
    /// Not a JSON object: skipped.
    Skipped,
    /// Nobody reads server messages any more: the connection must end.
    Unread,
}

/// Routes one message.
fn route(text: &str, pending: &Pending, incoming: &mpsc::UnboundedSender<Incoming>) -> Routed {
    let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(text) else {
        return Routed::Skipped;
    };
    let params = message.remove("params").unwrap_or_else(|| json!({}));
    let delivered = match (message.remove("id"), message.remove("method")) {
        (Some(id), None) => {
            if let Some(waiter) = id.as_i64().and_then(|id| lock(pending).remove(&id)) {
                let result = match (message.remove("result"), message.remove("error")) {
                    (_, Some(error)) => Err(RpcFailure::Error {
                        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    }),
                    (Some(result), None) => Ok(result),
                    (None, None) => Ok(Value::Null),
                };
                let _ = waiter.send(result);
            }
            true
        }
        (Some(id), Some(Value::String(method))) => incoming
            .send(Incoming::Request { id, method, params })
            .is_ok(),
        (None, Some(Value::String(method))) => incoming
            .send(Incoming::Notification { method, params })
            .is_ok(),
        _ => true,
    };
    if delivered {
        Routed::Delivered
    } else {
        Routed::Unread
    }
}

/// Counts messages that were not JSON. Codex (or a library it loads) may
/// print a stray line on stdout; one such line must not cost the turn, so
/// it is skipped. Its content is never logged: it may hold prompt text or
/// secrets.
#[derive(Default)]
struct Skipped(u64);

impl Skipped {
    /// Whether reading goes on after `routed`.
    fn keep_reading(&mut self, routed: Routed) -> bool {
        match routed {
            Routed::Delivered => true,
            Routed::Skipped => {
                self.0 += 1;
                tracing::debug!(skipped = self.0, "non-JSON message from Codex skipped");
                true
            }
            Routed::Unread => false,
        }
    }
}

/// Fails every waiting request: the connection is gone.
fn close_all(pending: &Pending) {
    for (_, waiter) in lock(pending).drain() {
        let _ = waiter.send(Err(RpcFailure::Closed));
    }
}

async fn read_lines(
    stdout: ChildStdout,
    pending: Pending,
    incoming: mpsc::UnboundedSender<Incoming>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut skipped = Skipped::default();
    loop {
        line.clear();
        // A line over the bound ends the connection rather than growing
        // without limit.
        let mut limited = AsyncReadExt::take(&mut reader, MAX_MESSAGE_BYTES as u64 + 1);
        match limited.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) if line.len() > MAX_MESSAGE_BYTES => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        if !skipped.keep_reading(route(text, &pending, &incoming)) {
            break;
        }
    }
    close_all(&pending);
}

async fn write_lines(mut stdin: ChildStdin, mut to_write: mpsc::UnboundedReceiver<String>) {
    while let Some(mut text) = to_write.recv().await {
        text.push('\n');
        if stdin.write_all(text.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

async fn read_frames(
    mut stream: futures_util::stream::SplitStream<WebSocketStream<UnixStream>>,
    pending: Pending,
    incoming: mpsc::UnboundedSender<Incoming>,
) {
    let mut skipped = Skipped::default();
    while let Some(frame) = stream.next().await {
        let keep = match frame {
            // The socket's own limits already refuse larger messages
            // (`connect`); this keeps the bound should they be changed.
            Ok(Message::Text(text)) => {
                text.len() <= MAX_MESSAGE_BYTES
                    && skipped.keep_reading(route(text.as_str(), &pending, &incoming))
            }
            Ok(Message::Close(_)) | Err(_) => false,
            // Pings are answered by the library; binary frames are not
            // part of the protocol and are ignored.
            Ok(_) => true,
        };
        if !keep {
            break;
        }
    }
    close_all(&pending);
}

async fn write_frames(
    mut sink: futures_util::stream::SplitSink<WebSocketStream<UnixStream>, Message>,
    mut to_write: mpsc::UnboundedReceiver<String>,
) {
    while let Some(text) = to_write.recv().await {
        if sink.send(Message::text(text)).await.is_err() {
            break;
        }
    }
    let _ = sink.close().await;
}
