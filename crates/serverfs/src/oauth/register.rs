//! `POST /register`: dynamic client registration (RFC 7591) for public
//! clients. Every redirect URI must be a loopback one or listed in
//! `allowed_redirect_uris`; the client is told it authenticates with
//! nothing but PKCE (`token_endpoint_auth_method: none`), whatever it
//! asked for (RFC 7591 §3.2.1 lets the server decide).
//!
//! Anyone may register, so what a registration may carry is bounded
//! (issue 27: 400 registrations of 64 KiB each once grew the state to
//! 18.9 MB): the request must be `application/json` (a cross-site form
//! cannot send that without a preflight), registrations are rate-limited
//! per source, and a client that never completes a grant is dropped after
//! [`UNFINISHED_CLIENT_TTL_MS`](super::store::UNFINISHED_CLIENT_TTL_MS).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, Response, StatusCode, header};
use serde::Deserialize;
use serde_json::json;

use super::clients::clean_name;
use super::error::Refusal;
use super::limits::{RateLimiter, Source};
use super::store::{Registered, RegisteredClient};
use super::{OAuthServer, json_refusal, json_refusal_after, json_response, redirect};
use crate::secret;
use crate::tokens::now_ms;

/// Self-registered clients kept at once; beyond it the oldest without a
/// grant makes room.
const MAX_REGISTERED_CLIENTS: usize = 256;
/// Largest registration request body.
pub const MAX_REGISTRATION_BYTES: usize = 8 * 1024;
/// Redirect URIs one client may register.
pub const MAX_REDIRECT_URIS: usize = 8;
/// Longest redirect URI, in bytes.
pub const MAX_REDIRECT_URI_BYTES: usize = 512;
/// All of a client's redirect URIs together, in bytes (with the client
/// bound, this keeps the store well under 1 MiB whatever is registered).
pub const MAX_REDIRECT_URIS_TOTAL_BYTES: usize = 2048;
/// Longest `client_name`, in bytes.
pub const MAX_CLIENT_NAME_BYTES: usize = 200;
/// Registrations one source may make at once…
const REGISTRATION_BURST: u32 = 10;
/// …and then one more per this long.
const REGISTRATION_REFILL: Duration = Duration::from_secs(6);
/// Sources whose registrations are counted at once.
const MAX_SOURCES: usize = 4096;

/// The per-source registration limiter.
pub fn rate_limiter() -> RateLimiter {
    RateLimiter::new(REGISTRATION_BURST, REGISTRATION_REFILL, MAX_SOURCES)
}

/// The fields of a registration request that are used.
#[derive(Deserialize)]
struct Request {
    redirect_uris: Vec<String>,
    #[serde(default)]
    client_name: Option<String>,
    #[serde(default)]
    grant_types: Option<Vec<String>>,
    #[serde(default)]
    response_types: Option<Vec<String>>,
}

/// Whether the request says its body is JSON: `application/json`, with
/// or without parameters (`; charset=utf-8`).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// What in `request` exceeds a bound, if anything.
fn oversized(request: &Request) -> Option<String> {
    if request.redirect_uris.len() > MAX_REDIRECT_URIS {
        return Some(format!("at most {MAX_REDIRECT_URIS} redirect_uris"));
    }
    if request
        .redirect_uris
        .iter()
        .any(|uri| uri.len() > MAX_REDIRECT_URI_BYTES)
    {
        return Some(format!(
            "each redirect URI at most {MAX_REDIRECT_URI_BYTES} bytes"
        ));
    }
    if request.redirect_uris.iter().map(String::len).sum::<usize>() > MAX_REDIRECT_URIS_TOTAL_BYTES
    {
        return Some(format!(
            "all redirect URIs together at most {MAX_REDIRECT_URIS_TOTAL_BYTES} bytes"
        ));
    }
    if request
        .client_name
        .as_ref()
        .is_some_and(|name| name.len() > MAX_CLIENT_NAME_BYTES)
    {
        return Some(format!("client_name at most {MAX_CLIENT_NAME_BYTES} bytes"));
    }
    None
}

/// `POST /register`.
pub async fn register(
    State(server): State<Arc<OAuthServer>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    if !server.settings.dynamic_registration {
        return json_refusal(
            Refusal::RegistrationDisabled,
            "dynamic client registration is off",
        );
    }
    if !is_json(&headers) {
        return json_refusal(
            Refusal::ContentTypeUnsupported,
            "a registration is sent as Content-Type: application/json",
        );
    }
    if let Err(wait) = server
        .registrations
        .take(Source::of_request(peer), Instant::now())
    {
        return json_refusal_after(
            Refusal::RateLimited,
            "too many registrations from this address; try again later",
            wait,
        );
    }
    if body.len() > MAX_REGISTRATION_BYTES {
        return json_refusal(
            Refusal::ClientMetadataTooLarge,
            &format!("a registration is at most {MAX_REGISTRATION_BYTES} bytes"),
        );
    }
    let Ok(request) = serde_json::from_slice::<Request>(&body) else {
        return json_refusal(
            Refusal::ClientMetadataInvalid,
            "expected a JSON object with redirect_uris",
        );
    };
    if request.redirect_uris.is_empty() {
        return json_refusal(Refusal::ClientMetadataInvalid, "redirect_uris is empty");
    }
    if let Some(bound) = oversized(&request) {
        return json_refusal(Refusal::ClientMetadataTooLarge, &bound);
    }
    if let Some(uri) = request.redirect_uris.iter().find(|uri| {
        !redirect::allowed_for_self_registered(uri, &server.settings.allowed_redirect_uris)
    }) {
        let shown: String = uri.chars().take(200).collect();
        return json_refusal(
            Refusal::RedirectUriNotAllowed,
            &format!(
                "{shown:?} is neither a loopback redirect nor in http.oauth.allowed_redirect_uris"
            ),
        );
    }
    let unsupported_grant = request.grant_types.as_ref().is_some_and(|types| {
        types
            .iter()
            .any(|t| t != "authorization_code" && t != "refresh_token")
    });
    let unsupported_response = request
        .response_types
        .as_ref()
        .is_some_and(|types| types.iter().any(|t| t != "code"));
    if unsupported_grant || unsupported_response {
        return json_refusal(
            Refusal::ClientMetadataInvalid,
            "only the authorization_code and refresh_token grants (response type code) exist here",
        );
    }
    let Ok(id) = secret::random_token("") else {
        return json_refusal(Refusal::ServerUnavailable, "no random bytes");
    };
    let client = RegisteredClient {
        client_id: format!("sfc_{}", &id[..22]),
        client_name: request
            .client_name
            .map(|n| clean_name(&n))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "unnamed client".to_owned()),
        redirect_uris: request.redirect_uris,
        created_ms: now_ms(),
        expires_ms: None,
    };
    let stored = server
        .store
        .register(&client, MAX_REGISTERED_CLIENTS, client.created_ms);
    match stored {
        Ok(Registered::Stored) => {}
        Ok(Registered::Full) => {
            return json_refusal(
                Refusal::TooManyClients,
                "too many registered clients; revoke some",
            );
        }
        Err(e) => {
            tracing::error!(event = "oauth_state_unusable", reason = %e);
            return json_refusal(
                Refusal::ServerUnavailable,
                "the OAuth state file is unusable",
            );
        }
    }
    tracing::info!(event = "oauth_client_registered", client_id = %client.client_id);
    json_response(
        StatusCode::CREATED,
        &json!({
            "client_id": client.client_id,
            "client_id_issued_at": client.created_ms / 1000,
            "client_name": client.client_name,
            "redirect_uris": client.redirect_uris,
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }),
    )
}
