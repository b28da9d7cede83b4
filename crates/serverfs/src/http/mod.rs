//! MCP over Streamable HTTP: rmcp's service at `/mcp` inside axum, plus
//! `GET /healthz`.
//!
//! Connections ([`connections`]): a header timeout that is also the
//! keep-alive idle bound, a bound on open connections that evicts the
//! longest-idle one, and `TCP_NODELAY`. Requests, outermost first: the
//! `Host` header must be one plain, allowed `host[:port]` and an
//! absolute request-target must name it, on every route
//! ([`intake::check_host`]);
//! bearer or OAuth authentication on `/mcp` ([`auth`]); the body is read
//! whole within the body timeout and must be one JSON-RPC message
//! ([`intake::read_message`]); a tool call must be within the token's
//! scopes ([`auth::require_scope`]);
//! legacy sessions are bounded and bound to their token ([`sessions`]);
//! then a bound on concurrent requests, a per-request timeout (on producing
//! the response; event streams then flow freely) and rmcp's own checks —
//! the `Host` allowlist and `Origin` validation against DNS rebinding.
//! Both protocol eras are served: the legacy handshake with
//! `Mcp-Session-Id` sessions, and the stateless current era, which rmcp
//! negotiates per request.
//!
//! Shutdown on SIGTERM/SIGINT: stop accepting, let in-flight requests
//! finish for up to the grace period, then close the remaining sessions
//! and event streams and return.

pub(crate) mod abuse_log;
mod auth;
mod connections;
mod intake;
mod sessions;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serverfs_config::{EffectiveHttp, HttpAuth};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::mcp::ServerFs;
use crate::oauth::OAuthServer;
use crate::tokens::{TokenError, TokenStore};

pub use auth::TokenName;

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
    /// The `--new-token` token could not be stored.
    #[error("cannot create the --new-token token: {0}")]
    QuickStartToken(TokenError),
    /// The `--new-token` token could not be printed (it was revoked again).
    #[error("cannot print the --new-token token on stdout: {0}")]
    QuickStartPrint(std::io::Error),
    /// The OAuth server cannot start.
    #[error(transparent)]
    OAuth(crate::oauth::OAuthSetupError),
}

