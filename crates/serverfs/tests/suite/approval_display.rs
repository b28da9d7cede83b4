//! What a human approves is what they are shown (issue 27, items 6 and 7):
//! commands, questions and agent text holding terminal escapes, a carriage
//! return, bidirectional overrides or zero-width characters reach no
//! display path raw — not the Bridge's RPC view, not the tool results
//! (text block and structured content), not the elicitation form, not the
//! events — and a `model` a CLI could read as an option is refused at
//! submit. The real `serverfs` and the real Bridge, fake runtime.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::common::Server;
use crate::common::agent::{all_events, submit, wait_status};
use crate::common::bridge::{AgentEnv, Bridge};
use crate::common::human::Human;

/// Hostile display strings and how they must be shown: every control
/// character (C0 but `\n`/`\t`, DEL, C1), bidirectional control, other
/// format character (Cf) and line/paragraph separator as `\u{hex}`; a
/// literal `\u{…}` with its backslash doubled, so it cannot pass for one.
const CORPUS: &[(&str, &str)] = &[
    (
        "echo safe\u{1b}[2K\u{1b}[1Grm -rf ~",
        "echo safe\\u{1b}[2K\\u{1b}[1Grm -rf ~",
    ),
    ("echo ok\rrm -rf ~", "echo ok\\u{d}rm -rf ~"),
    ("cat \u{202e}txt.exe", "cat \\u{202e}txt.exe"),
    (
        "rm\u{200b} -rf\u{200d} x\u{feff}y",
        "rm\\u{200b} -rf\\u{200d} x\\u{feff}y",
    ),
    ("a\u{85}b\u{9b}31mc\u{7f}d", "a\\u{85}b\\u{9b}31mc\\u{7f}d"),
    (
        "first\u{2028}second\u{2029}third",
        "first\\u{2028}second\\u{2029}third",
    ),
    (
        "\u{2066}x\u{2069} \u{61c}\u{200e}\u{200f}\u{ad}z",
        "\\u{2066}x\\u{2069} \\u{61c}\\u{200e}\\u{200f}\\u{ad}z",
    ),
    ("tag\u{e0041}\u{e007f}end", "tag\\u{e0041}\\u{e007f}end"),
    ("bell\u{7}back\u{8}space", "bell\\u{7}back\\u{8}space"),
    ("literal \\u{202e} typed", "literal \\\\u{202e} typed"),
];

/// Whether `c` must never reach a display raw (the list, written
/// out independently of the implementation).
fn hidden(c: char) -> bool {
    let code = u32::from(c);
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            code,
            0xad | 0x61c
                | 0x200b..=0x200f
                | 0x2028..=0x202e
                | 0x2060..=0x2064
                | 0x2066..=0x206f
                | 0xfeff
                | 0xe0000..=0xe007f
        )
}

