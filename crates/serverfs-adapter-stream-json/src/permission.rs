//! `can_use_tool` ↔ neutral interactions (spec-adapters.md §3.6–§3.7).
//!
//! Native mode: every `can_use_tool` the CLI raises reaches the remote
//! human, with only the decisions the request really allows —
//! `approve_session` only when the CLI suggests session-scoped permission
//! updates, and then applied as exactly those; suggestions that would be
//! written to the user's, project's or local settings are never applied.
//! `AskUserQuestion` becomes a question, answered by question text.

use serde_json::{Map, Value, json};
use serverfs_agent_runtime::bounds::bounded_json;
use serverfs_agent_runtime::payload;
use serverfs_protocol::bridge::{
    ApprovalCategory, ApprovalDecision, ApprovalPayload, ApprovalResolution, Question,
    QuestionOption, QuestionPayload, QuestionResolution,
};

use crate::wire::{CanUseTool, QuestionsInput, SuggestionScope, lenient};

/// The tool name of Claude's question tool.
const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// What a `can_use_tool` asks of the human, or how it is answered at once.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// An approval; the answer echoes `input` and may apply
    /// `session_updates`.
    Approval {
        /// What the human sees.
        payload: Box<ApprovalPayload>,
        /// The tool input, echoed as `updatedInput` on allow.
        input: Value,
        /// The CLI's session-scoped suggestions, applied on
        /// `approve_session`.
        session_updates: Vec<Value>,
    },
    /// Questions; the answer is the input with `answers` added.
    Question {
        /// What the human sees.
        payload: QuestionPayload,
        /// The tool input.
        input: Value,
    },
    /// Deny at once with this message (a payload the Bridge cannot
    /// present).
    Deny(String),
}

/// Maps one `can_use_tool`; `display` names the CLI to the human
/// ("Claude", "Qoder").
pub fn ask(request: CanUseTool, display: &str) -> Ask {
    if request.tool_name == ASK_USER_QUESTION {
        return questions(request.input, display);
    }
    let session_updates: Vec<Value> = request
        .permission_suggestions
        .iter()
        .flatten()
        .filter(|suggestion| {
            lenient::<SuggestionScope>(suggestion)
                .and_then(|scope| scope.destination)
                .as_deref()
                == Some("session")
        })
        .cloned()
        .collect();
    let mut decisions = vec![ApprovalDecision::ApproveOnce];
    if !session_updates.is_empty() {
        decisions.push(ApprovalDecision::ApproveSession);
    }
    decisions.extend([ApprovalDecision::Deny, ApprovalDecision::CancelTask]);
    let title = request
        .title
        .clone()
        .or_else(|| request.display_name.clone())
        .unwrap_or_else(|| format!("{display} wants to use {}", request.tool_name));
    let mut approval = payload::approval(category(&request.tool_name), &title, decisions);
    approval.reason = request.decision_reason.or(request.description);
    approval.blocked_path = request.blocked_path;
    approval.command_display = (request.tool_name == "Bash")
        .then(|| request.input.get("command").and_then(Value::as_str))
        .flatten()
        .map(str::to_owned);
    approval.tool = Some(request.tool_name);
    approval.tool_input = Some(bounded_json(&request.input).0);
    Ask::Approval {
        payload: Box::new(approval),
        input: request.input,
        session_updates,
    }
}

/// The approval category of a tool.
fn category(tool: &str) -> ApprovalCategory {
    match tool {
        "Bash" => ApprovalCategory::Command,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => ApprovalCategory::FileChange,
        "WebFetch" | "WebSearch" => ApprovalCategory::NetworkPermission,
        mcp if mcp.starts_with("mcp__") => ApprovalCategory::McpTool,
        _ => ApprovalCategory::Other,
    }
}

