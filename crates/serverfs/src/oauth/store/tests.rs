use std::os::unix::fs::PermissionsExt;

use super::*;

const MINUTE: u64 = 60_000;

fn client(id: &str, created_ms: u64) -> RegisteredClient {
    RegisteredClient {
        client_id: id.to_owned(),
        client_name: "c".to_owned(),
        redirect_uris: vec!["http://127.0.0.1:9/cb".to_owned()],
        created_ms,
        expires_ms: None,
    }
}

fn grant(id: &str, client_id: &str, refresh: &str, refresh_expires_ms: u64) -> Grant {
    Grant {
        id: id.to_owned(),
        client_id: client_id.to_owned(),
        client_name: "c".to_owned(),
        scopes: "read".to_owned(),
        resource: "http://127.0.0.1:1/mcp".to_owned(),
        approved_by: "token:owner".to_owned(),
        created_ms: 0,
        code_sha256: format!("code-{id}"),
        access_sha256: format!("access-{id}"),
        access_expires_ms: refresh_expires_ms,
        refresh_sha256: refresh.to_owned(),
        refresh_expires_ms,
        retired_refresh_sha256: Vec::new(),
    }
}

fn rotation(refresh: &str) -> Rotation {
    Rotation {
        scopes: "read".to_owned(),
        access_sha256: format!("access-{refresh}"),
        access_expires_ms: 1_000 * MINUTE,
        refresh_sha256: refresh.to_owned(),
        refresh_expires_ms: 1_000 * MINUTE,
    }
}

#[test]
fn the_file_is_private_and_what_expired_is_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/oauth.sqlite3");
    let store = OAuthStore::new(path.clone());
    assert!(store.list(0).unwrap().grants.is_empty());
    let code = ApprovalCode {
        sha256: "a".repeat(64),
        expires_ms: 2_000,
    };
    store.add_approval_code(&code, 1_000).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let log = dir.path().join("sub/oauth.sqlite3-wal");
    let log_mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(log_mode, 0o600, "the write-ahead log too");
    let dir_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
    assert_eq!(store.list(1_500).unwrap().approval_codes.len(), 1);
    assert!(store.list(3_000).unwrap().approval_codes.is_empty());
    assert!(!store.take_approval_code(&code.sha256, 3_000).unwrap());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let err = store.list(3_000).unwrap_err();
    assert!(err.to_string().contains("chmod 600"), "{err}");
}

#[test]
fn a_client_without_a_grant_lives_fifteen_minutes_one_with_a_grant_stays() {
    let dir = tempfile::tempdir().unwrap();
    let store = OAuthStore::new(dir.path().join("oauth.sqlite3"));
    let t0 = 10 * MINUTE;
    for id in ["idle", "busy"] {
        assert_eq!(
            store.register(&client(id, t0), 256, t0).unwrap(),
            Registered::Stored
        );
    }
    let listed = store.list(t0).unwrap();
    assert_eq!(
        listed.clients[0].expires_ms,
        Some(t0 + UNFINISHED_CLIENT_TTL_MS)
    );
    store
        .add_grant(&grant("g", "busy", "r1", t0 + 1_000 * MINUTE), t0 + MINUTE)
        .unwrap();
    let almost = t0 + UNFINISHED_CLIENT_TTL_MS - 1;
    assert!(store.client("idle", almost).unwrap().is_some());
    let expired = t0 + UNFINISHED_CLIENT_TTL_MS;
    assert!(
        store.client("idle", expired).unwrap().is_none(),
        "expired unfinished"
    );
    let kept = store
        .client("busy", expired + 100 * MINUTE)
        .unwrap()
        .unwrap();
    assert_eq!(kept.expires_ms, None);
    // A write prunes it from the file, not only from lookups.
    store
        .add_approval_code(
            &ApprovalCode {
                sha256: "x".into(),
                expires_ms: u64::MAX / 4,
            },
            expired,
        )
        .unwrap();
    let ids: Vec<String> = store
        .list(expired)
        .unwrap()
        .clients
        .into_iter()
        .map(|c| c.client_id)
        .collect();
    assert_eq!(ids, ["busy"]);
}

#[test]
fn a_full_client_table_evicts_the_oldest_unfinished_or_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let store = OAuthStore::new(dir.path().join("oauth.sqlite3"));
    store.register(&client("a", 1), 2, 1).unwrap();
    store.register(&client("b", 2), 2, 2).unwrap();
    store
        .add_grant(&grant("g", "b", "r", u64::MAX / 4), 3)
        .unwrap();
    assert_eq!(
        store.register(&client("c", 4), 2, 4).unwrap(),
        Registered::Stored
    );
    assert!(
        store.client("a", 4).unwrap().is_none(),
        "oldest unfinished evicted"
    );
    store
        .add_grant(&grant("h", "c", "s", u64::MAX / 4), 5)
        .unwrap();
    assert_eq!(
        store.register(&client("d", 6), 2, 6).unwrap(),
        Registered::Full
    );
}

