use std::net::SocketAddr;
use std::path::PathBuf;

use pretty_assertions::assert_eq;

use super::{is_loopback, is_valid_host, is_valid_origin};
use crate::test_support::{Fixture, env, message};
use crate::{
    Config, ConfigError, ConfigSource, ConnectionLimits, EffectiveHttp, HttpAuth, HttpSettings,
};

const WD: &str = "[[workdirs]]\nalias = \"a\"\npath = \"a\"\n";

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// A file with workdir `a` and this `[http]` body, parsed with `env`.
fn toml_http(fx: &Fixture, body: &str, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    fx.mkdir("a");
    Config::from_toml_str_with_env(&format!("[http]\n{body}\n{WD}"), fx.path(), &env(pairs))
}

/// Environment mode: slot 01 enabled as `one`, plus `pairs`.
fn env_http(fx: &Fixture, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    fx.slot(1);
    let mut all = vec![("WORKDIR_01_ALIAS", "one")];
    all.extend_from_slice(pairs);
    fx.env_config(&all)
}

/// `--workdir` mode with one workdir, plus `pairs`.
fn cli_http(fx: &Fixture, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let root = fx.mkdir("c");
    let source = ConfigSource::Cli(vec![format!("c={}", root.display())]);
    Config::load(&source, &[], &env(pairs))
}

fn settings(token_file: &str) -> HttpSettings {
    HttpSettings::with_defaults(PathBuf::from(token_file))
}

fn none_on(bind: &str) -> HttpSettings {
    HttpSettings {
        bind: Some(addr(bind)),
        auth: HttpAuth::None,
        ..settings("/t/tokens.json")
    }
}

// --- HttpAuth and the value checks -----------------------------------------

