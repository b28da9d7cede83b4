//! A JSON-RPC 2.0 peer over any message transport: our requests with
//! integer ids and a bounded wait for their responses; the provider's
//! requests and notifications handed over in arrival order.
//!
//! The transport is the adapter's: [`JsonRpcPeer::start`] is given a
//! reader future, which feeds every received message to a [`Router`], and
//! a writer future, which drains the peer's outgoing queue (newline framing
//! over stdio is [`crate::lines`]; Codex's daemon uses WebSocket frames).
//!
//! A message with `id` and no `method` is a response, with both a request,
//! with `method` only a notification. Provider request ids are echoed back
//! exactly as received ([`RequestId`]: integer or string). Some providers
//! omit `"jsonrpc"`; it is never required on input and always sent.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::pending::{PendingRequests, Unanswered};

/// A request id as the provider sent it: echoed verbatim in our answer,
/// and `0` and `"0"` stay distinct.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Integer(i64),
    /// A string id.
    String(String),
}

/// What the provider sent that is not a response to us.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A provider request: must be answered (or it hangs the turn).
    Request {
        /// Its id, echoed verbatim in the answer.
        id: RequestId,
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
    /// The provider answered with a JSON-RPC error.
    Error {
        /// Its code.
        code: i64,
        /// Its message: provider text, never shown to clients unredacted.
        message: String,
    },
    /// No answer within the request timeout.
    Timeout,
    /// The connection is gone.
    Closed,
}

impl From<Unanswered> for RpcFailure {
    fn from(unanswered: Unanswered) -> Self {
        match unanswered {
            Unanswered::Timeout => RpcFailure::Timeout,
            Unanswered::Closed => RpcFailure::Closed,
        }
    }
}

/// The response half of the wire, as far as this peer reads it.
#[derive(Deserialize)]
struct ErrorObject {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

type Response = Result<Value, RpcFailure>;

/// Our side of one connection. Dropping it stops the reader and closes the
/// outgoing queue, which ends the writer once the queued messages are out.
pub struct JsonRpcPeer {
    outgoing: mpsc::UnboundedSender<String>,
    pending: PendingRequests<i64, Response>,
    next_id: AtomicI64,
    timeout: Duration,
    reader: JoinHandle<()>,
}

impl Drop for JsonRpcPeer {
    fn drop(&mut self) {
        // The writer is not aborted: dropping `outgoing` ends it once the
        // queued messages (a final notification, an answer) are written. A
        // provider that stopped reading makes that write fail when its
        // process or socket goes.
        self.reader.abort();
    }
}

/// What one received message turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Routed {
    /// Delivered (or a stray response, dropped).
    Delivered,
    /// Not a JSON object: to be skipped.
    Skipped,
    /// Nobody reads provider messages any more: the connection must end.
    Unread,
}

/// The reader side of a [`JsonRpcPeer`]: routes each received message to
/// its waiter or to the incoming queue.
pub struct Router {
    pending: PendingRequests<i64, Response>,
    incoming: mpsc::UnboundedSender<Incoming>,
    skipped: u64,
}

impl Router {
    /// Routes one message; whether reading should go on (`false` once
    /// nobody reads provider messages any more).
    ///
    /// A message that is not a JSON object is counted and skipped: a
    /// provider (or a library it loads) may print a stray line, and one
    /// such line must not cost the turn. Its content is never logged: it
    /// may hold prompt text or secrets.
    pub fn keep_reading(&mut self, text: &str) -> bool {
        self.route(text) != Routed::Unread
    }

    fn route(&mut self, text: &str) -> Routed {
        let Ok(Value::Object(message)) = serde_json::from_str::<Value>(text) else {
            self.skipped += 1;
            tracing::debug!(skipped = self.skipped, "non-JSON provider message skipped");
            return Routed::Skipped;
        };
        if self.deliver(message) {
            Routed::Delivered
        } else {
            Routed::Unread
        }
    }

