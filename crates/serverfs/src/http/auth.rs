//! Authentication in front of `/mcp`: bearer tokens, or OAuth (which also
//! accepts bearer tokens unless configured not to), and the scope check
//! of each tool call.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request as AxumRequest, State};
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::middleware::Next;
use axum::response::IntoResponse;
use tower::ServiceExt;

use super::abuse_log::{self, Level};
use super::intake::refused_before_body;
use crate::oauth::OAuthServer;
use crate::oauth::error::Refusal;
use crate::oauth::resource::Principal;
use crate::oauth::scope::Scopes;
use crate::tokens::TokenStore;

/// The name of the token that authenticated a request, put into the
/// request's extensions for the audit record (the token itself never
/// leaves this module).
#[derive(Debug, Clone)]
pub struct TokenName(pub String);

/// What owns a legacy MCP session: a bearer token's stored hash (so a
/// token replaced under the same name is another owner), `grant:<id>` for
/// an OAuth grant, `jwt:<issuer>#<subject>` for an external issuer's
/// subject. Never logged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenHash(pub String);

/// The scopes the request's token carries.
#[derive(Debug, Clone)]
pub struct GrantedScopes(pub Scopes);

/// What a request asks for, for its scope check (set by the body intake
/// on every JSON-RPC request).
#[derive(Debug, Clone)]
pub struct ScopedCall {
    /// Its method.
    pub method: String,
    /// The tool a `tools/call` names, when its params could be read.
    pub tool: Option<String>,
}

impl ScopedCall {
    /// What the refusal names: the tool of a `tools/call`, else the method.
    fn subject(&self) -> &str {
        self.tool.as_deref().unwrap_or(&self.method)
    }
}

/// How requests to `/mcp` are authenticated.
#[derive(Clone)]
pub enum Authenticator {
    /// No authentication (loopback or a trusted network).
    None,
    /// The token file's bearer tokens.
    Bearer(Arc<TokenStore>),
    /// OAuth access tokens (and bearer tokens unless turned off).
    OAuth(Arc<OAuthServer>),
}

/// Which session owners still hold a live credential.
pub struct LiveOwners {
    hashes: Vec<String>,
    grants: Vec<String>,
}

impl LiveOwners {
    /// Whether `owner` may keep its sessions.
    pub fn is_live(&self, owner: &str) -> bool {
        if let Some(id) = owner.strip_prefix("grant:") {
            self.grants.iter().any(|g| g == id)
        } else if owner.starts_with("jwt:") {
            // An external issuer's tokens cannot be revoked here; each
            // request is checked against its expiry.
            true
        } else {
            self.hashes.iter().any(|h| h == owner)
        }
    }
}

impl Authenticator {
    /// The owners whose sessions may stay open, or `None` when the
    /// stores cannot be read (sessions are left to their idle timeout).
    pub fn live_owners(&self, tokens: &TokenStore) -> Option<LiveOwners> {
        let hashes = tokens.current_hashes().ok()?;
        let grants = match self {
            Authenticator::OAuth(server) => server.live_grant_ids().ok()?,
            Authenticator::None | Authenticator::Bearer(_) => Vec::new(),
        };
        Some(LiveOwners { hashes, grants })
    }

    /// The principal of a request whose `Authorization: Bearer` value is
    /// `presented`, or the response refusing it.
    async fn principal(
        &self,
        presented: Option<&str>,
    ) -> Result<Option<Principal>, Response<Body>> {
        match self {
            Authenticator::None => Ok(None),
            Authenticator::Bearer(store) => {
                bearer(store, presented).map(Some).map_err(unauthorized)
            }
            Authenticator::OAuth(server) => match server.authenticate(presented).await {
                Ok(principal) => Ok(Some(principal)),
                Err(refusal) => {
                    if refusal != Refusal::TokenMissing {
                        abuse_log::note(Level::Info, "auth_failed", refusal.code());
                    }
                    Err(server.unauthorized(refusal))
                }
            },
        }
    }
}

