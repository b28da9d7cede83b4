//! MCP over Streamable HTTP: rmcp's service at `/mcp` inside axum, plus
//! `GET /healthz`.
//!
//! Layers, outermost first: a bound on concurrent requests, a per-request
//! timeout (on producing the response; event streams then flow freely),
//! bearer authentication on `/mcp`, and rmcp's own checks — the `Host`
//! allowlist and `Origin` validation against DNS rebinding, and the request
//! body limit (sized to the largest enabled binary transfer). Both protocol
//! eras are served: the legacy handshake with `Mcp-Session-Id` sessions,
//! and the stateless current era, which rmcp negotiates per request.
//!
//! Every accepted connection gets `TCP_NODELAY`: hyper writes a response
//! in several pieces (headers, then each event-stream chunk), and with
//! Nagle's algorithm on, the last piece waits for the client's ACK of the
//! first, which a client with delayed ACKs (the Linux default) sends only
//! after about 40 ms. Measured before the fix with a plain keep-alive
//! client: 4-68 % of sequential calls waited ~44 ms (issue 15). No other
//! socket option made a measurable difference.
//!
//! Shutdown on SIGTERM/SIGINT: stop accepting, let in-flight requests
//! finish for up to the grace period, then close the remaining sessions
//! and event streams and return.

mod auth;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serverfs_config::{EffectiveHttp, HttpAuth};
use tokio_util::sync::CancellationToken;

use crate::mcp::ServerFs;
use crate::tokens::{TokenError, TokenStore};

pub use auth::TokenName;

/// The body limit rmcp applies by default; raised to fit binary uploads.
const MIN_BODY_BYTES: usize = 4 << 20;
/// Room for the JSON-RPC envelope around a base64 payload.
const ENVELOPE_BYTES: usize = 64 << 10;

/// Host names always allowed: the loopback names.
const LOOPBACK_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Why HTTP serving stopped with a failure.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The configured address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The bound socket has no readable address.
    #[error("cannot read the listening address: {0}")]
    LocalAddress(std::io::Error),
    /// The server loop failed.
    #[error("HTTP server failed: {0}")]
    Serve(std::io::Error),
    /// The `--new-token` token could not be stored.
    #[error("cannot create the --new-token token: {0}")]
    QuickStartToken(TokenError),
    /// The `--new-token` token could not be printed (it was revoked again).
    #[error("cannot print the --new-token token on stdout: {0}")]
    QuickStartPrint(std::io::Error),
}

/// Serves `server` over HTTP until SIGTERM or SIGINT. `quick_start` is the
/// name given to `serve --new-token`: once the address is bound, a token of
/// that name replaces any other of the name and is announced once, with
/// the real address, to the person who started the server.
pub async fn serve(
    server: ServerFs,
    http: EffectiveHttp,
    largest_binary_cap: Option<u64>,
    quick_start: Option<&str>,
) -> Result<(), HttpError> {
    let listener = tokio::net::TcpListener::bind(http.bind)
        .await
        .map_err(|source| HttpError::Bind {
            addr: http.bind,
            source,
        })?;
    let local = listener.local_addr().map_err(HttpError::LocalAddress)?;
    // Only now: a server that cannot listen must leave the token file as
    // it was, not holding a token nobody was shown (issue 14, item 6).
    if let Some(name) = quick_start {
        announce_quick_start(&TokenStore::new(http.token_file.clone()), name, local)?;
    }
    let sessions = CancellationToken::new();
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    hosts.extend(http.allowed_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(http.allowed_origins.clone())
        // With no configured origin, any present Origin is refused: a
        // browser page has no business talking to this server.
        .enforce_origin_validation()
        .with_max_request_body_bytes(body_limit(largest_binary_cap))
        .with_cancellation_token(sessions.clone());
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let tokens = match http.auth {
        HttpAuth::Bearer => Some(Arc::new(TokenStore::new(http.token_file.clone()))),
        HttpAuth::None => None,
    };
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .nest_service("/mcp", auth::layer(tokens, mcp))
        .layer(axum::middleware::from_fn(session_close_no_content))
        .layer(
            tower::ServiceBuilder::new()
                .layer(axum::error_handling::HandleErrorLayer::new(auth::timed_out))
                // Requests over the bound wait for a slot (back-pressure),
                // within the timeout below.
                .concurrency_limit(usize::try_from(http.max_concurrent_requests).unwrap_or(64))
                .timeout(Duration::from_millis(http.request_timeout_ms)),
        );
    tracing::info!(
        event = "http_listening",
        address = %local,
        auth = http.auth.as_str(),
    );
    let stopping = CancellationToken::new();
    tokio::spawn(signal_watch(stopping.clone()));
    let listener = listener.tap_io(|stream| {
        // setsockopt fails only on a socket that is already gone (its first
        // read reports that); logged because calls on a connection without
        // the option would stall, not fail.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::warn!(event = "tcp_nodelay_failed", reason = %e);
        }
    });
    let serve =
        axum::serve(listener, app).with_graceful_shutdown(stopping.clone().cancelled_owned());
    let mut serve = std::pin::pin!(serve.into_future());
    tokio::select! {
        result = &mut serve => return result.map_err(HttpError::Serve),
        () = stopping.cancelled() => {}
    }
    let grace = Duration::from_millis(http.shutdown_grace_ms);
    if tokio::time::timeout(grace, &mut serve).await.is_err() {
        // Sessions' event streams never end on their own: close them.
        sessions.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut serve).await;
    }
    tracing::info!(event = "shutdown", reason = "signal");
    Ok(())
}

