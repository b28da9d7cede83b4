//! `GET /authorize` checks an authorization request and shows the consent
//! page; `POST /authorize` takes the owner's decision.
//!
//! A request whose client or redirect URI is not right gets an error page
//! and is never redirected; so does every other malformed request (no
//! `state`, no PKCE, `plain` PKCE, an unknown scope or another resource).
//! Approval needs a proof of ownership — a stored bearer token or a live
//! one-time approval code — and a CSRF token that matches both the
//! request and the browser's cookie; five wrong proofs drop the request.
//! The answer to the client is a `303` to its redirect URI with `code`,
//! `state` and `iss` (RFC 9207) as query parameters.
//!
//! Open consent requests are bounded per source and in all; beyond a
//! bound the new request is refused and none is evicted, so traffic
//! without a token cannot close the owner's open consent page (issue 27).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use axum::response::IntoResponse;

use super::clients::Client;
use super::consent::{self, ConsentView};
use super::error::Refusal;
use super::limits::Source;
use super::scope::Scopes;
use super::{OAuthServer, form_params};
use crate::secret;
use crate::tokens::now_ms;

/// How long a consent page may stay open.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// Consent requests kept at once; beyond it new ones are refused.
pub const MAX_PENDING: usize = 256;
/// Consent requests one source may have open at once.
pub const MAX_PENDING_PER_SOURCE: usize = 16;
/// How long an authorization code may wait to be exchanged.
pub const CODE_TTL: Duration = Duration::from_secs(60);
/// How long a used code is remembered, to recognise a replay.
const CODE_MEMORY: Duration = Duration::from_secs(600);
/// Wrong ownership proofs before a request is dropped.
const MAX_FAILED_PROOFS: u8 = 5;
/// Prefix of authorization codes.
const CODE_PREFIX: &str = "sfa_";

/// Consent requests waiting for the owner, and issued codes (both in
/// memory: they live for minutes, and a restart simply starts over).
#[derive(Default)]
pub struct Flows {
    pending: HashMap<String, Pending>,
    /// Keyed by the code's hash.
    codes: HashMap<String, IssuedCode>,
}

/// An authorization request shown to the owner.
struct Pending {
    client: Client,
    redirect_uri: String,
    state: String,
    code_challenge: String,
    scopes: Scopes,
    csrf: String,
    created: Instant,
    failed_proofs: u8,
    /// Where the request came from (its bound).
    source: Source,
}

/// An authorization code, until it expires from memory.
#[derive(Debug, Clone)]
pub struct IssuedCode {
    /// The client it was issued to.
    pub client_id: String,
    /// The client's name.
    pub client_name: String,
    /// The redirect URI of its request (the token request must repeat it).
    pub redirect_uri: String,
    /// The PKCE S256 challenge.
    pub code_challenge: String,
    /// The approved scopes.
    pub scopes: Scopes,
    /// How ownership was proved.
    pub approved_by: String,
    /// Issue time.
    pub issued: Instant,
    /// Whether it was presented at the token endpoint already.
    pub used: bool,
}

impl Flows {
    fn prune(&mut self) {
        self.pending
            .retain(|_, p| p.created.elapsed() < PENDING_TTL);
        self.codes.retain(|_, c| c.issued.elapsed() < CODE_MEMORY);
    }

    /// Keeps `pending` as request `id`, unless its source or everyone has
    /// as many open as allowed: then it is refused, and nothing evicted.
    fn admit(&mut self, id: String, pending: Pending) -> Result<(), Refusal> {
        self.prune();
        let from_source = self
            .pending
            .values()
            .filter(|p| p.source == pending.source)
            .count();
        if from_source >= MAX_PENDING_PER_SOURCE || self.pending.len() >= MAX_PENDING {
            tracing::warn!(
                event = "oauth_pending_refused",
                from_source,
                open = self.pending.len()
            );
            return Err(Refusal::TooManyPending);
        }
        self.pending.insert(id, pending);
        Ok(())
    }

    /// The code with hash `code_sha256`, marked used; `None` when unknown.
    /// The returned copy says whether it had been used before.
    pub fn take_code(&mut self, code_sha256: &str) -> Option<IssuedCode> {
        self.codes.retain(|_, c| c.issued.elapsed() < CODE_MEMORY);
        let code = self.codes.get_mut(code_sha256)?;
        let before = code.clone();
        code.used = true;
        Some(before)
    }
}

/// `GET /authorize`.
pub async fn start(
    State(server): State<Arc<OAuthServer>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    RawQuery(query): RawQuery,
) -> Response<Body> {
    let source = Source::of_request(peer);
    match check_request(&server, query.as_deref().unwrap_or(""), source).await {
        Ok(pending) => {
            let Ok(id) = secret::random_token("") else {
                return consent::error_page(Refusal::ServerUnavailable);
            };
            let Ok(csrf) = secret::random_token("") else {
                return consent::error_page(Refusal::ServerUnavailable);
            };
            let pending = Pending { csrf, ..pending };
            let response = render(&server, &id, &pending, None, StatusCode::OK);
            match server.lock_flows().admit(id, pending) {
                Ok(()) => response,
                Err(refusal) => consent::error_page(refusal),
            }
        }
        Err(refusal) => consent::error_page(refusal),
    }
}

