//! Unit tests of the provider environment computation.

use super::*;

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

/// A Bridge environment as a hostile deployment might leave it.
fn hostile_inherited() -> Vec<(String, String)> {
    pairs(&[
        ("HOME", "/home/agent"),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("HTTPS_PROXY", "http://operator-proxy:3128"),
        ("http_proxy", "http://lower-proxy:3128"),
        ("ALL_PROXY", "socks5://all:1080"),
        ("no_proxy", "internal.example"),
        ("SERVERFS_AGENT_PROXY_URL", "http://agent-proxy:3128"),
        ("SERVERFS_AGENT_NO_PROXY", "corp.example"),
        ("FOO_PROXY_URL", "http://foo:1"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
        ("CONTROL_PLANE_URL", "https://cp.example"),
        ("TUNNEL_CLIENT_ID", "tunnel"),
        ("MCP_AUTH", "bearer"),
        ("TERM", "xterm-256color"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock"),
        ("CARGO_HOME", "/root/.cargo"),
    ])
}

#[test]
fn only_the_allowlist_is_inherited_and_no_proxy_without_policy() {
    let env = provider_environment(hostile_inherited(), &[], &ProxyPolicy::disabled()).unwrap();
    assert_eq!(
        env,
        pairs(&[
            ("HOME", "/home/agent"),
            ("LANG", "C.UTF-8"),
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ])
    );
}

#[test]
fn a_configured_endpoint_is_not_used_unless_the_runtime_enables_it() {
    let proxy = ProxyPolicy {
        proxy_url: Some("http://agent-proxy:3128".into()),
        no_proxy: Some("corp.example".into()),
        enabled_for_runtime: false,
    };
    let env = provider_environment(hostile_inherited(), &[], &proxy).unwrap();
    assert!(
        env.iter().all(|(name, _)| !is_reserved_name(name)),
        "{env:?}"
    );
}

#[test]
fn enabled_proxy_maps_to_exactly_https_proxy_and_merged_no_proxy() {
    let proxy = ProxyPolicy {
        proxy_url: Some("http://agent-proxy:3128".into()),
        no_proxy: Some(" corp.example ; LOCALHOST,,corp.example, 10.0.0.0/8 ".into()),
        enabled_for_runtime: true,
    };
    let extra = pairs(&[
        ("CODEX_HOME", "/home/agent/.codex"),
        ("HOME", "/tmp/isolated"),
    ]);
    let env = provider_environment(hostile_inherited(), &extra, &proxy).unwrap();
    assert_eq!(
        env,
        pairs(&[
            ("CODEX_HOME", "/home/agent/.codex"),
            ("HOME", "/tmp/isolated"),
            ("HTTPS_PROXY", "http://agent-proxy:3128"),
            ("LANG", "C.UTF-8"),
            (
                "NO_PROXY",
                "corp.example,LOCALHOST,10.0.0.0/8,127.0.0.1,localhost,::1"
            ),
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ])
    );
}

#[test]
fn no_proxy_without_operator_entries_is_the_loopback_names() {
    assert_eq!(merged_no_proxy(None), "127.0.0.1,localhost,::1");
    assert_eq!(merged_no_proxy(Some(" ;, ")), "127.0.0.1,localhost,::1");
    assert_eq!(
        merged_no_proxy(Some("::1;a.example")),
        "::1,a.example,127.0.0.1,localhost"
    );
}

#[test]
fn enabled_proxy_without_endpoint_fails_closed() {
    for proxy_url in [None, Some(String::new()), Some("  ".to_owned())] {
        let proxy = ProxyPolicy {
            proxy_url,
            no_proxy: None,
            enabled_for_runtime: true,
        };
        let err = provider_environment(hostile_inherited(), &[], &proxy).unwrap_err();
        assert!(matches!(err, ProcessError::ProxyEndpointMissing), "{err:?}");
    }
}

#[test]
fn adapter_pairs_cannot_carry_proxy_or_reserved_names() {
    for name in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "no_proxy",
        "FOO_PROXY_URL",
        "SERVERFS_AGENT_PROXY_URL",
        "serverfs_anything",
        "CONTROL_PLANE_TOKEN",
        "TUNNEL_CLIENT_SECRET",
        "MCP_SERVER",
    ] {
        let extra = pairs(&[(name, "x")]);
        let err = provider_environment([], &extra, &ProxyPolicy::disabled()).unwrap_err();
        assert!(
            matches!(
                err,
                ProcessError::InvalidCommand(CommandProblem::ForbiddenEnvironmentName)
            ),
            "{name}: {err:?}"
        );
    }
}

#[test]
fn names_that_merely_mention_proxy_are_not_proxy_variables() {
    // Spec §10.5: suffix match, not substring.
    for name in [
        "PROXY_MODE",
        "PROXY_PROTOCOL_VERSION",
        "CODEX_PROXY_SETTINGS",
    ] {
        assert!(!is_reserved_name(name), "{name}");
    }
}

#[test]
fn adapter_pairs_may_carry_credentials_but_not_malformed_names() {
    let extra = pairs(&[("ANTHROPIC_API_KEY", "sk-test")]);
    let env = provider_environment([], &extra, &ProxyPolicy::disabled()).unwrap();
    assert_eq!(env, extra);

    for (name, value, problem) in [
        ("", "x", CommandProblem::InvalidEnvironmentName),
        ("A=B", "x", CommandProblem::InvalidEnvironmentName),
        ("A\0B", "x", CommandProblem::InvalidEnvironmentName),
        ("A", "x\0y", CommandProblem::InvalidEnvironmentValue),
    ] {
        let extra = pairs(&[(name, value)]);
        let err = provider_environment([], &extra, &ProxyPolicy::disabled()).unwrap_err();
        assert!(
            matches!(err, ProcessError::InvalidCommand(found) if found == problem),
            "{name:?}: {err:?}"
        );
    }
}

#[test]
fn the_allowlist_holds_no_reserved_or_secret_like_name() {
    for name in INHERITED_ALLOWLIST {
        assert!(!is_reserved_name(name) && !is_secret_like(name), "{name}");
    }
}

#[test]
fn debug_redacts_the_endpoint() {
    let proxy = ProxyPolicy {
        proxy_url: Some("http://user:pw@agent-proxy:3128".into()),
        no_proxy: Some("corp.example".into()),
        enabled_for_runtime: true,
    };
    let shown = format!("{proxy:?}");
    assert!(
        !shown.contains("agent-proxy") && !shown.contains("corp.example"),
        "{shown}"
    );
    assert!(shown.contains("<redacted>"), "{shown}");
}
