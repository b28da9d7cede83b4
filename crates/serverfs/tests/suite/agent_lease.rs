//! File mutations beside a real agent: a running workspace-write task holds
//! the workdir's writer lease, so every mutation tool answers
//! `WORKDIR_BUSY` and reads keep working; a Bridge that dies mid-task
//! leaves a recovery guard (`WORKDIR_RECOVERY_REQUIRED`) until a restarted
//! Bridge reconciles it (issue 7, spec-agent-bridge.md §8).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Server;
use crate::common::bridge::{AgentEnv, AgentEnvBuilder};

use crate::common::agent::{get, is_agent_tool, start_long_task, submit, submit_with, wait_status};

/// The agent tools' Bridge-unavailable answer must come this fast.
const PROMPT: Duration = Duration::from_secs(5);
/// How long a finished task may take to release the lease.
const RELEASE: Duration = Duration::from_secs(10);

/// `demo` with binary transfer, so that `upload_binary_file` is listed.
fn env() -> AgentEnvBuilder {
    AgentEnv::builder().demo(
        "agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\nbinary_transfer = true",
    )
}

/// The files the mutations act on.
fn seed(work: &Path) {
    std::fs::write(work.join("a.txt"), "one\n").unwrap();
    std::fs::write(work.join("del.txt"), "bye\n").unwrap();
    std::fs::write(work.join("bin.dat"), [0u8, 1, 2, 3]).unwrap();
    std::fs::create_dir(work.join("empty")).unwrap();
}

/// What `seed` made, and nothing the mutations would add.
fn assert_untouched(work: &Path) {
    assert_eq!(
        std::fs::read_to_string(work.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("del.txt")).unwrap(),
        "bye\n"
    );
    assert!(work.join("empty").is_dir());
    for added in ["new.txt", "new.bin", "d2"] {
        assert!(!work.join(added).exists(), "{added} was created");
    }
}

async fn revision(server: &Server, path: &str) -> Value {
    server
        .ok("stat_file", json!({"workdir": "demo", "path": path}))
        .await["revision"]
        .clone()
}

/// One call of each mutation tool, with arguments that succeed on an
/// unlocked workdir.
async fn mutations(server: &Server) -> Vec<(&'static str, Value)> {
    vec![
        (
            "create_text_file",
            json!({"workdir": "demo", "path": "new.txt", "content": "x"}),
        ),
        (
            "edit_text_file",
            json!({"workdir": "demo", "path": "a.txt",
                   "expected_revision": revision(server, "a.txt").await,
                   "edits": [{"old_text": "one", "new_text": "two"}]}),
        ),
        (
            "delete_file",
            json!({"workdir": "demo", "path": "del.txt",
                   "expected_revision": revision(server, "del.txt").await}),
        ),
        ("create_directory", json!({"workdir": "demo", "path": "d2"})),
        (
            "delete_directory",
            json!({"workdir": "demo", "path": "empty",
                   "expected_revision": revision(server, "empty").await}),
        ),
        (
            "upload_binary_file",
            json!({"workdir": "demo", "path": "new.bin", "data_base64": "aGk="}),
        ),
    ]
}

/// Read tools, each with arguments that succeed.
fn reads() -> Vec<(&'static str, Value)> {
    vec![
        ("list_workdirs", json!({})),
        ("list_directory", json!({"workdir": "demo"})),
        ("find_files", json!({"workdir": "demo", "pattern": "*.txt"})),
        ("search_text", json!({"workdir": "demo", "query": "one"})),
        (
            "read_text_file",
            json!({"workdir": "demo", "path": "a.txt"}),
        ),
        ("stat_file", json!({"workdir": "demo", "path": "a.txt"})),
        (
            "download_binary_file",
            json!({"workdir": "demo", "path": "bin.dat"}),
        ),
    ]
}

/// Calls `tool`; its code, or "ok".
async fn outcome(server: &Server, tool: &str, args: Value) -> String {
    let result = server.call(tool, args).await;
    if result.is_error == Some(true) {
        result.structured_content.unwrap()["error"]["code"]
            .as_str()
            .unwrap()
            .to_owned()
    } else {
        "ok".to_owned()
    }
}

