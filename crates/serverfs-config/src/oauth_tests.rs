//! `[http.oauth]` and `SERVERFS_HTTP_OAUTH_*`: every bad value is refused
//! with the key that configured it.

use std::path::PathBuf;

use super::*;
use crate::test_support::Fixture;
use crate::{ConfigError, HttpAuth};

fn message(result: Result<crate::Config, ConfigError>) -> String {
    result.unwrap_err().to_string()
}

fn toml_with(http: &str) -> String {
    format!("[http]\n{http}\n[[workdirs]]\nalias = \"d\"\npath = \"d\"\n")
}

#[test]
fn oauth_settings_are_read_and_defaulted() {
    let fx = Fixture::new();
    fx.mkdir("d");
    let config = fx
        .toml(&toml_with(
            "auth = \"oauth\"\nbind = \"0.0.0.0:8080\"\ntoken_file = \"/srv/tokens.json\"\n\
             [http.oauth]\npublic_url = \"https://mcp.example.com/mcp\"\n\
             access_token_ttl_s = 600\n\
             [[http.oauth.clients]]\nclient_id = \"claude\"\nname = \"Claude\"\n\
             redirect_uris = [\"https://claude.ai/api/mcp/auth_callback\"]\n",
        ))
        .unwrap();
    let o = &config.http.oauth;
    assert_eq!(config.http.auth, HttpAuth::OAuth);
    assert_eq!(
        o.public_url.as_ref().unwrap().as_str(),
        "https://mcp.example.com/mcp"
    );
    assert_eq!(o.state_file, PathBuf::from("/srv/oauth.sqlite3"));
    assert_eq!(o.access_token_ttl_s, 600);
    assert_eq!(o.refresh_token_ttl_s, 2_592_000);
    assert_eq!(
        o.allowed_redirect_uris,
        HOSTED_CLIENT_CALLBACKS.map(str::to_owned)
    );
    assert_eq!(o.clients.len(), 1);
    assert_eq!(o.clients[0].name, "Claude");
    assert!(o.dynamic_registration && o.client_metadata_documents && o.accept_bearer_tokens);
    assert_eq!(o.external, None);
    let report = config.policy_report();
    assert!(
        report.contains("public url (canonical resource): https://mcp.example.com/mcp"),
        "{report}"
    );
    assert!(report.contains("client claude (Claude)"), "{report}");
}

#[test]
fn bad_oauth_values_name_their_key() {
    let fx = Fixture::new();
    fx.mkdir("d");
    let cases = [
        (
            "[http.oauth]\npublic_url = \"http://mcp.example.com/mcp\"",
            "http.oauth.public_url: expected the MCP URL clients use",
        ),
        (
            "[http.oauth]\npublic_url = \"https://mcp.example.com/other\"",
            "http.oauth.public_url: expected the MCP URL clients use",
        ),
        (
            "[http.oauth]\naccess_token_ttl_s = 5",
            "http.oauth.access_token_ttl_s: ",
        ),
        (
            "[http.oauth]\nallowed_redirect_uris = [\"https://ok.example/cb#frag\"]",
            "http.oauth.allowed_redirect_uris: expected absolute https redirect URIs",
        ),
        (
            "[[http.oauth.clients]]\nclient_id = \"a b\"\nname = \"x\"\nredirect_uris = [\"https://a.example/cb\"]",
            "http.oauth.clients[0].client_id: expected 1-128 letters",
        ),
        (
            "[[http.oauth.clients]]\nclient_id = \"a\"\nname = \"x\"\nredirect_uris = []",
            "http.oauth.clients[0].redirect_uris: expected at least one redirect URI",
        ),
        (
            "[[http.oauth.clients]]\nclient_id = \"a\"\nname = \"x\"\nredirect_uris = [\"https://a.example/cb\"]\n\
             [[http.oauth.clients]]\nclient_id = \"a\"\nname = \"y\"\nredirect_uris = [\"https://a.example/cb\"]",
            "http.oauth.clients[1].client_id: client_id \"a\" is already used by http.oauth.clients[0].client_id",
        ),
        (
            "[http.oauth]\nexternal_issuer = \"https://idp.example\"",
            "http.oauth.external_issuer: needs its signing keys",
        ),
        (
            "[http.oauth]\nexternal_jwks_url = \"https://idp.example/jwks\"",
            "http.oauth.external_jwks_url: is set but no external issuer is",
        ),
        (
            "[http.oauth]\nexternal_issuer = \"https://idp.example\"\nexternal_jwks_url = \"http://idp.example/jwks\"",
            "http.oauth.external_jwks_url: expected an https URL",
        ),
        (
            "[http.oauth]\nexternal_issuer = \"https://idp.example\"\nexternal_jwks_url = \"https://idp.example/jwks\"\nexternal_jwks_file = \"/k.json\"",
            "http.oauth.external_jwks_url: give the external issuer's keys either as a file or as a URL",
        ),
    ];
    for (oauth, expected) in cases {
        let text = toml_with(&format!("auth = \"oauth\"\n{oauth}\n"));
        let got = message(fx.toml(&text));
        assert!(got.starts_with(expected), "{oauth}\n=> {got}");
    }
}