fn questions(input: Value, display: &str) -> Ask {
    let invalid = || Ask::Deny(format!("{display} question payload is invalid"));
    let Some(parsed) = lenient::<QuestionsInput>(&input) else {
        return invalid();
    };
    if parsed.questions.is_empty() {
        return invalid();
    }
    let mut questions: Vec<Question> = Vec::new();
    for (index, question) in parsed.questions.into_iter().enumerate() {
        // Answers go back keyed by question text: two questions with one
        // text could not be told apart.
        if questions
            .iter()
            .any(|seen| seen.prompt == question.question)
        {
            return Ask::Deny(format!("{display} asked the same question twice"));
        }
        let options = question
            .options
            .into_iter()
            .map(|option| QuestionOption {
                option_id: option.label.clone(),
                label: option.label,
                description: option.description,
                preview: option.preview,
            })
            .collect();
        questions.push(Question {
            question_id: format!("q{index}"),
            prompt: question.question,
            options,
            multi_select: question.multi_select,
            allow_free_text: true,
        });
    }
    Ask::Question {
        payload: QuestionPayload { questions },
        input,
    }
}

/// The `can_use_tool` answer to an approval.
pub fn approval_response(
    resolution: &ApprovalResolution,
    input: &Value,
    session_updates: &[Value],
) -> Value {
    match resolution.decision {
        ApprovalDecision::ApproveOnce => json!({ "behavior": "allow", "updatedInput": input }),
        ApprovalDecision::ApproveSession => json!({
            "behavior": "allow",
            "updatedInput": input,
            "updatedPermissions": session_updates,
        }),
        ApprovalDecision::Deny => json!({
            "behavior": "deny",
            "message": "Denied by the remote user",
            "interrupt": false,
        }),
        ApprovalDecision::CancelTask => json!({
            "behavior": "deny",
            "message": "Cancelled by the remote user",
            "interrupt": true,
        }),
    }
}

/// The `can_use_tool` answer to questions: the input with `answers`, a
/// map from question text to the chosen labels and the free text, joined
/// by `", "`.
pub fn question_response(
    payload: &QuestionPayload,
    resolution: &QuestionResolution,
    input: &Value,
) -> Value {
    let answers: Map<String, Value> = payload::answer_labels(payload, resolution)
        .into_iter()
        .map(|(question, given)| (question.prompt.clone(), json!(given.join(", "))))
        .collect();
    let mut updated = input.as_object().cloned().unwrap_or_default();
    updated.insert("answers".to_owned(), Value::Object(answers));
    json!({ "behavior": "allow", "updatedInput": updated })
}

/// The answer when the Bridge could not get the human's decision (the
/// interaction expired or the task ended): deny, the turn goes on.
pub fn unanswered() -> Value {
    json!({
        "behavior": "deny",
        "message": "ServerFS could not process the permission request",
        "interrupt": false,
    })
}

#[cfg(test)]
mod tests {
    use serverfs_protocol::bridge::QuestionAnswer;

    use super::*;

    fn request(value: Value) -> CanUseTool {
        serde_json::from_value(value).unwrap()
    }

    fn bash(suggestions: Value) -> CanUseTool {
        request(json!({
            "tool_name": "Bash", "display_name": "Bash",
            "input": { "command": "echo hi > f.txt", "description": "create a file" },
            "description": "create a file",
            "permission_suggestions": suggestions,
            "blocked_path": "/w/f.txt", "tool_use_id": "toolu_1"
        }))
    }

