//! The real `codex` CLI end to end, through the MCP tools: `serverfs` +
//! `serverfs-agent-bridge` + `codex app-server` + a scripted model on
//! 127.0.0.1 (`serverfs_testkit::MockModel`). Offline: Codex's model
//! provider points at the mock, which decides every reply.
//!
//! These tests need the real CLI and run only when `SERVERFS_E2E_CODEX`
//! names it; `scripts/e2e-codex.sh` installs the pinned `@openai/codex`
//! from the npm registry into `target/` and runs them (CI runs the script
//! and fails if the install fails). Without the variable each test prints
//! why it did nothing.
//!
//! Codex runs in native mode: the Bridge sends no sandbox or approval
//! override, so the throw-away `CODEX_HOME` below is the whole policy.
//! Under Codex's default read-only sandbox a command that asks for
//! escalation (`sandbox_permissions: "require_escalated"`) raises an
//! approval, which is how the scripted model exercises approvals.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_testkit::{MockModel, Reply, Rule, Script};

use crate::common::bridge::AgentEnv;
use crate::common::e2e::{AgentRig, agent_cli, codex_mock_provider, toml_path};

/// The CLI under test, or `None` (with a note) when not configured.
fn codex() -> Option<PathBuf> {
    agent_cli("SERVERFS_E2E_CODEX", "scripts/e2e-codex.sh")
}

/// The scripted model: `make-file` asks to run an escalated command, then
/// answers; `slow` answers after a long pause (so a turn can be cancelled
/// or its Bridge killed mid-way); anything else answers at once.
fn script() -> Script {
    let command = json!({
        "cmd": "echo hi > created_by_mock.txt",
        "sandbox_permissions": "require_escalated",
        "justification": "create the requested file",
    });
    Script::new()
        .rule(Rule::steps(
            "make-file",
            vec![
                Reply::tool_call("exec_command", command),
                Reply::text("FILE_DONE"),
            ],
        ))
        .on(
            "slow",
            Reply::text("SLOW_DONE").delayed(Duration::from_secs(120)),
            Reply::text("SLOW_DONE"),
        )
        .fallback(Reply::text("MOCK_DONE"))
}

/// A `CODEX_HOME` whose model provider is the mock.
fn codex_home(root: &Path, model: &MockModel) -> PathBuf {
    let home = root.join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), codex_mock_provider(model)).unwrap();
    home
}

async fn rig(codex: &Path) -> AgentRig {
    let model = MockModel::start(script()).unwrap();
    let env = AgentEnv::builder()
        .agent(&format!("codex_bin = {}", toml_path(codex)))
        .demo("agent_mode = \"workspace-write\"\nagent_runtimes = [\"codex\"]");
    // Codex's throw-away home (configuration, sessions, logs) lives in the
    // rig's directory; the file is written before the Bridge starts.
    let env = env.build();
    let home = codex_home(env.root(), &model);
    let env = env.with_agent_line(&format!("codex_home = {}", toml_path(&home)));
    AgentRig::start(env, model, "codex", "codex").await
}

#[tokio::test]
async fn approve_once_runs_the_command_and_the_task_succeeds() {
    let Some(codex) = codex() else { return };
    let rig = rig(&codex).await;
    let runtimes = rig.server.ok("list_agent_runtimes", json!({})).await;
    let listed = &runtimes["runtimes"][0];
    assert_eq!(listed["name"], "codex");
    assert_eq!(listed["available"], true);
    assert!(
        listed["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("0.")),
        "{listed}"
    );

    let task = rig
        .submit(json!({ "prompt": "please make-file now" }))
        .await;
    let waiting = rig.approval(&task).await;
    let request = &waiting["pending_request"];
    assert_eq!(request["payload"]["category"], "command");
    assert!(
        request["payload"]["command_display"]
            .as_str()
            .is_some_and(|c| c.contains("created_by_mock.txt")),
        "{request}"
    );
    // No host path reaches the client.
    let text = waiting.to_string();
    assert!(!text.contains(rig.env.root().to_str().unwrap()), "{text}");
    assert!(!rig.created_file().exists());

    rig.respond(&task, &waiting, "approve_once").await;
    let done = rig.finished(&task).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["final_response"], "FILE_DONE");
    assert_eq!(
        std::fs::read_to_string(rig.created_file()).unwrap().trim(),
        "hi"
    );
    // The lease is free again: a file tool may write.
    rig.server
        .ok(
            "create_text_file",
            json!({ "workdir": "demo", "path": "after.txt", "content": "x" }),
        )
        .await;
}

