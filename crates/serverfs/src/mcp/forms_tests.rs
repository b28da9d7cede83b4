//! The forms and the decisions they give, for each kind of request and
//! each response action.

use pretty_assertions::assert_eq;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::{Value, json};
use serverfs_protocol::bridge::{
    ApprovalDecision, BridgeErrorCode, PendingInteraction, QuestionAnswer, TaskView,
};

use super::{decision, form};
use crate::mcp::error::ToolCode;
use crate::service::HumanAnswer;

/// A task of `demo` in `src` waiting on `pending` (its wire form).
fn task(pending: &Value) -> TaskView {
    serde_json::from_value(json!({
        "task_id": "agt_000000000000000000000001",
        "runtime": "fake",
        "workdir_alias": "demo",
        "workdir_slot": null,
        "relative_cwd": "src",
        "profile": "workspace-write",
        "requested_model": null,
        "status": "waiting_for_approval",
        "created_at": 1,
        "started_at": 2,
        "updated_at": 3,
        "completed_at": null,
        "deadline_at": 4,
        "continue_from_task_id": null,
        "correlation_id": null,
        "idempotency_key": null,
        "final_response": null,
        "final_response_truncated": false,
        "result": null,
        "manifest": {},
        "manifest_sha256": "0",
        "error_code": null,
        "error_message": null,
        "pending_request_id": pending["request_id"],
        "pending_request": pending,
    }))
    .unwrap()
}

fn approval(payload: Value) -> Value {
    json!({
        "kind": "approval",
        "request_id": "req_000000000000000000000001",
        "task_id": "agt_000000000000000000000001",
        "status": "pending",
        "payload": payload,
        "created_at": 1,
        "expires_at": 9,
        "resolved_at": null,
        "resolution": null,
    })
}

fn question(payload: Value) -> Value {
    let mut record = approval(payload);
    record["kind"] = json!("question");
    record
}

fn pending(record: &Value) -> PendingInteraction {
    serde_json::from_value(record.clone()).unwrap()
}

/// The form's message and its schema as JSON.
fn rendered(record: &Value) -> (String, Value) {
    match form(&task(record), &pending(record)).unwrap() {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (message, serde_json::to_value(requested_schema).unwrap()),
        other => panic!("not a form: {other:?}"),
    }
}

fn command_approval() -> Value {
    approval(json!({
        "category": "command",
        "title": "Run the tests",
        "reason": "check the fix",
        "command_display": "/bin/bash -lc 'cargo test'",
        "relative_cwd": "src",
        "available_decisions": ["approve_once", "approve_session", "deny", "cancel_task"],
    }))
}

#[test]
fn an_approval_form_shows_what_where_why_and_the_decisions() {
    let (message, schema) = rendered(&command_approval());
    assert_eq!(
        message,
        "The coding agent (fake) working in workdir \"demo\" (directory src) asks for your \
         approval.\nTitle: Run the tests\nWhat: run a command\nCommand: /bin/bash -lc 'cargo \
         test'\nWhere: src\nWhy: check the fix\nTask agt_000000000000000000000001, request \
         req_000000000000000000000001.\nThis decision is yours, not the AI assistant's."
    );
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Your decision",
                    "oneOf": [
                        {"const": "approve_once", "title": "Approve once"},
                        {"const": "approve_session", "title": "Approve for the rest of this agent session"},
                        {"const": "deny", "title": "Deny (the agent goes on without it)"},
                        {"const": "cancel_task", "title": "Deny and cancel the task"},
                    ],
                },
            },
            "required": ["decision"],
        })
    );
}

