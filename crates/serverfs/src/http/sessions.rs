//! Legacy MCP sessions (`Mcp-Session-Id`, protocol 2025-06-18 and
//! earlier): who owns each, and how many there may be.
//!
//! rmcp keeps a session (about 57 KB) per legacy `initialize` until it has
//! been idle for the session idle timeout, with no bound: 20,000
//! initializes took one server from 90 MB to 867 MB in seconds. Here each
//! session belongs to the bearer token that created it (its stored hash, so
//! a token replaced under the same name is another owner):
//!
//! - an `initialize` beyond `max_sessions_per_token` for its token, or
//!   `max_sessions` in all, is answered `429` with `SESSION_LIMIT_REACHED`
//!   before rmcp builds a session (and a session that two racing
//!   `initialize`s let past that check is closed again at once); the
//!   refusals are logged as counted summaries ([`super::abuse_log`]);
//! - a request naming another token's session gets `404`, as an unknown
//!   session does (MCP clients then start a new one);
//! - once a token is revoked or replaced (or an OAuth grant revoked), its
//!   sessions are closed within a second, event streams included.
//!
//! Without authentication every session has the same (empty) owner.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::SessionId;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::abuse_log::{self, Level};
use super::auth::{Authenticator, LiveOwners, ScopedCall, TokenHash};
use crate::tokens::TokenStore;

/// The header naming a legacy session.
const SESSION_HEADER: &str = "mcp-session-id";

/// How often revoked tokens' sessions are looked for.
const REVOCATION_CHECK: Duration = Duration::from_secs(1);

/// The bounds on sessions.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Sessions open at once, in all.
    pub max_sessions: usize,
    /// Sessions one token may hold.
    pub max_sessions_per_token: usize,
}

/// The owners of the open sessions.
pub struct SessionGate {
    manager: Arc<LocalSessionManager>,
    limits: SessionLimits,
    /// Session id → owning token hash (empty without authentication).
    owners: Mutex<HashMap<SessionId, String>>,
}

impl SessionGate {
    /// A gate over `manager`'s sessions.
    pub fn new(manager: Arc<LocalSessionManager>, limits: SessionLimits) -> Arc<SessionGate> {
        Arc::new(SessionGate {
            manager,
            limits,
            owners: Mutex::new(HashMap::new()),
        })
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, String>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets sessions rmcp no longer has (ended idle or by `DELETE`).
    async fn prune(&self) {
        let live: Vec<SessionId> = self.manager.sessions.read().await.keys().cloned().collect();
        self.owners().retain(|id, _| live.contains(id));
    }

    /// Records `id` as `owner`'s, or says which bound it would break.
    async fn admit(&self, id: SessionId, owner: String) -> Result<(), &'static str> {
        self.prune().await;
        let mut owners = self.owners();
        self.room_for(&owners, &owner)?;
        owners.insert(id, owner);
        Ok(())
    }

    /// Which bound a new session of `owner` would break now, if any: an
    /// `initialize` that would be refused anyway is refused before rmcp
    /// builds its session (a flood of them cost a session each).
    async fn refuses(&self, owner: &str) -> Result<(), &'static str> {
        self.prune().await;
        self.room_for(&self.owners(), owner)
    }

    fn room_for(
        &self,
        owners: &HashMap<SessionId, String>,
        owner: &str,
    ) -> Result<(), &'static str> {
        if owners.len() >= self.limits.max_sessions {
            return Err("max_sessions");
        }
        let held = owners.values().filter(|o| *o == owner).count();
        if held >= self.limits.max_sessions_per_token {
            return Err("max_sessions_per_token");
        }
        Ok(())
    }

    /// Closes the sessions of owners whose credential is gone.
    async fn close_revoked(&self, live: &LiveOwners) {
        let doomed: Vec<SessionId> = {
            let mut owners = self.owners();
            let doomed = owners
                .iter()
                .filter(|(_, owner)| !live.is_live(owner))
                .map(|(id, _)| id.clone())
                .collect::<Vec<_>>();
            owners.retain(|id, _| !doomed.contains(id));
            doomed
        };
        for id in doomed {
            let _ = self.manager.close_session(&id).await;
            tracing::info!(event = "session_closed", reason = "token revoked");
        }
    }
}

/// Closes revoked tokens' and grants' sessions until `stopping` is
/// cancelled.
pub async fn watch_revocations(
    gate: Arc<SessionGate>,
    authenticator: Authenticator,
    tokens: Arc<TokenStore>,
    stopping: CancellationToken,
) {
    let mut tick = tokio::time::interval(REVOCATION_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stopping.cancelled() => return,
        }
        // An unreadable token file authenticates nobody (auth fails
        // closed); sessions are left to their idle timeout meanwhile.
        if let Some(live) = authenticator.live_owners(&tokens) {
            gate.close_revoked(&live).await;
        }
    }
}

/// Enforces session ownership and bounds around rmcp's session handling.
pub async fn gate(State(gate): State<Arc<SessionGate>>, request: Request, next: Next) -> Response {
    let owner = request
        .extensions()
        .get::<TokenHash>()
        .map(|hash| hash.0.clone())
        .unwrap_or_default();
    let named = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(|id| SessionId::from(id.to_owned()));
    if let Some(id) = named {
        let owned_by_other = gate.owners().get(&id).is_some_and(|o| *o != owner);
        if owned_by_other {
            return (StatusCode::NOT_FOUND, "session not found\n").into_response();
        }
        return next.run(request).await;
    }
    let initializes = request
        .extensions()
        .get::<ScopedCall>()
        .is_some_and(|call| call.method == "initialize");
    if initializes && let Err(bound) = gate.refuses(&owner).await {
        return refused(bound);
    }
    let response = next.run(request).await;
    let created = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(|id| SessionId::from(id.to_owned()));
    let Some(id) = created else {
        return response;
    };
    match gate.admit(id.clone(), owner).await {
        Ok(()) => response,
        Err(bound) => {
            let _ = gate.manager.close_session(&id).await;
            refused(bound)
        }
    }
}

/// Refuses a new session at `bound`. A flood of them is logged as counted
/// summaries, as unauthenticated abuse is: the refusal says enough.
fn refused(bound: &'static str) -> Response {
    abuse_log::note(Level::Warn, "session_refused", bound);
    limit_reached(bound)
}

/// `429` with a JSON-RPC error saying which bound was reached.
fn limit_reached(bound: &'static str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32000,
            "message": format!(
                "SESSION_LIMIT_REACHED: too many open MCP sessions ({bound}); close one \
                 (DELETE /mcp with its Mcp-Session-Id) or wait for an idle one to end"
            ),
        },
    });
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::RETRY_AFTER, HeaderValue::from_static("10")),
        ],
        body.to_string(),
    )
        .into_response()
}