/// The hidden characters of every string in `value` (keys included).
fn hidden_in_value(value: &Value, found: &mut Vec<char>) {
    match value {
        Value::String(text) => found.extend(text.chars().filter(|c| hidden(*c))),
        Value::Array(items) => items.iter().for_each(|item| hidden_in_value(item, found)),
        Value::Object(fields) => {
            for (key, field) in fields {
                found.extend(key.chars().filter(|c| hidden(*c)));
                hidden_in_value(field, found);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Asserts that nothing in `value` (named `what`) is hidden.
fn assert_clean(what: &str, value: &Value) {
    let mut found = Vec::new();
    hidden_in_value(value, &mut found);
    assert_eq!(found, Vec::<char>::new(), "{what}: {value}");
}

/// A tool result's text block and structured content, both checked clean.
async fn shown(server: &Server, tool: &str, args: Value) -> Value {
    let result: CallToolResult = server.call(tool, args.clone()).await;
    assert_ne!(result.is_error, Some(true), "{tool}: {:?}", result.content);
    for block in &result.content {
        let text = &block.as_text().expect("text block").text;
        assert_clean(&format!("{tool} text"), &Value::String(text.clone()));
    }
    let structured = result.structured_content.expect("structured content");
    assert_clean(&format!("{tool} structuredContent"), &structured);
    structured
}

/// Every event of `task`, through the tool and the Bridge, checked clean.
async fn events_are_clean(server: &Server, bridge: &Bridge, task: &str) {
    shown(
        server,
        "read_agent_task_events",
        json!({"task_id": task, "limit": 500}),
    )
    .await;
    assert_clean(
        "read_agent_task_events",
        &json!(all_events(server, task).await),
    );
    assert_clean("task.events", &json!(bridge.events(task)));
}

/// An environment whose human answers approvals in forms.
fn env() -> AgentEnv {
    AgentEnv::builder()
        .demo("agent_mode = \"workspace-write\"\nagent_runtimes = [\"fake\"]\napprovals = \"human-preferred\"")
        .build()
}

#[tokio::test]
async fn hostile_commands_reach_no_display_path_raw() {
    let env = env();
    let bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_forms()).await;

    for (raw, escaped) in CORPUS {
        let task = submit(&server, &format!("fake: approval {raw}")).await;
        // The form the human approves from.
        let form = server.human().next_form().await;
        assert!(
            form.message().contains(&format!("Command: {escaped}\n")),
            "{raw:?}: {}",
            form.message()
        );
        assert_clean("form message", &json!(form.message()));
        assert_clean("form schema", form.schema());
        // The tool result the model reads.
        wait_status(&server, &task, "waiting_for_approval").await;
        let view = shown(&server, "get_agent_task", json!({"task_id": task})).await;
        assert_eq!(
            view["pending_request"]["payload"]["command_display"], *escaped,
            "{view}"
        );
        // The Bridge's own view.
        let pending = bridge.ok("task.get", json!({"task_id": task}))["pending_request"].clone();
        assert_eq!(pending["payload"]["command_display"], *escaped, "{pending}");
        assert_clean("task.get", &pending);

        form.accept(json!({"decision": "approve_once"}));
        let done = wait_status(&server, &task, "succeeded").await;
        assert_eq!(done["final_response"], format!("approved: {escaped}"));
        shown(&server, "get_agent_task", json!({"task_id": task})).await;
        events_are_clean(&server, &bridge, &task).await;
    }
}

#[tokio::test]
async fn hostile_questions_and_agent_text_reach_no_display_path_raw() {
    let env = env();
    let bridge = env.start_bridge();
    let server = env.start_server_as(Human::default().with_forms()).await;

    let (raw, escaped) = CORPUS[2];
    let task = submit(&server, &format!("fake: question {raw}")).await;
    let form = server.human().next_form().await;
    assert!(
        form.message().contains(&format!("1. {escaped}\n")),
        "{}",
        form.message()
    );
    assert_clean("form message", &json!(form.message()));
    assert_clean("form schema", form.schema());
    wait_status(&server, &task, "waiting_for_question").await;
    let view = shown(&server, "get_agent_task", json!({"task_id": task})).await;
    assert_eq!(
        view["pending_request"]["payload"]["questions"][0]["prompt"], escaped,
        "{view}"
    );
    let pending = bridge.ok("task.get", json!({"task_id": task}))["pending_request"].clone();
    assert_clean("task.get", &pending);
    form.accept(json!({"q1": "a"}));
    wait_status(&server, &task, "succeeded").await;

    // The agent's own text: its message events and final response.
    let prompt: Vec<String> = CORPUS
        .iter()
        .map(|(raw, _)| format!("fake: complete {raw}"))
        .collect();
    let task = submit(&server, &prompt.join("\n")).await;
    let done = wait_status(&server, &task, "succeeded").await;
    let expected: Vec<&str> = CORPUS.iter().map(|(_, escaped)| *escaped).collect();
    assert_eq!(done["final_response"], expected.join("\n"));
    let view = shown(&server, "get_agent_task", json!({"task_id": task})).await;
    assert_eq!(view["final_response"], expected.join("\n"));
    assert_clean("task.get", &bridge.ok("task.get", json!({"task_id": task})));
    events_are_clean(&server, &bridge, &task).await;
}

#[tokio::test]
async fn a_model_a_cli_could_read_as_an_option_is_refused_at_submit() {
    let env = AgentEnv::builder().build();
    let _bridge = env.start_bridge();
    let server = env.start_server().await;
    // Beside the grammar's own unit test: the values the issue names, a
    // second option smuggled after a real id, and one over the bound.
    let hostile = ["--dangerously-skip-permissions", "-x", "a b", "a\nb", ""];
    let smuggled = "opus --permission-mode=bypassPermissions";
    let long = "m".repeat(513);
    for model in hostile.into_iter().chain([smuggled, "a=b", long.as_str()]) {
        let code = server
            .err(
                "submit_agent_task",
                json!({"runtime": "fake", "workdir": "demo", "prompt": "hi", "model": model}),
            )
            .await;
        assert_eq!(code, "INVALID_REQUEST", "{model:?}");
    }
}
