//! The real Claude Code CLI end to end, through the MCP tools: `serverfs` +
//! `serverfs-agent-bridge` + `claude` + a scripted model on 127.0.0.1
//! speaking Anthropic Messages (`serverfs_testkit::MockModel`). Offline:
//! Claude Code's `ANTHROPIC_BASE_URL` points at the mock, which decides
//! every reply.
//!
//! These tests need the real CLI and run only when `SERVERFS_E2E_CLAUDE`
//! names it; `scripts/e2e-claude.sh` installs the pinned
//! `@anthropic-ai/claude-code` from the npm registry into `target/` and runs
//! them (CI runs the script and fails if the install fails). Without the
//! variable each test prints why it did nothing.
//!
//! Claude Code runs in native mode with a throw-away `HOME` (so its own
//! `~/.claude` is empty: default permission mode, no rules): a Bash command
//! that writes a file asks for permission, which reaches the client as an
//! approval. The endpoint and key reach Claude Code only because the
//! configuration hands them through (`claude_env_passthrough`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_testkit::{MockModel, Reply, Rule, Script};

use crate::common::bridge::AgentEnv;
use crate::common::e2e::{AgentRig, agent_cli, toml_path};

/// The CLI under test, or `None` (with a note) when not configured.
fn claude() -> Option<PathBuf> {
    agent_cli("SERVERFS_E2E_CLAUDE", "scripts/e2e-claude.sh")
}

/// The variables Claude Code needs here, handed through by name.
const PASSED: [&str; 5] = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "DISABLE_AUTOUPDATER",
    "DISABLE_TELEMETRY",
];

/// The free-text answer the question test gives: in neither the question
/// nor its options, so finding it in the tool result proves the answer
/// travelled from the client to the model.
const FREE_ANSWER: &str = "PURPLE-ELEPHANT-42";

/// How long the model takes to answer the turn whose Bridge is killed:
/// long enough for the test to kill and restart the Bridge while Claude
/// Code waits, short enough to then wait for Claude Code to end by itself.
const CRASH_TURN: Duration = Duration::from_secs(20);

/// The scripted model: `make-file` asks to run a Bash command that writes
/// a file, then answers; `ask-me` asks the user a question, then answers;
/// `recall-crash` answers at once; `crash-slow` answers after
/// [`CRASH_TURN`] (a turn whose Bridge is killed, and which Claude Code then
/// finishes alone); `slow` answers after a long pause (so a turn can be
/// cancelled mid-way); anything else answers at once. (Rules are tried in
/// order: `recall-crash` and `crash-slow` before `slow`.)
fn script() -> Script {
    let command = json!({
        "command": "echo hi > created_by_mock.txt",
        "description": "create the requested file",
    });
    Script::new()
        .rule(Rule::steps(
            "make-file",
            vec![Reply::tool_call("Bash", command), Reply::text("FILE_DONE")],
        ))
        .rule(Rule::steps(
            "ask-me",
            vec![
                Reply::tool_call("AskUserQuestion", question_input()),
                Reply::text("ASKED_DONE"),
            ],
        ))
        .rule(Rule::steps("recall-crash", vec![Reply::text("RECALLED")]))
        .rule(Rule::steps(
            "crash-slow",
            vec![Reply::text("CRASH_TURN_DONE").delayed(CRASH_TURN)],
        ))
        .on(
            "slow",
            Reply::text("SLOW_DONE").delayed(Duration::from_secs(120)),
            Reply::text("SLOW_DONE"),
        )
        .fallback(Reply::text("MOCK_DONE"))
}

