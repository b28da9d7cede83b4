//! `POST /token` (authorization code and refresh token grants) and
//! `POST /revoke` (RFC 7009).
//!
//! A code is good once, for the client and redirect URI it was issued
//! to, within a minute, and only with the PKCE verifier of its challenge;
//! presenting it a second time revokes the grant it produced. A refresh
//! token is replaced at every use; presenting a replaced one again means
//! a copy leaked, and revokes the whole grant. A refresh may narrow the
//! scopes (for good), never widen them.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Response, StatusCode};
use serde_json::json;

use super::error::Refusal;
use super::resource::ACCESS_TOKEN_PREFIX;
use super::scope::Scopes;
use super::store::{Grant, RotateRefusal, Rotation};
use super::{OAuthServer, form_params, json_refusal, json_response};
use crate::secret;
use crate::tokens::now_ms;

/// Prefix of refresh tokens.
const REFRESH_TOKEN_PREFIX: &str = "sfr_";

/// A new pair of tokens and the grant they belong to.
struct Issued {
    access: String,
    refresh: String,
}

/// `POST /token`.
pub async fn token(State(server): State<Arc<OAuthServer>>, body: Bytes) -> Response<Body> {
    let params = match form_params(&body) {
        Ok(params) => params,
        Err(refusal) => return json_refusal(refusal, "a parameter is repeated"),
    };
    let get = |name: &str| {
        params
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    if let Some(resource) = get("resource")
        && resource != server.resource
    {
        return json_refusal(
            Refusal::ResourceInvalid,
            "tokens here are only for this server",
        );
    }
    let Some(client_id) = get("client_id") else {
        return json_refusal(Refusal::InvalidRequest, "client_id is required");
    };
    match get("grant_type") {
        Some("authorization_code") => server.exchange_code(client_id, &get).await,
        Some("refresh_token") => server.refresh(client_id, &get),
        _ => json_refusal(
            Refusal::GrantTypeUnsupported,
            "grant_type must be authorization_code or refresh_token",
        ),
    }
}

impl OAuthServer {
    async fn exchange_code<'a>(
        &self,
        client_id: &str,
        get: &impl Fn(&str) -> Option<&'a str>,
    ) -> Response<Body> {
        let (Some(code), Some(verifier)) = (get("code"), get("code_verifier")) else {
            return json_refusal(
                Refusal::InvalidRequest,
                "code and code_verifier are required",
            );
        };
        // The client must still exist (a revoked registration ends here).
        if let Err(refusal) = self.client(client_id).await {
            return json_refusal(refusal, "unknown client_id");
        }
        let code_sha256 = secret::sha256_hex(code);
        let issued = self.lock_flows().take_code(&code_sha256);
        let Some(issued) = issued else {
            return json_refusal(
                Refusal::CodeInvalid,
                "unknown or expired authorization code",
            );
        };
        if issued.used {
            let revoked = self.store.revoke_by_code(&code_sha256);
            tracing::warn!(
                event = "oauth_code_reused",
                grant_revoked = matches!(revoked, Ok(true))
            );
            return json_refusal(
                Refusal::CodeReused,
                "this authorization code was used before; its grant is revoked",
            );
        }
        if issued.issued.elapsed() > super::authorize::CODE_TTL
            || issued.client_id != client_id
            || Some(issued.redirect_uri.as_str()) != get("redirect_uri")
        {
            return json_refusal(
                Refusal::CodeInvalid,
                "the code is expired, or was issued to another client or redirect_uri",
            );
        }
        let verifier_ok = (43..=128).contains(&verifier.len())
            && verifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        if !verifier_ok
            || !secret::constant_time_eq(
                secret::sha256_base64url(verifier).as_bytes(),
                issued.code_challenge.as_bytes(),
            )
        {
            return json_refusal(
                Refusal::PkceMismatch,
                "code_verifier does not match the challenge",
            );
        }
        let Ok(id) = secret::random_token("") else {
            return json_refusal(Refusal::ServerUnavailable, "no random bytes");
        };
        let Ok(tokens) = new_tokens() else {
            return json_refusal(Refusal::ServerUnavailable, "no random bytes");
        };
        let now = now_ms();
        let grant = Grant {
            id: id[..10].to_ascii_lowercase().replace(['-', '_'], "x"),
            client_id: client_id.to_owned(),
            client_name: issued.client_name,
            scopes: issued.scopes.to_string(),
            resource: self.resource.clone(),
            approved_by: issued.approved_by,
            created_ms: now,
            code_sha256,
            access_sha256: secret::sha256_hex(&tokens.access),
            access_expires_ms: now + self.settings.access_token_ttl_s * 1000,
            refresh_sha256: secret::sha256_hex(&tokens.refresh),
            refresh_expires_ms: now + self.settings.refresh_token_ttl_s * 1000,
            retired_refresh_sha256: Vec::new(),
        };
        let scopes = grant.scopes.clone();
        let grant_id = grant.id.clone();
        if let Err(e) = self.store.add_grant(&grant, now) {
            tracing::error!(event = "oauth_state_unusable", reason = %e);
            return json_refusal(
                Refusal::ServerUnavailable,
                "the OAuth state file is unusable",
            );
        }
        tracing::info!(event = "oauth_grant_issued", grant = %grant_id, scopes = %scopes);
        self.token_response(&tokens, &scopes)
    }

    fn refresh<'a>(
        &self,
        client_id: &str,
        get: &impl Fn(&str) -> Option<&'a str>,
    ) -> Response<Body> {
        let Some(presented) = get("refresh_token") else {
            return json_refusal(Refusal::InvalidRequest, "refresh_token is required");
        };
        let narrowed = match get("scope").map(Scopes::parse) {
            None => None,
            Some(Ok(scopes)) => Some(scopes),
            Some(Err(_)) => return json_refusal(Refusal::ScopeInvalid, "unknown scope"),
        };
        let Ok(tokens) = new_tokens() else {
            return json_refusal(Refusal::ServerUnavailable, "no random bytes");
        };
        let hash = secret::sha256_hex(presented);
        let now = now_ms();
        let access_ttl = self.settings.access_token_ttl_s * 1000;
        let refresh_ttl = self.settings.refresh_token_ttl_s * 1000;
        // One transaction: two refreshes racing with one token cannot
        // both succeed (the loser is a reuse).
        let outcome = self.store.rotate_refresh(&hash, now, |grant| {
            if grant.client_id != client_id
                || grant.refresh_expires_ms <= now
                || grant.resource != self.resource
            {
                return Err(Refusal::RefreshTokenInvalid);
            }
            let mut scopes = grant.scopes.clone();
            if let Some(narrowed) = &narrowed {
                let held = Scopes::parse(&grant.scopes).unwrap_or_default();
                if !narrowed.is_subset(&held) {
                    return Err(Refusal::ScopeEscalation);
                }
                if !narrowed.is_empty() {
                    scopes = narrowed.to_string();
                }
            }
            Ok(Rotation {
                scopes,
                access_sha256: secret::sha256_hex(&tokens.access),
                access_expires_ms: now + access_ttl,
                refresh_sha256: secret::sha256_hex(&tokens.refresh),
                refresh_expires_ms: now + refresh_ttl,
            })
        });
        match outcome {
            Ok(Ok(scopes)) => self.token_response(&tokens, &scopes),
            Ok(Err(RotateRefusal::Reused(grant))) => {
                tracing::warn!(event = "oauth_refresh_reused", grant_revoked = %grant);
                json_refusal(
                    Refusal::RefreshTokenReused,
                    "this refresh token was replaced already; its grant is revoked",
                )
            }
            Ok(Err(RotateRefusal::Refused(Refusal::ScopeEscalation))) => json_refusal(
                Refusal::ScopeEscalation,
                "a refresh cannot add scopes; authorize again",
            ),
            Ok(Err(RotateRefusal::Refused(refusal))) => {
                json_refusal(refusal, "unknown, expired or revoked refresh token")
            }
            Ok(Err(RotateRefusal::Unknown)) => json_refusal(
                Refusal::RefreshTokenInvalid,
                "unknown, expired or revoked refresh token",
            ),
            Err(e) => {
                tracing::error!(event = "oauth_state_unusable", reason = %e);
                json_refusal(
                    Refusal::ServerUnavailable,
                    "the OAuth state file is unusable",
                )
            }
        }
    }

    fn token_response(&self, tokens: &Issued, scopes: &str) -> Response<Body> {
        json_response(
            StatusCode::OK,
            &json!({
                "access_token": tokens.access,
                "token_type": "Bearer",
                "expires_in": self.settings.access_token_ttl_s,
                "refresh_token": tokens.refresh,
                "scope": scopes,
            }),
        )
    }
}

