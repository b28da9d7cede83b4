//! The OAuth state store and the limits of the endpoints anyone may call
//! (issue 27, items 2 and 3), against the real server: registrations are
//! bounded, rate-limited per source and must be JSON; unfinished clients
//! expire; the owner's open consent page survives a flood of
//! authorization requests; the state file stays small under a
//! registration flood; a JSON state file of an earlier version is
//! imported with its grants, and `serverfs oauth` works beside the
//! running server.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::oauth::{LOOPBACK_CALLBACK, OAuth, assert_described, client, pkce};
use crate::common::TIMEOUT;

/// `POST /register` with `body` sent as `content_type`: status, headers
/// and the JSON answer.
async fn register_raw(
    origin: &str,
    content_type: &str,
    body: String,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = client()
        .post(format!("{origin}/register"))
        .header("content-type", content_type)
        .body(body)
        .send();
    let response = tokio::time::timeout(TIMEOUT, response)
        .await
        .unwrap()
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (
        status,
        headers,
        response.json().await.unwrap_or(Value::Null),
    )
}

/// A registration of `uris` (all loopback) named `name`.
fn registration(uris: &[String], name: &str) -> String {
    json!({"redirect_uris": uris, "client_name": name}).to_string()
}

fn loopback_uris(count: usize, length: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            let base = format!("http://127.0.0.1:9/cb{i}/");
            let pad = length.saturating_sub(base.len());
            base + &"a".repeat(pad)
        })
        .collect()
}

/// Bytes of the state database and its write-ahead log.
fn state_bytes(s: &OAuth) -> u64 {
    let file = s.state_file();
    let name = file.file_name().unwrap().to_str().unwrap().to_owned();
    std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(Result::unwrap)
        .filter(|e| e.file_name().to_str().unwrap().starts_with(&name))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[tokio::test]
async fn a_registration_beyond_its_bounds_is_refused() {
    let s = OAuth::start(&[]).await;
    let cases = [
        ("nine redirect URIs", registration(&loopback_uris(9, 40), "c")),
        ("a 600-byte redirect URI", registration(&loopback_uris(1, 600), "c")),
        ("5 URIs of 500 bytes", registration(&loopback_uris(5, 500), "c")),
        ("a 300-byte name", registration(&loopback_uris(1, 40), &"n".repeat(300))),
        (
            "a 10 KiB body",
            json!({"redirect_uris": loopback_uris(1, 40), "software_statement": "x".repeat(10_240)})
                .to_string(),
        ),
    ];
    for (what, body) in cases {
        let (status, _, answer) = register_raw(&s.origin, "application/json", body).await;
        assert_eq!(status, 400, "{what}: {answer}");
        assert_eq!(answer["error"], "invalid_client_metadata", "{what}");
        assert_described(&answer, "OAUTH_CLIENT_METADATA_TOO_LARGE");
    }
    // Within every bound at once: accepted.
    let (status, _, answer) = register_raw(
        &s.origin,
        "application/json",
        registration(&loopback_uris(8, 250), &"n".repeat(200)),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
}

#[tokio::test]
async fn registrations_from_one_source_are_rate_limited() {
    let s = OAuth::start(&[]).await;
    for i in 0..10 {
        let (status, _, answer) = register_raw(
            &s.origin,
            "application/json",
            registration(&loopback_uris(1, 40), "c"),
        )
        .await;
        assert_eq!(status, 201, "registration {i}: {answer}");
    }
    let (status, headers, answer) = register_raw(
        &s.origin,
        "application/json",
        registration(&loopback_uris(1, 40), "c"),
    )
    .await;
    assert_eq!(status, 429, "{answer}");
    assert_eq!(answer["error"], "temporarily_unavailable");
    assert_described(&answer, "OAUTH_RATE_LIMITED");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=6).contains(&retry), "Retry-After {retry}");
}

#[tokio::test]
async fn a_registration_must_be_sent_as_json() {
    let s = OAuth::start(&[]).await;
    let body = || registration(&loopback_uris(1, 40), "c");
    // What a cross-site form or `fetch` without a preflight can send.
    for content_type in [
        "text/plain",
        "text/plain; charset=utf-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
    ] {
        let (status, _, answer) = register_raw(&s.origin, content_type, body()).await;
        assert_eq!(status, 415, "{content_type}: {answer}");
        assert_described(&answer, "OAUTH_CONTENT_TYPE_UNSUPPORTED");
    }
    let untyped = client()
        .post(format!("{}/register", s.origin))
        .body(body())
        .send();
    let untyped = tokio::time::timeout(TIMEOUT, untyped)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(untyped.status().as_u16(), 415, "no Content-Type");
    for content_type in ["application/json", "Application/JSON ; charset=utf-8"] {
        let (status, _, answer) = register_raw(&s.origin, content_type, body()).await;
        assert_eq!(status, 201, "{content_type}: {answer}");
    }
}

#[tokio::test]
async fn an_unfinished_client_is_listed_with_its_expiry_and_a_granted_one_without() {
    let s = OAuth::start(&[]).await;
    let granted = s.grant("read").await;
    let (status, _, answer) = register_raw(
        &s.origin,
        "application/json",
        registration(&loopback_uris(1, 40), "idle"),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let idle = answer["client_id"].as_str().unwrap().to_owned();
    let issued_at = answer["client_id_issued_at"].as_i64().unwrap();
    let (ok, listed, err) = s.oauth_cli(&["list"]);
    assert!(ok, "{err}");
    let line_of = |id: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(&format!("client {id}\t")))
            .unwrap_or_else(|| panic!("no {id} in {listed}"))
            .to_owned()
    };
    // Registered at `issued_at` (whole seconds), so it expires 15 minutes
    // later: the listed time is one of two seconds.
    let idle_line = line_of(&idle);
    let expiry = |secs: i64| format!("expires {} unless approved", rfc3339(secs));
    assert!(
        idle_line.contains(&expiry(issued_at + 900))
            || idle_line.contains(&expiry(issued_at + 901)),
        "{idle_line}"
    );
    assert!(!line_of(&granted.client_id).contains("expires"), "{listed}");
}

