//! Redirect URIs: which a self-registered client may use, and when a
//! requested one matches a registered one.
//!
//! Matching is exact string comparison (OAuth 2.1 §2.3.1, no prefix or
//! normalisation tricks), with the one exception RFC 8252 §7.3 requires
//! for native apps: an `http` redirect to a loopback IP literal matches
//! whatever its port, since such a client picks a free port each time.

use serverfs_config::is_loopback_host;
use url::Url;

/// Whether a client that registered `registered` may be sent to
/// `requested`.
pub fn matches(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    let (Some(registered), Some(requested)) = (loopback(registered), loopback(requested)) else {
        return false;
    };
    registered.host_str() == requested.host_str()
        && registered.path() == requested.path()
        && registered.query() == requested.query()
}

/// Whether a client that registers itself (or describes itself in a
/// metadata document) may use `uri`: a loopback redirect, or one the
/// operator allowed (exactly).
pub fn allowed_for_self_registered(uri: &str, allowed: &[String]) -> bool {
    loopback(uri).is_some() || allowed.iter().any(|a| a == uri)
}

/// `uri` parsed, when it is a plain `http` redirect to this machine: no
/// userinfo, no fragment, a loopback host (RFC 8252 §7.3).
fn loopback(uri: &str) -> Option<Url> {
    let url = Url::parse(uri).ok()?;
    let plain = url.scheme() == "http"
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
        && url.host().is_some_and(|h| is_loopback_host(&h));
    plain.then_some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE: &str = "https://claude.ai/api/mcp/auth_callback";

    #[test]
    fn exact_matches_only_except_loopback_ports() {
        assert!(matches(CLAUDE, CLAUDE));
        for near_miss in [
            "https://claude.ai/api/mcp/auth_callback/",
            "https://claude.ai/api/mcp/auth_callback?x=1",
            "https://claude.ai/api/mcp/auth_callback#x",
            "https://Claude.ai/api/mcp/auth_callback",
            "https://claude.ai:443/api/mcp/auth_callback",
            "http://claude.ai/api/mcp/auth_callback",
            "https://claude.ai.evil.example/api/mcp/auth_callback",
            "https://claude.ai@evil.example/api/mcp/auth_callback",
            "https://claude.ai/api/mcp/auth_callbackx",
        ] {
            assert!(!matches(CLAUDE, near_miss), "{near_miss}");
        }
        assert!(matches(
            "http://127.0.0.1:1111/cb",
            "http://127.0.0.1:2222/cb"
        ));
        assert!(matches("http://[::1]:1/cb", "http://[::1]:2/cb"));
        assert!(!matches(
            "http://127.0.0.1:1111/cb",
            "http://127.0.0.1:2222/cb/"
        ));
        assert!(!matches(
            "http://127.0.0.1:1111/cb",
            "http://127.0.0.2:1111/cb"
        ));
        assert!(!matches(
            "http://127.0.0.1:1111/cb",
            "http://u@127.0.0.1:1111/cb"
        ));
        assert!(!matches(
            "http://127.0.0.1:1111/cb",
            "https://127.0.0.1:1111/cb"
        ));
    }

    #[test]
    fn self_registered_clients_get_loopback_or_the_allowlist() {
        let allowed = vec![CLAUDE.to_owned()];
        assert!(allowed_for_self_registered(CLAUDE, &allowed));
        assert!(allowed_for_self_registered(
            "http://127.0.0.1:9/cb",
            &allowed
        ));
        assert!(allowed_for_self_registered(
            "http://localhost:9/cb",
            &allowed
        ));
        for refused in [
            "https://evil.example/cb",
            "https://claude.ai/api/mcp/auth_callback/",
            "http://127.0.0.1:9/cb#frag",
            "https://127.0.0.1:9/cb",
            "javascript:alert(1)",
            "cursor://callback",
        ] {
            assert!(!allowed_for_self_registered(refused, &allowed), "{refused}");
        }
    }
}
