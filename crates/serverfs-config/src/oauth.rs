//! The OAuth settings of the HTTP transport (`http.auth = "oauth"`,
//! `[http.oauth]`, `[[http.oauth.clients]]` or `SERVERFS_HTTP_OAUTH_*`):
//! what hosted MCP clients (claude.ai, ChatGPT) need to connect without a
//! static `Authorization` header (issue 19).
//!
//! The server is then an OAuth 2.1 protected resource whose canonical URI
//! is `public_url` (the `/mcp` URL clients are given), with a built-in
//! authorization server at the same origin and, optionally, an external
//! issuer whose JWT access tokens it also accepts. Every URL here is
//! checked once, at load time, with the key that configured it.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use url::Url;

use crate::error::ConfigError;
use crate::limits;
use crate::raw::Val;

/// The redirect URIs of the hosted clients, allowed for dynamically
/// registered clients unless the operator lists others: claude.ai's (and
/// its announced claude.com twin) and ChatGPT's connector callback.
pub const HOSTED_CLIENT_CALLBACKS: [&str; 3] = [
    "https://claude.ai/api/mcp/auth_callback",
    "https://claude.com/api/mcp/auth_callback",
    "https://chatgpt.com/connector_platform_oauth_redirect",
];

/// The OAuth settings, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSettings {
    /// The MCP endpoint as clients reach it (`https://host/mcp`): the
    /// canonical resource URI tokens are bound to. `None`: the server's
    /// own loopback address (`http://127.0.0.1:PORT/mcp`), allowed only on
    /// a loopback listener.
    pub public_url: Option<Url>,
    /// The private (0600) file of registered clients and grants (token
    /// hashes only), a SQLite database. Default: `oauth.sqlite3` beside
    /// the token file.
    pub state_file: PathBuf,
    /// Lifetime of an access token, in seconds (default 3600, 60..=86400).
    pub access_token_ttl_s: u64,
    /// Lifetime of a refresh token, in seconds (default 30 days,
    /// 3600..=31536000); each use replaces it.
    pub refresh_token_ttl_s: u64,
    /// The redirect URIs a dynamically registered or metadata-document
    /// client may use besides loopback ones (exact match).
    pub allowed_redirect_uris: Vec<String>,
    /// Whether clients may register themselves (RFC 7591; default true).
    pub dynamic_registration: bool,
    /// Whether an HTTPS `client_id` names a client ID metadata document
    /// the server fetches (default true).
    pub client_metadata_documents: bool,
    /// Whether the token file's bearer tokens are still accepted, with
    /// every scope (default true).
    pub accept_bearer_tokens: bool,
    /// Clients the operator registered.
    pub clients: Vec<OAuthClient>,
    /// An external issuer whose JWT access tokens are accepted.
    pub external: Option<ExternalIssuer>,
}

/// A client the operator registered (`[[http.oauth.clients]]`): a public
/// client using PKCE, with exactly these redirect URIs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// Its `client_id`.
    pub client_id: String,
    /// The name the consent page shows.
    pub name: String,
    /// Its redirect URIs, matched exactly.
    pub redirect_uris: Vec<String>,
}

/// An external authorization server whose JWT access tokens are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalIssuer {
    /// The `iss` its tokens must carry.
    pub issuer: String,
    /// Where its signing keys are.
    pub jwks: JwksSource,
    /// The `aud` its tokens must carry; `None`: the canonical resource.
    pub audience: Option<String>,
}

/// Where an external issuer's JSON Web Key Set is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A local file (absolute).
    File(PathBuf),
    /// An HTTPS URL (plain HTTP only on a loopback host).
    Url(Url),
}

