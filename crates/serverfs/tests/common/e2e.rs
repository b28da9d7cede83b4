//! What the real-agent end-to-end suites share: the CLI under test (from
//! an environment switch their script sets), and a rig of `serverfs` +
//! `serverfs-agent-bridge` + the agent + a scripted model on 127.0.0.1,
//! driven through the MCP tools.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use serverfs_testkit::MockModel;

use super::Server;
use super::bridge::{AgentEnv, Bridge};

/// How long a real agent's turn may take here.
pub const TURN: Duration = Duration::from_secs(90);

/// The CLI `variable` names, or `None` (with a note naming `script`) when
/// it is not set.
pub fn agent_cli(variable: &str, script: &str) -> Option<PathBuf> {
    match std::env::var_os(variable) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_absolute() && path.is_file(),
                "{variable}={} is not an absolute path to a file",
                path.display()
            );
            Some(path)
        }
        None => {
            eprintln!("skipped: set {variable} ({script} does)");
            None
        }
    }
}

/// The start of a Codex `config.toml` whose model provider is `model`
/// (Responses API, no retries), ending inside the provider's table so that
/// a caller can add to it (`env_key = …`) before its own tables.
pub fn codex_mock_provider(model: &MockModel) -> String {
    format!(
        "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n\
         [model_providers.mock]\nname = \"Mock\"\nbase_url = \"{}\"\n\
         wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n",
        model.base_url()
    )
}

/// A Bridge running one real runtime beside `serverfs`, and the model.
pub struct AgentRig {
    /// The shared directory and configuration.
    pub env: AgentEnv,
    /// The scripted model.
    pub model: MockModel,
    /// The Bridge, while it runs.
    pub bridge: Option<Bridge>,
    /// The MCP server under test.
    pub server: Server,
    /// The runtime tasks are submitted to.
    pub runtime: &'static str,
    /// What names the agent's processes in their command line.
    pub process_name: &'static str,
}

impl AgentRig {
    /// Starts the Bridge and `serverfs` on `env`.
    pub async fn start(
        env: AgentEnv,
        model: MockModel,
        runtime: &'static str,
        process_name: &'static str,
    ) -> AgentRig {
        let bridge = env.start_bridge();
        let server = env.start_server().await;
        AgentRig {
            env,
            model,
            bridge: Some(bridge),
            server,
            runtime,
            process_name,
        }
    }

    /// Submits a task of the rig's runtime in `demo` with `args` merged.
    pub async fn submit(&self, args: Value) -> String {
        let mut full = json!({ "runtime": self.runtime, "workdir": "demo" });
        for (key, value) in args.as_object().expect("an object") {
            full[key] = value.clone();
        }
        self.server.ok("submit_agent_task", full).await["task_id"]
            .as_str()
            .expect("task_id")
            .to_owned()
    }

    /// `get_agent_task`, long-polling a little.
    pub async fn task(&self, task: &str) -> Value {
        self.server
            .ok(
                "get_agent_task",
                json!({ "task_id": task, "wait_seconds": 2 }),
            )
            .await
    }