/// Runs the mutations once the lease is free: the first is retried while
/// the finished task's runner still releases the lease (`WORKDIR_BUSY`
/// only, for at most [`RELEASE`]); all must then succeed.
async fn mutations_succeed(server: &Server, calls: Vec<(&'static str, Value)>) {
    let deadline = Instant::now() + RELEASE;
    let (first, first_args) = &calls[0];
    loop {
        let code = outcome(server, first, first_args.clone()).await;
        if code == "ok" {
            break;
        }
        assert_eq!(code, "WORKDIR_BUSY", "{first}");
        assert!(
            Instant::now() < deadline,
            "the lease was not released {RELEASE:?} after the task ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (tool, args) in &calls[1..] {
        server.ok(tool, args.clone()).await;
    }
}

#[tokio::test]
async fn a_running_task_makes_every_mutation_busy_until_it_ends() {
    let env = env().build();
    seed(&env.work());
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = start_long_task(&server).await;

    let calls = mutations(&server).await;
    for (tool, args) in &calls {
        assert_eq!(
            server.err(tool, args.clone()).await,
            "WORKDIR_BUSY",
            "{tool}"
        );
    }
    assert_untouched(&env.work());
    // A dry run writes nothing, but still goes through the mutation path.
    let mut dry = calls[1].1.clone();
    dry["dry_run"] = json!(true);
    assert_eq!(server.err("edit_text_file", dry).await, "WORKDIR_BUSY");
    for (tool, args) in reads() {
        server.ok(tool, args).await;
    }
    assert_eq!(
        server
            .ok(
                "read_text_file",
                json!({"workdir": "demo", "path": "a.txt"})
            )
            .await["content"],
        "one\n"
    );

    server
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
    mutations_succeed(&server, calls).await;
    let work = env.work();
    assert_eq!(
        std::fs::read_to_string(work.join("a.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(std::fs::read_to_string(work.join("new.txt")).unwrap(), "x");
    assert_eq!(std::fs::read(work.join("new.bin")).unwrap(), b"hi");
    assert!(!work.join("del.txt").exists());
    assert!(!work.join("empty").exists());
    assert!(work.join("d2").is_dir());
}

#[tokio::test]
async fn a_review_task_takes_no_lease() {
    let env = env().build();
    seed(&env.work());
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = submit_with(
        &server,
        json!({"profile": "review", "prompt": "fake: wait 60000"}),
    )
    .await;
    wait_status(&server, &task, "running").await;
    server
        .ok(
            "create_text_file",
            json!({"workdir": "demo", "path": "new.txt", "content": "x"}),
        )
        .await;
    server
        .ok("cancel_agent_task", json!({"task_id": task}))
        .await;
}

#[tokio::test]
async fn a_killed_bridge_is_unavailable_and_its_guard_blocks_mutations_until_restart() {
    let env = env().build();
    seed(&env.work());
    let mut bridge = env.start_bridge();
    let server = env.start_server().await;
    let task = start_long_task(&server).await;
    bridge.kill();

    // Every agent tool says so, promptly.
    let agent_calls = [
        ("get_agent_task", json!({"task_id": task})),
        (
            "get_agent_task",
            json!({"task_id": task, "wait_seconds": 10}),
        ),
        ("read_agent_task_events", json!({"task_id": task})),
        ("read_agent_task_result", json!({"task_id": task})),
        ("cancel_agent_task", json!({"task_id": task})),
        (
            "send_agent_message",
            json!({"task_id": task, "message": "hello"}),
        ),
        (
            "respond_agent_approval",
            json!({"task_id": task, "request_id": "req_000000000000000000000000",
                   "decision": "deny"}),
        ),
        (
            "answer_agent_question",
            json!({"task_id": task, "request_id": "req_000000000000000000000000",
                   "answers": [{"question_id": "q1", "text": "x"}]}),
        ),
        ("list_agent_runtimes", json!({})),
        ("list_agent_models", json!({"runtime": "fake"})),
        (
            "submit_agent_task",
            json!({"runtime": "fake", "workdir": "demo", "prompt": "fake: complete x"}),
        ),
    ];
    for (tool, args) in agent_calls {
        let asked = Instant::now();
        assert_eq!(
            server.err(tool, args).await,
            "AGENT_BRIDGE_UNAVAILABLE",
            "{tool}"
        );
        let took = asked.elapsed();
        assert!(
            took < PROMPT,
            "{tool} took {took:?} to report the Bridge gone"
        );
    }

    // The provider's fate is unknown to the MCP side: the guard stands.
    let calls = mutations(&server).await;
    for (tool, args) in &calls {
        assert_eq!(
            server.err(tool, args.clone()).await,
            "WORKDIR_RECOVERY_REQUIRED",
            "{tool}"
        );
    }
    assert_untouched(&env.work());
    for (tool, args) in reads() {
        server.ok(tool, args).await;
    }

    // A restarted Bridge reconciles: the task is interrupted, the guard
    // removed, and the same mutations go through.
    let _bridge = env.start_bridge();
    let view = get(&server, &task).await;
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "BRIDGE_RESTARTED");
    mutations_succeed(&server, calls).await;
    // And agents work again.
    let next = submit(&server, "fake: complete again").await;
    wait_status(&server, &next, "succeeded").await;
}

/// Arguments for probing `tool` under a held lease: every listed tool but
/// the agent tools that act through the Bridge must be here, so that a new
/// tool cannot escape the guard test below.
fn probe_args(
    tool: &str,
    calls: &[(&'static str, Value)],
    running: &str,
    spooled: &str,
) -> Option<Value> {
    if let Some((_, args)) = calls.iter().chain(&reads()).find(|(name, _)| *name == tool) {
        return Some(args.clone());
    }
    Some(match tool {
        "list_agent_runtimes" => json!({}),
        "list_agent_models" => json!({"runtime": "fake"}),
        "get_agent_task" => json!({"task_id": running}),
        "read_agent_task_events" => json!({"task_id": running}),
        "read_agent_task_result" => json!({"task_id": spooled}),
        _ => return None,
    })
}

#[tokio::test]
async fn guard_every_listed_mutation_tool_takes_the_lease_and_no_read_tool_does() {
    let env = env().build();
    seed(&env.work());
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    // A finished task with a spooled result, for read_agent_task_result.
    let spooled = submit(&server, &format!("fake: complete {}", "z".repeat(2048))).await;
    wait_status(&server, &spooled, "succeeded").await;
    let running = start_long_task(&server).await;
    let calls = mutations(&server).await;

    let mut busy = Vec::new();
    let mut read = Vec::new();
    let mut through_bridge = Vec::new();
    for tool in server.tools() {
        let name = tool.name.as_ref();
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or_else(|| panic!("{name} has no readOnlyHint"));
        if !read_only && is_agent_tool(name) {
            // Acts on the task through the Bridge, never on the files.
            through_bridge.push(name.to_owned());
            continue;
        }
        let args = probe_args(name, &calls, &running, &spooled)
            .unwrap_or_else(|| panic!("no arguments known for tool {name}"));
        if read_only {
            server.ok(name, args).await;
            read.push(name.to_owned());
        } else {
            assert_eq!(
                outcome(&server, name, args).await,
                "WORKDIR_BUSY",
                "{name} is a mutation and must take the writer lease"
            );
            busy.push(name.to_owned());
        }
    }
    assert_untouched(&env.work());
    assert_eq!(
        busy,
        [
            "create_text_file",
            "edit_text_file",
            "delete_file",
            "create_directory",
            "delete_directory",
            "upload_binary_file"
        ]
    );
    assert_eq!(read.len(), 12, "{read:?}");
    assert_eq!(through_bridge.len(), 5, "{through_bridge:?}");

    // The arguments were good ones: without the lease they succeed.
    server
        .ok("cancel_agent_task", json!({"task_id": running}))
        .await;
    mutations_succeed(&server, calls).await;
}
