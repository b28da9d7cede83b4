//! The papercuts a newcomer hit (issue 17): the token commands working
//! before any workdir is configured, the quick start saying that it
//! revoked an earlier token, and a session `DELETE` answered in a way the
//! Python SDK takes as success.

use serde_json::json;
use serverfs_testkit::TempWorkdir;

use crate::common::{TIMEOUT, binary};
use crate::common_clients::{HttpServe, create_token};

/// `serverfs token ARGS` with only `env`: its status, stdout and stderr.
fn token_command(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = std::process::Command::new(binary())
        .arg("token")
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("run serverfs token");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn token_commands_need_no_workdir() {
    // As the README writes them (create, list, revoke): no --config, no --workdir, no variable
    // naming a workdir. The token lands in the default file, the one a
    // `serve --workdir … --http` started later reads.
    let home = tempfile::tempdir().unwrap();
    let home_dir = home.path().to_str().unwrap();
    let (ok, token, stderr) = token_command(&["create", "laptop"], &[("HOME", home_dir)]);
    assert!(ok, "{stderr}");
    let default = home.path().join(".config/serverfs/tokens.json");
    assert!(default.is_file(), "{stderr}");
    let (ok, listed, stderr) = token_command(&["list"], &[("HOME", home_dir)]);
    assert!(
        ok && listed.starts_with("laptop\tcreated "),
        "{listed}{stderr}"
    );

    let t = TempWorkdir::new();
    let spec = format!("demo={}", t.root().display());
    let server = HttpServe::start(&["--workdir", &spec], &[("HOME", home_dir)]).await;
    let status = |token: String| {
        let url = server.url.clone();
        async move {
            let list = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}});
            tokio::time::timeout(
                TIMEOUT,
                reqwest::Client::new()
                    .post(url)
                    .bearer_auth(token)
                    .header("accept", "application/json, text/event-stream")
                    .json(&list)
                    .send(),
            )
            .await
            .unwrap()
            .unwrap()
            .status()
        }
    };
    assert_eq!(status(token.trim().to_owned()).await, 200);
    assert_eq!(status("sfs_not-a-token".to_owned()).await, 401);

    // Revoked the same way, still with no workdir: the token is gone from
    // the list, and the running server refuses it.
    let (ok, _, stderr) = token_command(&["revoke", "laptop"], &[("HOME", home_dir)]);
    assert!(ok, "{stderr}");
    let (ok, listed, stderr) = token_command(&["list"], &[("HOME", home_dir)]);
    assert!(ok && !listed.contains("laptop"), "{listed}{stderr}");
    assert_eq!(status(token.trim().to_owned()).await, 401);
    // Revoking a name that is not there says so and fails.
    let (ok, _, stderr) = token_command(&["revoke", "laptop"], &[("HOME", home_dir)]);
    assert!(!ok && stderr.contains("laptop"), "{stderr}");

    // XDG_CONFIG_HOME moves the default, as it does for `serve`;
    // SERVERFS_TOKEN_FILE and --token-file name the file outright.
    let xdg = tempfile::tempdir().unwrap();
    let env = [
        ("HOME", home_dir),
        ("XDG_CONFIG_HOME", xdg.path().to_str().unwrap()),
    ];
    assert!(token_command(&["create", "xdg"], &env).0);
    assert!(xdg.path().join("serverfs/tokens.json").is_file());
    let named = home.path().join("named.json");
    let env = [("SERVERFS_TOKEN_FILE", named.to_str().unwrap())];
    assert!(token_command(&["create", "by-env"], &env).0);
    let flag = home.path().join("flag.json");
    assert!(
        token_command(
            &["create", "by-flag", "--token-file", flag.to_str().unwrap()],
            &[]
        )
        .0
    );
    for (file, name) in [(&named, "by-env"), (&flag, "by-flag")] {
        let (ok, listed, _) = token_command(&["list", "--token-file", file.to_str().unwrap()], &[]);
        assert!(ok && listed.starts_with(&format!("{name}\t")), "{listed}");
    }

    // With no default directory at all: a clear configuration error.
    let (ok, _, stderr) = token_command(&["list"], &[]);
    assert!(!ok);
    assert!(
        stderr.starts_with("serverfs: configuration error: no default token file")
            && stderr.contains("--token-file"),
        "{stderr}"
    );
}

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