    /// Polls until `done(view)`; panics with the Bridge's log otherwise.
    pub async fn until(&self, task: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
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

    /// Waits for a pending approval; the view.
    pub async fn approval(&self, task: &str) -> Value {
        self.until(task, "waiting for the approval", |view| {
            view["status"] == "waiting_for_approval"
        })
        .await
    }

    /// Waits for the task to finish; the view.
    pub async fn finished(&self, task: &str) -> Value {
        self.until(task, "finishing", |view| view["completed_at"].is_number())
            .await
    }

    /// Answers the pending request of `view` with `decision`.
    pub async fn respond(&self, task: &str, view: &Value, decision: &str) {
        self.respond_option(task, view, decision, None).await;
    }

    /// Answers the pending request of `view` with `decision` and, for a
    /// request listing the agent's own options, the chosen `option_id`.
    pub async fn respond_option(
        &self,
        task: &str,
        view: &Value,
        decision: &str,
        option_id: Option<&str>,
    ) {
        let mut args = json!({
            "task_id": task,
            "request_id": view["pending_request"]["request_id"],
            "decision": decision,
        });
        if let Some(option_id) = option_id {
            args["option_id"] = json!(option_id);
        }
        self.server.ok("respond_agent_approval", args).await;
    }

    /// Waits until the agent has called the model (its turn is in flight).
    pub async fn model_asked(&self) {
        let deadline = Instant::now() + TURN;
        while self.model.requests().is_empty() {
            assert!(
                Instant::now() < deadline,
                "the agent never called the model"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the Bridge has recorded `task`'s native session (what
    /// `inspect` says), so that a crash from here on leaves it resumable.
    pub async fn session_recorded(&self, task: &str) {
        let deadline = Instant::now() + TURN;
        loop {
            let inspected = self.env.inspect();
            let recorded = inspected
                .lines()
                .any(|line| line.contains(task) && line.contains(" native_session=recorded"));
            if recorded {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no native session recorded for {task}:\n{inspected}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Processes of the agent whose environment belongs to this rig.
    pub fn agent_processes(&self) -> Vec<i32> {
        let root = self.env.root().to_string_lossy().into_owned();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
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
            if cmdline.contains(self.process_name) && environ.contains(&root) {
                found.push(pid);
            }
        }
        found
    }

    /// Waits until none of the agent's processes is left.
    pub async fn wait_no_agent_process(&self, after: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.agent_processes().is_empty() {
            assert!(
                Instant::now() < deadline,
                "{} processes outlived {after}: {:?}",
                self.process_name,
                self.agent_processes()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until a file tool may write `demo` again (the lease is free).
    pub async fn wait_writable(&self, after: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let written = self
                .server
                .call(
                    "create_text_file",
                    json!({ "workdir": "demo", "path": format!("after-{attempt}.txt"), "content": "x" }),
                )
                .await;
            if written.is_error != Some(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the workdir stayed locked after {after}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Submits `prompt` (one the model answers only after a long pause),
    /// cancels the task once the model was asked, and checks that no agent
    /// process outlives the cancel and the workdir is writable again (the
    /// writer lease is released once the provider is gone).
    pub async fn cancel_mid_turn(&self, prompt: &str) {
        let task = self.submit(json!({ "prompt": prompt })).await;
        // The model has been asked: the turn is in flight.
        self.model_asked().await;
        assert!(
            !self.agent_processes().is_empty(),
            "no {} process seen",
            self.process_name
        );
        let cancelled = self
            .server
            .ok("cancel_agent_task", json!({ "task_id": task }))
            .await;
        assert_eq!(cancelled["status"], "cancelled");
        self.wait_no_agent_process("the cancel").await;
        self.wait_writable("the cancel").await;
        assert_eq!(self.task(&task).await["status"], "cancelled");
    }

    /// Kills the Bridge mid-turn, checks the tools say so, waits for the
    /// agent to go with it, restarts the Bridge and checks the task was
    /// reconciled honestly (interrupted, never re-run, its provider known to
    /// be stopped) and the workdir is usable again.
    pub async fn crash_and_reconcile(&mut self, task: &str) {
        self.crash(task).await;
        // The agent loses its stdin with the Bridge and exits; its process
        // group is what the recovery guard waits for.
        self.wait_no_agent_process("its Bridge").await;
        let reconciled = self.restart_reconciled(task).await;
        assert_eq!(
            reconciled["payload"]["provider_active"], false,
            "{reconciled}"
        );
        self.wait_writable("the restart").await;
    }

    /// Kills the Bridge (mid-turn of `task`) and checks the tools say it
    /// is gone.
    pub async fn crash(&mut self, task: &str) {
        if let Some(mut bridge) = self.bridge.take() {
            bridge.kill();
        }
        assert_eq!(
            self.server
                .err("get_agent_task", json!({ "task_id": task }))
                .await,
            "AGENT_BRIDGE_UNAVAILABLE"
        );
    }

    /// Starts the Bridge again and checks that `task` was reconciled once
    /// and honestly: interrupted by the restart, never run again. Returns
    /// its `task.reconciled` event.
    pub async fn restart_reconciled(&mut self, task: &str) -> Value {
        self.bridge = Some(self.env.start_bridge());
        let view = self.task(task).await;
        assert_eq!(view["status"], "interrupted", "{view}");
        assert_eq!(view["error_code"], "BRIDGE_RESTARTED");
        let events = self
            .server
            .ok(
                "read_agent_task_events",
                json!({ "task_id": task, "after_event_id": 0, "limit": 500 }),
            )
            .await;
        let events = events["events"].as_array().cloned().unwrap_or_default();
        let count = |event_type: &str| {
            events
                .iter()
                .filter(|e| e["event_type"] == event_type)
                .count()
        };
        assert_eq!(count("task.reconciled"), 1, "{events:?}");
        assert_eq!(count("task.started"), 1, "re-run after the restart");
        events
            .into_iter()
            .find(|e| e["event_type"] == "task.reconciled")
            .expect("a task.reconciled event")
    }

    /// The file the scripted model's command creates.
    pub fn created_file(&self) -> PathBuf {
        self.env.work().join("created_by_mock.txt")
    }
}

/// `path` as a TOML string.
pub fn toml_path(path: &Path) -> String {
    format!("{:?}", path.to_str().expect("UTF-8 path"))
}