#[test]
fn auth_spelling_and_default() {
    assert_eq!(HttpAuth::default(), HttpAuth::Bearer);
    for auth in HttpAuth::ALL {
        assert_eq!(HttpAuth::parse(auth.as_str()), Some(auth));
        assert_eq!(auth.to_string(), auth.as_str());
    }
    assert_eq!(
        HttpAuth::ALL.map(HttpAuth::as_str),
        ["bearer", "none", "oauth"],
        "wire spelling"
    );
    for bad in ["Bearer", "NONE", "", "basic", " bearer"] {
        assert_eq!(HttpAuth::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn loopback_is_127_slash_8_and_ipv6_one() {
    for ip in [
        "127.0.0.1",
        "127.0.0.5",
        "127.255.255.254",
        "::1",
        "::ffff:127.0.0.1",
    ] {
        assert!(is_loopback(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "0.0.0.0",
        "::",
        "10.0.0.1",
        "192.168.1.2",
        "128.0.0.1",
        "::2",
        "fe80::1",
    ] {
        assert!(!is_loopback(ip.parse().unwrap()), "{ip}");
    }
}

#[test]
fn host_and_origin_shapes() {
    for host in [
        "localhost",
        "mcp.example.com",
        "mcp.example.com:8443",
        "10.0.0.2:80",
    ] {
        assert!(is_valid_host(host), "{host:?}");
    }
    for host in ["", " ", "a b", "http://x", "x/", "x\t", "a\u{7}"] {
        assert!(!is_valid_host(host), "{host:?}");
    }
    for origin in [
        "null",
        "https://chatgpt.com",
        "http://localhost:*",
        "http://127.0.0.1:6274",
        "https://[::1]:8443",
    ] {
        assert!(is_valid_origin(origin), "{origin:?}");
    }
    for origin in [
        "",
        "NULL",
        "chatgpt.com",
        "ftp://x",
        "HTTPS://x",
        "https://",
        "https://x/",
        "https://x/path",
        "https://x?q",
        "https://x#f",
        "https://a b",
        "//x",
    ] {
        assert!(!is_valid_origin(origin), "{origin:?}");
    }
}

// --- defaults ----------------------------------------------------------------

#[test]
fn toml_defaults_take_the_token_file_from_xdg_config_home_then_home() {
    let fx = Fixture::new();
    let expected = |token_file: &str| HttpSettings {
        bind: None,
        auth: HttpAuth::Bearer,
        trust_network: false,
        allowed_hosts: Vec::new(),
        allowed_origins: Vec::new(),
        token_file: PathBuf::from(token_file),
        oauth: crate::OAuthSettings::with_defaults(&PathBuf::from(token_file)),
        request_timeout_ms: 120_000,
        max_concurrent_requests: 64,
        shutdown_grace_ms: 10_000,
        connections: ConnectionLimits::default(),
    };
    let load = |pairs: &[(&str, &str)]| toml_http(&fx, "", pairs).unwrap().http;
    assert_eq!(
        load(&[("XDG_CONFIG_HOME", "/cfg"), ("HOME", "/home/u")]),
        expected("/cfg/serverfs/tokens.json")
    );
    assert_eq!(
        load(&[("HOME", "/home/u")]),
        expected("/home/u/.config/serverfs/tokens.json")
    );
    // Relative XDG values are ignored, as the XDG spec requires.
    assert_eq!(
        load(&[("XDG_CONFIG_HOME", "cfg"), ("HOME", "/home/u")]),
        expected("/home/u/.config/serverfs/tokens.json")
    );
    // Nothing known: relative, refused only once bearer auth listens.
    assert_eq!(load(&[]), expected("serverfs/tokens.json"));
    // No [http] table at all gives the same settings.
    fx.mkdir("a");
    let without_table = Config::from_toml_str_with_env(WD, fx.path(), &env(&[("HOME", "/h")]));
    assert_eq!(
        without_table.unwrap().http,
        expected("/h/.config/serverfs/tokens.json")
    );
    assert_eq!(
        load(&[("HOME", "/h")]),
        HttpSettings::with_defaults(PathBuf::from("/h/.config/serverfs/tokens.json"))
    );
}

#[test]
fn environment_mode_defaults_to_the_container_token_file() {
    let fx = Fixture::new();
    let config = env_http(&fx, &[("XDG_CONFIG_HOME", "/cfg"), ("HOME", "/home/u")]).unwrap();
    assert_eq!(
        config.http,
        HttpSettings::with_defaults(PathBuf::from("/var/lib/serverfs/tokens.json"))
    );
}

#[test]
fn cli_mode_defaults_to_the_per_user_token_file() {
    let fx = Fixture::new();
    let config = cli_http(&fx, &[("XDG_CONFIG_HOME", "/cfg")]).unwrap();
    assert_eq!(
        config.http,
        HttpSettings::with_defaults(PathBuf::from("/cfg/serverfs/tokens.json"))
    );
    let config = cli_http(&fx, &[("HOME", "/home/u")]).unwrap();
    assert_eq!(
        config.http.token_file,
        PathBuf::from("/home/u/.config/serverfs/tokens.json")
    );
}

// --- every key and variable --------------------------------------------------

#[test]
fn every_http_key_is_read() {
    let fx = Fixture::new();
    let config = toml_http(
        &fx,
        r#"
bind = "0.0.0.0:8443"
auth = "none"
trust_network = true
allowed_hosts = ["mcp.example.com", "mcp.example.com:8443"]
allowed_origins = ["https://chatgpt.com", "null"]
token_file = "/etc/serverfs/tokens.json"
request_timeout_ms = 1000
max_concurrent_requests = 10000
shutdown_grace_ms = 0
header_timeout_ms = 100
body_timeout_ms = 3600000
max_connections = 7
session_idle_timeout_ms = 1000
max_sessions = 100000
max_sessions_per_token = 1
"#,
        &[],
    )
    .unwrap();
    assert_eq!(
        config.http,
        HttpSettings {
            bind: Some(addr("0.0.0.0:8443")),
            auth: HttpAuth::None,
            trust_network: true,
            allowed_hosts: vec![
                "mcp.example.com".to_owned(),
                "mcp.example.com:8443".to_owned()
            ],
            allowed_origins: vec!["https://chatgpt.com".to_owned(), "null".to_owned()],
            token_file: PathBuf::from("/etc/serverfs/tokens.json"),
            oauth: crate::OAuthSettings::with_defaults(&PathBuf::from("/etc/serverfs/tokens.json")),
            request_timeout_ms: 1000,
            max_concurrent_requests: 10_000,
            shutdown_grace_ms: 0,
            connections: ConnectionLimits {
                header_timeout_ms: 100,
                body_timeout_ms: 3_600_000,
                max_connections: 7,
                session_idle_timeout_ms: 1000,
                max_sessions: 100_000,
                max_sessions_per_token: 1,
            },
        }
    );
    let upper = toml_http(
        &fx,
        "bind = \"[::1]:9000\"\nauth = \"bearer\"\ntoken_file = \"/t\"\n\
         request_timeout_ms = 3600000\nmax_concurrent_requests = 1\nshutdown_grace_ms = 300000\n",
        &[],
    )
    .unwrap()
    .http;
    assert_eq!(
        (
            upper.bind,
            upper.auth,
            upper.request_timeout_ms,
            upper.max_concurrent_requests,
            upper.shutdown_grace_ms
        ),
        (
            Some(addr("[::1]:9000")),
            HttpAuth::Bearer,
            3_600_000,
            1,
            300_000
        )
    );
}

#[test]
fn a_relative_token_file_resolves_against_the_config_directory() {
    let fx = Fixture::new();
    let config = toml_http(&fx, "token_file = \"secrets/tokens.json\"", &[]).unwrap();
    assert_eq!(config.http.token_file, fx.join("secrets/tokens.json"));
    // Lexical, as workdir paths: `..` is kept.
    let config = toml_http(&fx, "token_file = \"../t.json\"", &[]).unwrap();
    assert_eq!(config.http.token_file, fx.join("../t.json"));

    // Through `Config::load`: the file's own directory, not the cwd.
    let nested = fx.mkdir("etc/serverfs");
    fx.mkdir("etc/serverfs/w");
    let file = fx.file(
        "etc/serverfs/serverfs.toml",
        "[http]\ntoken_file = \"tokens.json\"\n[[workdirs]]\nalias = \"w\"\npath = \"w\"\n",
    );
    let loaded = Config::load(&ConfigSource::Toml(file), &[], &env(&[])).unwrap();
    assert_eq!(loaded.http.token_file, nested.join("tokens.json"));

    assert_eq!(
        message(toml_http(&fx, "token_file = \"\"", &[])),
        "http.token_file: expected a file path, got \"\""
    );
}

#[test]
fn every_http_variable_is_read() {
    let pairs = [
        ("SERVERFS_HTTP_BIND", " 0.0.0.0:8080 "),
        ("SERVERFS_HTTP_AUTH", " None "),
        ("SERVERFS_HTTP_TRUST_NETWORK", "yes"),
        (
            "SERVERFS_HTTP_ALLOWED_HOSTS",
            " mcp.example.com, ,tunnel:8080 ",
        ),
        ("SERVERFS_HTTP_ALLOWED_ORIGINS", "https://chatgpt.com,null"),
        ("SERVERFS_TOKEN_FILE", "/data/tokens.json"),
        ("SERVERFS_HTTP_REQUEST_TIMEOUT_MS", "5000"),
        ("SERVERFS_HTTP_MAX_CONCURRENT_REQUESTS", "+8"),
        ("SERVERFS_HTTP_SHUTDOWN_GRACE_MS", "0"),
        ("SERVERFS_HTTP_HEADER_TIMEOUT_MS", "2500"),
        ("SERVERFS_HTTP_BODY_TIMEOUT_MS", "4000"),
        ("SERVERFS_HTTP_MAX_CONNECTIONS", "99"),
        ("SERVERFS_HTTP_SESSION_IDLE_TIMEOUT_MS", "60000"),
        ("SERVERFS_HTTP_MAX_SESSIONS", "10"),
        ("SERVERFS_HTTP_MAX_SESSIONS_PER_TOKEN", "3"),
    ];
    let expected = HttpSettings {
        bind: Some(addr("0.0.0.0:8080")),
        auth: HttpAuth::None,
        trust_network: true,
        allowed_hosts: vec!["mcp.example.com".to_owned(), "tunnel:8080".to_owned()],
        allowed_origins: vec!["https://chatgpt.com".to_owned(), "null".to_owned()],
        token_file: PathBuf::from("/data/tokens.json"),
        oauth: crate::OAuthSettings::with_defaults(&PathBuf::from("/data/tokens.json")),
        request_timeout_ms: 5000,
        max_concurrent_requests: 8,
        shutdown_grace_ms: 0,
        connections: ConnectionLimits {
            header_timeout_ms: 2500,
            body_timeout_ms: 4000,
            max_connections: 99,
            session_idle_timeout_ms: 60_000,
            max_sessions: 10,
            max_sessions_per_token: 3,
        },
    };
    let fx = Fixture::new();
    assert_eq!(env_http(&fx, &pairs).unwrap().http, expected, "environment");
    assert_eq!(cli_http(&fx, &pairs).unwrap().http, expected, "--workdir");

    // Empty values mean "not set".
    let empty: Vec<(&str, &str)> = pairs.iter().map(|(name, _)| (*name, " ")).collect();
    assert_eq!(
        env_http(&fx, &empty).unwrap().http,
        HttpSettings::with_defaults(PathBuf::from("/var/lib/serverfs/tokens.json"))
    );
    assert_eq!(
        env_http(&fx, &[("SERVERFS_HTTP_AUTH", "BEARER")])
            .unwrap()
            .http
            .auth,
        HttpAuth::Bearer
    );
}

#[test]
fn a_file_ignores_the_http_variables() {
    let fx = Fixture::new();
    let config = toml_http(
        &fx,
        "",
        &[
            ("SERVERFS_HTTP_BIND", "0.0.0.0:1"),
            ("SERVERFS_HTTP_AUTH", "bogus"),
            ("SERVERFS_TOKEN_FILE", "/x"),
            ("HOME", "/h"),
        ],
    )
    .unwrap();
    assert_eq!(
        config.http,
        HttpSettings::with_defaults(PathBuf::from("/h/.config/serverfs/tokens.json"))
    );
}

// --- validation errors name their key --------------------------------------------

#[test]
fn toml_errors_name_their_key() {
    let fx = Fixture::new();
    let cases = [
        (
            "bind = \"localhost:8080\"",
            "http.bind: expected an IP address and port, such as 127.0.0.1:8080 or [::1]:8080, \
             got \"localhost:8080\"",
        ),
        (
            "bind = \"127.0.0.1\"",
            "http.bind: expected an IP address and port, such as 127.0.0.1:8080 or [::1]:8080, \
             got \"127.0.0.1\"",
        ),
        (
            "bind = \"::1:8080\"",
            "http.bind: expected an IP address and port, such as 127.0.0.1:8080 or [::1]:8080, \
             got \"::1:8080\"",
        ),
        (
            "auth = \"Bearer\"",
            "http.auth: expected one of \"bearer\", \"none\", \"oauth\", got \"Bearer\"",
        ),
        (
            "allowed_hosts = [\"ok\", \"\"]",
            "http.allowed_hosts: expected host names or name:port values \
             (not empty, no '/' or whitespace), got \"\"",
        ),
        (
            "allowed_hosts = [\"https://mcp.example.com\"]",
            "http.allowed_hosts: expected host names or name:port values \
             (not empty, no '/' or whitespace), got \"https://mcp.example.com\"",
        ),
        (
            "allowed_hosts = [\"a b\"]",
            "http.allowed_hosts: expected host names or name:port values \
             (not empty, no '/' or whitespace), got \"a b\"",
        ),
        (
            "allowed_origins = [\"chatgpt.com\"]",
            "http.allowed_origins: expected origins such as https://host, http://host:port, \
             http://host:* or null (no path, no trailing '/'), got \"chatgpt.com\"",
        ),
        (
            "allowed_origins = [\"null\", \"https://chatgpt.com/\"]",
            "http.allowed_origins: expected origins such as https://host, http://host:port, \
             http://host:* or null (no path, no trailing '/'), got \"https://chatgpt.com/\"",
        ),
        (
            "request_timeout_ms = 999",
            "http.request_timeout_ms: must be between 1000 and 3600000, got 999",
        ),
        (
            "request_timeout_ms = 3600001",
            "http.request_timeout_ms: must be between 1000 and 3600000, got 3600001",
        ),
        (
            "max_concurrent_requests = 0",
            "http.max_concurrent_requests: must be between 1 and 10000, got 0",
        ),
        (
            "max_concurrent_requests = 10001",
            "http.max_concurrent_requests: must be between 1 and 10000, got 10001",
        ),
        (
            "shutdown_grace_ms = -1",
            "http.shutdown_grace_ms: must be between 0 and 300000, got -1",
        ),
        (
            "shutdown_grace_ms = 300001",
            "http.shutdown_grace_ms: must be between 0 and 300000, got 300001",
        ),
        (
            "header_timeout_ms = 99",
            "http.header_timeout_ms: must be between 100 and 600000, got 99",
        ),
        (
            "body_timeout_ms = 3600001",
            "http.body_timeout_ms: must be between 100 and 3600000, got 3600001",
        ),
        (
            "max_connections = 0",
            "http.max_connections: must be between 1 and 100000, got 0",
        ),
        (
            "session_idle_timeout_ms = 999",
            "http.session_idle_timeout_ms: must be between 1000 and 86400000, got 999",
        ),
        (
            "max_sessions = 0",
            "http.max_sessions: must be between 1 and 100000, got 0",
        ),
        (
            "max_sessions_per_token = 100001",
            "http.max_sessions_per_token: must be between 1 and 100000, got 100001",
        ),
        (
            "trust_network = \"yes\"",
            "http.trust_network: invalid type: string \"yes\", expected a boolean (line 2)",
        ),
        (
            "bind = 8080",
            "http.bind: invalid type: integer `8080`, expected a string (line 2)",
        ),
        (
            "allowed_origins = \"null\"",
            "http.allowed_origins: invalid type: string \"null\", expected an array (line 2)",
        ),
    ];
    for (body, expected) in cases {
        let err = toml_http(&fx, body, &[]).unwrap_err();
        assert_eq!(err.to_string(), expected, "for {body:?}");
        assert_eq!(
            err.key().as_deref(),
            expected.split(':').next(),
            "for {body:?}"
        );
    }
    let unknown = message(toml_http(&fx, "port = 8080", &[]));
    assert!(
        unknown.starts_with("http.port: unknown field `port`, expected one of `bind`, `auth`,"),
        "{unknown}"
    );
}

#[test]
fn environment_errors_name_their_variable() {
    let fx = Fixture::new();
    let cases = [
        (
            "SERVERFS_HTTP_BIND",
            "localhost:80",
            "SERVERFS_HTTP_BIND: expected an IP address and port, such as 127.0.0.1:8080 or \
             [::1]:8080, got \"localhost:80\"",
        ),
        (
            "SERVERFS_HTTP_AUTH",
            "basic",
            "SERVERFS_HTTP_AUTH: expected one of bearer, none, oauth, got \"basic\"",
        ),
        (
            "SERVERFS_HTTP_TRUST_NETWORK",
            "maybe",
            "SERVERFS_HTTP_TRUST_NETWORK: expected a boolean (true, false, 1, 0, yes, no, on or \
             off), got \"maybe\"",
        ),
        (
            "SERVERFS_HTTP_ALLOWED_HOSTS",
            "ok,http://x",
            "SERVERFS_HTTP_ALLOWED_HOSTS: expected host names or name:port values \
             (not empty, no '/' or whitespace), got \"http://x\"",
        ),
        (
            "SERVERFS_HTTP_ALLOWED_ORIGINS",
            "example.com",
            "SERVERFS_HTTP_ALLOWED_ORIGINS: expected origins such as https://host, \
             http://host:port, http://host:* or null (no path, no trailing '/'), \
             got \"example.com\"",
        ),
        (
            "SERVERFS_TOKEN_FILE",
            "tokens.json",
            "SERVERFS_TOKEN_FILE: expected an absolute path, got \"tokens.json\"",
        ),
        (
            "SERVERFS_HTTP_REQUEST_TIMEOUT_MS",
            "2m",
            "SERVERFS_HTTP_REQUEST_TIMEOUT_MS: expected a positive integer, got \"2m\"",
        ),
        (
            "SERVERFS_HTTP_REQUEST_TIMEOUT_MS",
            "999",
            "SERVERFS_HTTP_REQUEST_TIMEOUT_MS: must be between 1000 and 3600000, got 999",
        ),
        (
            "SERVERFS_HTTP_MAX_CONCURRENT_REQUESTS",
            "0",
            "SERVERFS_HTTP_MAX_CONCURRENT_REQUESTS: expected a positive integer, got \"0\"",
        ),
        (
            "SERVERFS_HTTP_MAX_CONCURRENT_REQUESTS",
            "10001",
            "SERVERFS_HTTP_MAX_CONCURRENT_REQUESTS: must be between 1 and 10000, got 10001",
        ),
        (
            "SERVERFS_HTTP_SHUTDOWN_GRACE_MS",
            "-5",
            "SERVERFS_HTTP_SHUTDOWN_GRACE_MS: expected a non-negative integer, got \"-5\"",
        ),
        (
            "SERVERFS_HTTP_SHUTDOWN_GRACE_MS",
            "300001",
            "SERVERFS_HTTP_SHUTDOWN_GRACE_MS: must be between 0 and 300000, got 300001",
        ),
    ];
    for (name, value, expected) in cases {
        let err = env_http(&fx, &[(name, value)]).unwrap_err();
        assert_eq!(err.to_string(), expected, "{name}={value:?}");
        assert_eq!(err.key().as_deref(), Some(name));
        assert_eq!(
            cli_http(&fx, &[(name, value)]).unwrap_err(),
            err,
            "--workdir mode, {name}={value:?}"
        );
    }
}

// --- the authentication rule at load time ------------------------------------------

#[test]
fn no_auth_on_a_public_address_is_refused_at_load() {
    let fx = Fixture::new();
    assert_eq!(
        message(toml_http(
            &fx,
            "bind = \"0.0.0.0:8080\"\nauth = \"none\"",
            &[]
        )),
        "http.auth: \"none\" (no authentication) is only allowed on a loopback address \
         (127.0.0.0/8 or ::1), not on 0.0.0.0:8080: use bearer tokens (set http.auth to \
         \"bearer\"), or set http.trust_network to true if only a private tunnel network can \
         reach this address"
    );
    assert_eq!(
        message(env_http(
            &fx,
            &[
                ("SERVERFS_HTTP_BIND", "[::]:8080"),
                ("SERVERFS_HTTP_AUTH", "none"),
                ("SERVERFS_HTTP_TRUST_NETWORK", "false"),
            ]
        )),
        "SERVERFS_HTTP_AUTH: \"none\" (no authentication) is only allowed on a loopback address \
         (127.0.0.0/8 or ::1), not on [::]:8080: use bearer tokens (set SERVERFS_HTTP_AUTH to \
         \"bearer\"), or set SERVERFS_HTTP_TRUST_NETWORK to true if only a private tunnel \
         network can reach this address"
    );
    for ok in [
        "bind = \"127.0.0.1:8080\"\nauth = \"none\"",
        "bind = \"127.1.2.3:8080\"\nauth = \"none\"",
        "bind = \"[::1]:8080\"\nauth = \"none\"",
        "bind = \"0.0.0.0:8080\"\nauth = \"none\"\ntrust_network = true",
        "bind = \"0.0.0.0:8080\"\nauth = \"bearer\"",
        "bind = \"0.0.0.0:8080\"",
        // No listener configured: `effective` checks a --http address later.
        "auth = \"none\"",
    ] {
        let config = toml_http(&fx, ok, &[("HOME", "/h")]);
        assert!(config.is_ok(), "{ok:?}: {config:?}");
    }
}

#[test]
fn a_configured_bearer_listener_needs_an_absolute_token_file() {
    let fx = Fixture::new();
    assert_eq!(
        message(toml_http(&fx, "bind = \"127.0.0.1:8080\"", &[])),
        "http.token_file: must be an absolute path while http.auth is \"bearer\", got \
         \"serverfs/tokens.json\" (set it, or set XDG_CONFIG_HOME or HOME for the default)"
    );
    assert!(toml_http(&fx, "bind = \"127.0.0.1:8080\"\nauth = \"none\"", &[]).is_ok());
    assert!(
        toml_http(
            &fx,
            "bind = \"127.0.0.1:8080\"\ntoken_file = \"t.json\"",
            &[]
        )
        .is_ok()
    );
    assert_eq!(
        message(cli_http(&fx, &[("SERVERFS_HTTP_BIND", "127.0.0.1:1")])),
        "SERVERFS_TOKEN_FILE: must be an absolute path while SERVERFS_HTTP_AUTH is \"bearer\", \
         got \"serverfs/tokens.json\" (set it, or set XDG_CONFIG_HOME or HOME for the default)"
    );
}

// --- effective() -------------------------------------------------------------

#[test]
fn effective_allows_no_auth_on_loopback() {
    for bind in [
        "127.0.0.1:8080",
        "127.9.9.9:1",
        "[::1]:8080",
        "[::ffff:127.0.0.1]:80",
    ] {
        let effective = none_on(bind).effective(None).unwrap();
        assert_eq!(
            effective,
            EffectiveHttp {
                bind: addr(bind),
                auth: HttpAuth::None,
                allowed_hosts: Vec::new(),
                allowed_origins: Vec::new(),
                token_file: PathBuf::from("/t/tokens.json"),
                oauth: crate::OAuthSettings::with_defaults(&PathBuf::from("/t/tokens.json")),
                request_timeout_ms: 120_000,
                max_concurrent_requests: 64,
                shutdown_grace_ms: 10_000,
                connections: ConnectionLimits::default(),
            }
        );
    }
}

#[test]
fn effective_refuses_no_auth_on_a_public_address() {
    for bind in ["0.0.0.0:8080", "[::]:8080", "192.168.1.10:80"] {
        let err = none_on(bind).effective(None).unwrap_err();
        assert_eq!(err.key().as_deref(), Some("http.auth"));
        assert_eq!(
            err.to_string(),
            format!(
                "http.auth: \"none\" (no authentication) is only allowed on a loopback address \
                 (127.0.0.0/8 or ::1), not on {bind}: use bearer tokens (set http.auth to \
                 \"bearer\"), or set http.trust_network to true if only a private tunnel \
                 network can reach this address"
            )
        );
    }
}

#[test]
fn effective_allows_no_auth_anywhere_on_a_trusted_network() {
    let trusted = HttpSettings {
        trust_network: true,
        ..none_on("0.0.0.0:8080")
    };
    assert_eq!(trusted.effective(None).unwrap().bind, addr("0.0.0.0:8080"));
}

#[test]
fn effective_allows_bearer_anywhere() {
    let bearer = HttpSettings {
        bind: Some(addr("0.0.0.0:443")),
        allowed_hosts: vec!["mcp.example.com".to_owned()],
        allowed_origins: vec!["https://chatgpt.com".to_owned()],
        request_timeout_ms: 5_000,
        max_concurrent_requests: 3,
        shutdown_grace_ms: 0,
        ..settings("/srv/tokens.json")
    };
    assert_eq!(
        bearer.effective(None).unwrap(),
        EffectiveHttp {
            bind: addr("0.0.0.0:443"),
            auth: HttpAuth::Bearer,
            allowed_hosts: vec!["mcp.example.com".to_owned()],
            allowed_origins: vec!["https://chatgpt.com".to_owned()],
            token_file: PathBuf::from("/srv/tokens.json"),
            oauth: crate::OAuthSettings::with_defaults(&PathBuf::from("/srv/tokens.json")),
            request_timeout_ms: 5_000,
            max_concurrent_requests: 3,
            shutdown_grace_ms: 0,
            connections: ConnectionLimits::default(),
        }
    );
    for bind in ["[::]:1", "10.1.2.3:8080", "127.0.0.1:8080"] {
        assert!(bearer.effective(Some(addr(bind))).is_ok(), "{bind}");
    }
}

#[test]
fn the_cli_bind_wins_over_the_configured_one() {
    let configured = none_on("127.0.0.1:8080");
    assert_eq!(
        configured.effective(Some(addr("[::1]:9090"))).unwrap().bind,
        addr("[::1]:9090")
    );
    // The rule is checked for the address really bound, not the file's.
    let err = configured
        .effective(Some(addr("0.0.0.0:9090")))
        .unwrap_err();
    assert_eq!(err.key().as_deref(), Some("http.auth"));
    assert!(err.to_string().contains("not on 0.0.0.0:9090"), "{err}");
    // And a CLI bind needs no configured one.
    let unbound = HttpSettings {
        bind: None,
        ..none_on("127.0.0.1:1")
    };
    assert_eq!(
        unbound.effective(Some(addr("127.0.0.1:0"))).unwrap().bind,
        addr("127.0.0.1:0")
    );
}

#[test]
fn effective_without_any_bind_is_an_error() {
    let err = settings("/t").effective(None).unwrap_err();
    assert_eq!(err, ConfigError::NoHttpBind);
    assert_eq!(err.key(), None);
    assert_eq!(
        err.to_string(),
        "no HTTP bind address: pass --http ADDR or set [http] bind \
         (SERVERFS_HTTP_BIND in environment and --workdir modes)"
    );
}

#[test]
fn effective_bearer_needs_an_absolute_token_file() {
    let relative = settings("serverfs/tokens.json");
    let err = relative
        .effective(Some(addr("127.0.0.1:8080")))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "http.token_file: must be an absolute path while http.auth is \"bearer\", got \
         \"serverfs/tokens.json\" (set it, or set XDG_CONFIG_HOME or HOME for the default)"
    );
    let no_auth = HttpSettings {
        auth: HttpAuth::None,
        ..relative
    };
    assert!(no_auth.effective(Some(addr("127.0.0.1:8080"))).is_ok());
}

#[test]
fn effective_of_a_loaded_config() {
    let fx = Fixture::new();
    let config = toml_http(
        &fx,
        "bind = \"127.0.0.1:8181\"\nauth = \"none\"\nallowed_hosts = [\"box:8181\"]",
        &[("HOME", "/h")],
    )
    .unwrap();
    let effective = config.http.effective(None).unwrap();
    assert_eq!(
        (effective.bind, effective.auth, effective.allowed_hosts),
        (
            addr("127.0.0.1:8181"),
            HttpAuth::None,
            vec!["box:8181".to_owned()]
        )
    );
}

// --- the report ---------------------------------------------------------------

#[test]
fn the_report_shows_a_configured_listener() {
    let fx = Fixture::new();
    let config = toml_http(
        &fx,
        r#"
bind = "0.0.0.0:8443"
auth = "none"
trust_network = true
allowed_hosts = ["mcp.example.com", "tunnel:8443"]
allowed_origins = ["https://chatgpt.com"]
token_file = "/etc/serverfs/tokens.json"
request_timeout_ms = 60000
max_concurrent_requests = 8
shutdown_grace_ms = 0
max_connections = 9
header_timeout_ms = 1500
body_timeout_ms = 2500
max_sessions = 5
max_sessions_per_token = 2
session_idle_timeout_ms = 90000
"#,
        &[],
    )
    .unwrap();
    let report = config.policy_report();
    let section: Vec<&str> = report
        .lines()
        .skip_while(|line| *line != "http:")
        .take_while(|line| !line.starts_with("workdirs:"))
        .collect();
    assert_eq!(
        section,
        [
            "http:",
            "  bind: 0.0.0.0:8443",
            "  auth: none",
            "  trust network: on",
            "  extra allowed hosts (2): mcp.example.com, tunnel:8443",
            "  allowed origins (1): https://chatgpt.com",
            "  token file: /etc/serverfs/tokens.json",
            "  limits: request_timeout_ms 60000, max_concurrent_requests 8, shutdown_grace_ms 0",
            "  connections: max_connections 9, header_timeout_ms 1500, body_timeout_ms 2500",
            "  sessions: max_sessions 5, max_sessions_per_token 2, session_idle_timeout_ms 90000",
        ]
    );
}
