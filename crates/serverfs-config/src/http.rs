//! The HTTP transport settings: where `serverfs serve --http` listens and
//! how it guards that listener (issue "Remote transport: Streamable HTTP
//! with authentication").
//!
//! The one rule that spans several keys is the authentication rule: a
//! listener without authentication is only allowed on a loopback address
//! (127.0.0.0/8 or ::1), unless the operator states that the address is
//! reachable only through a private tunnel network (`trust_network`). It is
//! checked at load time when a bind address is configured, and again by
//! [`HttpSettings::effective`] for the address the server really binds
//! (which may come from the command line).

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::limits;
use crate::oauth::{self, OAuthSettings};

/// How requests to the HTTP listener are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HttpAuth {
    /// Every request must carry `Authorization: Bearer <token>` matching a
    /// token of the token file (the default).
    #[default]
    Bearer,
    /// No authentication: only on a loopback address, or anywhere with
    /// `trust_network` on.
    None,
    /// OAuth 2.1 access tokens (the built-in authorization server's, or an
    /// external issuer's JWTs), and the token file's bearer tokens unless
    /// `accept_bearer_tokens` is off.
    OAuth,
}

impl HttpAuth {
    /// Every mode, the default first.
    pub const ALL: [HttpAuth; 3] = [HttpAuth::Bearer, HttpAuth::None, HttpAuth::OAuth];

    /// The wire spelling: `bearer`, `none` or `oauth`.
    pub const fn as_str(self) -> &'static str {
        match self {
            HttpAuth::Bearer => "bearer",
            HttpAuth::None => "none",
            HttpAuth::OAuth => "oauth",
        }
    }

    /// Parses the wire spelling exactly.
    pub fn parse(text: &str) -> Option<HttpAuth> {
        HttpAuth::ALL.into_iter().find(|auth| auth.as_str() == text)
    }
}

impl fmt::Display for HttpAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The HTTP transport settings as configured (`[http]` or the
/// `SERVERFS_HTTP_*` variables).
///
/// # Security
///
/// When `bind` is set, the authentication rule was checked at load time:
/// `auth` is [`HttpAuth::None`] only on a loopback address or with
/// `trust_network`. A bind address given on the command line is checked by
/// [`HttpSettings::effective`], which the server must use to obtain the
/// settings it listens with. `token_file` is a host path and names the file
/// holding the accepted tokens; no token ever appears in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// Listen address; None = no HTTP listener configured (stdio unless
    /// `serve --http` gives one).
    pub bind: Option<SocketAddr>,
    /// Authentication of every request (default [`HttpAuth::Bearer`]).
    pub auth: HttpAuth,
    /// Allow `auth = none` on a non-loopback address, for a listener only a
    /// private tunnel network can reach (default false).
    pub trust_network: bool,
    /// Extra `Host` values (`name` or `name:port`) allowed besides the
    /// loopback names (default none).
    pub allowed_hosts: Vec<String>,
    /// Allowed browser `Origin`s (`scheme://host[:port|:*]` or `null`);
    /// empty (the default) rejects every request carrying an `Origin`.
    pub allowed_origins: Vec<String>,
    /// The bearer token file. Default: `$XDG_CONFIG_HOME/serverfs/tokens.json`,
    /// else `$HOME/.config/serverfs/tokens.json`; in environment
    /// (container) mode `/var/lib/serverfs/tokens.json`. Absolute unless no
    /// default directory was known and none was configured, which
    /// [`HttpSettings::effective`] refuses for bearer authentication.
    pub token_file: PathBuf,
    /// Wall-clock budget of one request, in milliseconds (default 120 000,
    /// 1 000..=3 600 000).
    pub request_timeout_ms: u64,
    /// Requests served at once; more wait (default 64, 1..=10 000).
    pub max_concurrent_requests: u32,
    /// How long a shutdown waits for requests in flight, in milliseconds
    /// (default 10 000, 0..=300 000).
    pub shutdown_grace_ms: u64,
    /// Bounds on connections and legacy MCP sessions.
    pub connections: ConnectionLimits,
    /// The OAuth settings, used when `auth` is [`HttpAuth::OAuth`].
    pub oauth: OAuthSettings,
}

