//! The MCP side of the Bridge RPC: an async client over the Bridge's Unix
//! socket (spec-agent-bridge.md §1.5, §1.6, §2.3).
//!
//! Compiled only with the `client` feature, so that crates needing just the
//! wire vocabulary never link tokio.
//!
//! # One call
//!
//! [`BridgeClient::call`] encodes a [`Request`] with a fresh id, refuses it
//! locally if the frame exceeds [`MAX_FRAME_BYTES`], writes it, reads exactly
//! one response frame through a [`FrameDecoder`] (so a runaway response is
//! cut at 1 MiB, never buffered), checks that the echoed `request_id` is the
//! one sent, and decodes the result into the method's type.
//!
//! # Never hanging
//!
//! [`ClientOptions::call_timeout`] bounds the whole call, connecting
//! included, as the spec bounds "the whole exchange";
//! [`ClientOptions::connect_timeout`] additionally bounds each connect, so an
//! unreachable Bridge is reported as [`ClientError::Unavailable`] promptly
//! rather than after the full call timeout.
//!
//! # Connections
//!
//! The spec lets one connection carry many sequential requests, so the client
//! keeps at most one idle connection and the next call reuses it. Calls
//! running at the same time never wait for each other: a call that finds no
//! idle connection opens its own, so a long call cannot block the rest. A
//! connection returns to the idle slot only after a clean exchange (one
//! well-formed answer carrying our id, nothing after it); any error, timeout
//! or undecodable answer drops it. A call whose future is dropped drops its
//! connection too, so cancellation never leaves a half-read stream behind.
//!
//! The Bridge closes connections left idle too long (60 s by default), so an
//! idle connection is reused only while younger than
//! [`ClientOptions::max_idle`], and only if a non-blocking probe finds it
//! neither closed nor holding stray bytes (the Bridge never speaks first).
//!
//! # Retrying, and why only on a failed write
//!
//! A reused connection can still be closed by the Bridge between the probe
//! and our write. The call is then retried once, on a fresh connection,
//! **only if writing the request failed** (`EPIPE`, `ECONNRESET`): the
//! Bridge's side was already closed, so it cannot have read the request's
//! final newline, and a line without its newline is never dispatched while
//! the connection is open (and a strict prefix of one JSON object never
//! decodes as a request). The request was therefore not processed.
//!
//! A connection that closes *after* the whole request was written is not
//! retried, reused or fresh: the Bridge may have read and executed the
//! request (a `task.submit` committed) and then died before answering, and a
//! retry would submit the task twice. That case is reported as
//! [`ClientError::Disconnected`] and the caller decides.
//!
//! Writing to a closed socket raises `SIGPIPE`; Rust programs ignore it from
//! start-up, so the write fails with `EPIPE` instead of killing the process.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::Mutex;
use tokio::time::{Instant, timeout_at};

use super::envelope::{Request, Response};
use super::error::{BridgeErrorCode, ProtocolError};
use super::frame::{FrameDecoder, MAX_FRAME_BYTES};
use super::method::BridgeCall;

/// Bytes asked of the socket per read: most answers fit in one read, and a
/// 1 MiB one takes 16.
const READ_CHUNK: usize = 64 * 1024;

/// Numbers the requests of this process; with the pid it makes every id
/// unique among the requests the Bridge sees at one time.
static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

/// Timeouts and connection reuse of a [`BridgeClient`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// Bound on opening one connection. Default: 2 s.
    ///
    /// Connecting to a local socket normally succeeds or fails at once;
    /// this bounds the rare stall, so an unreachable Bridge is reported
    /// promptly. It is also cut to what remains of
    /// [`call_timeout`](Self::call_timeout).
    pub connect_timeout: Duration,
    /// Bound on a whole call: connecting, writing the request and reading
    /// the answer. Default: 30 s (`SERVERFS_AGENT_BRIDGE_TIMEOUT_SECONDS`).
    pub call_timeout: Duration,
    /// An idle connection older than this is closed instead of reused.
    /// Default: 30 s, half the Bridge's default idle timeout, so a reused
    /// connection is not one the Bridge is about to close.
    pub max_idle: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(2),
            call_timeout: Duration::from_secs(30),
            max_idle: Duration::from_secs(30),
        }
    }
}

