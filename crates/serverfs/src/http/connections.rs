//! The accept loop: which connections are served, and for how long.
//!
//! A socket costs a descriptor, so an attacker without a token can exhaust
//! the server by opening sockets and sending nothing (measured before this
//! module: about 1,100 such sockets under the common 1,024 open-file limit
//! made every legitimate request time out). Three rules keep that from
//! working:
//!
//! - **Header timeout.** A connection must deliver a request's complete
//!   header within `header_timeout` of connecting or of its previous
//!   response's end (hyper's header-read timer, which runs exactly while
//!   hyper waits for a request head), else it is closed. So this is also
//!   the keep-alive idle bound.
//! - **Connection bound.** At most `max_connections` are open. One more
//!   closes the open connection that has been idle (no request in flight)
//!   the longest, so idle sockets can never keep a working client out; if
//!   every open connection is serving a request, the newcomer gets `503`
//!   and is closed, and accepted work is never delayed.
//! - **`TCP_NODELAY`** on every accepted socket: hyper writes a response in
//!   several pieces (headers, then each event-stream chunk), and with
//!   Nagle's algorithm the last piece waits for the client's ACK of the
//!   first, which a client with delayed ACKs (the Linux default) sends only
//!   after about 40 ms (issue 15: 4-68 % of sequential calls stalled).
//!
//! Shutdown: stop accepting, let every connection finish the request it is
//! serving (hyper's graceful shutdown closes idle ones at once), and after
//! the grace period cancel the sessions so their event streams end too.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use super::abuse_log::{self, Level};

/// What [`serve`] needs to know.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time to deliver a request head (also the keep-alive idle bound).
    pub header_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// How long a shutdown lets requests in flight finish.
    pub shutdown_grace: Duration,
}

/// The answer to a connection beyond the bound when none can make room.
const BUSY_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\
Retry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: 36\r\n\r\n\
server busy: too many open connections";

/// How long the accept loop pauses after a failed `accept` (out of
/// descriptors, say) before it tries again, so it does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Serves `app` on `listener` until `stopping` is cancelled, then shuts
/// down as described in the module docs; `sessions` is cancelled once the
/// grace period is over.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    stopping: CancellationToken,
    sessions: CancellationToken,
) {
    let table = Arc::new(Table::new(limits.max_connections));
    let tracker = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Usually out of descriptors: it then fails every pause
                // until one is freed, so it is counted, not logged each time.
                Err(_) => {
                    abuse_log::note(Level::Warn, "accept_failed", "out of descriptors or memory");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
            () = stopping.cancelled() => break,
        };
        // setsockopt fails only on a socket that is already gone (its first
        // read reports that); logged because calls on a connection without
        // the option would stall, not fail.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::warn!(event = "tcp_nodelay_failed", reason = %e);
        }
        let Some(admitted) = table.admit() else {
            refuse(&stream);
            continue;
        };
        tracker.spawn(serve_connection(
            stream,
            peer,
            app.clone(),
            admitted,
            limits.header_timeout,
            stopping.clone(),
        ));
    }
    drop(listener);
    tracker.close();
    if tokio::time::timeout(limits.shutdown_grace, tracker.wait())
        .await
        .is_err()
    {
        // Sessions' event streams never end on their own: close them.
        sessions.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(2), tracker.wait()).await;
    }
}

/// Tells a connection beyond the bound why it is closed: one write that
/// never waits (the socket is new, its send buffer empty), then close.
fn refuse(stream: &TcpStream) {
    abuse_log::note(Level::Warn, "connection_refused", "max_connections");
    let _ = stream.try_write(BUSY_RESPONSE);
}

