//! The Streamable HTTP transport: authentication, DNS-rebinding defences,
//! body limit, both protocol eras, concurrency and graceful shutdown.

use std::process::Stdio;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;

use crate::common::http::{HttpServer, call, create_token, raw_initialize, setup};
use crate::common::{TIMEOUT, binary};

#[tokio::test]
async fn bearer_tokens_gate_every_request() {
    let s = setup(&[]).await;
    let url = s.server.url.clone();
    let missing = raw_initialize(&url, &[], None).await;
    assert_eq!(missing.status(), 401);
    assert!(
        missing.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer"),
        "401 carries WWW-Authenticate: Bearer"
    );
    let token = create_token(&s.token_file, "laptop");
    let wrong = raw_initialize(
        &url,
        &[("authorization", "Bearer sfs_not-a-real-token")],
        None,
    )
    .await;
    assert_eq!(wrong.status(), 401);
    let basic = raw_initialize(&url, &[("authorization", &format!("Basic {token}"))], None).await;
    assert_eq!(basic.status(), 401);
    let ok = raw_initialize(&url, &[("authorization", &format!("Bearer {token}"))], None).await;
    assert_eq!(ok.status(), 200);

    // Every base tool works for a valid token.
    let client = s.server.client(Some(&token), None).await;
    let w = |extra: Value| {
        let mut v = json!({"workdir": "w"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    call(&client, "list_workdirs", json!({})).await;
    call(&client, "list_directory", w(json!({"path": "docs"}))).await;
    let found = call(&client, "find_files", w(json!({"pattern": "*.md"}))).await;
    assert_eq!(found["returned"], 1);
    let hits = call(&client, "search_text", w(json!({"query": "over http"}))).await;
    assert_eq!(hits["returned"], 1);
    let read = call(
        &client,
        "read_text_file",
        w(json!({"path": "docs/readme.md"})),
    )
    .await;
    assert_eq!(read["content"], "hello over http\n");
    call(&client, "stat_file", w(json!({"path": "docs/readme.md"}))).await;
    let resource = tokio::time::timeout(
        TIMEOUT,
        client.read_resource(rmcp::model::ReadResourceRequestParams::new(
            "serverfs://w/docs/readme.md".to_owned(),
        )),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(resource.contents.len(), 1);
    let created = call(
        &client,
        "create_text_file",
        w(json!({"path": "docs/new.txt", "content": "a\n"})),
    )
    .await;
    let edited = call(
        &client,
        "edit_text_file",
        w(json!({"path": "docs/new.txt",
        "expected_revision": created["revision"], "edits": [{"old_text": "a", "new_text": "b"}]})),
    )
    .await;
    call(
        &client,
        "delete_file",
        w(json!({"path": "docs/new.txt", "expected_revision": edited["revision"]})),
    )
    .await;
    let dir = call(&client, "create_directory", w(json!({"path": "tmpdir"}))).await;
    call(
        &client,
        "delete_directory",
        w(json!({"path": "tmpdir", "expected_revision": dir["revision"]})),
    )
    .await;
    let _ = client.cancel().await;

    // Revocation takes effect without a restart.
    let revoked = std::process::Command::new(binary())
        .args(["token", "revoke", "laptop", "--token-file"])
        .arg(&s.token_file)
        .env_clear()
        .status()
        .unwrap();
    assert!(revoked.success());
    let after = raw_initialize(&url, &[("authorization", &format!("Bearer {token}"))], None).await;
    assert_eq!(after.status(), 401);

    let log = s.server.stderr();
    assert!(
        log.contains("\"token_name\":\"laptop\""),
        "the audit names the token"
    );
    let resource_line = log
        .lines()
        .find(|line| line.contains("\"tool\":\"read_resource\""))
        .expect("an audit line for the resource read");
    assert!(
        resource_line.contains("\"token_name\":\"laptop\""),
        "resource reads name their token too: {resource_line}"
    );
    assert!(!log.contains(&token), "the token itself is never logged");
}

#[tokio::test]
async fn host_origin_and_body_limits() {
    let s = setup(&[]).await;
    let token = create_token(&s.token_file, "t");
    let auth = format!("Bearer {token}");
    let bad_host = raw_initialize(
        &s.server.url,
        &[("authorization", &auth), ("host", "evil.example")],
        None,
    )
    .await;
    assert_eq!(bad_host.status(), 403, "disallowed Host");
    let bad_origin = raw_initialize(
        &s.server.url,
        &[("authorization", &auth), ("origin", "https://evil.example")],
        None,
    )
    .await;
    assert_eq!(bad_origin.status(), 403, "disallowed Origin");
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"pad\":\"{}\"}}",
        "x".repeat(5 << 20)
    );
    let too_big = raw_initialize(&s.server.url, &[("authorization", &auth)], Some(huge)).await;
    assert_eq!(too_big.status(), 413, "oversized body");
    let health = tokio::time::timeout(
        TIMEOUT,
        reqwest::get(s.server.url.replace("/mcp", "/healthz")),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(
        health.text().await.unwrap(),
        "ok\n",
        "health reveals nothing"
    );
}

#[tokio::test]
async fn both_protocol_eras_work() {
    let s = setup(&[]).await;
    let token = create_token(&s.token_file, "t");
    for version in [
        Some(ProtocolVersion::V_2025_06_18),
        Some(ProtocolVersion::V_2025_03_26),
        None,
    ] {
        let client = s.server.client(Some(&token), version.clone()).await;
        let negotiated = client.peer_info().map(|i| i.protocol_version.to_string());
        let result = call(
            &client,
            "read_text_file",
            json!({"workdir": "w", "path": "docs/readme.md"}),
        )
        .await;
        assert_eq!(
            result["content"], "hello over http\n",
            "{version:?} negotiated {negotiated:?}"
        );
        let _ = client.cancel().await;
    }
}

#[tokio::test]
async fn fifty_clients_times_one_hundred_calls() {
    let s = setup(&[]).await;
    let token = create_token(&s.token_file, "load");
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..50 {
        let client = s.server.client(Some(&token), None).await;
        tasks.spawn(async move {
            for _ in 0..100 {
                call(
                    &client,
                    "stat_file",
                    json!({"workdir": "w", "path": "docs/readme.md"}),
                )
                .await;
            }
            let _ = client.cancel().await;
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("a client failed");
    }
}

#[tokio::test]
async fn sigterm_lets_in_flight_calls_finish_and_exits_zero() {
    let tree = TempWorkdir::new();
    // Enough files that a full search takes a noticeable time in debug builds.
    for d in 0..40 {
        for f in 0..100 {
            tree.file(
                &format!("d{d}/f{f}.txt"),
                "lorem ipsum dolor sit amet\n".repeat(40),
            );
        }
    }
    let tokens = tempfile::tempdir().unwrap();
    let token_file = tokens.path().join("tokens.json");
    let token = create_token(&token_file, "t");
    let spec = format!("w={}", tree.root().display());
    let token_env = token_file.display().to_string();
    let mut server = HttpServer::start(
        &["--http", "127.0.0.1:0", "--workdir", &spec],
        &[("SERVERFS_TOKEN_FILE", token_env.as_str())],
    )
    .await;
    // Every session first, so that the calls start together and the
    // check below is not late by three handshakes.
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(server.client(Some(&token), None).await);
    }
    let mut calls = tokio::task::JoinSet::new();
    for client in clients {
        calls.spawn(async move {
            call(
                &client,
                "search_text",
                json!({"workdir": "w", "query": "zzz-not-there", "case_sensitive": false}),
            )
            .await
        });
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        calls.try_join_next().is_none(),
        "the calls finished before SIGTERM; the test needs a bigger tree"
    );
    let pid = server.child.id().expect("pid");
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    while let Some(joined) = calls.join_next().await {
        let result = joined.expect("an in-flight call failed during shutdown");
        assert_eq!(result["returned"], 0);
    }
    let status = tokio::time::timeout(TIMEOUT, server.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "exit status {status:?}");
    // The stderr reader may still be draining the last lines.
    for _ in 0..40 {
        if server.stderr().contains("\"event\":\"shutdown\"") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no shutdown event logged:\n{}", server.stderr());
}

#[test]
fn a_sigterm_as_soon_as_the_port_accepts_is_a_graceful_stop() {
    // A supervisor may stop the server the moment its port accepts a
    // connection, before it has logged that it listens: the signal must
    // already have its handler then, and end the server with exit 0.
    let tree = TempWorkdir::new();
    let spec = format!("w={}", tree.root().display());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|free| free.local_addr())
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(binary())
        .args(["serve", "--http", &address, "--workdir", &spec])
        .env_clear()
        .env("SERVERFS_HTTP_AUTH", "none")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    // No pause between tries: the signal is meant to land as early as a
    // connection can prove the port is open.
    while std::net::TcpStream::connect(&address).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the server exited before listening: {status}");
        }
        assert!(started.elapsed() < TIMEOUT, "the port never opened");
        std::thread::yield_now();
    }
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{:?}; stderr:\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("\"event\":\"shutdown\""),
        "no shutdown event logged:\n{stderr}"
    );
}

#[tokio::test]
async fn auth_none_needs_loopback_or_trust_network() {
    let tree = TempWorkdir::new();
    let spec = format!("w={}", tree.root().display());
    let out = std::process::Command::new(binary())
        .args(["serve", "--http", "0.0.0.0:0", "--workdir", &spec])
        .env_clear()
        .env("SERVERFS_HTTP_AUTH", "none")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("serverfs: configuration error: "),
        "{stderr}"
    );

    // Loopback without auth is allowed.
    let server = HttpServer::start(
        &["--http", "127.0.0.1:0", "--workdir", &spec],
        &[("SERVERFS_HTTP_AUTH", "none")],
    )
    .await;
    let client = server.client(None, None).await;
    call(&client, "list_workdirs", json!({})).await;
    let _ = client.cancel().await;
}

/// A second, independent client: the official Python MCP SDK (installed by
/// `.ci/run`) lists the tools and reads a file over HTTP.
#[tokio::test]
async fn official_python_sdk_client_reads_a_file() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/smoke_client.py");
    if !crate::common::python_mcp_sdk() {
        return;
    }
    let s = setup(&[]).await;
    let token = create_token(&s.token_file, "python");
    let out = tokio::time::timeout(
        TIMEOUT,
        tokio::process::Command::new("python3")
            .arg(script)
            .args([s.server.url.as_str(), token.as_str(), "w", "docs/readme.md"])
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello over http\n");
    assert!(s.server.stderr().contains("\"token_name\":\"python\""));
}

/// The README's first command: `--new-token` prints the real URL and a
/// working token; running it again replaces the token.
#[tokio::test]
async fn quick_start_prints_a_working_token_and_replaces_it() {
    let tree = TempWorkdir::new();
    tree.file("a.txt", "quick\n");
    let home = tempfile::tempdir().unwrap();
    let spec = format!("demo={}", tree.root().display());
    let xdg = home.path().display().to_string();
    let args = [
        "--http",
        "127.0.0.1:0",
        "--workdir",
        &spec,
        "--new-token",
        "quickstart",
    ];
    let env = [("XDG_CONFIG_HOME", xdg.as_str())];
    // The URL and the token are on stdout; the token is in no line of the
    // log stream (stderr), which journald or `docker logs` would keep.
    async fn printed_token(server: &HttpServer) -> String {
        server
            .stdout_line(&format!("serverfs: serving {}", server.url))
            .await;
        let line = server.stdout_line("(shown once): ").await;
        let token = line.split("(shown once): ").nth(1).unwrap().to_owned();
        assert!(token.starts_with("sfs_"), "{line}");
        let log = server.stderr();
        assert!(!log.contains(&token), "the token is in the log: {log}");
        token
    }
    let first = HttpServer::start(&args, &env).await;
    let token = printed_token(&first).await;
    let client = first.client(Some(&token), None).await;
    let read = call(
        &client,
        "read_text_file",
        json!({"workdir": "demo", "path": "a.txt"}),
    )
    .await;
    assert_eq!(read["content"], "quick\n");
    let _ = client.cancel().await;
    drop(first);

    let second = HttpServer::start(&args, &env).await;
    let replacement = printed_token(&second).await;
    assert_ne!(replacement, token);
    let old = raw_initialize(
        &second.url,
        &[("authorization", &format!("Bearer {token}"))],
        None,
    )
    .await;
    assert_eq!(old.status(), 401, "the replaced token no longer works");
    let new = raw_initialize(
        &second.url,
        &[("authorization", &format!("Bearer {replacement}"))],
        None,
    )
    .await;
    assert_eq!(new.status(), 200);
    assert!(home.path().join("serverfs/tokens.json").exists());
    let log = second.stderr();
    assert!(
        !log.contains(&replacement),
        "the token is in the log: {log}"
    );
}

/// `--new-token` on an address that cannot be bound: the server exits
/// without touching the token file — neither the old token of that name
/// revoked nor a new one that nobody was shown left behind — and prints no
/// token anywhere.
#[tokio::test]
async fn quick_start_on_a_taken_port_leaves_the_token_file_as_it_was() {
    let tree = TempWorkdir::new();
    let home = tempfile::tempdir().unwrap();
    let spec = format!("demo={}", tree.root().display());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let token_file = home.path().join("serverfs/tokens.json");
    let run = || {
        std::process::Command::new(binary())
            .args(["serve", "--http", &address, "--workdir", &spec])
            .args(["--new-token", "quickstart"])
            .env_clear()
            .env("XDG_CONFIG_HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let assert_refused = |out: &std::process::Output| {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("cannot listen on"), "{stderr}");
        assert!(!stderr.contains("sfs_"), "{stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    };

    // No token file yet: none afterwards either.
    assert_refused(&run());
    assert!(
        !token_file.exists(),
        "a token was stored for a server that never listened"
    );

    // A file holding the name already (and another token): byte for byte
    // the same afterwards, and the old token still works.
    let old = create_token(&token_file, "quickstart");
    create_token(&token_file, "other");
    let before = std::fs::read(&token_file).unwrap();
    assert_refused(&run());
    assert_eq!(std::fs::read(&token_file).unwrap(), before);
    drop(taken);
    let xdg = home.path().display().to_string();
    let s = HttpServer::start(
        &["--http", "127.0.0.1:0", "--workdir", &spec],
        &[("XDG_CONFIG_HOME", xdg.as_str())],
    )
    .await;
    let still = raw_initialize(&s.url, &[("authorization", &format!("Bearer {old}"))], None).await;
    assert_eq!(still.status(), 200, "the old token was revoked");
}

/// `doctor` beside a running server: the bind address is busy, but it is
/// ServerFS that holds it, which is a warning, not a failure.
#[tokio::test]
async fn doctor_recognises_a_running_server_on_the_bind_address() {
    let s = setup(&[]).await;
    create_token(&s.token_file, "t");
    let address = s
        .server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let spec = format!("w={}", s.tree.root().display());
    let out = std::process::Command::new(binary())
        .args(["doctor", "--http", &address, "--workdir", &spec])
        .env_clear()
        .env("SERVERFS_TOKEN_FILE", &s.token_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("WARN http bind") && stdout.contains("running ServerFS"),
        "{stdout}"
    );
}

/// Configured hosts and origins are admitted; others still are not.
#[tokio::test]
async fn configured_hosts_and_origins_are_admitted() {
    let s = setup(&[
        ("SERVERFS_HTTP_ALLOWED_HOSTS", "mcp.example:8443"),
        ("SERVERFS_HTTP_ALLOWED_ORIGINS", "https://app.example"),
    ])
    .await;
    let token = create_token(&s.token_file, "t");
    let auth = format!("Bearer {token}");
    let ok = raw_initialize(
        &s.server.url,
        &[
            ("authorization", &auth),
            ("host", "mcp.example:8443"),
            ("origin", "https://app.example"),
        ],
        None,
    )
    .await;
    assert_eq!(ok.status(), 200);
    let other_origin = raw_initialize(
        &s.server.url,
        &[
            ("authorization", &auth),
            ("origin", "https://app.example.evil"),
        ],
        None,
    )
    .await;
    assert_eq!(other_origin.status(), 403);
    let other_host = raw_initialize(
        &s.server.url,
        &[("authorization", &auth), ("host", "mcp.example.evil")],
        None,
    )
    .await;
    assert_eq!(other_host.status(), 403);
}

/// A bad `--new-token` name, or a token file shared with others, stops the
/// start-up with one configuration line (exit 2) and nothing served.
#[tokio::test]
async fn bad_quick_start_token_or_shared_token_file_refuses_to_start() {
    let tree = TempWorkdir::new();
    let home = tempfile::tempdir().unwrap();
    let spec = format!("demo={}", tree.root().display());
    let run = |extra: &[&str], env: &[(&str, String)]| {
        let mut command = std::process::Command::new(binary());
        command
            .args(["serve", "--http", "127.0.0.1:0", "--workdir", &spec])
            .args(extra)
            .env_clear()
            .env("XDG_CONFIG_HOME", home.path());
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().unwrap()
    };
    let bad_name = run(&["--new-token", "bad name"], &[]);
    assert_eq!(bad_name.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad_name.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("invalid token name"), "{stderr}");

    let shared = home.path().join("shared.json");
    create_token(&shared, "x");
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let refused = run(
        &[],
        &[("SERVERFS_TOKEN_FILE", shared.display().to_string())],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("chmod 600"));
}