/// Why a response could not be accepted, or a request could not be built.
///
/// The detail of [`ClientError::Protocol`]; every kind maps to
/// `AGENT_BRIDGE_PROTOCOL_ERROR`. Messages are fixed strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolFailure {
    /// The response line reached [`MAX_FRAME_BYTES`] without its newline.
    #[error("response exceeds {MAX_FRAME_BYTES} bytes")]
    TooLarge,
    /// The connection closed or failed after part of the response arrived.
    #[error("connection closed mid-response")]
    Truncated,
    /// The frame is not a well-formed response envelope.
    #[error("malformed response")]
    Malformed,
    /// The response echoes a `request_id` other than the one sent.
    #[error("response request_id does not match the request")]
    RequestIdMismatch,
    /// The `result` object does not match the method's result type.
    #[error("result does not match the method")]
    ResultMismatch,
    /// The request could not be encoded, which its types rule out.
    #[error("request could not be encoded")]
    Encode,
}

/// A failed Bridge call.
///
/// `Display` is safe to show an MCP client: it never holds the socket path
/// or OS error text (the OS error, when there is one, is the
/// [`source`](std::error::Error::source), for logs). It is the message part
/// only; the MCP layer renders `CODE: message` as
/// `format!("{}: {error}", error.code().as_str())`, which for
/// [`ClientError::Bridge`] is the Bridge's error verbatim (spec §1.5).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Connecting failed: no socket, connection refused, permission denied,
    /// or the connect timeout passed (then the source is of kind
    /// [`TimedOut`](io::ErrorKind::TimedOut)).
    #[error("Agent Bridge is unavailable")]
    Unavailable {
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The connection failed or closed before any byte of the answer: the
    /// request could not be written, or the Bridge closed without answering
    /// (it may have processed the request).
    #[error("Agent Bridge is unavailable: connection closed")]
    Disconnected {
        /// The OS error; `None` when the Bridge simply closed.
        #[source]
        source: Option<io::Error>,
    },
    /// [`ClientOptions::call_timeout`] passed after the connection was
    /// opened; the request may have been processed.
    #[error("Agent Bridge is unavailable: no answer in time")]
    Timeout,
    /// The Bridge answered `ok: false`.
    #[error("{message}")]
    Bridge {
        /// The Bridge's code, passed on verbatim.
        code: BridgeErrorCode,
        /// The Bridge's message (short, stable, no host paths).
        message: String,
    },
    /// The answer broke the protocol; the connection was dropped.
    #[error("Agent Bridge protocol failure: {0}")]
    Protocol(ProtocolFailure),
    /// The encoded request exceeds [`MAX_FRAME_BYTES`]; refused locally,
    /// before connecting, as the Bridge would refuse it.
    #[error("Agent Bridge request exceeds {MAX_FRAME_BYTES} bytes")]
    RequestTooLarge,
}

impl ClientError {
    /// The stable code of this failure (spec §1.5): the Bridge's own code
    /// for [`Bridge`](ClientError::Bridge), `AGENT_BRIDGE_UNAVAILABLE` when
    /// the Bridge could not be reached or did not answer, and
    /// `AGENT_BRIDGE_PROTOCOL_ERROR` for a bad answer or an oversized
    /// request.
    pub fn code(&self) -> BridgeErrorCode {
        match self {
            ClientError::Unavailable { .. }
            | ClientError::Disconnected { .. }
            | ClientError::Timeout => BridgeErrorCode::AgentBridgeUnavailable,
            ClientError::Bridge { code, .. } => *code,
            ClientError::Protocol(_) | ClientError::RequestTooLarge => {
                BridgeErrorCode::AgentBridgeProtocolError
            }
        }
    }
}

/// An async client of one Agent Bridge socket.
///
/// Cheap to create (it connects on the first call) and safe to share
/// (`Arc<BridgeClient>`): concurrent calls each get their own connection.
///
/// # Security
///
/// The socket path is never shown: not in errors, not in `Debug`.
pub struct BridgeClient {
    socket_path: PathBuf,
    options: ClientOptions,
    /// At most one connection between calls. Locked only to take or put a
    /// connection, never across I/O, so callers never queue behind a call.
    idle: Mutex<Option<IdleConnection>>,
}

/// A connection that finished a clean exchange, and since when it idles.
struct IdleConnection {
    stream: UnixStream,
    since: Instant,
}

/// Whether an attempt runs on a connection just opened or on the idle one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reuse {
    /// Opened for this call.
    Fresh,
    /// Kept from an earlier call.
    Idle,
}

/// How one attempt on one connection failed.
enum AttemptError {
    /// Writing the request failed, so the Bridge never read all of it.
    NotSent(io::Error),
    /// Anything else; final.
    Failed(ClientError),
}

