//! The papercuts a newcomer hit (issue 17): the quick start saying that it
//! revoked an earlier token, and a session `DELETE` answered in a way the
//! Python SDK takes as success.

use serde_json::json;
use serverfs_testkit::TempWorkdir;

use crate::common::TIMEOUT;
use crate::common_clients::{HttpServe, create_token};

#[tokio::test]
async fn a_quick_start_that_replaces_a_token_says_so() {
    let t = TempWorkdir::new();
    let home = tempfile::tempdir().unwrap();
    let xdg = home.path().to_str().unwrap().to_owned();
    let spec = format!("demo={}", t.root().display());
    let args = ["--workdir", spec.as_str(), "--new-token", "quickstart"];
    let env = [("XDG_CONFIG_HOME", xdg.as_str())];
    let replaced = |server: &HttpServe| {
        server
            .output()
            .iter()
            .any(|l| l.contains("replaces the earlier token \"quickstart\", which is revoked"))
    };

    let first = HttpServe::start(&args, &env).await;
    let printed = |server: &HttpServe| {
        server
            .output()
            .iter()
            .any(|l| l.contains("bearer token \"quickstart\" (shown once)"))
    };
    assert!(printed(&first), "{:?}", first.output());
    assert!(
        !replaced(&first),
        "nothing to replace yet: {:?}",
        first.output()
    );
    drop(first);

    let second = HttpServe::start(&args, &env).await;
    assert!(printed(&second), "{:?}", second.output());
    assert!(
        replaced(&second),
        "no word of the revoked token: {:?}",
        second.output()
    );
}

#[tokio::test]
async fn closing_a_session_answers_204() {
    let t = TempWorkdir::new();
    let tokens = tempfile::tempdir().unwrap();
    let file = tokens.path().join("tokens.json");
    let token = create_token(&file, "close");
    let spec = format!("demo={}", t.root().display());
    let server = HttpServe::start(
        &["--workdir", &spec],
        &[("SERVERFS_TOKEN_FILE", file.to_str().unwrap())],
    )
    .await;
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "close", "version": "1"}}});
    let opened = tokio::time::timeout(
        TIMEOUT,
        http.post(&server.url)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened
        .headers()
        .get("mcp-session-id")
        .expect("a legacy-era session")
        .to_str()
        .unwrap()
        .to_owned();
    let closed = tokio::time::timeout(
        TIMEOUT,
        http.delete(&server.url)
            .bearer_auth(&token)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(closed.status(), 204, "{:?}", closed.text().await);
    // The session is really gone: a request in it is refused.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let after = tokio::time::timeout(
        TIMEOUT,
        http.post(&server.url)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .json(&list)
            .send(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(after.status(), 404, "{:?}", after.text().await);
}
