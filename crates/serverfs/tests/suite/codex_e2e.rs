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
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serverfs_testkit::{MockModel, Reply, Rule, Script};

use crate::common::Server;
use crate::common::bridge::{AgentEnv, Bridge};

/// How long a real Codex turn may take here.
const TURN: Duration = Duration::from_secs(60);

/// The CLI under test, or `None` (with a note) when not configured.
fn codex() -> Option<PathBuf> {
    match std::env::var_os("SERVERFS_E2E_CODEX") {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_absolute() && path.is_file(),
                "SERVERFS_E2E_CODEX={} is not an absolute path to a file",
                path.display()
            );
            Some(path)
        }
        None => {
            eprintln!("skipped: set SERVERFS_E2E_CODEX (scripts/e2e-codex.sh does)");
            None
        }
    }
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
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n\
             [model_providers.mock]\nname = \"Mock\"\nbase_url = \"{}\"\n\
             wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
            model.base_url()
        ),
    )
    .unwrap();
    home
}

struct Rig {
    env: AgentEnv,
    model: MockModel,
    bridge: Option<Bridge>,
    server: Server,
    /// Codex's throw-away home (configuration, sessions, logs).
    _home: tempfile::TempDir,
}

async fn rig(codex: &Path) -> Rig {
    let model = MockModel::start(script()).unwrap();
    let home_dir = tempfile::Builder::new().prefix("sfcx").tempdir().unwrap();
    let home = codex_home(home_dir.path(), &model);
    let env = AgentEnv::builder()
        .agent(&format!("codex_bin = {:?}", codex.to_str().unwrap()))
        .agent(&format!("codex_home = {:?}", home.to_str().unwrap()))
        .demo("agent_mode = \"workspace-write\"\nagent_runtimes = [\"codex\"]")
        .build();
    let bridge = env.start_bridge();
    let server = env.start_server().await;
    Rig {
        env,
        model,
        bridge: Some(bridge),
        server,
        _home: home_dir,
    }
}

impl Rig {
    async fn submit(&self, args: Value) -> String {
        let mut full = json!({ "runtime": "codex", "workdir": "demo" });
        for (key, value) in args.as_object().unwrap() {
            full[key] = value.clone();
        }
        self.server.ok("submit_agent_task", full).await["task_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn task(&self, task: &str) -> Value {
        self.server
            .ok(
                "get_agent_task",
                json!({ "task_id": task, "wait_seconds": 2 }),
            )
            .await
    }

    /// Polls until `done(view)`; panics with the Bridge's log otherwise.
    async fn until(&self, task: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TURN;
        loop {
            let view = self.task(task).await;
            if done(&view) {
                return view;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: {view}\nbridge log:\n{}",
                self.bridge.as_ref().map(|b| b.stderr()).unwrap_or_default()
            );
        }
    }

    async fn approval(&self, task: &str) -> Value {
        self.until(task, "waiting for the approval", |view| {
            view["status"] == "waiting_for_approval"
        })
        .await
    }

    async fn finished(&self, task: &str) -> Value {
        self.until(task, "finishing", |view| view["completed_at"].is_number())
            .await
    }

    /// Waits until Codex has called the model (the turn is in flight).
    async fn model_asked(&self) {
        let deadline = Instant::now() + TURN;
        while self.model.requests().is_empty() {
            assert!(Instant::now() < deadline, "codex never called the model");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn created_file(&self) -> PathBuf {
        self.env.work().join("created_by_mock.txt")
    }
}

/// Processes whose command line mentions `codex` and whose working
/// directory or arguments belong to this rig's temp directory.
fn codex_processes(rig: &Rig) -> Vec<i32> {
    let root = rig.env.root().to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let environ = std::fs::read(entry.path().join("environ"))
            .map(|e| String::from_utf8_lossy(&e).into_owned())
            .unwrap_or_default();
        if cmdline.contains("codex") && environ.contains(&root) {
            found.push(pid);
        }
    }
    found
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

    rig.server
        .ok(
            "respond_agent_approval",
            json!({ "task_id": task, "request_id": request["request_id"], "decision": "approve_once" }),
        )
        .await;
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
    rig.server
        .ok(
            "respond_agent_approval",
            json!({
                "task_id": task,
                "request_id": waiting["pending_request"]["request_id"],
                "decision": decision,
            }),
        )
        .await;
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
    let task = rig.submit(json!({ "prompt": "be slow please" })).await;
    // The model has been asked: the turn is in flight.
    rig.model_asked().await;
    assert!(!codex_processes(&rig).is_empty(), "no codex process seen");
    let cancelled = rig
        .server
        .ok("cancel_agent_task", json!({ "task_id": task }))
        .await;
    assert_eq!(cancelled["status"], "cancelled");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !codex_processes(&rig).is_empty() {
        assert!(
            Instant::now() < deadline,
            "codex processes survived the cancel: {:?}",
            codex_processes(&rig)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The writer lease is released once the provider is gone.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let written = rig
            .server
            .call(
                "create_text_file",
                json!({ "workdir": "demo", "path": "after-cancel.txt", "content": "x" }),
            )
            .await;
        if written.is_error != Some(true) {
            break;
        }
        assert!(Instant::now() < deadline, "the workdir stayed locked");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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
    let config = std::fs::read_to_string(rig._home.path().join("codex-home/config.toml")).unwrap();
    assert!(config.contains("model = \"mock-model\""), "{config}");
    assert!(!config.contains("override-model"), "{config}");
}

#[tokio::test]
async fn a_bridge_restart_mid_turn_reconciles_honestly() {
    let Some(codex) = codex() else { return };
    let mut rig = rig(&codex).await;
    let task = rig.submit(json!({ "prompt": "be slow please" })).await;
    rig.model_asked().await;
    rig.bridge.take().unwrap().kill();
    // The Bridge is down: the agent tools say so at once.
    assert_eq!(
        rig.server
            .err("get_agent_task", json!({ "task_id": task }))
            .await,
        "AGENT_BRIDGE_UNAVAILABLE"
    );
    // Codex's app-server loses its stdin with the Bridge and exits; its
    // process group is what the recovery guard waits for.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !codex_processes(&rig).is_empty() {
        assert!(Instant::now() < deadline, "codex outlived its Bridge");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    rig.bridge = Some(rig.env.start_bridge());
    let view = rig.task(&task).await;
    assert_eq!(view["status"], "interrupted", "{view}");
    assert_eq!(view["error_code"], "BRIDGE_RESTARTED");
    let events = rig
        .server
        .ok(
            "read_agent_task_events",
            json!({ "task_id": task, "after_event_id": 0, "limit": 500 }),
        )
        .await;
    let reconciled = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event_type"] == "task.reconciled")
        .cloned()
        .expect("a task.reconciled event");
    assert_eq!(
        reconciled["payload"]["provider_active"], false,
        "{reconciled}"
    );
    // Nothing was re-run, and the workdir is usable again.
    rig.server
        .ok(
            "create_text_file",
            json!({ "workdir": "demo", "path": "after-restart.txt", "content": "x" }),
        )
        .await;
}