impl fmt::Debug for BridgeClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // No socket path: host paths stay out of logs too.
        f.debug_struct("BridgeClient")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl BridgeClient {
    /// A client of the Bridge listening at `socket_path`; does not connect.
    pub fn new(socket_path: PathBuf, options: ClientOptions) -> BridgeClient {
        BridgeClient {
            socket_path,
            options,
            idle: Mutex::new(None),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Calls the method `params` belong to and returns its typed result.
    ///
    /// # Errors
    ///
    /// - [`ClientError::RequestTooLarge`]: the request frame exceeds
    ///   [`MAX_FRAME_BYTES`]; nothing was sent.
    /// - [`ClientError::Unavailable`]: no connection could be opened.
    /// - [`ClientError::Disconnected`]: the connection failed before the
    ///   answer began.
    /// - [`ClientError::Timeout`]: no complete answer within
    ///   [`ClientOptions::call_timeout`].
    /// - [`ClientError::Bridge`]: the Bridge answered with an error.
    /// - [`ClientError::Protocol`]: the answer was oversized, malformed,
    ///   truncated, for another request, or not the method's result type.
    pub async fn call<P: BridgeCall>(&self, params: P) -> Result<P::Result, ClientError> {
        let deadline = deadline_after(self.options.call_timeout);
        let request_id = next_request_id();
        let frame = Request::new(request_id.as_str(), params)
            .to_frame()
            .map_err(|error| {
                if error == ProtocolError::RequestTooLarge {
                    ClientError::RequestTooLarge
                } else {
                    ClientError::Protocol(ProtocolFailure::Encode)
                }
            })?;
        let result = self.exchange(&frame, &request_id, deadline).await?;
        P::decode_result(result).map_err(|_| ClientError::Protocol(ProtocolFailure::ResultMismatch))
    }

    /// Sends `frame` and returns the `result` of a successful answer,
    /// retrying once on a fresh connection when a reused one turns out
    /// closed before the request was written (see the module docs).
    async fn exchange(
        &self,
        frame: &[u8],
        request_id: &str,
        deadline: Instant,
    ) -> Result<Map<String, Value>, ClientError> {
        if let Some(stream) = self.take_idle().await {
            match self
                .attempt(stream, Reuse::Idle, frame, request_id, deadline)
                .await
            {
                Ok(result) => return Ok(result),
                Err(AttemptError::Failed(error)) => return Err(error),
                // The Bridge closed this connection while it idled and never
                // read the request: safe to send it again.
                Err(AttemptError::NotSent(_)) => {}
            }
        }
        let stream = self.connect(deadline).await?;
        match self
            .attempt(stream, Reuse::Fresh, frame, request_id, deadline)
            .await
        {
            Ok(result) => Ok(result),
            Err(AttemptError::Failed(error)) => Err(error),
            Err(AttemptError::NotSent(source)) => Err(ClientError::Disconnected {
                source: Some(source),
            }),
        }
    }

    /// Opens a connection within the connect timeout and the call deadline.
    async fn connect(&self, deadline: Instant) -> Result<UnixStream, ClientError> {
        let bound = deadline_after(self.options.connect_timeout).min(deadline);
        match timeout_at(bound, UnixStream::connect(&self.socket_path)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(source)) => Err(ClientError::Unavailable { source }),
            Err(_) => Err(ClientError::Unavailable {
                source: io::ErrorKind::TimedOut.into(),
            }),
        }
    }

    /// One request and its answer on `stream`, which goes back to the idle
    /// slot only if the exchange was clean.
    async fn attempt(
        &self,
        mut stream: UnixStream,
        reuse: Reuse,
        frame: &[u8],
        request_id: &str,
        deadline: Instant,
    ) -> Result<Map<String, Value>, AttemptError> {
        match timeout_at(deadline, stream.write_all(frame)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) if closed_by_peer(&error) => {
                // A Bridge that refuses a new connection writes one frame
                // with a `null` id and closes without reading: our write
                // then fails, and the refusal still waits in the socket,
                // saying why (`PEER_NOT_AUTHORIZED`). A reused connection
                // is never refused that way (peers are checked at accept).
                let refusal = match reuse {
                    Reuse::Fresh => connection_refusal(&mut stream, deadline).await,
                    Reuse::Idle => None,
                };
                return Err(match refusal {
                    Some(refusal) => AttemptError::Failed(refusal),
                    None => AttemptError::NotSent(error),
                });
            }
            Ok(Err(source)) => {
                return Err(AttemptError::Failed(ClientError::Disconnected {
                    source: Some(source),
                }));
            }
            Err(_) => return Err(AttemptError::Failed(ClientError::Timeout)),
        }
        let (response, clean) = match timeout_at(deadline, read_response(&mut stream)).await {
            Ok(Ok(read)) => read,
            Ok(Err(error)) => return Err(AttemptError::Failed(error)),
            Err(_) => return Err(AttemptError::Failed(ClientError::Timeout)),
        };
        match response {
            Response::Success {
                request_id: echoed,
                result,
            } if echoed == request_id => {
                if clean {
                    self.put_idle(stream).await;
                }
                Ok(result)
            }
            Response::Failure {
                request_id: Some(echoed),
                error,
            } if echoed == request_id => {
                if clean {
                    self.put_idle(stream).await;
                }
                Err(AttemptError::Failed(ClientError::Bridge {
                    code: error.code,
                    message: error.message,
                }))
            }
            // A failure with a `null` id refuses the connection itself
            // (`PEER_NOT_AUTHORIZED`, `REQUEST_TOO_LARGE`, spec §2.2, §2.3):
            // it answers our request, and its code is far more useful to an
            // operator than a protocol error (the reference client was
            // stricter here). The Bridge closes such connections, so this one
            // is dropped.
            Response::Failure {
                request_id: None,
                error,
            } => Err(AttemptError::Failed(ClientError::Bridge {
                code: error.code,
                message: error.message,
            })),
            Response::Success { .. } | Response::Failure { .. } => Err(AttemptError::Failed(
                ClientError::Protocol(ProtocolFailure::RequestIdMismatch),
            )),
        }
    }

    /// The idle connection, if it is young enough and still open.
    async fn take_idle(&self) -> Option<UnixStream> {
        let idle = self.idle.lock().await.take()?;
        if idle.since.elapsed() > self.options.max_idle {
            return None;
        }
        // Best effort: tokio answers from its cached readiness, so a close it
        // has not seen yet passes the probe, and the write then fails with
        // EPIPE, which `exchange` retries.
        let mut probe = [0_u8; 1];
        match idle.stream.try_read(&mut probe) {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => Some(idle.stream),
            // EOF, an error, or bytes the Bridge should never have sent.
            Ok(_) | Err(_) => None,
        }
    }

    /// Parks `stream` for the next call, replacing (closing) an older idle
    /// connection: the newer one is further from the Bridge's idle timeout.
    async fn put_idle(&self, stream: UnixStream) {
        *self.idle.lock().await = Some(IdleConnection {
            stream,
            since: Instant::now(),
        });
    }
}

