//! An external issuer's JWT access tokens (issue 19, item 5): for an
//! operator who already runs an identity provider. A token is accepted
//! only when it is signed by one of the issuer's keys (asymmetric
//! algorithms only), its `iss` is the configured issuer, its `aud` is this
//! server (the canonical resource unless configured otherwise), it has
//! not expired, and its `nbf` (when it has one) is not ahead — both within
//! [`CLOCK_SKEW`]. Its `scope` (or `scp`) claim gives its scopes.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use serverfs_config::{ExternalIssuer, JwksSource};
use tokio::sync::Mutex;

use super::error::Refusal;
use super::fetch::{FetchError, Fetcher, Limits};
use super::resource::Principal;
use super::scope::Scopes;

/// How long fetched keys are used before they are fetched again.
const JWKS_TTL: Duration = Duration::from_secs(600);
/// How soon an unknown key id may trigger another fetch.
const JWKS_REFETCH_BACKOFF: Duration = Duration::from_secs(30);
/// What fetching the key set may cost (docs/oauth.md): 256 KiB, 10 s in
/// all; fetches are one at a time anyway (the key lock), the bound of 2
/// only keeps a stuck one from being joined by many.
pub const JWKS_FETCH_LIMITS: Limits = Limits {
    max_bytes: 256 * 1024,
    total_time: Duration::from_secs(10),
    in_flight: 2,
};
/// How far the issuer's clock and this server's may differ: `exp` and
/// `nbf` are both given this much leeway.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// The algorithms accepted: asymmetric ones only (a shared secret could
/// be used to forge tokens by anyone who verifies them).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Verifies an external issuer's tokens.
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    source: JwksSource,
    fetcher: Fetcher,
    keys: Mutex<Option<(Instant, JwkSet)>>,
}

/// Why the issuer's keys could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    /// The file could not be read.
    #[error("cannot read the JWKS file: {0}")]
    File(std::io::Error),
    /// The URL could not be fetched, or did not give a JSON Web Key Set.
    #[error("cannot fetch the JWKS URL: {0}")]
    Fetch(FetchError<serde_json::Error>),
    /// Not a JSON Web Key Set.
    #[error("not a JSON Web Key Set: {0}")]
    Malformed(serde_json::Error),
}

impl JwtVerifier {
    /// A verifier for `external`; `canonical_resource` is the audience
    /// unless one is configured.
    pub fn new(
        external: &ExternalIssuer,
        canonical_resource: &str,
        fetcher: Fetcher,
    ) -> JwtVerifier {
        JwtVerifier {
            issuer: external.issuer.clone(),
            audience: external
                .audience
                .clone()
                .unwrap_or_else(|| canonical_resource.to_owned()),
            source: external.jwks.clone(),
            fetcher,
            keys: Mutex::new(None),
        }
    }

    /// The issuer's identifier.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Whether `token` looks like a JWT (three dot-separated parts).
    pub fn looks_like_jwt(token: &str) -> bool {
        token.split('.').count() == 3
    }

    /// The principal of a valid token.
    ///
    /// # Errors
    ///
    /// The refusal the client is told.
    pub async fn verify(&self, token: &str) -> Result<Principal, Refusal> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::TokenInvalid)?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Refusal::TokenInvalid);
        }
        // The issuer is checked before any key is fetched, so another
        // issuer's tokens never cause traffic to this one.
        let unverified_iss = unverified_claim(token, "iss");
        if unverified_iss.as_deref() != Some(self.issuer.as_str()) {
            return Err(Refusal::IssuerUnknown);
        }
        let key = self.key_for(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = CLOCK_SKEW.as_secs();
        let data = jsonwebtoken::decode::<Value>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            match e.kind() {
                ErrorKind::ExpiredSignature => Refusal::TokenExpired,
                ErrorKind::ImmatureSignature => Refusal::TokenNotYetValid,
                ErrorKind::InvalidAudience => Refusal::AudienceMismatch,
                ErrorKind::InvalidIssuer => Refusal::IssuerUnknown,
                _ => Refusal::TokenInvalid,
            }
        })?;
        let claims = data.claims;
        let scopes = match (&claims["scope"], &claims["scp"]) {
            (Value::String(text), _) => Scopes::known(text.split(' ')),
            (_, Value::Array(items)) => Scopes::known(items.iter().filter_map(Value::as_str)),
            (_, Value::String(text)) => Scopes::known(text.split(' ')),
            _ => Scopes::default(),
        };
        let subject = claims["sub"].as_str().unwrap_or("unknown");
        let subject: String = subject.chars().take(64).collect();
        Ok(Principal {
            name: format!("jwt:{subject}"),
            owner: format!("jwt:{}#{subject}", self.issuer),
            scopes,
        })
    }

    /// The decoding key for `kid` (or the only key of the set when the
    /// token names none), fetching the set again when the key is unknown.
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, Refusal> {
        let mut keys = self.keys.lock().await;
        let stale = keys
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() > JWKS_TTL || self.source_is_file());
        if stale {
            *keys = Some((
                Instant::now(),
                self.fetch().await.map_err(Self::unavailable)?,
            ));
        }
        let find = |set: &JwkSet| match kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let mut found = keys.as_ref().and_then(|(_, set)| find(set));
        let may_refetch = keys
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() > JWKS_REFETCH_BACKOFF);
        if found.is_none() && may_refetch {
            *keys = Some((
                Instant::now(),
                self.fetch().await.map_err(Self::unavailable)?,
            ));
            found = keys.as_ref().and_then(|(_, set)| find(set));
        }
        let jwk = found.ok_or(Refusal::TokenInvalid)?;
        if let Some(key_alg) = jwk.common.key_algorithm
            && key_alg.to_string() != format!("{alg:?}")
        {
            return Err(Refusal::TokenInvalid);
        }
        DecodingKey::from_jwk(&jwk).map_err(|_| Refusal::TokenInvalid)
    }

    fn source_is_file(&self) -> bool {
        matches!(self.source, JwksSource::File(_))
    }

    fn unavailable(error: JwksError) -> Refusal {
        tracing::error!(event = "oauth_jwks_unavailable", reason = %error);
        Refusal::ServerUnavailable
    }

    /// Reads the key set from its file or URL.
    ///
    /// # Errors
    ///
    /// [`JwksError`].
    pub async fn fetch(&self) -> Result<JwkSet, JwksError> {
        match &self.source {
            JwksSource::File(path) => {
                let path = path.clone();
                let bytes = tokio::task::spawn_blocking(move || std::fs::read(path))
                    .await
                    .map_err(|e| JwksError::File(std::io::Error::other(e)))?
                    .map_err(JwksError::File)?;
                serde_json::from_slice(&bytes).map_err(JwksError::Malformed)
            }
            JwksSource::Url(url) => self
                .fetcher
                .get(url, "application/json", |bytes| {
                    serde_json::from_slice::<JwkSet>(bytes)
                })
                .await
                .map_err(JwksError::Fetch),
        }
    }
}

/// A claim of the token's payload, read without verifying it: only to
/// decide which issuer's keys to verify it with.
fn unverified_claim(token: &str, name: &str) -> Option<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims[name].as_str().map(str::to_owned)
}