/// Wraps `inner` so that only authenticated requests reach it.
pub fn layer<S>(
    authenticator: Authenticator,
    inner: S,
) -> impl tower::Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send>
+ Clone
+ Send
+ 'static
where
    S: tower::Service<Request<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    tower::service_fn(move |mut request: Request<Body>| {
        let authenticator = authenticator.clone();
        let inner = inner.clone();
        async move {
            let presented = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(|v| v.trim().to_owned());
            match authenticator.principal(presented.as_deref()).await {
                Ok(Some(principal)) => {
                    let extensions = request.extensions_mut();
                    extensions.insert(TokenName(principal.name));
                    extensions.insert(TokenHash(principal.owner));
                    extensions.insert(GrantedScopes(principal.scopes));
                }
                Ok(None) => {}
                Err(refusal) => return Ok(refused_before_body(request.headers(), refusal)),
            }
            let response = inner.oneshot(request).await?;
            Ok(response.into_response())
        }
    })
}

/// A bearer token of the token file, or why it is refused.
fn bearer(store: &TokenStore, presented: Option<&str>) -> Result<Principal, &'static str> {
    let Some(presented) = presented.filter(|t| !t.is_empty()) else {
        return Err("missing bearer token");
    };
    match store.verify(presented) {
        Ok(Some(entry)) => Ok(Principal {
            name: entry.name,
            owner: entry.sha256,
            scopes: Scopes::all(),
        }),
        Ok(None) => {
            abuse_log::note(Level::Info, "auth_failed", "unknown token");
            Err("invalid bearer token")
        }
        Err(reason) => {
            tracing::error!(event = "token_file_unusable", reason = %reason);
            Err("token store unavailable")
        }
    }
}

fn unauthorized(reason: &'static str) -> Response<Body> {
    let mut response = (StatusCode::UNAUTHORIZED, format!("{reason}\n")).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"serverfs\""),
    );
    response
}

/// Refuses a request that needs a scope the token lacks, by its method
/// ([`Scopes::required_for`]: a tool call by its tool, `resources/read` by
/// `read`, the Tasks extension's methods by `agent`, and a method or tool
/// the table does not know by every scope), with the spec's step-up answer
/// (`403 insufficient_scope`). Requests without scopes (no authentication)
/// pass.
pub async fn require_scope(
    State(oauth): State<Option<Arc<OAuthServer>>>,
    request: AxumRequest,
    next: Next,
) -> Response<Body> {
    let (Some(granted), Some(call)) = (
        request.extensions().get::<GrantedScopes>(),
        request.extensions().get::<ScopedCall>(),
    ) else {
        return next.run(request).await;
    };
    let missing = Scopes::required_for(&call.method, call.tool.as_deref()).missing_from(&granted.0);
    if missing.is_empty() {
        return next.run(request).await;
    }
    let subject = bounded_name(call.subject());
    tracing::info!(
        event = "insufficient_scope",
        request = %subject,
        needed = %missing
    );
    match oauth {
        Some(server) => server.insufficient_scope(&granted.0, &missing, &subject),
        None => (StatusCode::FORBIDDEN, "insufficient scope\n").into_response(),
    }
}

/// A client-chosen method or tool name as a refusal and the log show it:
/// at most 64 characters, printable ASCII only (it goes into a header).
fn bounded_name(name: &str) -> String {
    name.chars()
        .take(64)
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect()
}

/// The answer when a request did not produce a response within the
/// per-request timeout.
pub async fn timed_out(error: tower::BoxError) -> Response<Body> {
    if error.is::<tower::timeout::error::Elapsed>() {
        (StatusCode::SERVICE_UNAVAILABLE, "request timed out\n").into_response()
    } else {
        (StatusCode::INTERNAL_SERVER_ERROR, "internal error\n").into_response()
    }
}