#[test]
fn only_the_decisions_on_offer_are_choices() {
    let record = approval(json!({
        "category": "file_change",
        "file_changes": [{"path": "a.rs"}, {"path": "~/notes.txt"}],
        "available_decisions": ["approve_once", "deny"],
    }));
    let (message, schema) = rendered(&record);
    assert!(
        message.contains("What: change files\nFiles: a.rs, ~/notes.txt"),
        "{message}"
    );
    let consts: Vec<&str> = schema["properties"]["decision"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["const"].as_str().unwrap())
        .collect();
    assert_eq!(consts, ["approve_once", "deny"]);
    let answer = |chosen: &str| {
        decision(
            &pending(&record),
            ElicitationAction::Accept,
            Some(&json!({"decision": chosen})),
        )
    };
    assert_eq!(
        answer("deny").unwrap().expect("decided"),
        HumanAnswer::Approval {
            decision: ApprovalDecision::Deny,
            option_id: None,
            granted_permission_ids: None
        }
    );
    // Not on offer, or not a decision: refused, nothing decided.
    for bad in ["approve_session", "cancel_task", "yes", "option:x"] {
        assert_eq!(
            answer(bad).unwrap_err().code,
            ToolCode::Bridge(BridgeErrorCode::InvalidApprovalDecision),
            "{bad}"
        );
    }
    // Declined: deny; dismissed: nothing decided, the request stays.
    assert_eq!(
        decision(&pending(&record), ElicitationAction::Decline, None)
            .unwrap()
            .expect("decided"),
        HumanAnswer::Approval {
            decision: ApprovalDecision::Deny,
            option_id: None,
            granted_permission_ids: None
        }
    );
    assert_eq!(
        decision(&pending(&record), ElicitationAction::Cancel, None).unwrap(),
        None
    );
}

#[test]
fn accept_decline_and_cancel_of_an_approval() {
    let record = command_approval();
    let cases = [
        (
            ElicitationAction::Accept,
            Some(json!({"decision": "approve_session"})),
            Some(HumanAnswer::Approval {
                decision: ApprovalDecision::ApproveSession,
                option_id: None,
                granted_permission_ids: None,
            }),
        ),
        (
            ElicitationAction::Decline,
            None,
            Some(HumanAnswer::Approval {
                decision: ApprovalDecision::Deny,
                option_id: None,
                granted_permission_ids: None,
            }),
        ),
        // Dismissed: nothing is decided; the request stays pending.
        (ElicitationAction::Cancel, None, None),
    ];
    for (action, content, expected) in cases {
        assert_eq!(
            decision(&pending(&record), action.clone(), content.as_ref()).unwrap(),
            expected,
            "{action:?}"
        );
    }
    assert_eq!(
        decision(&pending(&record), ElicitationAction::Accept, None)
            .unwrap_err()
            .code,
        ToolCode::Bridge(BridgeErrorCode::InvalidApprovalDecision)
    );
}

#[test]
fn exact_options_are_the_choices_with_their_kind() {
    let record = approval(json!({
        "category": "other",
        "available_decisions": ["approve_once", "approve_session", "deny", "cancel_task"],
        "options": [
            {"option_id": "once", "label": "Allow once", "kind": "allow_once"},
            {"option_id": "always", "label": "Always allow", "kind": "allow_always"},
            {"option_id": "no", "label": "Reject", "kind": "reject_once"},
        ],
    }));
    let (_, schema) = rendered(&record);
    assert_eq!(
        schema["properties"]["decision"]["oneOf"],
        json!([
            {"const": "option:once", "title": "Allow once (allow once)"},
            {"const": "option:always", "title": "Always allow (allow always: the agent's provider may remember this beyond the task)"},
            {"const": "option:no", "title": "Reject (reject)"},
            {"const": "cancel_task", "title": "Deny and cancel the task"},
        ])
    );
    let answer =
        |content: Value| decision(&pending(&record), ElicitationAction::Accept, Some(&content));
    assert_eq!(
        answer(json!({"decision": "option:always"}))
            .unwrap()
            .expect("decided"),
        HumanAnswer::Approval {
            decision: ApprovalDecision::ApproveSession,
            option_id: Some("always".to_owned()),
            granted_permission_ids: None
        }
    );
    // A bare decision besides cancel_task does not pick an option.
    assert!(answer(json!({"decision": "approve_once"})).is_err());
    assert!(answer(json!({"decision": "option:missing"})).is_err());
    // Declined: the rejecting option.
    assert_eq!(
        decision(&pending(&record), ElicitationAction::Decline, None)
            .unwrap()
            .expect("decided"),
        HumanAnswer::Approval {
            decision: ApprovalDecision::Deny,
            option_id: Some("no".to_owned()),
            granted_permission_ids: None
        }
    );
}