/// Epoch seconds as the CLI prints them (RFC 3339, UTC).
fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[tokio::test]
async fn the_owners_consent_page_survives_a_flood_of_authorization_requests() {
    let s = OAuth::start(&[]).await;
    let client_id = s.register(LOOPBACK_CALLBACK).await;
    let (_, challenge) = pkce();
    let request = s.request(&client_id, LOOPBACK_CALLBACK, &challenge, "read");
    let owners = s.authorize_page(&request).await;
    assert_eq!(owners.status, 200, "{}", owners.body);
    let mut refused = 0;
    for _ in 0..300 {
        let page = s.authorize_page(&request).await;
        if page.status != 200 {
            page.assert_code(429, "OAUTH_TOO_MANY_PENDING");
            refused += 1;
        }
    }
    assert_eq!(
        refused,
        300 - 15,
        "16 open per source, the owner's among them"
    );
    s.approve(&owners).await;
}

#[tokio::test]
async fn a_registration_flood_leaves_the_state_file_small_and_grants_working() {
    let s = OAuth::start(&[]).await;
    let grant = s.grant("read").await;
    // 400 registrations of about 60 KiB (under the endpoints' 64 KiB body
    // limit), from 8 concurrent clients.
    let body = registration(&loopback_uris(58, 1_000), "flood");
    assert!((58_000..65_536).contains(&body.len()), "{}", body.len());
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (origin, body) = (s.origin.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut stored = 0;
            for _ in 0..50 {
                let (status, _, _) = register_raw(&origin, "application/json", body.clone()).await;
                assert!(matches!(status, 201 | 400 | 429), "{status}");
                stored += usize::from(status == 201);
            }
            stored
        }));
    }
    let mut stored = 0;
    for task in tasks {
        stored += task.await.unwrap();
    }
    assert_eq!(stored, 0, "each is over the registration bounds");
    let bytes = state_bytes(&s);
    assert!(bytes < 1 << 20, "state file and log: {bytes} bytes");
    // The legitimate client carries on.
    let (status, body) = s.refresh(&grant.client_id, &grant.refresh).await;
    assert_eq!(status, 200, "{body}");
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn a_grant_from_the_json_state_file_still_refreshes_and_the_cli_works_beside_the_server() {
    use std::os::unix::fs::OpenOptionsExt;
    let tree = serverfs_testkit::TempWorkdir::new();
    tree.file("a.txt", "hello\n");
    let dir = tempfile::tempdir().unwrap();
    // What an earlier version wrote: a grant with a replaced refresh token
    // behind it, its client and an unused approval code.
    let resource = "http://localhost:1/mcp";
    let far = 4_000_000_000_000_u64;
    let old = json!({
        "version": 1,
        "clients": [{
            "client_id": "sfc_old", "client_name": "old client",
            "redirect_uris": [LOOPBACK_CALLBACK], "created_ms": 1_000
        }],
        "grants": [{
            "id": "oldgrant01", "client_id": "sfc_old", "client_name": "old client",
            "scopes": "read", "resource": resource, "approved_by": "token:owner",
            "created_ms": 1_000, "code_sha256": sha256_hex("sfa_old"),
            "access_sha256": sha256_hex("sfo_old-access"), "access_expires_ms": far,
            "refresh_sha256": sha256_hex("sfr_old-refresh"), "refresh_expires_ms": far,
            "retired_refresh_sha256": [sha256_hex("sfr_older-refresh")]
        }],
        "approval_codes": []
    });
    let json_file = dir.path().join("oauth.json");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&json_file)
        .unwrap();
    std::io::Write::write_all(&mut file, old.to_string().as_bytes()).unwrap();
    drop(file);
    let s = OAuth::start_in(tree, dir, &[("SERVERFS_HTTP_OAUTH_PUBLIC_URL", resource)]).await;
    assert!(s.state_file().exists(), "the database is in place");
    assert!(!json_file.exists());
    let aside = std::fs::read_to_string(s.dir.path().join("oauth.json.imported")).unwrap();
    assert!(aside.contains("oldgrant01"), "kept aside unchanged");
    assert_eq!(s.list_status("sfo_old-access").await, 200);
    let (status, fresh) = s.refresh("sfc_old", "sfr_old-refresh").await;
    assert_eq!(status, 200, "{fresh}");
    let access = fresh["access_token"].as_str().unwrap();
    assert_eq!(s.list_status(access).await, 200);
    assert_eq!(s.list_status("sfo_old-access").await, 401, "rotated away");
    // The CLI beside the running server.
    let (ok, listed, err) = s.oauth_cli(&["list"]);
    assert!(ok, "{err}");
    assert!(
        listed.lines().any(|l| l.starts_with("oldgrant01\t")),
        "{listed}"
    );
    let (ok, _, err) = s.oauth_cli(&["revoke", "oldgrant01"]);
    assert!(ok, "{err}");
    assert_eq!(
        s.list_status(access).await,
        401,
        "revoked at the next request"
    );
    let (ok, _, err) = s.oauth_cli(&["revoke", "sfc_old"]);
    assert!(ok, "the client's registration: {err}");
}
