//! The accept loop: peer check, connection bound, graceful shutdown.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serverfs_protocol::bridge::{BridgeErrorCode, Request, Response};
use tokio::net::UnixStream;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::connection::serve_connection;
use super::error::RpcError;
use super::peer::PeerInfo;
use super::socket::BridgeListener;
use crate::platform;

/// The future a [`BridgeService`] returns for one request.
pub type ServiceFuture<'a> = Pin<Box<dyn Future<Output = Response> + Send + 'a>>;

/// What the transport dispatches decoded requests to.
///
/// The transport has already checked the peer, the framing, the envelope
/// and the method's parameters; the service answers with the method's
/// result or a coded error, echoing `request.request_id` (a response with
/// any other id is replaced by `BRIDGE_PROTOCOL_ERROR`).
///
/// Each call runs in a task of its own: a panic there is answered with
/// `BRIDGE_PROTOCOL_ERROR` and harms no other request. At shutdown, a call
/// still running after the drain bound is dropped at its next `.await`.
pub trait BridgeService: Send + Sync + 'static {
    /// Answers one request from `peer`.
    fn handle(&self, peer: PeerInfo, request: Request) -> ServiceFuture<'_>;
}

/// Creates a shutdown trigger and the signal it fires.
pub fn shutdown_channel() -> (ShutdownTrigger, ShutdownSignal) {
    let (sender, receiver) = watch::channel(false);
    (ShutdownTrigger { sender }, ShutdownSignal { receiver })
}

/// Asks a server to shut down gracefully.
///
/// Dropping the trigger without calling [`ShutdownTrigger::trigger`] also
/// shuts the server down: a server nobody can stop any more should not
/// linger.
#[derive(Debug)]
pub struct ShutdownTrigger {
    sender: watch::Sender<bool>,
}

impl ShutdownTrigger {
    /// Fires the signal; repeat calls do nothing more.
    pub fn trigger(&self) {
        self.sender.send_replace(true);
    }

    /// Another signal fired by this trigger.
    pub fn signal(&self) -> ShutdownSignal {
        ShutdownSignal {
            receiver: self.sender.subscribe(),
        }
    }
}

/// Fires once its [`ShutdownTrigger`] triggers or is dropped.
#[derive(Debug, Clone)]
pub struct ShutdownSignal {
    receiver: watch::Receiver<bool>,
}

impl ShutdownSignal {
    /// Whether the signal has fired.
    pub fn is_triggered(&self) -> bool {
        *self.receiver.borrow() || self.receiver.has_changed().is_err()
    }

    /// Completes once the signal has fired (at once if it already has).
    pub async fn triggered(&mut self) {
        // `Err` means the trigger was dropped, which counts as firing.
        let _ = self.receiver.wait_for(|stop| *stop).await;
    }
}

/// Limits of a serving Bridge socket.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub(super) max_connections: usize,
    pub(super) drain_timeout: Duration,
    pub(super) idle_timeout: Duration,
    pub(super) request_timeout: Duration,
    pub(super) write_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            max_connections: 256,
            drain_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
        }
    }
}

impl ServeOptions {
    /// Connections served at once (default 256, at least 1). Each may
    /// buffer up to one 1 MiB request. An authorized client beyond the
    /// bound gets one `BRIDGE_PROTOCOL_ERROR` frame and is closed.
    pub fn max_connections(&mut self, count: usize) -> &mut ServeOptions {
        self.max_connections = count.max(1);
        self
    }

    /// How long in-flight requests may run after shutdown is signalled
    /// before their connections are dropped (default 10 s).
    pub fn drain_timeout(&mut self, bound: Duration) -> &mut ServeOptions {
        self.drain_timeout = bound;
        self
    }

    /// How long a connection may stay silent between reads before it is
    /// closed (default 60 s).
    pub fn idle_timeout(&mut self, bound: Duration) -> &mut ServeOptions {
        self.idle_timeout = bound;
        self
    }

    /// How long one request may take to arrive once its first byte has
    /// (default 10 s); past it the connection is closed, so a client that
    /// trickles a request cannot hold a connection slot.
    pub fn request_timeout(&mut self, bound: Duration) -> &mut ServeOptions {
        self.request_timeout = bound;
        self
    }

    /// How long writing one response may take before the connection is
    /// closed (default 10 s); a client that does not read cannot pin a
    /// connection.
    pub fn write_timeout(&mut self, bound: Duration) -> &mut ServeOptions {
        self.write_timeout = bound;
        self
    }
}

/// Pause after a failed `accept` (e.g. `EMFILE`), so that a persistent
/// failure does not spin the loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