/// Serves `server` over HTTP until SIGTERM or SIGINT. `max_message_bytes`
/// bounds a request body. `quick_start` is the name given to `serve
/// --new-token`: once the address is bound, a token of that name replaces
/// any other of the name and is announced once, with the real address, to
/// the person who started the server.
pub async fn serve(
    server: ServerFs,
    http: EffectiveHttp,
    max_message_bytes: usize,
    quick_start: Option<&str>,
) -> Result<(), HttpError> {
    // Before the address is bound: a SIGTERM that comes as soon as the port
    // accepts connections (a supervisor's quick stop) must shut the server
    // down gracefully, not end it with the signal's default action.
    let stopping = CancellationToken::new();
    watch_signals(stopping.clone());
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
    let limits = &http.connections;
    let sessions = CancellationToken::new();
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    hosts.extend(http.allowed_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(http.allowed_origins.clone())
        // With no configured origin, any present Origin is refused: a
        // browser page has no business talking to this server.
        .enforce_origin_validation()
        .with_max_request_body_bytes(max_message_bytes)
        .with_cancellation_token(sessions.clone());
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(Duration::from_millis(limits.session_idle_timeout_ms));
    let manager = Arc::new(manager);
    let gate = sessions::SessionGate::new(
        manager.clone(),
        sessions::SessionLimits {
            max_sessions: to_usize(limits.max_sessions),
            max_sessions_per_token: to_usize(limits.max_sessions_per_token),
        },
    );
    let tokens = Arc::new(TokenStore::new(http.token_file.clone()));
    let authenticator = match http.auth {
        HttpAuth::Bearer => auth::Authenticator::Bearer(tokens.clone()),
        HttpAuth::None => auth::Authenticator::None,
        HttpAuth::OAuth => auth::Authenticator::OAuth(Arc::new(
            OAuthServer::new(&http, local, tokens.clone()).map_err(HttpError::OAuth)?,
        )),
    };
    let oauth = match &authenticator {
        auth::Authenticator::OAuth(server) => Some(server.clone()),
        auth::Authenticator::None | auth::Authenticator::Bearer(_) => None,
    };
    // Clients reach an OAuth server under its public name: that Host is
    // accepted too.
    if let Some(authority) = oauth.as_ref().and_then(|o| o.public_authority()) {
        hosts.push(authority);
    }
    let allowed_hosts = Arc::new(intake::AllowedHosts::new(&hosts));
    let config = config.with_allowed_hosts(hosts);
    let mcp = StreamableHttpService::new(move || Ok(server.for_session()), manager, config);
    if !matches!(authenticator, auth::Authenticator::None) {
        tokio::spawn(sessions::watch_revocations(
            gate.clone(),
            authenticator.clone(),
            tokens.clone(),
            stopping.clone(),
        ));
    }
    let message_limits = intake::MessageLimits {
        body_timeout: Duration::from_millis(limits.body_timeout_ms),
        max_bytes: max_message_bytes,
    };
    // Layers run outermost-last-added: body and message first, then the
    // session gate, then the slot and the timeout around rmcp.
    let authenticated = Router::new()
        .fallback_service(mcp)
        .layer(
            tower::ServiceBuilder::new()
                .layer(axum::error_handling::HandleErrorLayer::new(auth::timed_out))
                // Requests over the bound wait for a slot (back-pressure),
                // within the timeout below.
                .concurrency_limit(to_usize(http.max_concurrent_requests))
                .timeout(Duration::from_millis(http.request_timeout_ms)),
        )
        .layer(axum::middleware::from_fn_with_state(gate, sessions::gate))
        .layer(axum::middleware::from_fn_with_state(
            oauth.clone(),
            auth::require_scope,
        ))
        .layer(axum::middleware::from_fn_with_state(
            message_limits,
            intake::read_message,
        ));
    let mut app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .nest_service("/mcp", auth::layer(authenticator, authenticated));
    if let Some(oauth) = oauth {
        app = app.merge(crate::oauth::routes(oauth));
    }
    let app = app
        .layer(axum::middleware::from_fn(session_close_no_content))
        .layer(axum::middleware::from_fn_with_state(
            allowed_hosts,
            intake::check_host,
        ));
    tokio::spawn(abuse_log::summarize_until(stopping.clone()));
    let max_connections = connection_bound(limits.max_connections);
    tracing::info!(
        event = "http_listening",
        address = %local,
        auth = http.auth.as_str(),
        max_connections,
    );
    connections::serve(
        listener,
        app,
        connections::Limits {
            header_timeout: Duration::from_millis(limits.header_timeout_ms),
            max_connections,
            shutdown_grace: Duration::from_millis(http.shutdown_grace_ms),
        },
        stopping,
        sessions,
    )
    .await;
    abuse_log::flush_all();
    tracing::info!(event = "shutdown", reason = "signal");
    Ok(())
}

fn to_usize(count: u32) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX)
}

/// The configured connection bound, kept to at most half the open-file
/// limit so that the files requests open always have descriptors left.
fn connection_bound(configured: u32) -> usize {
    let files = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .map_or(usize::MAX, |soft| {
            usize::try_from(soft).unwrap_or(usize::MAX)
        });
    to_usize(configured).min((files / 2).max(1))
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

/// Installs the SIGTERM and SIGINT handlers now, and cancels `stopping`
/// when either arrives. A handler that cannot be installed leaves that
/// signal its default action (the process ends at once), and says so.
fn watch_signals(stopping: CancellationToken) {
    let install = |kind: SignalKind| match signal(kind) {
        Ok(stream) => Some(stream),
        Err(e) => {
            tracing::error!(event = "signal_setup_failed", reason = %e);
            None
        }
    };
    let terminate = install(SignalKind::terminate());
    let interrupt = install(SignalKind::interrupt());
    tokio::spawn(async move {
        tokio::select! {
            () = arrival(terminate) => {}
            () = arrival(interrupt) => {}
        }
        stopping.cancel();
    });
}

/// The next delivery of `signal`; never, when it has no handler.
async fn arrival(signal: Option<Signal>) {
    match signal {
        Some(mut signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}
