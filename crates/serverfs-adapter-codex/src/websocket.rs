//! The managed daemon's transport: one JSON-RPC message per WebSocket
//! text frame over its Unix control socket (`ws://localhost/rpc`, no TLS,
//! no compression: offering permessage-deflate makes the daemon drop the
//! connection).

use std::path::Path;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serverfs_agent_runtime::jsonrpc::Router;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::connect::MAX_MESSAGE_BYTES;

/// Budget of connecting to the daemon's control socket, and of the
/// WebSocket handshake.
const CONNECT_BUDGET: Duration = Duration::from_secs(5);

/// A connected daemon socket.
pub(crate) type Socket = WebSocketStream<UnixStream>;

/// Why the daemon could not be reached (the caller names it to clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unreachable;

/// Connects and upgrades the control socket at `path`.
pub(crate) async fn connect(path: &Path) -> Result<Socket, Unreachable> {
    let stream = tokio::time::timeout(CONNECT_BUDGET, UnixStream::connect(path))
        .await
        .map_err(|_| Unreachable)?
        .map_err(|_| Unreachable)?;
    // The library's default limits (16 MiB frames, 64 MiB messages) are
    // below what stdio accepts; one bound for both transports, so a large
    // diff fails neither.
    let limits = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let (socket, _response) = tokio::time::timeout(
        CONNECT_BUDGET,
        tokio_tungstenite::client_async_with_config("ws://localhost/rpc", stream, Some(limits)),
    )
    .await
    .map_err(|_| Unreachable)?
    .map_err(|_| Unreachable)?;
    Ok(socket)
}

/// Feeds every text frame to `router` until the socket closes or fails.
pub(crate) async fn read_frames(mut stream: SplitStream<Socket>, mut router: Router) {
    while let Some(frame) = stream.next().await {
        let keep = match frame {
            // The socket's own limits already refuse larger messages; this
            // keeps the bound should they be changed.
            Ok(Message::Text(text)) => {
                text.len() <= MAX_MESSAGE_BYTES && router.keep_reading(text.as_str())
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
}

/// Sends each queued message as a text frame until the queue closes or a
/// send fails, then closes the WebSocket properly.
pub(crate) async fn write_frames(
    mut sink: SplitSink<Socket, Message>,
    mut queue: mpsc::UnboundedReceiver<String>,
) {
    while let Some(text) = queue.recv().await {
        if sink.send(Message::text(text)).await.is_err() {
            break;
        }
    }
    // Best effort: the daemon may already be gone.
    let _closed = sink.close().await;
}