#[test]
fn oauth_off_loopback_needs_a_public_url() {
    let fx = Fixture::new();
    fx.mkdir("d");
    let text =
        toml_with("auth = \"oauth\"\nbind = \"0.0.0.0:8080\"\ntoken_file = \"/t/tokens.json\"");
    let got = message(fx.toml(&text));
    assert!(
        got.starts_with("http.oauth.public_url: must be set when OAuth serves a non-loopback"),
        "{got}"
    );
    // On loopback the listening address is the canonical resource.
    let text =
        toml_with("auth = \"oauth\"\nbind = \"127.0.0.1:8080\"\ntoken_file = \"/t/tokens.json\"");
    let config = fx.toml(&text).unwrap();
    assert_eq!(
        config
            .http
            .oauth
            .canonical_resource("127.0.0.1:8080".parse().unwrap()),
        "http://127.0.0.1:8080/mcp"
    );
    // A --http address is checked at serve time the same way.
    let text = toml_with("auth = \"oauth\"\ntoken_file = \"/t/tokens.json\"");
    let config = fx.toml(&text).unwrap();
    let err = config
        .http
        .effective(Some("0.0.0.0:1".parse().unwrap()))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("http.oauth.public_url: must be set"),
        "{err}"
    );
}

#[test]
fn oauth_variables_are_read_and_checked() {
    let fx = Fixture::new();
    fx.slot(1);
    let base = [
        ("WORKDIR_01_ALIAS", "d"),
        ("SERVERFS_HTTP_AUTH", "oauth"),
        ("SERVERFS_HTTP_BIND", "0.0.0.0:8080"),
        ("SERVERFS_TOKEN_FILE", "/data/tokens.json"),
    ];
    let got = fx.env_config(&base).unwrap_err().to_string();
    assert!(
        got.starts_with("SERVERFS_HTTP_OAUTH_PUBLIC_URL: must be set"),
        "{got}"
    );
    let mut vars = base.to_vec();
    vars.push(("SERVERFS_HTTP_OAUTH_PUBLIC_URL", "https://h.example/mcp"));
    vars.push((
        "SERVERFS_HTTP_OAUTH_ALLOWED_REDIRECT_URIS",
        "https://a.example/cb,https://b.example/cb",
    ));
    vars.push(("SERVERFS_HTTP_OAUTH_DYNAMIC_REGISTRATION", "false"));
    let config = fx.env_config(&vars).unwrap();
    assert_eq!(
        config.http.oauth.allowed_redirect_uris,
        ["https://a.example/cb", "https://b.example/cb"]
    );
    assert!(!config.http.oauth.dynamic_registration);
    vars.push(("SERVERFS_HTTP_OAUTH_STATE_FILE", "relative.json"));
    let got = fx.env_config(&vars).unwrap_err().to_string();
    assert_eq!(
        got,
        "SERVERFS_HTTP_OAUTH_STATE_FILE: expected an absolute path, got \"relative.json\""
    );
}
