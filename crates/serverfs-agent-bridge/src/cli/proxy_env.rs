//! The agent egress proxy endpoint (spec-agent-bridge.md §10.5): read from
//! the Bridge's own environment (`SERVERFS_AGENT_PROXY_URL`, optional
//! `SERVERFS_AGENT_NO_PROXY`), never from a configuration file, and handed
//! only to the runtimes listed in `[agent] proxy_runtimes`.
//!
//! The Bridge does not scrub its own environment: providers are spawned
//! from an empty environment plus a short allowlist
//! ([`serverfs_agent_runtime::provider_environment`]), so an inherited
//! `*_PROXY` variable can never reach them.

use std::collections::BTreeMap;

/// The endpoint and the operator's extra `NO_PROXY` entries.
#[derive(Default)]
pub struct ProxyEndpoint {
    pub url: Option<String>,
    pub no_proxy: Option<String>,
}

impl std::fmt::Debug for ProxyEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyEndpoint")
            .field("url", &self.url.as_ref().map(|_| "<redacted>"))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

/// Why the endpoint in the environment is refused: a one-line reason that
/// names the variable and never echoes its value, which may be a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyEnvError {
    /// `SERVERFS_AGENT_PROXY_URL` is not a plain endpoint.
    #[error("SERVERFS_AGENT_PROXY_URL: {0}")]
    Url(&'static str),
    /// `SERVERFS_AGENT_NO_PROXY` would break the variable it becomes.
    #[error("SERVERFS_AGENT_NO_PROXY: must not contain NUL or newlines")]
    NoProxyLineBreak,
}

/// Reads and checks the endpoint. Empty means unset.
///
/// # Errors
///
/// [`ProxyEnvError`] when the URL is not `http(s)://host:port[/]` without
/// user information, query, fragment, whitespace or NUL, or the
/// `NO_PROXY` entries hold a NUL or a line break.
pub fn read(env: &BTreeMap<String, String>) -> Result<ProxyEndpoint, ProxyEnvError> {
    let value = |name: &str| {
        env.get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let url = value("SERVERFS_AGENT_PROXY_URL");
    if let Some(url) = &url {
        check_url(url).map_err(ProxyEnvError::Url)?;
    }
    let no_proxy = value("SERVERFS_AGENT_NO_PROXY");
    if no_proxy
        .as_deref()
        .is_some_and(|v| v.contains(['\0', '\n']))
    {
        return Err(ProxyEnvError::NoProxyLineBreak);
    }
    Ok(ProxyEndpoint { url, no_proxy })
}

fn check_url(url: &str) -> Result<(), &'static str> {
    if url.chars().any(|c| c.is_whitespace() || c == '\0') {
        return Err("must not contain whitespace or NUL");
    }
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("must start with http:// or https://")?;
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    if !path.is_empty() || url.contains(['?', '#']) {
        return Err("must not have a path, query or fragment");
    }
    if authority.contains('@') {
        return Err("must not carry credentials: the agent proxy is credentialless");
    }
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or("must name an explicit port")?;
    if host.is_empty() || host == "[]" {
        return Err("must name a host");
    }
    match port.parse::<u16>() {
        Ok(port) if port > 0 => Ok(()),
        _ => Err("the port must be 1..=65535"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn env(url: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("SERVERFS_AGENT_PROXY_URL".to_owned(), url.to_owned())])
    }

    #[test]
    fn accepts_plain_endpoints() {
        for url in [
            "http://proxy:3128",
            "https://10.0.0.1:8443/",
            "http://[::1]:3128",
        ] {
            assert_eq!(read(&env(url)).unwrap().url.as_deref(), Some(url), "{url}");
        }
        assert!(read(&env("  ")).unwrap().url.is_none());
    }

    #[test]
    fn refuses_unsafe_endpoints_without_echoing_them() {
        for url in [
            "socks5://proxy:1080",
            "http://proxy",
            "http://user:secret@proxy:3128",
            "http://proxy:3128/path",
            "http://proxy:3128?x=1",
            "http://proxy:0",
            "http://proxy:99999",
            "http://:3128",
            "http://pro xy:3128",
        ] {
            let error = read(&env(url)).unwrap_err().to_string();
            assert!(
                error.starts_with("SERVERFS_AGENT_PROXY_URL: "),
                "{url}: {error}"
            );
            assert!(
                !error.contains("secret") && !error.contains("proxy:"),
                "{error}"
            );
        }
    }

    #[test]
    fn no_proxy_entries_are_kept_and_line_breaks_refused() {
        let mut vars = env("http://proxy:3128");
        vars.insert(
            "SERVERFS_AGENT_NO_PROXY".to_owned(),
            " corp.example ".to_owned(),
        );
        assert_eq!(
            read(&vars).unwrap().no_proxy.as_deref(),
            Some("corp.example")
        );
        vars.insert("SERVERFS_AGENT_NO_PROXY".to_owned(), "a\nb".to_owned());
        assert_eq!(
            read(&vars).unwrap_err().to_string(),
            "SERVERFS_AGENT_NO_PROXY: must not contain NUL or newlines"
        );
    }
}
