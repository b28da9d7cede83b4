//! The Bridge RPC server transport: a Unix stream socket that only the
//! allowed peer may use, newline-delimited JSON frames, one response per
//! request in order, dispatched to a [`BridgeService`]
//! (spec-agent-bridge.md §2; codes in §11).
//!
//! - [`BridgeListener::bind`] claims the socket path: a private parent
//!   directory (0750), an `flock`ed lock file beside the socket so that a
//!   second Bridge refuses to start (`SOCKET_PATH_IN_USE`) instead of
//!   stealing the socket, recovery of a stale socket left by a crash, and
//!   socket mode 0660. See `socket.rs` for the exact rules.
//! - [`BridgeListener::serve`] accepts connections, measures each peer with
//!   `SO_PEERCRED` before reading anything and refuses any peer the
//!   [`PeerPolicy`] does not permit (`PEER_NOT_AUTHORIZED`, then close),
//!   decodes frames with the protocol crate
//!   ([`FrameDecoder`](serverfs_protocol::bridge::FrameDecoder),
//!   [`Request::from_frame`](serverfs_protocol::bridge::Request::from_frame)),
//!   answers malformed ones with their code and keeps the connection, and
//!   closes after an oversized one (`REQUEST_TOO_LARGE`).
//! - A [`ShutdownTrigger`] stops the server gracefully: no new connections,
//!   in-flight requests finish within a bound, then the socket file is gone
//!   and the lock released.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//!
//! use serverfs_agent_bridge::rpc::{
//!     BridgeListener, BridgeService, PeerInfo, PeerPolicy, ServiceFuture, shutdown_channel,
//! };
//! use serverfs_protocol::bridge::{BridgeErrorCode, Request, Response};
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! /// Answers every request with "not yet".
//! struct NotYet;
//!
//! impl BridgeService for NotYet {
//!     fn handle(&self, _peer: PeerInfo, request: Request) -> ServiceFuture<'_> {
//!         Box::pin(async move {
//!             Response::error(
//!                 Some(request.request_id),
//!                 BridgeErrorCode::BridgeClosed,
//!                 "not yet",
//!             )
//!         })
//!     }
//! }
//!
//! let runtime = tokio::runtime::Runtime::new()?;
//! runtime.block_on(async {
//!     let state = tempfile::tempdir()?;
//!     let socket = state.path().join("run/bridge.sock");
//!     let listener = BridgeListener::bind(&socket, PeerPolicy::current_user())?;
//!     let (stop, signal) = shutdown_channel();
//!     let server = tokio::spawn(listener.serve(Arc::new(NotYet), signal));
//!
//!     let mut client = BufReader::new(tokio::net::UnixStream::connect(&socket).await?);
//!     client
//!         .get_mut()
//!         .write_all(b"{\"protocol_version\":1,\"request_id\":\"r1\",\"method\":\"runtime.list\",\"params\":{}}\n")
//!         .await?;
//!     let mut line = String::new();
//!     client.read_line(&mut line).await?;
//!     assert!(line.starts_with("{\"request_id\":\"r1\",\"ok\":false"));
//!
//!     stop.trigger();
//!     server.await??;
//!     assert!(!socket.exists());
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok(()) }
//! ```

mod connection;
mod error;
mod peer;
mod server;
mod socket;

pub use error::{DirectoryProblem, PathProblem, RpcError};
pub use peer::{PeerInfo, PeerPolicy};
pub use server::{
    BridgeService, ServeOptions, ServiceFuture, ShutdownSignal, ShutdownTrigger, shutdown_channel,
};
pub use socket::{BridgeListener, SOCKET_DIRECTORY_FORBIDDEN_BITS, SOCKET_DIRECTORY_MODE};