/// The OAuth settings as written.
#[derive(Debug, Clone)]
pub(crate) struct RawOAuth {
    pub public_url: Option<Val<String>>,
    /// Already absolute where the source could resolve it.
    pub state_file: Option<Val<PathBuf>>,
    pub access_token_ttl_s: Val<i64>,
    pub refresh_token_ttl_s: Val<i64>,
    pub allowed_redirect_uris: Val<Vec<String>>,
    pub dynamic_registration: Val<bool>,
    pub client_metadata_documents: Val<bool>,
    pub accept_bearer_tokens: Val<bool>,
    pub clients: Vec<RawOAuthClient>,
    pub external_issuer: Option<Val<String>>,
    pub external_jwks_file: Option<Val<PathBuf>>,
    pub external_jwks_url: Option<Val<String>>,
    pub external_audience: Option<Val<String>>,
}

/// One `[[http.oauth.clients]]` entry as written.
#[derive(Debug, Clone)]
pub(crate) struct RawOAuthClient {
    pub client_id: Val<String>,
    pub name: Val<String>,
    pub redirect_uris: Val<Vec<String>>,
}

impl RawOAuth {
    /// Every setting at its default, keys named by `key` (a TOML key or
    /// variable name for the setting's short name).
    pub(crate) fn defaults(key: impl Fn(&str) -> String) -> RawOAuth {
        RawOAuth {
            public_url: None,
            state_file: None,
            access_token_ttl_s: Val::default_at(
                limits::OAUTH_ACCESS_TOKEN_TTL_S.default_i64(),
                key("access_token_ttl_s"),
            ),
            refresh_token_ttl_s: Val::default_at(
                limits::OAUTH_REFRESH_TOKEN_TTL_S.default_i64(),
                key("refresh_token_ttl_s"),
            ),
            allowed_redirect_uris: Val::default_at(
                HOSTED_CLIENT_CALLBACKS.map(str::to_owned).to_vec(),
                key("allowed_redirect_uris"),
            ),
            dynamic_registration: Val::default_at(true, key("dynamic_registration")),
            client_metadata_documents: Val::default_at(true, key("client_metadata_documents")),
            accept_bearer_tokens: Val::default_at(true, key("accept_bearer_tokens")),
            clients: Vec::new(),
            external_issuer: None,
            external_jwks_file: None,
            external_jwks_url: None,
            external_audience: None,
        }
    }
}

impl OAuthSettings {
    /// Every setting at its default, the state file beside `token_file`.
    pub fn with_defaults(token_file: &Path) -> OAuthSettings {
        OAuthSettings {
            public_url: None,
            state_file: default_state_file(token_file),
            access_token_ttl_s: limits::OAUTH_ACCESS_TOKEN_TTL_S.default,
            refresh_token_ttl_s: limits::OAUTH_REFRESH_TOKEN_TTL_S.default,
            allowed_redirect_uris: HOSTED_CLIENT_CALLBACKS.map(str::to_owned).to_vec(),
            dynamic_registration: true,
            client_metadata_documents: true,
            accept_bearer_tokens: true,
            clients: Vec::new(),
            external: None,
        }
    }

    /// The canonical resource URI of a server listening on `bound`: the
    /// public URL, else `http://<bound>/mcp`.
    pub fn canonical_resource(&self, bound: SocketAddr) -> String {
        match &self.public_url {
            Some(url) => url.as_str().to_owned(),
            None => format!("http://{bound}/mcp"),
        }
    }
}

/// The OAuth state store's default file name, beside the token file (a
/// SQLite database since issue 27; an `oauth.json` of earlier versions
/// found beside it is imported once).
pub const DEFAULT_OAUTH_STATE_FILE: &str = "oauth.sqlite3";

/// [`DEFAULT_OAUTH_STATE_FILE`] in the token file's directory.
fn default_state_file(token_file: &Path) -> PathBuf {
    token_file.with_file_name(DEFAULT_OAUTH_STATE_FILE)
}

/// Whether `host` (as a URL carries it) names this machine: `localhost`,
/// 127.0.0.0/8 or `[::1]`.
pub fn is_loopback_host(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => IpAddr::V4(*ip).is_loopback(),
        url::Host::Ipv6(ip) => IpAddr::V6(*ip).to_canonical().is_loopback(),
    }
}