/// Answers a successful session `DELETE` with 204 No Content instead of
/// rmcp's 202 Accepted: the session is closed by then, and clients check
/// for 200 or 204 (the Python SDK logs "Session termination failed: 202"
/// on every close otherwise).
async fn session_close_no_content(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let is_delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if is_delete && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
    }
    response
}

/// Creates the `--new-token` token and prints it with the URL on stdout.
///
/// Stdout, not stderr: stderr is the log stream (JSON lines that journald,
/// `docker logs` or a `2>file` keep), and a bearer token must never be part
/// of it. Over HTTP, stdout carries nothing else. A token that cannot be
/// printed is revoked again, since nobody could ever use it.
fn announce_quick_start(
    store: &TokenStore,
    name: &str,
    local: std::net::SocketAddr,
) -> Result<(), HttpError> {
    use std::io::Write;
    let (token, replaced) = store.replace(name).map_err(HttpError::QuickStartToken)?;
    // A client configured from an earlier run now gets 401: say so.
    let replaced = if replaced {
        format!(
            "serverfs: it replaces the earlier token {name:?}, which is revoked: clients \
             configured with that one now get 401 until given this one\n"
        )
    } else {
        String::new()
    };
    let mut out = std::io::stdout().lock();
    let printed = writeln!(
        out,
        "serverfs: serving http://{local}/mcp\n\
         serverfs: bearer token {name:?} (shown once): {token}\n\
         {replaced}\
         serverfs: e.g. claude mcp add --transport http serverfs http://{local}/mcp \
         --header \"Authorization: Bearer {token}\""
    )
    .and_then(|()| out.flush());
    if let Err(e) = printed {
        let _ = store.revoke(name);
        return Err(HttpError::QuickStartPrint(e));
    }
    Ok(())
}

/// Waits for SIGTERM or SIGINT, then starts the shutdown.
async fn signal_watch(stopping: CancellationToken) {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(stream) => stream,
        Err(e) => {
            tracing::error!(event = "signal_setup_failed", reason = %e);
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    stopping.cancel();
}

/// The request body limit: rmcp's default, or enough for the largest
/// binary upload encoded as base64 plus its envelope.
fn body_limit(largest_binary_cap: Option<u64>) -> usize {
    let binary = largest_binary_cap.map_or(0, |cap| {
        usize::try_from(cap.div_ceil(3) * 4)
            .unwrap_or(usize::MAX)
            .saturating_add(ENVELOPE_BYTES)
    });
    binary.max(MIN_BODY_BYTES)
}
