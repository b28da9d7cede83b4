//! What a provider child really sees in its environment (`/usr/bin/env`).

use std::collections::BTreeMap;

use serverfs_agent_runtime::{ProviderCommand, ProxyPolicy, provider_environment};

use serverfs_testkit::within;

use super::support::read_stdout;

const ENV: &str = "/usr/bin/env";

/// The names a hostile Bridge environment carries and no child may see.
const LEAKY: &[&str] = &[
    "HTTPS_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "SERVERFS_AGENT_PROXY_URL",
    "FOO_PROXY_URL",
    "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
];

fn hostile_inherited() -> Vec<(String, String)> {
    [
        ("HOME", "/home/agent"),
        ("PATH", "/usr/bin:/bin"),
        ("LANG", "C.UTF-8"),
        ("HTTPS_PROXY", "http://operator-proxy:3128"),
        ("http_proxy", "http://lower-proxy:3128"),
        ("ALL_PROXY", "socks5://all-proxy:1080"),
        ("SERVERFS_AGENT_PROXY_URL", "http://agent-proxy:3128"),
        ("FOO_PROXY_URL", "http://foo-proxy:1"),
        ("GITHUB_TOKEN", "ghp_not_for_providers"),
        ("AWS_SECRET_ACCESS_KEY", "not-for-providers"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect()
}

fn is_proxy_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_PROXY") || upper.ends_with("_PROXY_URL")
}

/// Spawns `/usr/bin/env` as a provider and parses what it prints.
async fn child_environment(command: &mut ProviderCommand) -> BTreeMap<String, String> {
    let mut child = command.spawn().unwrap();
    let text = read_stdout(&mut child).await;
    let status = within("env to exit", child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
    text.lines()
        .map(|line| {
            let (name, value) = line.split_once('=').expect("NAME=VALUE");
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

#[tokio::test]
async fn enabled_proxy_reaches_the_child_as_https_proxy_and_no_proxy_only() {
    let workdir = tempfile::tempdir().unwrap();
    let proxy = ProxyPolicy {
        proxy_url: Some("http://agent-proxy.internal:3128".into()),
        no_proxy: Some("corp.example;localhost".into()),
        enabled_for_runtime: true,
    };
    let want = expected(&[
        ("HOME", "/home/agent"),
        ("HTTPS_PROXY", "http://agent-proxy.internal:3128"),
        ("LANG", "C.UTF-8"),
        ("NO_PROXY", "corp.example,localhost,127.0.0.1,::1"),
        ("PATH", "/usr/bin:/bin"),
        ("PROVIDER_ENTRYPOINT", "serverfs"),
    ]);

    let pure = provider_environment(
        hostile_inherited(),
        &[("PROVIDER_ENTRYPOINT".into(), "serverfs".into())],
        &proxy,
    )
    .unwrap();
    assert_eq!(pure.into_iter().collect::<BTreeMap<_, _>>(), want);

    let seen = child_environment(
        ProviderCommand::new(ENV, workdir.path())
            .inherited_env(hostile_inherited())
            .env("PROVIDER_ENTRYPOINT", "serverfs")
            .proxy(proxy),
    )
    .await;
    assert_eq!(seen, want);
    for name in LEAKY.iter().filter(|name| **name != "HTTPS_PROXY") {
        assert!(!seen.contains_key(*name), "{name} reached the child");
    }
    assert_eq!(seen["HTTPS_PROXY"], "http://agent-proxy.internal:3128");
    let no_proxy: Vec<&str> = seen["NO_PROXY"].split(',').collect();
    for loopback in ["127.0.0.1", "localhost", "::1"] {
        assert!(
            no_proxy.contains(&loopback),
            "{loopback} missing from {no_proxy:?}"
        );
    }
}

#[tokio::test]
async fn disabled_proxy_leaves_no_proxy_variable_at_all() {
    let workdir = tempfile::tempdir().unwrap();
    // An endpoint is configured, but this runtime does not use it.
    let proxy = ProxyPolicy {
        proxy_url: Some("http://agent-proxy.internal:3128".into()),
        no_proxy: None,
        enabled_for_runtime: false,
    };
    let want = expected(&[
        ("HOME", "/home/agent"),
        ("LANG", "C.UTF-8"),
        ("PATH", "/usr/bin:/bin"),
    ]);

    let pure = provider_environment(hostile_inherited(), &[], &proxy).unwrap();
    assert_eq!(pure.into_iter().collect::<BTreeMap<_, _>>(), want);

    let seen = child_environment(
        ProviderCommand::new(ENV, workdir.path())
            .inherited_env(hostile_inherited())
            .proxy(proxy),
    )
    .await;
    assert_eq!(seen, want);
    assert!(seen.keys().all(|name| !is_proxy_name(name)), "{seen:?}");
    for name in LEAKY {
        assert!(!seen.contains_key(*name), "{name} reached the child");
    }
}

/// Without an injected environment the Bridge's real one is the source:
/// this test process's (cargo sets `CARGO_*` variables) must not leak.
#[tokio::test]
async fn the_real_environment_is_cleared_down_to_the_allowlist() {
    const ALLOWED: &[&str] = &[
        "HOME",
        "USER",
        "LOGNAME",
        "PATH",
        "SHELL",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "TMPDIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ];
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
        "the test needs a variable outside the allowlist in its own environment"
    );
    let workdir = tempfile::tempdir().unwrap();
    let seen = child_environment(ProviderCommand::new(ENV, workdir.path()).env("EXTRA", "1")).await;

    assert_eq!(seen.get("EXTRA").map(String::as_str), Some("1"));
    for (name, value) in seen.iter().filter(|(name, _)| *name != "EXTRA") {
        assert!(ALLOWED.contains(&name.as_str()), "{name} leaked");
        assert_eq!(
            std::env::var(name).ok().as_ref(),
            Some(value),
            "{name} changed"
        );
    }
    for name in ALLOWED {
        if let Ok(value) = std::env::var(name) {
            assert_eq!(seen.get(*name), Some(&value), "{name} was not passed on");
        }
    }
    assert!(!seen.contains_key("CARGO_MANIFEST_DIR"));
}

#[tokio::test]
async fn passed_through_names_reach_the_child_and_nothing_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut inherited = hostile_inherited();
    inherited.push((
        "ANTHROPIC_API_KEY".to_owned(),
        "sk-ant-for-claude".to_owned(),
    ));
    let mut command = ProviderCommand::new(ENV, dir.path());
    command
        .inherited_env(inherited.clone())
        // A key the operator hands over, one the Bridge lacks (skipped),
        // and a fixed pair that wins over its inherited namesake.
        .pass_through(["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LANG"])
        .env("LANG", "en_US.UTF-8");
    let seen = child_environment(&mut command).await;
    assert_eq!(
        seen.get("ANTHROPIC_API_KEY").map(String::as_str),
        Some("sk-ant-for-claude")
    );
    assert!(!seen.contains_key("OPENAI_API_KEY"));
    assert_eq!(seen.get("LANG").map(String::as_str), Some("en_US.UTF-8"));
    for name in LEAKY {
        assert!(!seen.contains_key(*name), "{name} leaked");
    }

    // A proxy variable cannot be smuggled in by passthrough.
    let mut command = ProviderCommand::new(ENV, dir.path());
    command
        .inherited_env(inherited)
        .pass_through(["HTTPS_PROXY"]);
    assert!(matches!(
        command.spawn(),
        Err(serverfs_agent_runtime::ProcessError::InvalidCommand(
            serverfs_agent_runtime::CommandProblem::ForbiddenEnvironmentName
        ))
    ));
}