/// The refusal of a connection the Bridge closed before reading our
/// request: a failure frame with a `null` id already in the socket. `None`
/// when there is none (an idle connection closed, a Bridge that died).
async fn connection_refusal(stream: &mut UnixStream, deadline: Instant) -> Option<ClientError> {
    match timeout_at(deadline, read_response(stream)).await {
        Ok(Ok((
            Response::Failure {
                request_id: None,
                error,
            },
            _,
        ))) => Some(ClientError::Bridge {
            code: error.code,
            message: error.message,
        }),
        Ok(Ok(_) | Err(_)) | Err(_) => None,
    }
}

/// Reads exactly one response frame and decodes it; `true` alongside it if
/// nothing followed the frame (the connection may be reused).
async fn read_response(stream: &mut UnixStream) -> Result<(Response, bool), ClientError> {
    let mut frames = FrameDecoder::new();
    let mut chunk = vec![0_u8; READ_CHUNK];
    let mut received = false;
    loop {
        // Draining after every push keeps the decoder within one frame plus
        // one chunk, however much the Bridge sends.
        match frames.next_frame() {
            Ok(Some(frame)) => {
                let clean = frames.buffered() == 0;
                let response = Response::from_frame(&frame)
                    .map_err(|_| ClientError::Protocol(ProtocolFailure::Malformed))?;
                return Ok((response, clean));
            }
            Ok(None) => {}
            Err(_) => return Err(ClientError::Protocol(ProtocolFailure::TooLarge)),
        }
        match stream.read(&mut chunk).await {
            // The spec's "empty read → unavailable".
            Ok(0) if !received => return Err(ClientError::Disconnected { source: None }),
            Err(source) if !received => {
                return Err(ClientError::Disconnected {
                    source: Some(source),
                });
            }
            Ok(0) | Err(_) => return Err(ClientError::Protocol(ProtocolFailure::Truncated)),
            Ok(count) => {
                received = true;
                frames.push(&chunk[..count]);
            }
        }
    }
}

/// Whether a write failed because the peer had closed its end, which is
/// the only write failure that proves the request was not read.
fn closed_by_peer(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::NotConnected
    )
}

/// `after` from now, saturating far in the future instead of overflowing
/// for absurd durations (`Duration::MAX`).
fn deadline_after(after: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);
    let now = Instant::now();
    now.checked_add(after).unwrap_or(now + FAR)
}

/// A request id unique within this process and, with the pid, among the
/// requests the Bridge is serving: `mcp_<pid>_<n>`.
fn next_request_id() -> String {
    let n = NEXT_REQUEST.fetch_add(1, Ordering::Relaxed);
    format!("mcp_{}_{n}", process::id())
}
