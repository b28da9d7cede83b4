//! Rolling back from agent mode to the base deployment (docs/deploy.md
//! §2.5 and §3.1): the same directories, the Bridge stopped, `[agent]`
//! off. The server is then the base one: the ten agent tools are gone, a
//! mutation succeeds while the lease is held elsewhere (so it takes none),
//! and the Bridge's lock directory is left exactly as it was.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::json;
use serverfs_lease::LeaseId;

use crate::common::Server;
use crate::common::agent::is_agent_tool;
use crate::common::bridge::AgentEnv;
use crate::common::surface::BASE_TOOLS;

/// Each entry of `dir`: name, inode, mode, size and modification time.
fn snapshot(dir: &Path) -> Vec<(String, u64, u32, u64, i64, i64)> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                meta.ino(),
                meta.mode(),
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec(),
            )
        })
        .collect();
    entries.sort();
    entries
}

fn tool_names(server: &Server) -> Vec<String> {
    server.tools().iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn rollback_restores_the_base_surface_and_takes_no_lease() {
    // Agent mode, as deployed: the Bridge serves, mutations take the lease.
    let env = AgentEnv::builder().build();
    let mut bridge = env.start_bridge();
    let server = env.start_server().await;
    let names = tool_names(&server);
    assert_eq!(names.iter().filter(|n| is_agent_tool(n)).count(), 10);
    server
        .ok(
            "create_text_file",
            json!({"workdir": "demo", "path": "before.txt", "content": "x"}),
        )
        .await;
    drop(server);
    bridge.stop();

    // The documented rollback: Bridge stopped, [agent] off, no agent modes.
    let socket = env.root().join("run/bridge.sock");
    assert!(!socket.exists(), "a stopped Bridge leaves no socket");
    let config = env.root().join("base.toml");
    std::fs::write(
        &config,
        format!(
            "[agent]\nenabled = false\n\n[[workdirs]]\nalias = \"demo\"\npath = {:?}\n\
             read_only = false\n",
            env.work().to_str().unwrap()
        ),
    )
    .unwrap();
    let lock_dir = env.lock_dir();
    let before = snapshot(&lock_dir);
    assert!(!before.is_empty(), "the Bridge had prepared lock artifacts");
    // Someone (a leftover process) holds the lease: a server that still
    // took it would fail its mutations with AGENT_LOCK_BUSY.
    let held = serverfs_lease::hold(&lock_dir, &LeaseId::alias("demo").unwrap()).unwrap();

    let server = Server::start(&["--config", config.to_str().unwrap()], &[]).await;
    let base: Vec<String> = BASE_TOOLS.iter().map(|(n, ..)| (*n).to_owned()).collect();
    assert_eq!(tool_names(&server), base, "the base tool surface");
    let rev = server
        .ok(
            "stat_file",
            json!({"workdir": "demo", "path": "before.txt"}),
        )
        .await["revision"]
        .clone();
    for (tool, args) in [
        (
            "create_text_file",
            json!({"workdir": "demo", "path": "after.txt", "content": "y"}),
        ),
        (
            "edit_text_file",
            json!({"workdir": "demo", "path": "before.txt", "expected_revision": rev,
                   "edits": [{"old_text": "x", "new_text": "z"}]}),
        ),
        ("create_directory", json!({"workdir": "demo", "path": "d"})),
    ] {
        server.ok(tool, args).await;
    }
    drop(server);
    drop(held);

    // Nothing of the agent mode is used or left behind by the base server.
    let mut work: Vec<String> = std::fs::read_dir(env.work())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    work.sort();
    assert_eq!(work, ["after.txt", "before.txt", "d"]);
    assert_eq!(
        std::fs::read_to_string(env.work().join("before.txt")).unwrap(),
        "z"
    );
    assert_eq!(
        snapshot(&lock_dir),
        before,
        "the lock directory is untouched"
    );
    assert!(
        serverfs_lease::list_guards(&lock_dir).unwrap().is_empty(),
        "no recovery guard"
    );
    assert!(!socket.exists());
}