    #[test]
    fn session_approval_is_offered_only_for_session_suggestions_and_applies_exactly_them() {
        let session =
            json!({ "type": "addDirectories", "directories": ["/w"], "destination": "session" });
        let local = json!({
            "type": "addRules", "rules": [{ "toolName": "Bash", "ruleContent": "echo hi *" }],
            "behavior": "allow", "destination": "localSettings"
        });
        let Ask::Approval {
            payload,
            input,
            session_updates,
        } = ask(bash(json!([local.clone(), session.clone()])), "Claude")
        else {
            panic!("not an approval");
        };
        assert_eq!(
            payload.available_decisions,
            vec![
                ApprovalDecision::ApproveOnce,
                ApprovalDecision::ApproveSession,
                ApprovalDecision::Deny,
                ApprovalDecision::CancelTask
            ]
        );
        assert_eq!(payload.category, ApprovalCategory::Command);
        assert_eq!(payload.command_display.as_deref(), Some("echo hi > f.txt"));
        assert_eq!(payload.title.as_deref(), Some("Bash"));
        assert_eq!(payload.reason.as_deref(), Some("create a file"));
        assert_eq!(session_updates, vec![session.clone()]);
        let resolution = |decision| ApprovalResolution {
            decision,
            granted_permission_ids: Vec::new(),
            option_id: None,
        };
        assert_eq!(
            approval_response(
                &resolution(ApprovalDecision::ApproveSession),
                &input,
                &session_updates
            ),
            json!({ "behavior": "allow", "updatedInput": input, "updatedPermissions": [session] })
        );
        assert_eq!(
            approval_response(
                &resolution(ApprovalDecision::ApproveOnce),
                &input,
                &session_updates
            ),
            json!({ "behavior": "allow", "updatedInput": input })
        );
        assert_eq!(
            approval_response(&resolution(ApprovalDecision::CancelTask), &input, &[])["interrupt"],
            true
        );

        // Only settings-file suggestions: no session approval on offer.
        let Ask::Approval { payload, .. } = ask(bash(json!([local])), "Claude") else {
            panic!("not an approval");
        };
        assert!(
            !payload
                .available_decisions
                .contains(&ApprovalDecision::ApproveSession)
        );
        let Ask::Approval { payload, .. } = ask(bash(Value::Null), "Qoder") else {
            panic!("not an approval");
        };
        assert_eq!(payload.available_decisions.len(), 3);
    }

    #[test]
    fn tools_map_to_categories() {
        for (tool, expected) in [
            ("Write", ApprovalCategory::FileChange),
            ("NotebookEdit", ApprovalCategory::FileChange),
            ("WebFetch", ApprovalCategory::NetworkPermission),
            ("mcp__github__create_issue", ApprovalCategory::McpTool),
            ("Task", ApprovalCategory::Other),
        ] {
            let Ask::Approval { payload, .. } =
                ask(request(json!({ "tool_name": tool, "input": {} })), "Claude")
            else {
                panic!("{tool}: not an approval");
            };
            assert_eq!(payload.category, expected, "{tool}");
            assert_eq!(
                payload.title.as_deref(),
                Some(&*format!("Claude wants to use {tool}"))
            );
            assert_eq!(payload.command_display, None);
        }
    }

    #[test]
    fn questions_are_keyed_by_text_and_duplicates_refused() {
        let input = json!({ "questions": [{
            "question": "Which option?", "header": "Pick",
            "options": [{ "label": "A", "description": "first" }, { "label": "B" }],
            "multiSelect": true
        }]});
        let Ask::Question { payload, input } = ask(
            request(json!({ "tool_name": "AskUserQuestion", "input": input })),
            "Claude",
        ) else {
            panic!("not a question");
        };
        let question = &payload.questions[0];
        assert_eq!(question.question_id, "q0");
        assert_eq!(question.options[1].option_id, "B");
        assert!(question.multi_select && question.allow_free_text);
        let resolution = QuestionResolution {
            answers: vec![QuestionAnswer {
                question_id: "q0".to_owned(),
                selected_option_ids: vec!["A".to_owned(), "B".to_owned()],
                text: Some("both".to_owned()),
            }],
        };
        let answer = question_response(&payload, &resolution, &input);
        assert_eq!(
            answer["updatedInput"]["answers"],
            json!({ "Which option?": "A, B, both" })
        );
        assert_eq!(answer["updatedInput"]["questions"], input["questions"]);

        let twice = json!({ "questions": [{ "question": "Same?" }, { "question": "Same?" }] });
        assert_eq!(
            ask(
                request(json!({ "tool_name": "AskUserQuestion", "input": twice })),
                "Claude"
            ),
            Ask::Deny("Claude asked the same question twice".to_owned())
        );
        for invalid in [
            json!({}),
            json!({ "questions": [] }),
            json!({ "questions": [7] }),
        ] {
            assert_eq!(
                ask(
                    request(json!({ "tool_name": "AskUserQuestion", "input": invalid })),
                    "Qoder"
                ),
                Ask::Deny("Qoder question payload is invalid".to_owned())
            );
        }
    }
}