/// The request's parts, checked; the CSRF token is filled in by the caller.
async fn check_request(
    server: &OAuthServer,
    query: &str,
    source: Source,
) -> Result<Pending, Refusal> {
    let params = form_params(query.as_bytes())?;
    let get = |name: &str| {
        params
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    let client_id = get("client_id").ok_or(Refusal::InvalidRequest)?;
    let client = server.client(client_id).await?;
    let redirect_uri = match get("redirect_uri") {
        Some(uri) if client.allows_redirect(uri) => uri.to_owned(),
        Some(_) => return Err(Refusal::RedirectUriMismatch),
        // Without one, only a client with a single redirect URI is clear.
        None => match client.redirect_uris.as_slice() {
            [only] => only.clone(),
            _ => return Err(Refusal::RedirectUriMismatch),
        },
    };
    let state = get("state").ok_or(Refusal::StateMissing)?;
    if get("response_type") != Some("code") {
        return Err(Refusal::ResponseTypeUnsupported);
    }
    let code_challenge = get("code_challenge").ok_or(Refusal::PkceRequired)?;
    // Without a method the challenge would be `plain` (RFC 7636 §4.3).
    if get("code_challenge_method") != Some("S256") {
        return Err(Refusal::PkceMethodUnsupported);
    }
    let challenge_ok = code_challenge.len() == 43
        && code_challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !challenge_ok {
        return Err(Refusal::InvalidRequest);
    }
    let scopes = match get("scope") {
        Some(text) => Scopes::parse(text).map_err(|_| Refusal::ScopeInvalid)?,
        None => Scopes::default(),
    };
    // No scope asked for (ChatGPT on reconnect): everything, shown on the
    // consent page like any other request.
    let scopes = if scopes.is_empty() {
        Scopes::all()
    } else {
        scopes
    };
    if let Some(resource) = get("resource")
        && resource != server.resource
    {
        return Err(Refusal::ResourceInvalid);
    }
    Ok(Pending {
        client,
        redirect_uri,
        state: state.to_owned(),
        code_challenge: code_challenge.to_owned(),
        scopes,
        csrf: String::new(),
        created: Instant::now(),
        failed_proofs: 0,
        source,
    })
}

fn render(
    server: &OAuthServer,
    id: &str,
    pending: &Pending,
    problem: Option<Refusal>,
    status: StatusCode,
) -> Response<Body> {
    consent::page(
        &ConsentView {
            client: &pending.client,
            redirect_uri: &pending.redirect_uri,
            scopes: &pending.scopes,
            resource: &server.resource,
            request_id: id,
            csrf: &pending.csrf,
            problem,
        },
        status,
        server.resource.starts_with("https://"),
    )
}

/// `POST /authorize`: the consent form.
pub async fn decide(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let Ok(params) = form_params(&body) else {
        return consent::error_page(Refusal::InvalidRequest);
    };
    let get = |name: &str| params.get(name).map(String::as_str).unwrap_or("");
    let id = get("request_id");
    let mut flows = server.lock_flows();
    flows.prune();
    let Some(pending) = flows.pending.get_mut(id) else {
        return consent::error_page(Refusal::RequestExpired);
    };
    let cookie = cookie_value(&headers, &consent::csrf_cookie_name(id)).unwrap_or_default();
    let csrf_ok = secret::constant_time_eq(get("csrf").as_bytes(), pending.csrf.as_bytes())
        && secret::constant_time_eq(cookie.as_bytes(), pending.csrf.as_bytes());
    if !csrf_ok {
        return consent::error_page(Refusal::CsrfMismatch);
    }
    match get("decision") {
        "deny" => {
            let Some(pending) = flows.pending.remove(id) else {
                return consent::error_page(Refusal::RequestExpired);
            };
            tracing::info!(event = "oauth_denied", client_id = %pending.client.client_id);
            let query = [
                ("error", "access_denied"),
                ("state", pending.state.as_str()),
                ("iss", server.issuer.as_str()),
            ];
            redirect(&pending.redirect_uri, &query)
        }
        "approve" => {
            let proof = get("proof").trim();
            if proof.is_empty() {
                let pending = &*pending;
                return render(
                    &server,
                    id,
                    pending,
                    Some(Refusal::OwnerProofRequired),
                    StatusCode::FORBIDDEN,
                );
            }
            let approved_by = match server.check_proof(proof) {
                Ok(Some(by)) => by,
                Ok(None) => {
                    pending.failed_proofs += 1;
                    tracing::warn!(
                        event = "oauth_proof_refused",
                        failed = pending.failed_proofs
                    );
                    if pending.failed_proofs >= MAX_FAILED_PROOFS {
                        flows.pending.remove(id);
                        return consent::error_page(Refusal::TooManyAttempts);
                    }
                    let pending = &*pending;
                    return render(
                        &server,
                        id,
                        pending,
                        Some(Refusal::OwnerProofInvalid),
                        StatusCode::FORBIDDEN,
                    );
                }
                Err(refusal) => return consent::error_page(refusal),
            };
            let Some(pending) = flows.pending.remove(id) else {
                return consent::error_page(Refusal::RequestExpired);
            };
            let Ok(code) = secret::random_token(CODE_PREFIX) else {
                return consent::error_page(Refusal::ServerUnavailable);
            };
            flows.codes.insert(
                secret::sha256_hex(&code),
                IssuedCode {
                    client_id: pending.client.client_id.clone(),
                    client_name: pending.client.name.clone(),
                    redirect_uri: pending.redirect_uri.clone(),
                    code_challenge: pending.code_challenge.clone(),
                    scopes: pending.scopes.clone(),
                    approved_by,
                    issued: Instant::now(),
                    used: false,
                },
            );
            tracing::info!(
                event = "oauth_approved",
                client_id = %pending.client.client_id,
                scopes = %pending.scopes,
            );
            let query = [
                ("code", code.as_str()),
                ("state", pending.state.as_str()),
                ("iss", server.issuer.as_str()),
            ];
            redirect(&pending.redirect_uri, &query)
        }
        _ => consent::error_page(Refusal::InvalidRequest),
    }
}

impl OAuthServer {
    /// How `proof` proves ownership: `Some("token:NAME")` for a stored
    /// bearer token, `Some("approval code")` for a live approval code
    /// (which is used up), `None` for neither.
    fn check_proof(&self, proof: &str) -> Result<Option<String>, Refusal> {
        if proof.starts_with(crate::tokens::TOKEN_PREFIX) {
            return match self.bearer.verify(proof) {
                Ok(found) => Ok(found.map(|entry| format!("token:{}", entry.name))),
                Err(reason) => {
                    tracing::error!(event = "token_file_unusable", reason = %reason);
                    Err(Refusal::ServerUnavailable)
                }
            };
        }
        let hash = secret::sha256_hex(&normalize_approval_code(proof));
        let used = self
            .store
            .take_approval_code(&hash, now_ms())
            .map_err(|e| {
                tracing::error!(event = "oauth_state_unusable", reason = %e);
                Refusal::ServerUnavailable
            })?;
        Ok(used.then(|| "approval code".to_owned()))
    }
}

/// An approval code as typed: case, spaces and dashes do not matter.
pub fn normalize_approval_code(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// `303 See Other` to `uri` with `query` appended.
fn redirect(uri: &str, query: &[(&str, &str)]) -> Response<Body> {
    let Ok(mut url) = url::Url::parse(uri) else {
        return consent::error_page(Refusal::RedirectUriMismatch);
    };
    {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in query {
            pairs.append_pair(name, value);
        }
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(url.as_str()) {
        headers.insert(header::LOCATION, location);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::clients::ClientOrigin;

    fn pending(source: &str) -> Pending {
        Pending {
            client: Client {
                client_id: "c".to_owned(),
                name: "c".to_owned(),
                redirect_uris: vec!["http://127.0.0.1:9/cb".to_owned()],
                origin: ClientOrigin::SelfRegistered,
            },
            redirect_uri: "http://127.0.0.1:9/cb".to_owned(),
            state: "s".to_owned(),
            code_challenge: "x".repeat(43),
            scopes: Scopes::all(),
            csrf: String::new(),
            created: Instant::now(),
            failed_proofs: 0,
            source: Source::of(Some(source.parse().unwrap())),
        }
    }

    #[test]
    fn a_full_table_refuses_the_newcomer_and_keeps_every_open_request() {
        let mut flows = Flows::default();
        flows.admit("owner".into(), pending("10.0.0.1:1")).unwrap();
        for i in 1..MAX_PENDING {
            let source = format!("10.1.{}.{}:1", i / 100, i % 100);
            flows.admit(format!("r{i}"), pending(&source)).unwrap();
        }
        let refused = flows.admit("new".into(), pending("10.2.0.1:1"));
        assert_eq!(refused, Err(Refusal::TooManyPending));
        assert!(flows.pending.contains_key("owner"), "nothing evicted");
        assert_eq!(flows.pending.len(), MAX_PENDING);
    }

    #[test]
    fn one_source_has_its_own_bound() {
        let mut flows = Flows::default();
        for i in 0..MAX_PENDING_PER_SOURCE {
            flows.admit(format!("r{i}"), pending("10.0.0.1:1")).unwrap();
        }
        let refused = flows.admit("more".into(), pending("10.0.0.1:2"));
        assert_eq!(refused, Err(Refusal::TooManyPending));
        flows.admit("other".into(), pending("10.0.0.2:1")).unwrap();
    }
}
