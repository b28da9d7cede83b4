//! A pending approval or question as an elicitation form for the client's
//! human, and what the human's response decides (issue 18).
//!
//! The same form serves both channels: `elicitation/create` sent to a
//! client that declared form elicitation, and the input request of a task
//! of the Tasks extension (`tasks/get` … `tasks/update`). Both are built
//! from the Bridge's neutral payload only, so every runtime's requests look
//! alike.
//!
//! # The form
//!
//! The message says what the agent wants to do, where and why (every field
//! the payload has, long ones clipped), names the workdir, runtime, task
//! and request, and says the decision is the human's. The schema:
//!
//! * an approval: `decision`, one of the decisions on offer
//!   (`approve_once`, `approve_session`, `deny`, `cancel_task`) or, when
//!   the provider offers exact options, one of them as
//!   `option:<option_id>` (titled with its label and kind) plus
//!   `cancel_task`; for a permission set without options,
//!   `granted_permission_ids`, the permissions to grant (none picked: all);
//! * a question: for question *n* (from 1), `qn` — one option, or a list
//!   for a multi-select question — and `qn_text` where free text is
//!   allowed.
//!
//! Every text of the payload is shown with its hidden characters (controls,
//! bidirectional and other format characters) escaped — the Bridge's
//! results arrive so already (`service::agent`), and the few identifiers
//! a form shows (permission ids) are escaped here — so that a terminal
//! escape or a right-to-left override in a command cannot show the human
//! a different command from the one they approve (issue 27). The values a
//! form sends back (`const`) stay the provider's own.
//!
//! # The response
//!
//! | action | approval | question |
//! |---|---|---|
//! | `accept` | the chosen decision or option | the answers |
//! | `decline` | `deny` (with the first rejecting option when options are offered) | the task is cancelled |
//! | `cancel` | nothing: the request stays pending | nothing: the request stays pending |
//!
//! A declined approval lets the agent go on without the action. A question
//! has no refusal in the neutral model and the agent cannot go on without
//! an answer, so declining it cancels the task. Where the request offers
//! no way to refuse (`deny` or a rejecting option), a decline cancels too.
//!
//! A dismissed form (`cancel`) decides nothing: MCP defines it as closed
//! without a choice, and clients answer it for forms they cannot show —
//! Claude Code 2.1.197 answers every form that arrives outside one of the
//! server's tool calls, and every form in `claude -p`, with `cancel` at
//! once (measured, docs/clients.md). Applying it would end tasks nobody
//! looked at; the request stays pending and is put to the human again.

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use serde_json::{Map, Value, json};
use serverfs_protocol::bridge::{
    ApprovalDecision, ApprovalOption, ApprovalOptionKind, ApprovalPayload, BridgeErrorCode,
    PendingInteraction, QuestionAnswer, QuestionPayload, TaskView,
};

use serverfs_protocol::display::escape_if_hidden;

use super::error::ToolError;
use crate::service::HumanAnswer;

/// The prefix of an exact option's value in the `decision` field.
const OPTION_PREFIX: &str = "option:";

/// Longest text of one payload field in the message, in characters.
const MAX_FIELD_CHARS: usize = 2_000;

/// The form that puts `pending`, a pending request of `task`, to the human.
///
/// # Errors
///
/// `INTERNAL_ERROR` if the schema does not fit the elicitation subset (it
/// is built to, so this guards against a drift of the two).
pub fn form(
    task: &TaskView,
    pending: &PendingInteraction,
) -> Result<ElicitRequestParams, ToolError> {
    let (message, schema) = match pending {
        PendingInteraction::Approval(record) => approval_form(task, &record.payload),
        PendingInteraction::Question(record) => question_form(task, &record.payload),
    };
    let requested_schema: ElicitationSchema = serde_json::from_value(schema).map_err(|e| {
        ToolError::internal(format!(
            "the form's schema is not an elicitation schema: {e}"
        ))
    })?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "{message}\nTask {}, request {}.\nThis decision is yours, not the AI assistant's.",
            task.task_id,
            pending.request_id()
        ),
        requested_schema,
    })
}