#[test]
fn a_permission_set_lets_the_human_pick_what_to_grant() {
    let record = approval(json!({
        "category": "provider_permission",
        "requested_permissions": [
            {"permission_id": "fileSystem", "kind": "fileSystem", "details": {"read": ["/etc"]}},
            {"permission_id": "network", "kind": "network", "details": {"enabled": true}},
        ],
        "available_decisions": ["approve_once", "deny"],
    }));
    let (message, schema) = rendered(&record);
    assert!(
        message.contains(
            "Requested permissions: fileSystem (fileSystem): {\"read\":[\"/etc\"]}; network \
             (network): {\"enabled\":true}"
        ),
        "{message}"
    );
    assert_eq!(
        schema["properties"]["granted_permission_ids"],
        json!({
            "type": "array",
            "title": "Permissions to grant when approving (none picked: all of them)",
            "items": {"anyOf": [
                {"const": "fileSystem", "title": "fileSystem (fileSystem)"},
                {"const": "network", "title": "network (network)"},
            ]},
        })
    );
    let answer = |content: Value| {
        decision(&pending(&record), ElicitationAction::Accept, Some(&content))
            .unwrap()
            .expect("decided")
    };
    assert_eq!(
        answer(json!({"decision": "approve_once", "granted_permission_ids": ["network"]})),
        HumanAnswer::Approval {
            decision: ApprovalDecision::ApproveOnce,
            option_id: None,
            granted_permission_ids: Some(vec!["network".to_owned()])
        }
    );
    // None picked: all, as the tool's default.
    assert_eq!(
        answer(json!({"decision": "approve_once", "granted_permission_ids": []})),
        HumanAnswer::Approval {
            decision: ApprovalDecision::ApproveOnce,
            option_id: None,
            granted_permission_ids: None
        }
    );
}

fn two_questions() -> Value {
    question(json!({
        "questions": [
            {
                "question_id": "db",
                "prompt": "Which database?",
                "options": [
                    {"option_id": "pg", "label": "PostgreSQL", "description": "the server one"},
                    {"option_id": "lite", "label": "SQLite"},
                ],
                "multi_select": false,
                "allow_free_text": true,
            },
            {
                "question_id": "targets",
                "prompt": "Build for?",
                "options": [
                    {"option_id": "linux", "label": "Linux"},
                    {"option_id": "mac", "label": "macOS"},
                ],
                "multi_select": true,
                "allow_free_text": false,
            },
            {
                "question_id": "name",
                "prompt": "Project name?",
                "options": [],
                "multi_select": false,
                "allow_free_text": true,
            },
        ],
    }))
}

#[test]
fn a_question_form_has_options_multi_select_and_free_text() {
    let (message, schema) = rendered(&two_questions());
    assert!(
        message.starts_with(
            "The coding agent (fake) working in workdir \"demo\" (directory src) asks you:\n\
             1. Which database?\n   - PostgreSQL: the server one\n   - SQLite\n\
             2. Build for?\n   - Linux\n   - macOS\n3. Project name?\n"
        ),
        "{message}"
    );
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "q1": {"type": "string", "title": "1. Which database?", "oneOf": [
                    {"const": "pg", "title": "PostgreSQL"},
                    {"const": "lite", "title": "SQLite"},
                ]},
                "q1_text": {"type": "string", "title": "1. Your own answer (instead of or beside an option)"},
                "q2": {"type": "array", "title": "2. Build for?", "minItems": 1, "items": {"anyOf": [
                    {"const": "linux", "title": "Linux"},
                    {"const": "mac", "title": "macOS"},
                ]}},
                "q3_text": {"type": "string", "title": "3. Project name?"},
            },
            "required": ["q2", "q3_text"],
        })
    );
}

