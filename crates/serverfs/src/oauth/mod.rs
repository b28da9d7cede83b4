//! OAuth 2.1 for hosted MCP clients (issue 19; `http.auth = "oauth"`).
//!
//! ServerFS is then a protected resource (RFC 9728 metadata, audience-bound
//! access tokens, `401`/`403` challenges: [`resource`]) with a built-in
//! authorization server at the same origin, so nothing else is needed:
//!
//! - RFC 8414 metadata ([`metadata`]);
//! - clients: pre-registered in the configuration, self-registered (RFC
//!   7591, [`register`]) or named by a client ID metadata document URL
//!   ([`clients`]); redirect URIs matched exactly ([`redirect`]);
//! - the authorization code flow with PKCE S256 only, through a consent
//!   page where the owner proves ownership with a bearer token or a
//!   one-time approval code ([`authorize`], [`consent`]); the response
//!   carries `iss` (RFC 9207);
//! - short-lived access tokens and rotating refresh tokens with reuse
//!   detection ([`token`]), stored hashed in the 0600 state file
//!   ([`store`]), revocable with `serverfs oauth revoke`;
//! - optionally an external issuer's JWTs ([`jwt`]);
//! - scopes `read`, `write`, `agent` ([`scope`]), enforced per tool call.
//!
//! Refusals have stable codes ([`error`], docs/oauth.md).

pub mod admin;
pub mod authorize;
pub mod clients;
pub mod consent;
pub mod error;
pub mod fetch;
pub mod jwt;
pub mod limits;
pub mod metadata;
pub mod public_addr;
pub mod redirect;
pub mod register;
pub mod resource;
pub mod scope;
pub mod store;
pub mod token;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Response, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::{Value, json};
use serverfs_config::EffectiveHttp;

use crate::tokens::TokenStore;
use error::Refusal;
use jwt::JwtVerifier;
use store::OAuthStore;

/// Largest request body the OAuth endpoints read.
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The OAuth side of one listening server.
pub struct OAuthServer {
    settings: serverfs_config::OAuthSettings,
    /// The canonical resource URI (`…/mcp`).
    resource: String,
    /// The authorization server's issuer: the resource's origin.
    issuer: String,
    /// Where the protected resource metadata is.
    resource_metadata_url: String,
    store: OAuthStore,
    /// The bearer token file: accepted tokens and ownership proofs.
    bearer: Arc<TokenStore>,
    external: Option<JwtVerifier>,
    /// Consent requests waiting for the owner, and issued codes.
    flows: Mutex<authorize::Flows>,
    /// Registrations allowed per source ([`register`]).
    registrations: limits::RateLimiter,
    /// Client ID metadata documents fetched lately.
    documents: clients::DocumentCache,
    /// Fetches client ID metadata documents (URLs anyone may name): on a
    /// server with an `https` resource, public addresses only.
    document_fetch: fetch::Fetcher,
}

/// Why the OAuth server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum OAuthSetupError {
    /// The HTTPS client (for JWKS and metadata documents) cannot be built.
    #[error("cannot set up the HTTPS client: {0}")]
    HttpClient(reqwest::Error),
    /// The state file is unusable.
    #[error(transparent)]
    Store(#[from] store::StoreError),
}