async fn rig(claude: &Path) -> AgentRig {
    let model = MockModel::start(script()).unwrap();
    let passed: Vec<String> = PASSED.iter().map(|name| format!("{name:?}")).collect();
    let env = AgentEnv::builder()
        .agent(&format!("claude_bin = {}", toml_path(claude)))
        .agent(&format!("claude_env_passthrough = [{}]", passed.join(", ")))
        .bridge_env("ANTHROPIC_BASE_URL", &model.origin())
        .bridge_env("ANTHROPIC_API_KEY", "sk-ant-e2e-not-a-real-key")
        .bridge_env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .bridge_env("DISABLE_AUTOUPDATER", "1")
        .bridge_env("DISABLE_TELEMETRY", "1")
        .demo("agent_mode = \"workspace-write\"\nagent_runtimes = [\"claude\"]")
        .build();
    AgentRig::start(env, model, "claude", "claude").await
}

/// The question the script's AskUserQuestion asks.
fn question_input() -> Value {
    json!({ "questions": [{
        "question": "Which option?",
        "header": "Pick",
        "options": [
            { "label": "A", "description": "the first" },
            { "label": "B", "description": "the second" }
        ],
        "multiSelect": false
    }]})
}

/// The text of the tool result answering the tool use named `tool` in a
/// model request's `messages` (a string, or text blocks joined).
fn tool_result_text(messages: &Value, tool: &str) -> Option<String> {
    let messages = messages.as_array()?;
    let blocks = || {
        messages
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
    };
    let id = blocks().find(|b| b["type"] == "tool_use" && b["name"] == tool)?["id"].clone();
    let result = blocks().find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)?;
    match &result["content"] {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// The body of every streamed model request so far, in order.
fn model_requests(model: &MockModel) -> Vec<Value> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens"))
        .map(|r| r.body)
        .collect()
}

#[tokio::test]
async fn approve_once_runs_the_command_and_the_task_succeeds() {
    let Some(claude) = claude() else { return };
    let rig = rig(&claude).await;
    let runtimes = rig.server.ok("list_agent_runtimes", json!({})).await;
    let listed = &runtimes["runtimes"][0];
    assert_eq!(listed["name"], "claude");
    assert_eq!(listed["available"], true);
    assert!(
        listed["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("2.")),
        "{listed}"
    );

    let task = rig
        .submit(json!({ "prompt": "please make-file now" }))
        .await;
    let waiting = rig.approval(&task).await;
    let request = &waiting["pending_request"];
    assert_eq!(request["payload"]["category"], "command", "{request}");
    assert_eq!(request["payload"]["tool"], "Bash");
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
    rig.wait_writable("a finished task").await;
    rig.wait_no_agent_process("its task").await;
}

#[tokio::test]
async fn deny_leaves_no_file() {
    let Some(claude) = claude() else { return };
    let rig = rig(&claude).await;
    let task = rig
        .submit(json!({ "prompt": "please make-file now" }))
        .await;
    let waiting = rig.approval(&task).await;
    rig.respond(&task, &waiting, "deny").await;
    let done = rig.finished(&task).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(!rig.created_file().exists(), "a denied command ran");
}

#[tokio::test]
async fn a_question_reaches_the_client_and_its_answer_the_model() {
    let Some(claude) = claude() else { return };
    let rig = rig(&claude).await;
    let task = rig.submit(json!({ "prompt": "please ask-me now" })).await;
    let waiting = rig
        .until(&task, "waiting for the question", |view| {
            view["status"] == "waiting_for_question"
        })
        .await;
    let request = &waiting["pending_request"];
    let question = &request["payload"]["questions"][0];
    assert_eq!(question["prompt"], "Which option?", "{request}");
    let labels: Vec<&str> = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["label"].as_str())
        .collect();
    assert_eq!(labels, ["A", "B"]);
    assert_eq!(question["allow_free_text"], true, "{request}");
    assert!(!question_input().to_string().contains(FREE_ANSWER));
    rig.server
        .ok(
            "answer_agent_question",
            json!({
                "task_id": task,
                "request_id": request["request_id"],
                "answers": [{ "question_id": question["question_id"], "selected_option_ids": [],
                              "text": FREE_ANSWER }],
            }),
        )
        .await;
    let done = rig.finished(&task).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["final_response"], "ASKED_DONE");
    // The model got the answer as Claude Code reports it: the tool result
    // of its AskUserQuestion call, keyed by the question's text.
    let last = model_requests(&rig.model).last().cloned().unwrap();
    let result = tool_result_text(&last["messages"], "AskUserQuestion")
        .unwrap_or_else(|| panic!("no AskUserQuestion tool result in {}", last["messages"]));
    assert!(
        result.contains(&format!("\"Which option?\"=\"{FREE_ANSWER}\"")),
        "{result}"
    );
}

