//! `POST /register`: dynamic client registration (RFC 7591) for public
//! clients. Every redirect URI must be a loopback one or listed in
//! `allowed_redirect_uris`; the client is told it authenticates with
//! nothing but PKCE (`token_endpoint_auth_method: none`), whatever it
//! asked for (RFC 7591 §3.2.1 lets the server decide).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::clients::clean_name;
use super::error::Refusal;
use super::store::RegisteredClient;
use super::{OAuthServer, json_refusal, json_response, redirect};
use crate::secret;
use crate::tokens::now_ms;

/// Self-registered clients kept at once; beyond it the oldest without a
/// grant makes room.
const MAX_REGISTERED_CLIENTS: usize = 256;

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

/// `POST /register`.
pub async fn register(State(server): State<Arc<OAuthServer>>, body: Bytes) -> Response<Body> {
    if !server.settings.dynamic_registration {
        return json_refusal(
            Refusal::RegistrationDisabled,
            "dynamic client registration is off",
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
    };
    let stored = server.store.update(now_ms(), |state| {
        if state.clients.len() >= MAX_REGISTERED_CLIENTS {
            let with_grant: Vec<String> =
                state.grants.iter().map(|g| g.client_id.clone()).collect();
            if let Some(oldest) = state
                .clients
                .iter()
                .position(|c| !with_grant.contains(&c.client_id))
            {
                state.clients.remove(oldest);
            }
        }
        if state.clients.len() >= MAX_REGISTERED_CLIENTS {
            return false;
        }
        state.clients.push(client.clone());
        true
    });
    match stored {
        Ok(true) => {}
        Ok(false) => {
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