    fn deliver(&self, mut message: Map<String, Value>) -> bool {
        let params = message.remove("params").unwrap_or_else(|| json!({}));
        let id = message
            .remove("id")
            .and_then(|id| serde_json::from_value::<RequestId>(id).ok());
        match (id, message.remove("method")) {
            (Some(id), None) => {
                if let RequestId::Integer(id) = id {
                    let response = match (message.remove("result"), message.remove("error")) {
                        (_, Some(error)) => {
                            let error = serde_json::from_value::<ErrorObject>(error).unwrap_or(
                                ErrorObject {
                                    code: 0,
                                    message: String::new(),
                                },
                            );
                            Err(RpcFailure::Error {
                                code: error.code,
                                message: error.message,
                            })
                        }
                        (result, None) => Ok(result.unwrap_or(Value::Null)),
                    };
                    // A response to nothing we wait for (late, or never
                    // ours) is dropped.
                    self.pending.resolve(&id, response);
                }
                true
            }
            (Some(id), Some(Value::String(method))) => self
                .incoming
                .send(Incoming::Request { id, method, params })
                .is_ok(),
            (None, Some(Value::String(method))) => self
                .incoming
                .send(Incoming::Notification { method, params })
                .is_ok(),
            // Neither a request, a notification nor a response of ours.
            _ => true,
        }
    }
}

impl JsonRpcPeer {
    /// Starts a peer whose requests wait at most `timeout`. `reader` gets
    /// the [`Router`] and runs until the connection ends (then every
    /// waiting request fails with [`RpcFailure::Closed`]); `writer` gets
    /// the queue of outgoing messages and runs detached until it closes.
    /// Provider requests and notifications arrive on the returned receiver,
    /// which closes with the connection.
    pub fn start<R, W>(
        timeout: Duration,
        reader: impl FnOnce(Router) -> R,
        writer: impl FnOnce(mpsc::UnboundedReceiver<String>) -> W,
    ) -> (JsonRpcPeer, mpsc::UnboundedReceiver<Incoming>)
    where
        R: Future<Output = ()> + Send + 'static,
        W: Future<Output = ()> + Send + 'static,
    {
        let (outgoing, to_write) = mpsc::unbounded_channel();
        let (incoming, received) = mpsc::unbounded_channel();
        let pending = PendingRequests::default();
        let router = Router {
            pending: pending.clone(),
            incoming,
            skipped: 0,
        };
        let reading = reader(router);
        let closing = pending.clone();
        let reader = tokio::spawn(async move {
            reading.await;
            closing.close_all();
        });
        // Detached: it ends when `outgoing` is dropped.
        drop(tokio::spawn(writer(to_write)));
        let peer = JsonRpcPeer {
            outgoing,
            pending,
            next_id: AtomicI64::new(1),
            timeout,
            reader,
        };
        (peer, received)
    }

    /// Sends a request and waits (bounded) for its result.
    ///
    /// # Errors
    ///
    /// The provider's JSON-RPC error, [`RpcFailure::Timeout`] or
    /// [`RpcFailure::Closed`].
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcFailure> {
        self.request_within(method, params, self.timeout).await
    }