/// Serves one admitted connection until it ends, is evicted, or the
/// server stops.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    admitted: Admitted,
    header_timeout: Duration,
    stopping: CancellationToken,
) {
    let activity = admitted.activity.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let busy = Busy::start(activity.clone());
        let app = app.clone();
        async move {
            // The peer's address, for handlers that limit per source
            // (OAuth registration and consent requests).
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            let response = app.oneshot(request).await?;
            Ok::<_, Infallible>(response.map(|body| Body::new(BusyBody { body, _busy: busy })))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let mut stopping_seen = false;
    loop {
        tokio::select! {
            // Ends with the connection; its errors (a client gone, a
            // header timeout) are the client's business, not the log's.
            _ = connection.as_mut() => break,
            // Evicted while idle: dropping the connection closes it.
            () = admitted.evicted.cancelled() => break,
            () = stopping.cancelled(), if !stopping_seen => {
                stopping_seen = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The open connections, with what eviction needs to know of each.
struct Table {
    capacity: usize,
    /// When the table was made: idle times are kept as offsets from it.
    epoch: Instant,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Entry>>,
}

struct Entry {
    activity: Arc<Activity>,
    evicted: CancellationToken,
}

/// One connection's requests in flight and when it last became idle.
struct Activity {
    epoch: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds from the epoch to the moment it last became idle.
    idle_since_ms: AtomicU64,
}

impl Activity {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// An admitted connection's place in the table; leaving it frees the slot.
struct Admitted {
    table: Arc<Table>,
    id: u64,
    activity: Arc<Activity>,
    evicted: CancellationToken,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.table.lock().remove(&self.id);
    }
}

impl Table {
    fn new(capacity: usize) -> Table {
        Table {
            capacity: capacity.max(1),
            epoch: Instant::now(),
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a new connection: a free one, else the one of the
    /// longest-idle connection, which is told to close; `None` when every
    /// open connection is serving a request.
    fn admit(self: &Arc<Table>) -> Option<Admitted> {
        let mut open = self.lock();
        if open.len() >= self.capacity {
            let idlest = open
                .iter()
                .filter(|(_, entry)| entry.activity.in_flight.load(Ordering::Acquire) == 0)
                .min_by_key(|(_, entry)| entry.activity.idle_since_ms.load(Ordering::Acquire))
                .map(|(id, _)| *id)?;
            if let Some(entry) = open.remove(&idlest) {
                entry.evicted.cancel();
                abuse_log::note(Level::Info, "connection_evicted", "max_connections");
            }
        }
        let activity = Arc::new(Activity {
            epoch: self.epoch,
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
        });
        activity
            .idle_since_ms
            .store(activity.now_ms(), Ordering::Release);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evicted = CancellationToken::new();
        open.insert(
            id,
            Entry {
                activity: activity.clone(),
                evicted: evicted.clone(),
            },
        );
        Some(Admitted {
            table: self.clone(),
            id,
            activity,
            evicted,
        })
    }
}

/// A request in flight on a connection, from its head until its response
/// body is done: while any exists the connection is not idle.
struct Busy(Arc<Activity>);

impl Busy {
    fn start(activity: Arc<Activity>) -> Busy {
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let now = self.0.now_ms();
        self.0.idle_since_ms.store(now, Ordering::Release);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request [`Busy`] until it is dropped.
struct BusyBody {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for BusyBody {
    type Data = <Body as hyper::body::Body>::Data;
    type Error = <Body as hyper::body::Body>::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_evicts_the_longest_idle_connection_or_refuses() {
        let table = Arc::new(Table::new(2));
        let first = table.admit().unwrap();
        let second = table.admit().unwrap();
        // The first is serving a request; the second became idle later.
        let busy = Busy::start(first.activity.clone());
        let third = table.admit().unwrap();
        assert!(second.evicted.is_cancelled() && !first.evicted.is_cancelled());
        // Both open ones now serve requests: no room.
        let _busy_third = Busy::start(third.activity.clone());
        assert!(table.admit().is_none());
        drop(busy);
        let fourth = table.admit().unwrap();
        assert!(first.evicted.is_cancelled() && !third.evicted.is_cancelled());
        drop((first, second));
        assert_eq!(table.lock().len(), 2, "{:?}", table.lock().keys());
        drop((third, fourth));
        assert!(table.lock().is_empty());
    }
}
