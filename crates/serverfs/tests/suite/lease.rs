//! With the Agent Bridge enabled, every mutation takes the workdir's
//! cross-process writer lease; reads never do.

use serde_json::json;
use serverfs_lease::{ArtifactAccess, GuardRecord, GuardWrite, LeaseId};
use serverfs_testkit::TempWorkdir;

use crate::common::Server;

struct Setup {
    tree: TempWorkdir,
    state: tempfile::TempDir,
    server: Server,
}

impl Setup {
    fn lock_dir(&self) -> std::path::PathBuf {
        self.state.path().join("locks")
    }
}

async fn setup(bridge_enabled: bool) -> Setup {
    let tree = TempWorkdir::new();
    tree.file("a.txt", "one\n").dir("empty");
    let state = tempfile::tempdir().unwrap();
    // The lock directory is the Bridge's to create (prepare_artifacts).
    let config = state.path().join("serverfs.toml");
    std::fs::write(
        &config,
        format!(
            "[agent]\nenabled = {bridge_enabled}\nsocket = \"{state}/bridge.sock\"\nlock_dir = \"{state}/locks\"\n\n\
             [[workdirs]]\nalias = \"w\"\npath = \"{root}\"\nread_only = false\n",
            state = state.path().display(),
            root = tree.root().display()
        ),
    )
    .unwrap();
    let server = Server::start(&["--config", config.to_str().unwrap()], &[]).await;
    Setup {
        tree,
        state,
        server,
    }
}

fn id() -> LeaseId {
    LeaseId::alias("w").unwrap()
}

/// One call of each mutation tool; returns their codes (or "ok").
async fn mutation_codes(server: &Server) -> Vec<String> {
    let rev = server
        .ok("stat_file", json!({"workdir": "w", "path": "a.txt"}))
        .await["revision"]
        .clone();
    let calls = [
        (
            "create_text_file",
            json!({"workdir": "w", "path": "new.txt", "content": "x"}),
        ),
        (
            "edit_text_file",
            json!({"workdir": "w", "path": "a.txt", "expected_revision": rev,
            "edits": [{"old_text": "one", "new_text": "two"}], "dry_run": true}),
        ),
        (
            "delete_file",
            json!({"workdir": "w", "path": "a.txt", "expected_revision": "v1:0000000000000000"}),
        ),
        ("create_directory", json!({"workdir": "w", "path": "d2"})),
        (
            "delete_directory",
            json!({"workdir": "w", "path": "empty", "expected_revision": "v1:0000000000000000"}),
        ),
    ];
    let mut codes = Vec::new();
    for (tool, args) in calls {
        let result = server.call(tool, args).await;
        codes.push(if result.is_error == Some(true) {
            result.structured_content.unwrap()["error"]["code"]
                .as_str()
                .unwrap()
                .to_owned()
        } else {
            "ok".to_owned()
        });
    }
    codes
}

#[tokio::test]
async fn mutations_need_the_lease_and_reads_do_not() {
    let s = setup(true).await;
    // No lock artifact: fail closed, and nothing is written.
    assert_eq!(
        mutation_codes(&s.server).await,
        vec!["AGENT_LOCK_UNAVAILABLE"; 5]
    );
    assert!(!s.tree.path("new.txt").exists());
    s.server.ok("list_directory", json!({"workdir": "w"})).await;

    // The Bridge prepares the artifact: mutations proceed.
    serverfs_lease::prepare_artifacts(&s.lock_dir(), ArtifactAccess::Private, &[id()]).unwrap();
    let created = s
        .server
        .ok(
            "create_text_file",
            json!({"workdir": "w", "path": "new.txt", "content": "x"}),
        )
        .await;
    assert_eq!(created["created"], true);

    // An agent turn holds the lease: every mutation is refused, reads work.
    let held = serverfs_lease::hold(&s.lock_dir(), &id()).unwrap();
    assert_eq!(mutation_codes(&s.server).await, vec!["WORKDIR_BUSY"; 5]);
    let read = s
        .server
        .ok("read_text_file", json!({"workdir": "w", "path": "a.txt"}))
        .await;
    assert_eq!(read["content"], "one\n");
    s.server
        .ok("search_text", json!({"workdir": "w", "query": "one"}))
        .await;

    // The turn was interrupted: its recovery guard stays after the lease is
    // released, and mutations wait for the Bridge to reconcile.
    held.publish_guard(&GuardRecord::new("task-1", "fake", 0), GuardWrite::Create)
        .unwrap();
    drop(held);
    assert_eq!(
        mutation_codes(&s.server).await,
        vec!["WORKDIR_RECOVERY_REQUIRED"; 5]
    );
    let message = s
        .server
        .call("create_directory", json!({"workdir": "w", "path": "x"}))
        .await;
    let text = serde_json::to_string(&message).unwrap();
    assert!(
        !text.contains(&s.state.path().display().to_string()),
        "no host path in errors"
    );
}

#[tokio::test]
async fn without_the_bridge_no_lock_file_is_touched() {
    let s = setup(false).await;
    // Even a held lease is irrelevant when the Bridge is disabled.
    serverfs_lease::prepare_artifacts(&s.lock_dir(), ArtifactAccess::Private, &[id()]).unwrap();
    let _held = serverfs_lease::hold(&s.lock_dir(), &id()).unwrap();
    assert_eq!(
        mutation_codes(&s.server).await,
        ["ok", "ok", "REVISION_CONFLICT", "ok", "REVISION_CONFLICT"]
    );
}