/// Bounds on HTTP connections and legacy MCP sessions, which keep a
/// client without a token from exhausting the server's descriptors and a
/// client with one from exhausting its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Time a connection has to deliver a request's complete header,
    /// counted from when it connects or its previous response ended (so
    /// also the keep-alive idle bound), in milliseconds (default 30 000,
    /// 100..=600 000).
    pub header_timeout_ms: u64,
    /// Time a request has to deliver its complete body after its header,
    /// in milliseconds (default 30 000, 100..=3 600 000). The body is read
    /// before the request takes one of the `max_concurrent_requests` slots.
    pub body_timeout_ms: u64,
    /// Connections open at once (default 512, 1..=100 000). A connection
    /// beyond the bound closes the longest-idle open one, or is refused
    /// with 503 when every open one is serving a request. The server also
    /// keeps it at most half its open-file limit.
    pub max_connections: u32,
    /// A legacy MCP session (`Mcp-Session-Id`) with no traffic for this
    /// long ends, in milliseconds (default 120 000, 1 000..=86 400 000).
    pub session_idle_timeout_ms: u64,
    /// Legacy MCP sessions open at once (default 1 024, 1..=100 000).
    pub max_sessions: u32,
    /// Legacy MCP sessions one bearer token may hold open at once
    /// (default 128, 1..=100 000).
    pub max_sessions_per_token: u32,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        let count = |limit: limits::Limit| u32::try_from(limit.default).unwrap_or(u32::MAX);
        ConnectionLimits {
            header_timeout_ms: limits::HTTP_HEADER_TIMEOUT_MS.default,
            body_timeout_ms: limits::HTTP_BODY_TIMEOUT_MS.default,
            max_connections: count(limits::HTTP_MAX_CONNECTIONS),
            session_idle_timeout_ms: limits::HTTP_SESSION_IDLE_TIMEOUT_MS.default,
            max_sessions: count(limits::HTTP_MAX_SESSIONS),
            max_sessions_per_token: count(limits::HTTP_MAX_SESSIONS_PER_TOKEN),
        }
    }
}

impl HttpSettings {
    /// Every setting at its default (no bind address, bearer
    /// authentication) with the given token file. Meant for tests and
    /// fixtures: nothing is checked about `token_file`.
    pub fn with_defaults(token_file: PathBuf) -> HttpSettings {
        HttpSettings {
            bind: None,
            auth: HttpAuth::Bearer,
            trust_network: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            request_timeout_ms: limits::HTTP_REQUEST_TIMEOUT_MS.default,
            max_concurrent_requests: u32::try_from(limits::HTTP_MAX_CONCURRENT_REQUESTS.default)
                .unwrap_or(u32::MAX),
            shutdown_grace_ms: limits::HTTP_SHUTDOWN_GRACE_MS.default,
            oauth: OAuthSettings::with_defaults(&token_file),
            connections: ConnectionLimits::default(),
            token_file,
        }
    }

    /// The token file of a native configuration that names none:
    /// `$XDG_CONFIG_HOME/serverfs/tokens.json`, else
    /// `$HOME/.config/serverfs/tokens.json` (relative variables are
    /// ignored). Relative when neither gives an absolute directory, which a
    /// caller must refuse. The token commands use it when no configuration
    /// is given at all.
    pub fn default_token_file(env: &BTreeMap<String, String>) -> PathBuf {
        crate::env::native_token_file(env)
    }

    /// The settings the server will actually use when it listens on `bind`
    /// (the CLI `--http` value if given, else `self.bind`).
    ///
    /// # Errors
    ///
    /// - [`ConfigError::NoHttpBind`] when neither `cli_bind` nor
    ///   `self.bind` exists;
    /// - [`ConfigError::Conflict`] naming `http.auth` when `auth` is
    ///   [`HttpAuth::None`], the address is not loopback (127.0.0.0/8 or
    ///   ::1) and `trust_network` is off;
    /// - [`ConfigError::Conflict`] naming `http.token_file` when `auth` is
    ///   [`HttpAuth::Bearer`] and the token file is not absolute (no
    ///   default directory was known).
    pub fn effective(&self, cli_bind: Option<SocketAddr>) -> Result<EffectiveHttp, ConfigError> {
        let bind = cli_bind.or(self.bind).ok_or(ConfigError::NoHttpBind)?;
        check_auth_bind(
            bind,
            self.auth,
            self.trust_network,
            "http.auth",
            "http.trust_network",
        )?;
        check_token_file(self.auth, &self.token_file, "http.token_file", "http.auth")?;
        if self.auth == HttpAuth::OAuth {
            oauth::check_public_url(bind, &self.oauth, "http.oauth.public_url")?;
            check_state_file(&self.oauth.state_file, "http.oauth.state_file")?;
        }
        Ok(EffectiveHttp {
            bind,
            auth: self.auth,
            allowed_hosts: self.allowed_hosts.clone(),
            allowed_origins: self.allowed_origins.clone(),
            token_file: self.token_file.clone(),
            request_timeout_ms: self.request_timeout_ms,
            max_concurrent_requests: self.max_concurrent_requests,
            shutdown_grace_ms: self.shutdown_grace_ms,
            connections: self.connections,
            oauth: self.oauth.clone(),
        })
    }
}

