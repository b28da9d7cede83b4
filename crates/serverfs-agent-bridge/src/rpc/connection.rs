//! One authorized connection: frames in, one response line per frame out,
//! strictly in order (spec-agent-bridge.md §2.3, §2.4).

use std::sync::Arc;

use serverfs_protocol::bridge::{FrameDecoder, ProtocolError, Request, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::peer::PeerInfo;
use super::server::{BridgeService, ServeOptions, ShutdownSignal};

/// Bytes asked of the socket per read. With the decoder's own bound, a
/// connection holds at most one 1 MiB frame plus this much.
const READ_CHUNK: usize = 64 * 1024;

/// The longest prefix of a caller's `request_id` that goes into logs; the
/// MCP server's ids are 28 bytes, but a caller may send up to 1 MiB.
const LOGGED_ID_CHARS: usize = 64;

/// Serves `stream` until the peer closes it, it stays idle too long, a
/// started request does not arrive in time, a frame is too large, a write
/// fails, or shutdown is signalled (an in-flight request is answered
/// first).
pub(super) async fn serve_connection(
    mut stream: UnixStream,
    peer: PeerInfo,
    service: Arc<dyn BridgeService>,
    mut shutdown: ShutdownSignal,
    options: &ServeOptions,
) {
    let mut frames = FrameDecoder::new();
    let mut chunk = vec![0_u8; READ_CHUNK];
    let mut ended = false;
    // When the first byte of the request still incomplete arrived: the
    // idle bound restarts with every read, so without this a client
    // trickling one byte a minute would hold its slot for ever.
    let mut request_started: Option<Instant> = None;
    loop {
        // Answer every complete frame already received, in order.
        loop {
            match frames.next_frame() {
                Ok(Some(frame)) => {
                    let response = answer(&frame, peer, &service).await;
                    if !write_frame(&mut stream, response.into_frame(), options).await {
                        return;
                    }
                    if shutdown.is_triggered() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    // The stream can no longer be split reliably: answer
                    // once without an id, then close (spec §2.3).
                    tracing::info!(
                        error.code = ProtocolError::RequestTooLarge.code().as_str(),
                        "request refused"
                    );
                    let refusal = Response::failure(None, &ProtocolError::RequestTooLarge);
                    if write_frame(&mut stream, refusal.into_frame(), options).await {
                        let _ = stream.shutdown().await;
                    }
                    return;
                }
            }
        }
        if ended {
            return;
        }
        let deadline = if frames.buffered() == 0 {
            request_started = None;
            Instant::now() + options.idle_timeout
        } else {
            *request_started.get_or_insert_with(Instant::now) + options.request_timeout
        };
        let read = tokio::select! {
            biased;
            () = shutdown.triggered() => return,
            read = tokio::time::timeout_at(deadline, stream.read(&mut chunk)) => read,
        };
        match read {
            Ok(Ok(0)) => {
                // A last line without its newline is still answered.
                frames.finish();
                ended = true;
            }
            Ok(Ok(count)) => frames.push(&chunk[..count]),
            Ok(Err(error)) => {
                tracing::debug!(error = %error, "reading a Bridge connection failed");
                return;
            }
            Err(_) if request_started.is_some() => {
                tracing::info!("closing a Bridge connection: its request did not arrive in time");
                return;
            }
            Err(_) => {
                tracing::debug!("closing an idle Bridge connection");
                return;
            }
        }
    }
}

/// Decodes one frame in the protocol crate's two stages and, if it is a
/// valid request, has the service answer it.
async fn answer(frame: &[u8], peer: PeerInfo, service: &Arc<dyn BridgeService>) -> Response {
    let request = match Request::from_frame(frame) {
        Ok(request) => request,
        Err(rejected) => {
            tracing::info!(
                error.code = rejected.error.code().as_str(),
                "request refused"
            );
            return rejected.into_response();
        }
    };
    let request_id = request.request_id.clone();
    let span = tracing::info_span!(
        "bridge_request",
        method = request.method().as_str(),
        request_id = logged_id(&request_id),
        peer.uid = peer.uid,
    );
    // A task of its own, so that a panic in the service is contained; the
    // guard aborts it if this connection is dropped at the drain bound.
    let service = Arc::clone(service);
    let mut call = AbortOnDrop(tokio::spawn(
        async move { service.handle(peer, request).await }.instrument(span.clone()),
    ));
    let response = match (&mut call.0).await {
        Ok(response) if response.request_id() == Some(request_id.as_str()) => response,
        Ok(_) => {
            tracing::error!(parent: &span, "the service answered with another request_id");
            Response::failure(Some(request_id), &ProtocolError::Internal)
        }
        Err(error) => {
            tracing::error!(parent: &span, error = %error, "the service failed");
            Response::failure(Some(request_id), &ProtocolError::Internal)
        }
    };
    match &response {
        Response::Success { .. } => tracing::debug!(parent: &span, "request answered"),
        Response::Failure { error, .. } => {
            tracing::info!(parent: &span, error.code = error.code.as_str(), "request failed");
        }
    }
    response
}

/// Writes one frame within the write bound; `false` if the connection is
/// no longer usable.
async fn write_frame(stream: &mut UnixStream, frame: Vec<u8>, options: &ServeOptions) -> bool {
    match tokio::time::timeout(options.write_timeout, stream.write_all(&frame)).await {
        Ok(Ok(())) => true,
        Ok(Err(error)) => {
            tracing::debug!(error = %error, "writing a Bridge response failed");
            false
        }
        Err(_) => {
            tracing::debug!("writing a Bridge response timed out");
            false
        }
    }
}

/// At most [`LOGGED_ID_CHARS`] characters of `id`.
fn logged_id(id: &str) -> &str {
    id.char_indices()
        .nth(LOGGED_ID_CHARS)
        .map_or(id, |(end, _)| &id[..end])
}

/// Aborts the service task when the connection task is dropped.
struct AbortOnDrop(JoinHandle<Response>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