/// What the human's `action` (with the form's `content` on `accept`)
/// decides for `pending`: `None` for a dismissed form, which decides
/// nothing.
///
/// # Errors
///
/// `INVALID_APPROVAL_DECISION` or `INVALID_QUESTION_ANSWER` for an
/// accepted form whose content does not answer the request, or an action
/// this server does not know (nothing is decided then).
pub fn decision(
    pending: &PendingInteraction,
    action: ElicitationAction,
    content: Option<&Value>,
) -> Result<Option<HumanAnswer>, ToolError> {
    let response = match action {
        ElicitationAction::Accept => Response::Accept,
        ElicitationAction::Decline => Response::Decline,
        ElicitationAction::Cancel => return Ok(None),
        // rmcp's list is open: a later action decides nothing here.
        _ => {
            let code = match pending {
                PendingInteraction::Approval(_) => BridgeErrorCode::InvalidApprovalDecision,
                PendingInteraction::Question(_) => BridgeErrorCode::InvalidQuestionAnswer,
            };
            return Err(ToolError::bridge(
                code,
                "the form's response action is unknown",
            ));
        }
    };
    let answer = match (pending, response) {
        (PendingInteraction::Approval(record), Response::Accept) => {
            accepted_approval(&record.payload, content)?
        }
        (PendingInteraction::Approval(record), Response::Decline) => {
            declined_approval(&record.payload)
        }
        (PendingInteraction::Question(record), Response::Accept) => {
            accepted_question(&record.payload, content)?
        }
        (PendingInteraction::Question(_), Response::Decline) => HumanAnswer::CancelTask,
    };
    Ok(Some(answer))
}

/// The human's decision on a form (MCP's `accept`, `decline`).
#[derive(Debug, Clone, Copy)]
enum Response {
    /// Submitted the form.
    Accept,
    /// Refused explicitly.
    Decline,
}

// --- approvals ------------------------------------------------------------

fn approval_form(task: &TaskView, payload: &ApprovalPayload) -> (String, Value) {
    let mut lines = vec![format!(
        "The coding agent ({}) working in workdir \"{}\"{} asks for your approval.",
        task.runtime,
        task.workdir_alias,
        directory(&task.relative_cwd)
    )];
    let mut field = |label: &str, text: Option<String>| {
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            lines.push(format!("{label}: {}", clip(&text)));
        }
    };
    field("Title", payload.title.clone());
    field("What", Some(category_words(payload)));
    field("Command", payload.command_display.clone());
    field("Where", payload.relative_cwd.clone());
    field("Why", payload.reason.clone());
    field(
        "Files",
        payload.file_changes.as_ref().map(|files| {
            files
                .iter()
                .map(|f| f.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }),
    );
    field("Tool", payload.tool.clone());
    field(
        "Tool input",
        payload.tool_input.as_ref().map(Value::to_string),
    );
    field("Blocked path", payload.blocked_path.clone());
    field(
        "Extra permissions",
        payload
            .additional_permissions
            .as_ref()
            .map(Value::to_string),
    );
    field(
        "Network",
        payload
            .network_approval_context
            .as_ref()
            .map(Value::to_string),
    );
    field(
        "Requested permissions",
        payload.requested_permissions.as_ref().map(|permissions| {
            permissions
                .iter()
                .map(|p| format!("{} ({}): {}", p.permission_id, p.kind, p.details))
                .collect::<Vec<_>>()
                .join("; ")
        }),
    );
    let mut properties = Map::new();
    properties.insert("decision".to_owned(), decision_field(payload));
    let permissions = payload
        .requested_permissions
        .as_ref()
        .filter(|permissions| !permissions.is_empty() && !has_options(payload));
    if let Some(permissions) = permissions {
        let choices: Vec<Value> = permissions
            .iter()
            .map(|p| {
                let title = format!("{} ({})", clip(&p.permission_id), p.kind);
                json!({"const": p.permission_id, "title": title})
            })
            .collect();
        properties.insert(
            "granted_permission_ids".to_owned(),
            json!({
                "type": "array",
                "title": "Permissions to grant when approving (none picked: all of them)",
                "items": {"anyOf": choices},
            }),
        );
    }
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": ["decision"],
    });
    (lines.join("\n"), schema)
}

/// The `decision` property: the decisions on offer or, with exact options,
/// the options and `cancel_task`.
fn decision_field(payload: &ApprovalPayload) -> Value {
    let mut choices: Vec<Value> = Vec::new();
    match payload
        .options
        .as_ref()
        .filter(|options| !options.is_empty())
    {
        Some(options) => {
            for option in options {
                choices.push(json!({
                    "const": format!("{OPTION_PREFIX}{}", option.option_id),
                    "title": format!("{} ({})", clip(&option.label), option_kind_words(option.kind)),
                }));
            }
            if offered(payload, ApprovalDecision::CancelTask) {
                choices.push(decision_choice(ApprovalDecision::CancelTask));
            }
        }
        None => {
            for decision in ApprovalDecision::ALL {
                if offered(payload, *decision) {
                    choices.push(decision_choice(*decision));
                }
            }
        }
    }
    json!({"type": "string", "title": "Your decision", "oneOf": choices})
}