impl OAuthServer {
    /// The OAuth server of a listener bound to `local` with `http`.
    ///
    /// # Errors
    ///
    /// The HTTPS client cannot be built, or the state file is unusable
    /// (fail at start, not at the first request).
    pub fn new(
        http: &EffectiveHttp,
        local: SocketAddr,
        bearer: Arc<TokenStore>,
    ) -> Result<OAuthServer, OAuthSetupError> {
        let settings = http.oauth.clone();
        let resource = settings.canonical_resource(local);
        let issuer = origin_of(&resource);
        // A server only this machine can reach (an `http` resource) may
        // fetch documents from it, as a development set-up does; any
        // other keeps to public addresses, and no proxy resolves for it.
        let document_fetch = fetch::Fetcher::new(
            clients::DOCUMENT_FETCH_LIMITS,
            is_reachable_from_elsewhere(&resource),
        )
        .map_err(OAuthSetupError::HttpClient)?;
        let store = OAuthStore::new(settings.state_file.clone());
        store.list(crate::tokens::now_ms())?;
        // The external issuer's keys come from a URL the operator chose.
        let external = match &settings.external {
            Some(external) => Some(JwtVerifier::new(
                external,
                &resource,
                fetch::Fetcher::new(jwt::JWKS_FETCH_LIMITS, false)
                    .map_err(OAuthSetupError::HttpClient)?,
            )),
            None => None,
        };
        Ok(OAuthServer {
            resource_metadata_url: format!("{issuer}/.well-known/oauth-protected-resource/mcp"),
            issuer,
            resource,
            store,
            bearer,
            external,
            flows: Mutex::new(authorize::Flows::default()),
            registrations: register::rate_limiter(),
            documents: clients::DocumentCache::default(),
            document_fetch,
            settings,
        })
    }

    /// The host (and port) of the canonical resource: `Host` headers
    /// carrying it are accepted.
    pub fn public_authority(&self) -> Option<String> {
        url::Url::parse(&self.resource).ok().and_then(|url| {
            let host = url.host_str()?.to_owned();
            Some(match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
    }

    /// The state file's grants, for the session watcher.
    ///
    /// # Errors
    ///
    /// The state file is unusable.
    pub fn live_grant_ids(&self) -> Result<Vec<String>, store::StoreError> {
        self.store.live_grant_ids(crate::tokens::now_ms())
    }

    fn lock_flows(&self) -> std::sync::MutexGuard<'_, authorize::Flows> {
        self.flows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The routes of the metadata documents and the authorization server.
pub fn routes(server: Arc<OAuthServer>) -> Router {
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(metadata::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(metadata::protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(metadata::authorization_server),
        )
        .route("/register", post(register::register))
        .route("/authorize", get(authorize::start).post(authorize::decide))
        .route("/token", post(token::token))
        .route("/revoke", post(token::revoke))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(server)
}

/// Whether clients on other machines can reach the resource: it is
/// `https` (a plain `http` resource is a loopback one).
fn is_reachable_from_elsewhere(resource: &str) -> bool {
    resource.starts_with("https://")
}

/// `scheme://host[:port]` of an absolute URL.
fn origin_of(url: &str) -> String {
    url::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.origin().ascii_serialization())
}

/// Form or query parameters, each at most once (RFC 6749 §3.1: a
/// repeated parameter is an error, not a choice).
///
/// # Errors
///
/// [`Refusal::InvalidRequest`] for a repeated parameter.
pub fn form_params(bytes: &[u8]) -> Result<HashMap<String, String>, Refusal> {
    let mut params = HashMap::new();
    for (name, value) in url::form_urlencoded::parse(bytes) {
        if params
            .insert(name.into_owned(), value.into_owned())
            .is_some()
        {
            return Err(Refusal::InvalidRequest);
        }
    }
    Ok(params)
}

/// A JSON answer that must never be cached (tokens, registrations).
fn json_response(status: axum::http::StatusCode, body: &Value) -> Response<Body> {
    let mut response = (status, body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// The JSON error answer of the token and registration endpoints.
fn json_refusal(refusal: Refusal, detail: &str) -> Response<Body> {
    crate::http::abuse_log::note(
        crate::http::abuse_log::Level::Info,
        "oauth_refused",
        refusal.code(),
    );
    refusal_body(refusal, detail)
}

/// [`json_refusal`] of a limit: `Retry-After` says when to try again.
fn json_refusal_after(refusal: Refusal, detail: &str, wait: Duration) -> Response<Body> {
    let mut response = json_refusal(refusal, detail);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(limits::retry_after_seconds(wait)),
    );
    response
}

fn refusal_body(refusal: Refusal, detail: &str) -> Response<Body> {
    json_response(
        refusal.status(),
        &json!({
            "error": refusal.oauth_error(),
            "error_description": format!("{}: {detail}", refusal.code()),
        }),
    )
}