#[test]
fn refresh_rotation_retires_a_bounded_number_of_hashes_and_detects_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let store = OAuthStore::new(dir.path().join("oauth.sqlite3"));
    store
        .add_grant(&grant("g", "c", "r0", 1_000 * MINUTE), 0)
        .unwrap();
    let rounds = MAX_RETIRED_PER_GRANT + 4;
    for i in 0..rounds {
        let outcome = store
            .rotate_refresh(&format!("r{i}"), 1, |_| {
                Ok::<_, ()>(rotation(&format!("r{}", i + 1)))
            })
            .unwrap();
        assert!(outcome.is_ok(), "round {i}");
    }
    let retired = |store: &OAuthStore| {
        store
            .with(|tx| {
                tx.query_row("SELECT count(*) FROM retired_refresh", [], |r| {
                    r.get::<_, i64>(0)
                })
            })
            .unwrap()
    };
    assert_eq!(
        retired(&store),
        i64::try_from(MAX_RETIRED_PER_GRANT).unwrap()
    );
    // The oldest hashes are forgotten: merely unknown now.
    let old = store
        .rotate_refresh("r0", 1, |_| Ok::<_, ()>(rotation("x")))
        .unwrap();
    assert!(matches!(old, Err(RotateRefusal::Unknown)));
    // A refusal of the caller's changes nothing.
    let current = format!("r{rounds}");
    let refused = store.rotate_refresh(&current, 1, |_| Err("no")).unwrap();
    assert!(matches!(refused, Err(RotateRefusal::Refused("no"))));
    // A recent one is a reuse: the grant and its hashes go.
    let recent = format!("r{}", rounds - 1);
    let reused = store
        .rotate_refresh(&recent, 1, |_| Ok::<_, ()>(rotation("y")))
        .unwrap();
    assert!(matches!(reused, Err(RotateRefusal::Reused(ref id)) if id == "g"));
    assert!(store.list(1).unwrap().grants.is_empty());
    assert_eq!(retired(&store), 0);
}

#[test]
fn retired_hashes_expire_with_the_token_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let store = OAuthStore::new(dir.path().join("oauth.sqlite3"));
    store
        .add_grant(&grant("g", "c", "r0", 10 * MINUTE), 0)
        .unwrap();
    store
        .rotate_refresh("r0", 1, |_| Ok::<_, ()>(rotation("r1")))
        .unwrap()
        .unwrap();
    // Past r0's own expiry it is unknown, not a reuse (and the grant lives).
    let late = store
        .rotate_refresh("r0", 10 * MINUTE, |_| Ok::<_, ()>(rotation("x")))
        .unwrap();
    assert!(matches!(late, Err(RotateRefusal::Unknown)));
    assert_eq!(store.list(10 * MINUTE).unwrap().grants.len(), 1);
}

#[test]
fn a_json_state_file_beside_is_imported_once_and_kept_aside() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("oauth.json");
    let mut old = grant("g", "c", "r1", u64::MAX / 4);
    old.retired_refresh_sha256 = vec!["r0".into()];
    let state = State {
        version: legacy::JSON_VERSION,
        clients: vec![client("c", 0), client("stale", 0)],
        grants: vec![old],
        approval_codes: vec![],
    };
    crate::private_file::write(&json, &serde_json::to_string(&state).unwrap()).unwrap();
    let store = OAuthStore::new(dir.path().join("oauth.sqlite3"));
    let seen = store.inspect().unwrap();
    assert_eq!(
        (seen.grants, seen.clients),
        (1, 2),
        "the doctor sees the JSON"
    );
    let listed = store.list(1).unwrap();
    assert_eq!(listed.grants.len(), 1);
    // The unfinished client is long expired; the one with a grant stays.
    assert_eq!(listed.clients.len(), 1);
    assert!(!json.exists());
    assert!(dir.path().join("oauth.json.imported").exists());
    let reused = store
        .rotate_refresh("r0", 1, |_| Ok::<_, ()>(rotation("x")))
        .unwrap();
    assert!(
        matches!(reused, Err(RotateRefusal::Reused(_))),
        "retired hashes came along"
    );
}

#[test]
fn a_json_state_file_at_the_path_itself_is_replaced_by_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    crate::private_file::write(
        &path,
        "{\"version\":1,\"approval_codes\":[{\"sha256\":\"h\",\"expires_ms\":9999999999999}]}",
    )
    .unwrap();
    let store = OAuthStore::new(path.clone());
    assert!(store.take_approval_code("h", 1).unwrap());
    assert!(
        std::fs::read(&path)
            .unwrap()
            .starts_with(b"SQLite format 3\0")
    );
    let kept = std::fs::read_to_string(dir.path().join("state.json.imported")).unwrap();
    assert!(kept.contains("\"h\""));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}