fn decision_choice(decision: ApprovalDecision) -> Value {
    let title = match decision {
        ApprovalDecision::ApproveOnce => "Approve once",
        ApprovalDecision::ApproveSession => "Approve for the rest of this agent session",
        ApprovalDecision::Deny => "Deny (the agent goes on without it)",
        ApprovalDecision::CancelTask => "Deny and cancel the task",
    };
    json!({"const": decision.as_str(), "title": title})
}

fn option_kind_words(kind: ApprovalOptionKind) -> &'static str {
    match kind {
        ApprovalOptionKind::AllowOnce => "allow once",
        ApprovalOptionKind::AllowAlways => {
            "allow always: the agent's provider may remember this beyond the task"
        }
        ApprovalOptionKind::RejectOnce => "reject",
        ApprovalOptionKind::RejectAlways => "reject always",
    }
}

fn category_words(payload: &ApprovalPayload) -> String {
    use serverfs_protocol::bridge::ApprovalCategory;
    match payload.category {
        ApprovalCategory::Command => "run a command",
        ApprovalCategory::FileChange => "change files",
        ApprovalCategory::ProviderPermission => "get more permissions",
        ApprovalCategory::NetworkPermission => "reach the network",
        ApprovalCategory::McpTool => "call an MCP tool",
        ApprovalCategory::Other => "do something that needs your approval",
    }
    .to_owned()
}

/// Whether the request accepts `decision` (an empty list accepts all).
fn offered(payload: &ApprovalPayload, decision: ApprovalDecision) -> bool {
    payload.available_decisions.is_empty() || payload.available_decisions.contains(&decision)
}

fn has_options(payload: &ApprovalPayload) -> bool {
    payload
        .options
        .as_ref()
        .is_some_and(|options| !options.is_empty())
}

fn accepted_approval(
    payload: &ApprovalPayload,
    content: Option<&Value>,
) -> Result<HumanAnswer, ToolError> {
    let invalid =
        |message: &str| ToolError::bridge(BridgeErrorCode::InvalidApprovalDecision, message);
    let chosen = content
        .and_then(|content| content.get("decision"))
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("the form's decision is missing"))?;
    let granted_permission_ids = content
        .and_then(|content| content.get("granted_permission_ids"))
        .map(|ids| {
            ids.as_array()
                .map(|ids| {
                    ids.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect::<Vec<_>>()
                })
                .ok_or_else(|| invalid("granted_permission_ids is not a list"))
        })
        .transpose()?
        .filter(|ids| !ids.is_empty());
    if let Some(option_id) = chosen.strip_prefix(OPTION_PREFIX) {
        let option = options_of(payload)
            .iter()
            .find(|option| option.option_id == option_id)
            .ok_or_else(|| invalid("the chosen option is not on offer"))?;
        return Ok(HumanAnswer::Approval {
            decision: option.kind.decision(),
            option_id: Some(option.option_id.clone()),
            granted_permission_ids: None,
        });
    }
    let decision = ApprovalDecision::from_wire(chosen)
        .filter(|decision| offered(payload, *decision))
        .ok_or_else(|| invalid("the chosen decision is not on offer"))?;
    if has_options(payload) && decision != ApprovalDecision::CancelTask {
        return Err(invalid("this request takes one of its options"));
    }
    Ok(HumanAnswer::Approval {
        decision,
        option_id: None,
        granted_permission_ids,
    })
}

fn options_of(payload: &ApprovalPayload) -> &[ApprovalOption] {
    payload.options.as_deref().unwrap_or_default()
}

/// `deny` (the first rejecting option, when options are offered); a
/// request without a refusal on offer stops the task instead.
fn declined_approval(payload: &ApprovalPayload) -> HumanAnswer {
    if has_options(payload) {
        let rejecting = [
            ApprovalOptionKind::RejectOnce,
            ApprovalOptionKind::RejectAlways,
        ]
        .iter()
        .find_map(|kind| {
            options_of(payload)
                .iter()
                .find(|option| option.kind == *kind)
        });
        if let Some(option) = rejecting {
            return HumanAnswer::Approval {
                decision: ApprovalDecision::Deny,
                option_id: Some(option.option_id.clone()),
                granted_permission_ids: None,
            };
        }
    } else if offered(payload, ApprovalDecision::Deny) {
        return HumanAnswer::Approval {
            decision: ApprovalDecision::Deny,
            option_id: None,
            granted_permission_ids: None,
        };
    }
    stopping_approval(payload)
}