#[tokio::test]
async fn deny_leaves_no_file() {
    let Some(codex) = codex() else { return };
    let rig = rig(&codex).await;
    let task = rig
        .submit(json!({ "prompt": "please make-file now" }))
        .await;
    let waiting = rig.approval(&task).await;
    let offered = waiting["pending_request"]["payload"]["available_decisions"].clone();
    let decision = if offered.as_array().unwrap().contains(&json!("deny")) {
        "deny"
    } else {
        // Codex decides what it offers; without "deny" the refusal is to
        // cancel the task.
        "cancel_task"
    };
    rig.respond(&task, &waiting, decision).await;
    let done = rig.finished(&task).await;
    assert!(
        ["succeeded", "cancelled"].contains(&done["status"].as_str().unwrap()),
        "{done}"
    );
    assert!(!rig.created_file().exists(), "a denied command ran");
}

#[tokio::test]
async fn cancel_mid_turn_leaves_no_codex_process_and_frees_the_workdir() {
    let Some(codex) = codex() else { return };
    let rig = rig(&codex).await;
    rig.cancel_mid_turn("be slow please").await;
}

/// The body of every model request so far, in order.
fn model_requests(model: &MockModel) -> Vec<Value> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/responses"))
        .map(|r| r.body)
        .collect()
}

#[tokio::test]
async fn a_continuation_resumes_the_thread_with_a_new_turn() {
    let Some(codex) = codex() else { return };
    let rig = rig(&codex).await;
    let first = rig
        .submit(json!({ "prompt": "remember the word PELICAN" }))
        .await;
    assert_eq!(rig.finished(&first).await["status"], "succeeded");
    let asked = model_requests(&rig.model).len();
    let second = rig
        .submit(json!({ "prompt": "what was the word", "continue_from_task_id": first }))
        .await;
    assert_ne!(second, first);
    let done = rig.finished(&second).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["continue_from_task_id"], json!(first));
    // A new turn of the same thread: its model request carries the first
    // turn's words.
    let requests = model_requests(&rig.model);
    assert!(
        requests.len() > asked,
        "the continuation never asked the model"
    );
    let history = requests.last().unwrap()["input"].to_string();
    assert!(
        history.contains("PELICAN"),
        "not the same thread: {history}"
    );
    assert!(history.contains("what was the word"), "{history}");
}

#[tokio::test]
async fn a_model_override_applies_to_its_own_task_only() {
    let Some(codex) = codex() else { return };
    let rig = rig(&codex).await;
    let chosen = rig
        .submit(json!({ "prompt": "hello with a chosen model", "model": "override-model" }))
        .await;
    let view = rig.finished(&chosen).await;
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["requested_model"], "override-model");
    let plain = rig
        .submit(json!({ "prompt": "hello with the default" }))
        .await;
    let view = rig.finished(&plain).await;
    assert_eq!(view["status"], "succeeded", "{view}");
    assert_eq!(view["requested_model"], Value::Null);

    let models: Vec<Value> = model_requests(&rig.model)
        .iter()
        .map(|body| body["model"].clone())
        .collect();
    assert_eq!(models, [json!("override-model"), json!("mock-model")]);
    // The user's configuration is untouched.
    let config = std::fs::read_to_string(rig.env.root().join("codex-home/config.toml")).unwrap();
    assert!(config.contains("model = \"mock-model\""), "{config}");
    assert!(!config.contains("override-model"), "{config}");
}

#[tokio::test]
async fn a_bridge_restart_mid_turn_reconciles_honestly() {
    let Some(codex) = codex() else { return };
    let mut rig = rig(&codex).await;
    let task = rig.submit(json!({ "prompt": "be slow please" })).await;
    rig.model_asked().await;
    rig.crash_and_reconcile(&task).await;
}
