//! The agent tools as a test drives them: submit to the fake runtime,
//! poll, wait for states and events (shared by the agent suites).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Server;

/// How long a helper waits for a task to reach a state.
pub const SETTLE: Duration = Duration::from_secs(30);

/// A tool's name and hints: `(name, readOnly, destructive, idempotent,
/// openWorld)`.
pub type Listed<N> = (N, bool, Option<bool>, Option<bool>, bool);

/// The agent tools in listing order (spec-agent-bridge.md §1.3).
pub const AGENT_TOOLS: &[Listed<&str>] = &[
    ("list_agent_runtimes", true, None, None, false),
    ("list_agent_models", true, None, None, true),
    ("submit_agent_task", false, Some(true), Some(false), true),
    ("get_agent_task", true, None, None, false),
    ("read_agent_task_events", true, None, None, false),
    ("read_agent_task_result", true, None, None, false),
    (
        "respond_agent_approval",
        false,
        Some(true),
        Some(true),
        true,
    ),
    (
        "answer_agent_question",
        false,
        Some(false),
        Some(true),
        true,
    ),
    ("send_agent_message", false, Some(true), Some(false), true),
    ("cancel_agent_task", false, Some(true), Some(true), true),
];

/// Whether `tool` is one of the ten agent tools.
pub fn is_agent_tool(tool: &str) -> bool {
    AGENT_TOOLS.iter().any(|(name, ..)| *name == tool)
}

/// Submits `prompt` to the fake runtime in `demo` (workspace-write).
pub async fn submit(server: &Server, prompt: &str) -> String {
    submit_with(server, json!({"prompt": prompt})).await
}

/// Submits with extra arguments (defaults: runtime `fake`, workdir `demo`).
pub async fn submit_with(server: &Server, extra: Value) -> String {
    let mut args = json!({"runtime": "fake", "workdir": "demo"});
    for (key, value) in extra.as_object().expect("object") {
        args[key] = value.clone();
    }
    let submitted = server.ok("submit_agent_task", args).await;
    assert_eq!(submitted["status"], "queued", "{submitted}");
    let id = submitted["task_id"].as_str().expect("task_id").to_owned();
    assert!(id.starts_with("agt_"), "{id}");
    id
}

/// `get_agent_task` without waiting.
pub async fn get(server: &Server, task: &str) -> Value {
    server.ok("get_agent_task", json!({"task_id": task})).await
}

/// Long-polls `get_agent_task` until `done` holds.
pub async fn wait_until(
    server: &Server,
    task: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + SETTLE;
    loop {
        let view = server
            .ok(
                "get_agent_task",
                json!({"task_id": task, "wait_seconds": 1}),
            )
            .await;
        if done(&view) {
            return view;
        }
        assert!(
            Instant::now() < deadline,
            "task {task} did not reach {what} within {SETTLE:?}: {view}"
        );
    }
}

/// Waits for `status`.
pub async fn wait_status(server: &Server, task: &str, status: &str) -> Value {
    wait_until(server, task, status, |view| view["status"] == status).await
}

/// Every event of the task so far.
pub async fn all_events(server: &Server, task: &str) -> Vec<Value> {
    let page = server
        .ok(
            "read_agent_task_events",
            json!({"task_id": task, "limit": 500}),
        )
        .await;
    page["events"].as_array().expect("events").clone()
}

/// The event types of `events`, in order.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event_type"].as_str().expect("event_type").to_owned())
        .collect()
}

/// Waits until the task has an event of `event_type` (the provider's turn
/// has reached that point).
pub async fn wait_event(server: &Server, task: &str, event_type: &str) -> Vec<Value> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let events = all_events(server, task).await;
        if types(&events).iter().any(|t| t == event_type) {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "task {task} never emitted {event_type}: {:?}",
            types(&events)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A running task the fake runtime keeps busy for a minute: its turn has
/// started (so a workspace-write task holds the writer lease).
pub async fn start_long_task(server: &Server) -> String {
    let task = submit(server, "fake: wait 60000").await;
    wait_event(server, &task, "turn.started").await;
    wait_status(server, &task, "running").await;
    task
}