/// `cancel_task` when offered, else the task is cancelled directly.
fn stopping_approval(payload: &ApprovalPayload) -> HumanAnswer {
    if offered(payload, ApprovalDecision::CancelTask) {
        HumanAnswer::Approval {
            decision: ApprovalDecision::CancelTask,
            option_id: None,
            granted_permission_ids: None,
        }
    } else {
        HumanAnswer::CancelTask
    }
}

// --- questions ------------------------------------------------------------

fn question_form(task: &TaskView, payload: &QuestionPayload) -> (String, Value) {
    let mut lines = vec![format!(
        "The coding agent ({}) working in workdir \"{}\"{} asks you:",
        task.runtime,
        task.workdir_alias,
        directory(&task.relative_cwd)
    )];
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (index, question) in payload.questions.iter().enumerate() {
        let n = index + 1;
        lines.push(format!("{n}. {}", clip(&question.prompt)));
        for option in &question.options {
            let mut line = format!("   - {}", clip(&option.label));
            if let Some(description) = &option.description {
                line.push_str(&format!(": {}", clip(description)));
            }
            if let Some(preview) = &option.preview {
                line.push_str(&format!(" (preview: {})", clip(preview)));
            }
            lines.push(line);
        }
        let title = format!("{n}. {}", clip(&question.prompt));
        if !question.options.is_empty() {
            let choices: Vec<Value> = question
                .options
                .iter()
                .map(|option| json!({"const": option.option_id, "title": clip(&option.label)}))
                .collect();
            let field = if question.multi_select {
                let mut field =
                    json!({"type": "array", "title": title, "items": {"anyOf": choices}});
                if !question.allow_free_text {
                    field["minItems"] = json!(1);
                }
                field
            } else {
                json!({"type": "string", "title": title, "oneOf": choices})
            };
            properties.insert(format!("q{n}"), field);
            if !question.allow_free_text {
                required.push(format!("q{n}"));
            }
        }
        if question.allow_free_text {
            let text_title = if question.options.is_empty() {
                title
            } else {
                format!("{n}. Your own answer (instead of or beside an option)")
            };
            properties.insert(
                format!("q{n}_text"),
                json!({"type": "string", "title": text_title}),
            );
            if question.options.is_empty() {
                required.push(format!("q{n}_text"));
            }
        }
    }
    let schema = json!({"type": "object", "properties": properties, "required": required});
    (lines.join("\n"), schema)
}

fn accepted_question(
    payload: &QuestionPayload,
    content: Option<&Value>,
) -> Result<HumanAnswer, ToolError> {
    let invalid =
        |message: &str| ToolError::bridge(BridgeErrorCode::InvalidQuestionAnswer, message);
    let content = content
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("the form's answers are missing"))?;
    let mut answers = Vec::with_capacity(payload.questions.len());
    for (index, question) in payload.questions.iter().enumerate() {
        let n = index + 1;
        let selected_option_ids = match content.get(&format!("q{n}")) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(id)) => vec![id.clone()],
            Some(Value::Array(ids)) => ids
                .iter()
                .map(|id| {
                    id.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| invalid("an option is not a string"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(invalid("an answer is neither an option nor a list")),
        };
        let text = match content.get(&format!("q{n}_text")) {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.trim().to_owned()).filter(|t| !t.is_empty()),
            Some(_) => return Err(invalid("a free-text answer is not a string")),
        };
        answers.push(QuestionAnswer {
            question_id: question.question_id.clone(),
            selected_option_ids,
            text,
        });
    }
    Ok(HumanAnswer::Question { answers })
}

// --- text -----------------------------------------------------------------

/// ` (directory src)`, or nothing at the workdir root.
fn directory(relative_cwd: &str) -> String {
    if relative_cwd.is_empty() || relative_cwd == "." {
        String::new()
    } else {
        format!(" (directory {relative_cwd})")
    }
}

/// `text` cut to [`MAX_FIELD_CHARS`] characters, marked when cut.
/// `text` as a form shows it: hidden characters escaped (see the module
/// docs), then clipped to [`MAX_FIELD_CHARS`].
fn clip(text: &str) -> String {
    let text = escape_if_hidden(text);
    let mut clipped: String = text.chars().take(MAX_FIELD_CHARS).collect();
    if text.chars().nth(MAX_FIELD_CHARS).is_some() {
        clipped.push('…');
    }
    clipped
}

#[cfg(test)]
#[path = "forms_tests.rs"]
mod tests;
