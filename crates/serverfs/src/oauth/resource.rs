//! The resource-server side: which principal an `Authorization: Bearer`
//! value stands for at `/mcp`, and the `401` / `403` answers of the MCP
//! authorization spec (RFC 6750 §3, RFC 9728 §5.1).
//!
//! Accepted, in this order: the token file's bearer tokens (`sfs_…`, every
//! scope; unless `accept_bearer_tokens` is off), the built-in server's
//! access tokens (`sfo_…`: a live grant's current token, unexpired, whose
//! audience is this server's canonical resource), and an external
//! issuer's JWTs. Nothing else; no token is ever passed on.

use axum::body::Body;
use axum::http::{HeaderValue, Response, header};
use axum::response::IntoResponse;
use serde_json::json;

use super::OAuthServer;
use super::error::Refusal;
use super::jwt::JwtVerifier;
use super::scope::Scopes;
use crate::secret;
use crate::tokens::now_ms;

/// Prefix of the built-in server's access tokens.
pub const ACCESS_TOKEN_PREFIX: &str = "sfo_";

/// Who a request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The name in the audit record: a bearer token's name, `oauth:<grant
    /// id>` or `jwt:<subject>`.
    pub name: String,
    /// What owns its legacy sessions: a bearer token's hash, `grant:<id>`
    /// or `jwt:<issuer>#<subject>`.
    pub owner: String,
    /// What it may call.
    pub scopes: Scopes,
}

impl OAuthServer {
    /// The principal `presented` stands for.
    ///
    /// # Errors
    ///
    /// The refusal to answer with (`401`, or `500` when the state file is
    /// unusable).
    pub async fn authenticate(&self, presented: Option<&str>) -> Result<Principal, Refusal> {
        let Some(token) = presented.filter(|t| !t.is_empty()) else {
            return Err(Refusal::TokenMissing);
        };
        if token.starts_with(crate::tokens::TOKEN_PREFIX) && self.settings.accept_bearer_tokens {
            return match self.bearer.verify(token) {
                Ok(Some(entry)) => Ok(Principal {
                    name: entry.name,
                    owner: entry.sha256,
                    scopes: Scopes::all(),
                }),
                Ok(None) => Err(Refusal::TokenInvalid),
                Err(reason) => {
                    tracing::error!(event = "token_file_unusable", reason = %reason);
                    Err(Refusal::ServerUnavailable)
                }
            };
        }
        if token.starts_with(ACCESS_TOKEN_PREFIX) {
            return self.built_in_principal(token);
        }
        if JwtVerifier::looks_like_jwt(token) {
            return match &self.external {
                Some(verifier) => verifier.verify(token).await,
                None => Err(Refusal::IssuerUnknown),
            };
        }
        Err(Refusal::TokenInvalid)
    }

    fn built_in_principal(&self, token: &str) -> Result<Principal, Refusal> {
        let hash = secret::sha256_hex(token);
        let grant = self
            .store
            .grant_by_access(&hash)
            .map_err(|e| {
                tracing::error!(event = "oauth_state_unusable", reason = %e);
                Refusal::ServerUnavailable
            })?
            .ok_or(Refusal::TokenInvalid)?;
        if grant.resource != self.resource {
            return Err(Refusal::AudienceMismatch);
        }
        if grant.access_expires_ms <= now_ms() {
            return Err(Refusal::TokenExpired);
        }
        Ok(Principal {
            name: format!("oauth:{}", grant.id),
            owner: format!("grant:{}", grant.id),
            scopes: Scopes::parse(&grant.scopes).unwrap_or_default(),
        })
    }

    /// `401` for a request without a usable token: `WWW-Authenticate`
    /// names the protected resource metadata and the scopes to ask for.
    pub fn unauthorized(&self, refusal: Refusal) -> Response<Body> {
        let challenge = match refusal {
            Refusal::TokenMissing => format!(
                "Bearer resource_metadata=\"{}\", scope=\"{}\"",
                self.resource_metadata_url,
                Scopes::all()
            ),
            _ => format!(
                "Bearer error=\"{}\", error_description=\"{}\", resource_metadata=\"{}\", \
                 scope=\"{}\"",
                refusal.oauth_error(),
                refusal.code(),
                self.resource_metadata_url,
                Scopes::all()
            ),
        };
        challenge_response(refusal, &challenge, None)
    }

    /// `403 insufficient_scope` for a request (`subject`: the tool called,
    /// or the method) that needs the scopes `missing` besides those held:
    /// the challenge asks for the scopes held plus the missing ones
    /// (step-up).
    pub fn insufficient_scope(
        &self,
        held: &Scopes,
        missing: &Scopes,
        subject: &str,
    ) -> Response<Body> {
        let wanted = held.union(missing);
        let needs = if missing.iter().count() == 1 {
            format!("the {missing} scope")
        } else {
            format!("the {missing} scopes")
        };
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{wanted}\", resource_metadata=\"{}\", \
             error_description=\"{subject} needs {needs}\"",
            self.resource_metadata_url,
        );
        let message = format!(
            "INSUFFICIENT_SCOPE: {subject} needs {needs}, and this access token has only \
             \"{held}\"; authorize again with scope \"{wanted}\""
        );
        challenge_response(Refusal::InsufficientScope, &challenge, Some(message))
    }
}

/// A refusal with its challenge header and a JSON-RPC error body.
fn challenge_response(
    refusal: Refusal,
    challenge: &str,
    message: Option<String>,
) -> Response<Body> {
    let message =
        message.unwrap_or_else(|| format!("{}: {}", refusal.code(), refusal.oauth_error()));
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32001, "message": message },
    });
    let mut response = (refusal.status(), body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(challenge) {
        headers.insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