    /// [`request`](Self::request) with its own bound instead of the peer's:
    /// a request whose answer only comes when the provider's work is done
    /// (ACP's `session/prompt` answers when the turn ends), bounded by the
    /// caller's task deadline rather than by a protocol timeout.
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request), [`RpcFailure::Timeout`] after
    /// `timeout`.
    pub async fn request_within(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcFailure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let waiter = self.pending.register(id);
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        if self.outgoing.send(message.to_string()).is_err() {
            waiter.cancel();
            return Err(RpcFailure::Closed);
        }
        waiter.wait(timeout).await?
    }

    /// Sends a notification. Best effort: on a closed connection there is
    /// nobody left to notify.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Answers a provider request. Best effort, as [`notify`](Self::notify).
    pub fn respond(&self, id: &RequestId, result: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "result": result }));
    }

    /// Refuses a provider request. Best effort, as
    /// [`notify`](Self::notify).
    pub fn respond_error(&self, id: &RequestId, code: i64, message: &str) {
        self.send(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message },
        }));
    }

    fn send(&self, message: Value) {
        // A send fails only once the writer is gone with the connection,
        // which the reader reports to the turn; nothing to do here.
        let _closed = self.outgoing.send(message.to_string());
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;
    use crate::lines::{read_lines, write_lines};

    /// A peer over an in-memory duplex pipe, with the provider's end.
    fn peer() -> (
        JsonRpcPeer,
        mpsc::UnboundedReceiver<Incoming>,
        tokio::io::DuplexStream,
    ) {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        let (peer, incoming) = JsonRpcPeer::start(
            Duration::from_secs(5),
            |mut router| async move {
                read_lines(read, 1024, |line| router.keep_reading(line)).await;
            },
            |queue| write_lines(write, queue),
        );
        (peer, incoming, theirs)
    }

    #[tokio::test]
    async fn requests_match_responses_and_provider_traffic_is_routed() {
        let (peer, mut incoming, mut provider) = peer();
        let asked = tokio::spawn(async move {
            let result = peer.request("ping", json!({})).await;
            (peer, result)
        });
        let mut lines = tokio::io::BufReader::new(&mut provider);
        let mut sent = String::new();
        tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut sent)
            .await
            .unwrap();
        let sent: Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(sent["method"], "ping");
        provider
            .write_all(
                b"not json\n{\"id\":\"0\",\"method\":\"ask\",\"params\":{}}\n\
                  {\"method\":\"note\"}\n{\"id\":1,\"result\":{\"pong\":true}}\n",
            )
            .await
            .unwrap();
        let (peer, result) = asked.await.unwrap();
        assert_eq!(result, Ok(json!({ "pong": true })));
        let Some(Incoming::Request { id, method, .. }) = incoming.recv().await else {
            panic!("a request");
        };
        assert_eq!(
            (id, method.as_str()),
            (RequestId::String("0".into()), "ask")
        );
        assert!(matches!(
            incoming.recv().await,
            Some(Incoming::Notification { method, .. }) if method == "note"
        ));

        // The provider goes away: waiting requests fail as closed.
        let pending = tokio::spawn(async move { peer.request("late", json!({})).await });
        drop(provider);
        assert_eq!(pending.await.unwrap(), Err(RpcFailure::Closed));
    }

    #[tokio::test]
    async fn a_request_may_carry_its_own_bound() {
        // The peer's bound is 5 s; this request waits 20 ms at most, and
        // its late answer is dropped rather than delivered to anyone.
        let (peer, _incoming, mut provider) = peer();
        let asked = peer
            .request_within("slow", json!({}), Duration::from_millis(20))
            .await;
        assert_eq!(asked, Err(RpcFailure::Timeout));
        provider
            .write_all(b"{\"id\":1,\"result\":{}}\n")
            .await
            .unwrap();
        let quick = tokio::spawn(async move { peer.request("quick", json!({})).await });
        let mut lines = tokio::io::BufReader::new(&mut provider);
        let mut sent = String::new();
        for _ in 0..2 {
            sent.clear();
            tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut sent)
                .await
                .unwrap();
        }
        let sent: Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(
            (sent["method"].as_str(), sent["id"].as_i64()),
            (Some("quick"), Some(2))
        );
        provider
            .write_all(b"{\"id\":2,\"result\":{\"ok\":1}}\n")
            .await
            .unwrap();
        assert_eq!(quick.await.unwrap(), Ok(json!({ "ok": 1 })));
    }

    #[tokio::test]
    async fn error_responses_carry_their_code() {
        let (peer, _incoming, mut provider) = peer();
        let asked = tokio::spawn(async move { peer.request("x", json!({})).await });
        // The request is registered before it is written: once it is out,
        // the response finds it.
        let mut sent = String::new();
        tokio::io::AsyncBufReadExt::read_line(
            &mut tokio::io::BufReader::new(&mut provider),
            &mut sent,
        )
        .await
        .unwrap();
        provider
            .write_all(b"{\"id\":1,\"error\":{\"code\":-32600,\"message\":\"no\"}}\n")
            .await
            .unwrap();
        assert_eq!(
            asked.await.unwrap(),
            Err(RpcFailure::Error {
                code: -32600,
                message: "no".to_owned()
            })
        );
    }
}