/// The HTTP settings of a listener that is about to bind: the address is
/// known and the authentication rule holds for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveHttp {
    /// The address to listen on.
    pub bind: SocketAddr,
    /// Authentication of every request.
    pub auth: HttpAuth,
    /// Extra `Host` values allowed besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// Allowed `Origin`s; empty rejects every request carrying one.
    pub allowed_origins: Vec<String>,
    /// The bearer token file; absolute whenever `auth` is bearer.
    pub token_file: PathBuf,
    /// Wall-clock budget of one request, in milliseconds.
    pub request_timeout_ms: u64,
    /// Requests served at once.
    pub max_concurrent_requests: u32,
    /// How long a shutdown waits for requests in flight, in milliseconds.
    pub shutdown_grace_ms: u64,
    /// Bounds on connections and legacy MCP sessions.
    pub connections: ConnectionLimits,
    /// The OAuth settings, used when `auth` is [`HttpAuth::OAuth`].
    pub oauth: OAuthSettings,
}

/// Whether `ip` is a loopback address: 127.0.0.0/8 or ::1 (an IPv4-mapped
/// `::ffff:127.x.y.z` counts as the IPv4 address it maps).
pub(crate) fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// The authentication rule: no authentication only on loopback, unless the
/// network is trusted. Errors name `auth_key` and tell both ways out.
pub(crate) fn check_auth_bind(
    bind: SocketAddr,
    auth: HttpAuth,
    trust_network: bool,
    auth_key: &str,
    trust_key: &str,
) -> Result<(), ConfigError> {
    match auth {
        HttpAuth::Bearer | HttpAuth::OAuth => Ok(()),
        HttpAuth::None if trust_network || is_loopback(bind.ip()) => Ok(()),
        HttpAuth::None => Err(ConfigError::Conflict {
            key: auth_key.to_owned(),
            reason: format!(
                "\"none\" (no authentication) is only allowed on a loopback address \
                 (127.0.0.0/8 or ::1), not on {bind}: use bearer tokens (set {auth_key} to \
                 \"bearer\"), or set {trust_key} to true if only a private tunnel network \
                 can reach this address"
            ),
        }),
    }
}

/// Bearer authentication needs a token file whose location does not depend
/// on the working directory.
pub(crate) fn check_token_file(
    auth: HttpAuth,
    token_file: &Path,
    token_key: &str,
    auth_key: &str,
) -> Result<(), ConfigError> {
    match auth {
        HttpAuth::None => Ok(()),
        HttpAuth::Bearer | HttpAuth::OAuth if token_file.is_absolute() => Ok(()),
        HttpAuth::Bearer | HttpAuth::OAuth => Err(ConfigError::Conflict {
            key: token_key.to_owned(),
            reason: format!(
                "must be an absolute path while {auth_key} is \"{auth}\", got {token_file:?} \
                 (set it, or set XDG_CONFIG_HOME or HOME for the default)"
            ),
        }),
    }
}

/// The OAuth state file must not move with the working directory either.
pub(crate) fn check_state_file(state_file: &Path, state_key: &str) -> Result<(), ConfigError> {
    if state_file.is_absolute() {
        return Ok(());
    }
    Err(ConfigError::Conflict {
        key: state_key.to_owned(),
        reason: format!(
            "must be an absolute path, got {state_file:?} (set it, or give the token file an \
             absolute path: the default is oauth.sqlite3 beside it)"
        ),
    })
}

/// An allowed `Host` value: a name or `name:port`, as the header carries
/// it. Refused: empty, any whitespace or control character, `/` (a URL was
/// written where a host belongs).
pub(crate) fn is_valid_host(host: &str) -> bool {
    !host.is_empty()
        && !host
            .chars()
            .any(|c| c == '/' || c.is_whitespace() || c.is_control())
}

/// An allowed `Origin` value: exactly `null`, or `http://` / `https://`
/// followed by a non-empty `host[:port|:*]` with no path, query, fragment
/// or whitespace (browsers send origins without a trailing `/`, so such an
/// entry could never match).
pub(crate) fn is_valid_origin(origin: &str) -> bool {
    if origin == "null" {
        return true;
    }
    let Some(authority) = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
    else {
        return false;
    };
    !authority.is_empty()
        && !authority
            .chars()
            .any(|c| matches!(c, '/' | '?' | '#') || c.is_whitespace() || c.is_control())
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