#[test]
fn question_answers_and_refusals() {
    let record = two_questions();
    let answer = decision(
        &pending(&record),
        ElicitationAction::Accept,
        Some(&json!({"q1_text": "  DuckDB ", "q2": ["linux", "mac"], "q3_text": "demo"})),
    )
    .unwrap()
    .expect("decided");
    assert_eq!(
        answer,
        HumanAnswer::Question {
            answers: vec![
                QuestionAnswer {
                    question_id: "db".to_owned(),
                    selected_option_ids: vec![],
                    text: Some("DuckDB".to_owned()),
                },
                QuestionAnswer {
                    question_id: "targets".to_owned(),
                    selected_option_ids: vec!["linux".to_owned(), "mac".to_owned()],
                    text: None,
                },
                QuestionAnswer {
                    question_id: "name".to_owned(),
                    selected_option_ids: vec![],
                    text: Some("demo".to_owned()),
                },
            ]
        }
    );
    for bad in [json!({"q2": 3}), json!({"q1_text": ["x"]}), json!("text")] {
        assert_eq!(
            decision(&pending(&record), ElicitationAction::Accept, Some(&bad))
                .unwrap_err()
                .code,
            ToolCode::Bridge(BridgeErrorCode::InvalidQuestionAnswer),
            "{bad}"
        );
    }
    // A declined question cancels the task (the agent cannot go on
    // without an answer); a dismissed one decides nothing.
    assert_eq!(
        decision(&pending(&record), ElicitationAction::Decline, None).unwrap(),
        Some(HumanAnswer::CancelTask)
    );
    assert_eq!(
        decision(&pending(&record), ElicitationAction::Cancel, None).unwrap(),
        None
    );
}

#[test]
fn long_fields_are_clipped() {
    let long = "x".repeat(5_000);
    let record = approval(json!({
        "category": "command",
        "command_display": long,
        "available_decisions": [],
    }));
    let (message, schema) = rendered(&record);
    assert!(message.contains(&format!("Command: {}…\n", "x".repeat(2_000))));
    // No list on offer: every decision is.
    assert_eq!(
        schema["properties"]["decision"]["oneOf"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

/// Issue 27: a payload stored raw (by a Bridge from before the escaping,
/// or reaching the form any other way) is still shown with its hidden
/// characters escaped; the values the form sends back stay the provider's.
#[test]
fn a_raw_payload_is_shown_with_its_hidden_characters_escaped() {
    let record = approval(json!({
        "category": "other",
        "title": "Run\u{1b}[8m",
        "command_display": "echo ok\rrm -rf ~",
        "tool": "Bash\u{202e}",
        "available_decisions": ["approve_once", "deny", "cancel_task"],
        "options": [{"option_id": "opt\u{200b}1", "label": "Allow\u{202e}", "kind": "allow_once"}],
    }));
    let (message, schema) = rendered(&record);
    for line in [
        "Title: Run\\u{1b}[8m\n",
        "Command: echo ok\\u{d}rm -rf ~\n",
        "Tool: Bash\\u{202e}\n",
    ] {
        assert!(message.contains(line), "{line:?} in {message}");
    }
    assert!(!message.contains(['\u{1b}', '\r', '\u{202e}']), "{message}");
    assert_eq!(
        schema["properties"]["decision"]["oneOf"][0],
        json!({"const": "option:opt\u{200b}1", "title": "Allow\\u{202e} (allow once)"})
    );
}
