//! Bearer authentication in front of `/mcp`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use tower::ServiceExt;

use crate::tokens::{TokenEntry, TokenStore};

/// The name of the token that authenticated a request, put into the
/// request's extensions for the audit record (the token itself never
/// leaves this module).
#[derive(Debug, Clone)]
pub struct TokenName(pub String);

/// The stored hash of the token that authenticated a request: what owns a
/// legacy MCP session (a token replaced under the same name is another
/// owner). Never logged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenHash(pub String);

/// Wraps `inner` so that, when `tokens` is set, only requests carrying
/// `Authorization: Bearer <a stored token>` reach it.
pub fn layer<S>(
    tokens: Option<Arc<TokenStore>>,
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
        let tokens = tokens.clone();
        let inner = inner.clone();
        async move {
            if let Some(store) = tokens {
                match authenticate(&store, &request) {
                    Ok(entry) => {
                        request.extensions_mut().insert(TokenName(entry.name));
                        request.extensions_mut().insert(TokenHash(entry.sha256));
                    }
                    Err(reason) => return Ok(unauthorized(reason)),
                }
            }
            let response = inner.oneshot(request).await?;
            Ok(response.into_response())
        }
    })
}

/// The authenticated token's entry, or why the request is refused.
fn authenticate(store: &TokenStore, request: &Request<Body>) -> Result<TokenEntry, &'static str> {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(presented) = presented.filter(|t| !t.is_empty()) else {
        return Err("missing bearer token");
    };
    match store.verify(presented) {
        Ok(Some(entry)) => Ok(entry),
        Ok(None) => {
            tracing::info!(event = "auth_failed", reason = "unknown token");
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

/// The answer when a request did not produce a response within the
/// per-request timeout.
pub async fn timed_out(error: tower::BoxError) -> Response<Body> {
    if error.is::<tower::timeout::error::Elapsed>() {
        (StatusCode::SERVICE_UNAVAILABLE, "request timed out\n").into_response()
    } else {
        (StatusCode::INTERNAL_SERVER_ERROR, "internal error\n").into_response()
    }
}
