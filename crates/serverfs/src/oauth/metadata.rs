//! The discovery documents: RFC 9728 protected resource metadata (at
//! `/.well-known/oauth-protected-resource/mcp`, where clients look for
//! `/mcp`, and at the root form) and RFC 8414 authorization server
//! metadata.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{Response, StatusCode};
use serde_json::json;

use super::OAuthServer;
use super::scope::Scope;

/// `GET /.well-known/oauth-protected-resource[/mcp]`.
pub async fn protected_resource(State(server): State<Arc<OAuthServer>>) -> Response<Body> {
    // An external issuer is listed first: an operator who configured one
    // wants clients to sign in there; the built-in server stays usable.
    let mut servers: Vec<&str> = Vec::new();
    if let Some(external) = &server.external {
        servers.push(external.issuer());
    }
    servers.push(&server.issuer);
    super::json_response(
        StatusCode::OK,
        &json!({
            "resource": server.resource,
            "authorization_servers": servers,
            "scopes_supported": Scope::ALL.map(Scope::as_str),
            "bearer_methods_supported": ["header"],
            "resource_name": "ServerFS",
        }),
    )
}

/// `GET /.well-known/oauth-authorization-server`.
pub async fn authorization_server(State(server): State<Arc<OAuthServer>>) -> Response<Body> {
    let issuer = &server.issuer;
    let mut document = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "revocation_endpoint": format!("{issuer}/revoke"),
        "scopes_supported": Scope::ALL.map(Scope::as_str),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": server.settings.client_metadata_documents,
    });
    if server.settings.dynamic_registration {
        document["registration_endpoint"] = json!(format!("{issuer}/register"));
    }
    super::json_response(StatusCode::OK, &document)
}