impl BridgeListener {
    /// [`serve_with`](BridgeListener::serve_with) with default
    /// [`ServeOptions`].
    ///
    /// # Errors
    ///
    /// See [`serve_with`](BridgeListener::serve_with).
    pub async fn serve(
        self,
        service: Arc<dyn BridgeService>,
        shutdown: ShutdownSignal,
    ) -> Result<(), RpcError> {
        self.serve_with(service, shutdown, &ServeOptions::default())
            .await
    }

    /// Serves connections until `shutdown` fires, then stops accepting,
    /// removes the socket file, lets in-flight requests finish within the
    /// drain bound, closes every connection and releases the lock.
    ///
    /// Per connection: the peer is measured with `SO_PEERCRED` and checked
    /// before anything is read (refused: one `PEER_NOT_AUTHORIZED` frame,
    /// then close); then requests are read one frame at a time, answered in
    /// order, a malformed one with its code while the connection stays
    /// usable, an oversized one with `REQUEST_TOO_LARGE` and then close.
    /// Connections are served concurrently, up to the configured bound.
    ///
    /// Must run inside a tokio runtime with I/O and time enabled.
    ///
    /// # Errors
    ///
    /// [`RpcError::Listen`] (`BRIDGE_PROTOCOL_ERROR`) if the socket cannot
    /// be registered with the runtime. Failures of single connections are
    /// logged, never returned.
    pub async fn serve_with(
        self,
        service: Arc<dyn BridgeService>,
        mut shutdown: ShutdownSignal,
        options: &ServeOptions,
    ) -> Result<(), RpcError> {
        let BridgeListener {
            listener,
            policy,
            mut claim,
        } = self;
        let listener = tokio::net::UnixListener::from_std(listener).map_err(RpcError::Listen)?;
        let sessions = Arc::new(Semaphore::new(options.max_connections));
        let mut tasks = JoinSet::new();
        tracing::info!(
            max_connections = options.max_connections,
            "Bridge RPC server listening"
        );

        loop {
            tokio::select! {
                biased;
                () = shutdown.triggered() => break,
                Some(finished) = tasks.join_next(), if !tasks.is_empty() => {
                    if let Err(error) = finished {
                        tracing::error!(error = %error, "a connection task failed");
                    }
                }
                accepted = listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _)) => stream,
                        Err(error) => {
                            tracing::warn!(error = %error, "accepting a connection failed");
                            tokio::time::sleep(ACCEPT_BACKOFF).await;
                            continue;
                        }
                    };
                    // Measured before a single byte is read (spec §2.2).
                    let peer = match policy.authorize(platform::measure_peer(&stream)) {
                        Ok(peer) => peer,
                        Err(reason) => {
                            tracing::warn!(reason = %reason, "refused a Bridge peer");
                            let refusal = Response::error(
                                None,
                                BridgeErrorCode::PeerNotAuthorized,
                                "peer is not authorized",
                            );
                            refuse(stream, refusal);
                            continue;
                        }
                    };
                    let Ok(permit) = Arc::clone(&sessions).try_acquire_owned() else {
                        tracing::warn!(
                            peer.uid = peer.uid,
                            "refused a connection: too many connections"
                        );
                        let refusal = Response::error(
                            None,
                            BridgeErrorCode::BridgeProtocolError,
                            "the Bridge is serving too many connections; retry later",
                        );
                        refuse(stream, refusal);
                        continue;
                    };
                    let service = Arc::clone(&service);
                    let signal = shutdown.clone();
                    let options = options.clone();
                    tasks.spawn(async move {
                        serve_connection(stream, peer, service, signal, &options).await;
                        drop(permit);
                    });
                }
            }
        }

        // Stop accepting: close the listener, then remove its file so new
        // clients see "no Bridge" at once, while the lock keeps any other
        // Bridge from starting until the drain is over.
        drop(listener);
        claim.remove_socket();
        tracing::info!(
            connections = tasks.len(),
            "Bridge RPC server stopping; draining connections"
        );
        let drained = tokio::time::timeout(options.drain_timeout, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                connections = tasks.len(),
                "dropping connections still busy after the drain bound"
            );
            tasks.shutdown().await;
        }
        drop(claim);
        tracing::info!("Bridge RPC server stopped");
        Ok(())
    }
}

/// Writes one refusal frame and closes the connection, without waiting:
/// the frame is far smaller than a fresh socket's send buffer, so a
/// non-blocking send delivers all of it, and a flood of refused
/// connections costs the accept loop no task and no wait.
fn refuse(stream: UnixStream, refusal: Response) {
    let frame = refusal.into_frame();
    match rustix::net::send(&stream, &frame, rustix::net::SendFlags::DONTWAIT) {
        Ok(sent) if sent == frame.len() => {}
        Ok(_) => tracing::debug!("a refusal frame was cut short"),
        Err(error) => tracing::debug!(error = %error, "writing a refusal frame failed"),
    }
    // Dropping the stream closes it; the peer reads the frame, then EOF.
}