#[tokio::test]
async fn cancel_mid_turn_leaves_no_claude_process_and_frees_the_workdir() {
    let Some(claude) = claude() else { return };
    let rig = rig(&claude).await;
    rig.cancel_mid_turn("be slow please").await;
}

#[tokio::test]
async fn a_continuation_resumes_the_session() {
    let Some(claude) = claude() else { return };
    let rig = rig(&claude).await;
    let first = rig
        .submit(json!({ "prompt": "remember the word PELICAN" }))
        .await;
    assert_eq!(rig.finished(&first).await["status"], "succeeded");
    let (_, history) = continue_task(&rig, &first, "what was the word").await;
    assert!(
        history.contains("PELICAN"),
        "not the same session: {history}"
    );
}

/// Continues `task` with `prompt` and checks the follow-up succeeded after
/// asking the model; its view, and the history the model saw last.
async fn continue_task(rig: &AgentRig, task: &str, prompt: &str) -> (Value, String) {
    let asked = model_requests(&rig.model).len();
    let next = rig
        .submit(json!({ "prompt": prompt, "continue_from_task_id": task }))
        .await;
    let done = rig.finished(&next).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let requests = model_requests(&rig.model);
    assert!(
        requests.len() > asked,
        "the follow-up never asked the model"
    );
    let history = requests.last().unwrap()["messages"].to_string();
    assert!(history.contains(prompt), "{history}");
    (done, history)
}

/// A Bridge killed mid-turn: Claude Code (measured, 2.1.197) does not stop
/// when its stdin closes but finishes the turn it is in. So the restarted
/// Bridge reports the task interrupted, never runs it again, and keeps the
/// workdir guarded while Claude Code still runs; once it has ended, a
/// continuation resumes the session the crashed Bridge recorded.
#[tokio::test]
async fn a_bridge_restart_mid_turn_reconciles_honestly_and_the_session_resumes() {
    let Some(claude) = claude() else { return };
    let mut rig = rig(&claude).await;
    let task = rig
        .submit(json!({ "prompt": "remember OSPREY and be crash-slow please" }))
        .await;
    // Claude Code names its session before it calls the model; the Bridge
    // records it at once. From here a crash must leave it resumable.
    rig.session_recorded(&task).await;
    rig.crash(&task).await;
    assert!(
        !rig.agent_processes().is_empty(),
        "Claude Code stopped with its Bridge: the guard below proves nothing"
    );
    rig.restart_reconciled(&task).await;
    // An agent may still write: no file tool may.
    assert_eq!(
        rig.server
            .err(
                "create_text_file",
                json!({ "workdir": "demo", "path": "during.txt", "content": "x" }),
            )
            .await,
        "WORKDIR_RECOVERY_REQUIRED"
    );
    rig.wait_no_agent_process("the end of its orphaned turn")
        .await;

    // The next submission finds it stopped, clears the guard, and resumes
    // the recorded session: the model sees the interrupted turn's prompt.
    let (done, history) = continue_task(&rig, &task, "recall-crash: what did I say").await;
    assert_eq!(done["final_response"], "RECALLED");
    assert!(
        history.contains("remember OSPREY"),
        "not the crashed task's session: {history}"
    );
    rig.wait_writable("the continuation").await;
}