fn new_tokens() -> Result<Issued, rustix::io::Errno> {
    Ok(Issued {
        access: secret::random_token(ACCESS_TOKEN_PREFIX)?,
        refresh: secret::random_token(REFRESH_TOKEN_PREFIX)?,
    })
}

/// `POST /revoke`: revokes the grant of an access or refresh token.
/// Always `200` (RFC 7009 §2.2: an unknown token is not an error).
pub async fn revoke(State(server): State<Arc<OAuthServer>>, body: Bytes) -> Response<Body> {
    let Ok(params) = form_params(&body) else {
        return json_refusal(Refusal::InvalidRequest, "a parameter is repeated");
    };
    let Some(token) = params.get("token") else {
        return json_refusal(Refusal::InvalidRequest, "token is required");
    };
    let hash = secret::sha256_hex(token);
    let revoked = server.store.revoke_by_token(&hash);
    match revoked {
        Ok(revoked) => {
            if revoked {
                tracing::info!(event = "oauth_grant_revoked", by = "client");
            }
            json_response(StatusCode::OK, &json!({}))
        }
        Err(e) => {
            tracing::error!(event = "oauth_state_unusable", reason = %e);
            json_refusal(
                Refusal::ServerUnavailable,
                "the OAuth state file is unusable",
            )
        }
    }
}