/// An absolute `https` URL without userinfo or fragment, or an `http` one
/// on a loopback host (a development setup on this machine).
pub fn is_secure_url(url: &Url) -> bool {
    let scheme_ok = match url.scheme() {
        "https" => true,
        "http" => url.host().is_some_and(|h| is_loopback_host(&h)),
        _ => false,
    };
    scheme_ok
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
}

/// Validates the written OAuth settings; `token_file` places the default
/// state file.
pub(crate) fn oauth_settings(
    raw: &RawOAuth,
    token_file: &Path,
) -> Result<OAuthSettings, ConfigError> {
    let public_url = raw
        .public_url
        .as_ref()
        .map(|value| {
            secure_url(value)
                .filter(|url| url.path() == "/mcp" && url.query().is_none())
                .ok_or_else(|| ConfigError::InvalidValue {
                    key: value.key.clone(),
                    expected: "the MCP URL clients use, https://HOST[:PORT]/mcp (http only on a \
                               loopback host; no query or fragment)",
                    got: value.value.clone(),
                })
        })
        .transpose()?;
    let state_file = match &raw.state_file {
        Some(value) => value.value.clone(),
        None => default_state_file(token_file),
    };
    if let Some(uri) = raw
        .allowed_redirect_uris
        .value
        .iter()
        .find(|uri| !is_redirect_uri(uri))
    {
        return Err(ConfigError::InvalidValue {
            key: raw.allowed_redirect_uris.key.clone(),
            expected: "absolute https redirect URIs (http only on a loopback host), without \
                       fragment",
            got: uri.clone(),
        });
    }
    let clients = raw
        .clients
        .iter()
        .enumerate()
        .map(|(index, client)| oauth_client(client, &raw.clients[..index]))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(OAuthSettings {
        public_url,
        state_file,
        access_token_ttl_s: crate::validate::bounded(
            &raw.access_token_ttl_s,
            limits::OAUTH_ACCESS_TOKEN_TTL_S,
        )?,
        refresh_token_ttl_s: crate::validate::bounded(
            &raw.refresh_token_ttl_s,
            limits::OAUTH_REFRESH_TOKEN_TTL_S,
        )?,
        allowed_redirect_uris: raw.allowed_redirect_uris.value.clone(),
        dynamic_registration: raw.dynamic_registration.value,
        client_metadata_documents: raw.client_metadata_documents.value,
        accept_bearer_tokens: raw.accept_bearer_tokens.value,
        clients,
        external: external_issuer(raw)?,
    })
}

/// A redirect URI an operator may list: an absolute https URL (http on a
/// loopback host), no fragment.
fn is_redirect_uri(text: &str) -> bool {
    Url::parse(text).is_ok_and(|url| is_secure_url(&url))
}

fn secure_url(value: &Val<String>) -> Option<Url> {
    Url::parse(&value.value).ok().filter(is_secure_url)
}

fn oauth_client(
    raw: &RawOAuthClient,
    earlier: &[RawOAuthClient],
) -> Result<OAuthClient, ConfigError> {
    let id = &raw.client_id.value;
    let id_ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !id_ok {
        return Err(ConfigError::InvalidValue {
            key: raw.client_id.key.clone(),
            expected: "1-128 letters, digits, '_', '.' or '-'",
            got: id.clone(),
        });
    }
    if let Some(first) = earlier.iter().find(|e| e.client_id.value == *id) {
        return Err(ConfigError::Conflict {
            key: raw.client_id.key.clone(),
            reason: format!(
                "client_id {id:?} is already used by {}",
                first.client_id.key
            ),
        });
    }
    let name = raw.name.value.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(ConfigError::InvalidValue {
            key: raw.name.key.clone(),
            expected: "a name of 1-100 printable characters",
            got: raw.name.value.clone(),
        });
    }
    let uris = &raw.redirect_uris;
    if uris.value.is_empty() {
        return Err(ConfigError::InvalidValue {
            key: uris.key.clone(),
            expected: "at least one redirect URI",
            got: String::new(),
        });
    }
    if let Some(bad) = uris.value.iter().find(|uri| !is_redirect_uri(uri)) {
        return Err(ConfigError::InvalidValue {
            key: uris.key.clone(),
            expected: "absolute https redirect URIs (http only on a loopback host), without \
                       fragment",
            got: bad.clone(),
        });
    }
    Ok(OAuthClient {
        client_id: id.clone(),
        name: name.to_owned(),
        redirect_uris: uris.value.clone(),
    })
}

fn external_issuer(raw: &RawOAuth) -> Result<Option<ExternalIssuer>, ConfigError> {
    let Some(issuer) = &raw.external_issuer else {
        let stray = [
            raw.external_jwks_url.as_ref().map(|v| &v.key),
            raw.external_jwks_file.as_ref().map(|v| &v.key),
            raw.external_audience.as_ref().map(|v| &v.key),
        ];
        if let Some(key) = stray.into_iter().flatten().next() {
            return Err(ConfigError::Conflict {
                key: key.clone(),
                reason: "is set but no external issuer is: set external_issuer too, or remove it"
                    .to_owned(),
            });
        }
        return Ok(None);
    };
    if secure_url(issuer).is_none() {
        return Err(ConfigError::InvalidValue {
            key: issuer.key.clone(),
            expected: "the issuer's https URL, exactly as its tokens' iss claim (http only on a \
                       loopback host)",
            got: issuer.value.clone(),
        });
    }
    let jwks = match (&raw.external_jwks_file, &raw.external_jwks_url) {
        (Some(file), None) if file.value.is_absolute() => JwksSource::File(file.value.clone()),
        (Some(file), None) => {
            return Err(ConfigError::InvalidValue {
                key: file.key.clone(),
                expected: "an absolute path",
                got: file.value.display().to_string(),
            });
        }
        (None, Some(url)) => {
            JwksSource::Url(secure_url(url).ok_or_else(|| ConfigError::InvalidValue {
                key: url.key.clone(),
                expected: "an https URL (http only on a loopback host)",
                got: url.value.clone(),
            })?)
        }
        (Some(_), Some(url)) => {
            return Err(ConfigError::Conflict {
                key: url.key.clone(),
                reason: "give the external issuer's keys either as a file or as a URL, not both"
                    .to_owned(),
            });
        }
        (None, None) => {
            return Err(ConfigError::Conflict {
                key: issuer.key.clone(),
                reason: "needs its signing keys: set external_jwks_url or external_jwks_file"
                    .to_owned(),
            });
        }
    };
    let audience = match &raw.external_audience {
        Some(value) if value.value.trim().is_empty() => {
            return Err(ConfigError::InvalidValue {
                key: value.key.clone(),
                expected: "the aud value the issuer puts in tokens for this server",
                got: value.value.clone(),
            });
        }
        Some(value) => Some(value.value.clone()),
        None => None,
    };
    Ok(Some(ExternalIssuer {
        issuer: issuer.value.clone(),
        jwks,
        audience,
    }))
}

/// With OAuth on a listener other than loopback, clients reach the server
/// under another name than its address: the public URL must say which.
pub(crate) fn check_public_url(
    bind: SocketAddr,
    oauth: &OAuthSettings,
    public_url_key: &str,
) -> Result<(), ConfigError> {
    if oauth.public_url.is_some() || crate::http::is_loopback(bind.ip()) {
        return Ok(());
    }
    Err(ConfigError::Conflict {
        key: public_url_key.to_owned(),
        reason: format!(
            "must be set when OAuth serves a non-loopback address ({bind}): the https URL of \
             /mcp that clients are given, e.g. \"https://mcp.example.com/mcp\" (tokens are bound \
             to it)"
        ),
    })
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
mod tests;
