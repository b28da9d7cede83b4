//! `session/request_permission` ↔ neutral approvals (spec-adapters.md
//! §5.3, seed 002 §9).
//!
//! The human chooses among the agent's own options, by their opaque ids
//! (the approval's `options`, answered with `option_id`): never a forged
//! one, and never one the Bridge cannot honestly present.
//!
//! | agent option kind | offered as | answered with |
//! |---|---|---|
//! | `allow_once` | `approve_once` | that option |
//! | `allow_always` | `approve_session`, only when the profile marks the agent's "always" session-scoped | that option |
//! | `reject_once` | `deny` | that option |
//! | `reject_always` | never (it may persist a rule) | — |
//! | — | `cancel_task`, always | outcome `cancelled`, and the task is cancelled |

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, ToolKind,
};
use serde_json::Value;
use serverfs_agent_runtime::bounds::{bounded_json, utf8_prefix};
use serverfs_agent_runtime::payload;
use serverfs_protocol::bridge::{
    ApprovalCategory, ApprovalDecision, ApprovalOption, ApprovalOptionKind, ApprovalPayload,
    ApprovalResolution, FileChange,
};

/// Longest option label or title shown to the human.
const MAX_LABEL_BYTES: usize = 512;

/// Most file locations listed in an approval.
const MAX_LOCATIONS: usize = 64;

/// The neutral kind of an agent's option; `None` for a kind this schema
/// does not know (never offered: the human cannot be told what it does).
fn kind_of(kind: PermissionOptionKind) -> Option<ApprovalOptionKind> {
    match kind {
        PermissionOptionKind::AllowOnce => Some(ApprovalOptionKind::AllowOnce),
        PermissionOptionKind::AllowAlways => Some(ApprovalOptionKind::AllowAlways),
        PermissionOptionKind::RejectOnce => Some(ApprovalOptionKind::RejectOnce),
        PermissionOptionKind::RejectAlways => Some(ApprovalOptionKind::RejectAlways),
        // The schema enum is non-exhaustive: a kind added later is not
        // guessed at.
        _ => None,
    }
}

/// Whether an option of `kind` may be offered.
fn offerable(kind: ApprovalOptionKind, session_scoped_allow_always: bool) -> bool {
    match kind {
        ApprovalOptionKind::AllowOnce | ApprovalOptionKind::RejectOnce => true,
        ApprovalOptionKind::AllowAlways => session_scoped_allow_always,
        // Refusing forever may be written into the agent's settings; the
        // human can refuse this once, or cancel the task.
        ApprovalOptionKind::RejectAlways => false,
    }
}

/// The options of `request` that may be offered, as the approval lists
/// them, in the agent's order.
fn offered(options: &[PermissionOption], session_scoped_allow_always: bool) -> Vec<ApprovalOption> {
    options
        .iter()
        .filter_map(|option| {
            let kind = kind_of(option.kind)?;
            offerable(kind, session_scoped_allow_always).then(|| ApprovalOption {
                option_id: option.option_id.0.to_string(),
                label: utf8_prefix(&option.name, MAX_LABEL_BYTES).to_owned(),
                kind,
            })
        })
        .collect()
}

/// The approval category of a tool kind.
fn category(kind: Option<ToolKind>) -> ApprovalCategory {
    match kind {
        Some(ToolKind::Execute) => ApprovalCategory::Command,
        Some(ToolKind::Edit | ToolKind::Delete | ToolKind::Move) => ApprovalCategory::FileChange,
        Some(ToolKind::Fetch) => ApprovalCategory::NetworkPermission,
        Some(_) | None => ApprovalCategory::Other,
    }
}

/// The wire name of a tool kind (`execute`, `edit`, …).
pub(crate) fn kind_name(kind: ToolKind) -> String {
    match serde_json::to_value(kind) {
        Ok(Value::String(name)) => name,
        _ => "other".to_owned(),
    }
}

/// The command of a tool input: its `command` as a string, or an argv
/// joined by spaces (for display only).
pub(crate) fn command_of(input: Option<&Value>) -> Option<String> {
    match input?.get("command")? {
        Value::String(command) => Some(command.clone()),
        Value::Array(argv) => Some(
            argv.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// The approval raised for `request`. `runtime` names the agent in a
/// title it did not give.
pub(crate) fn approval(
    request: &RequestPermissionRequest,
    runtime: &str,
    session_scoped_allow_always: bool,
) -> ApprovalPayload {
    let options = offered(&request.options, session_scoped_allow_always);
    let decisions: Vec<ApprovalDecision> = ApprovalDecision::ALL
        .iter()
        .copied()
        .filter(|decision| {
            *decision == ApprovalDecision::CancelTask
                || options
                    .iter()
                    .any(|option| option.kind.decision() == *decision)
        })
        .collect();
    let fields = &request.tool_call.fields;
    let title = fields.title.as_deref().map_or_else(
        || format!("{runtime} asks for permission"),
        |title| utf8_prefix(title, MAX_LABEL_BYTES).to_owned(),
    );
    let mut approval = payload::approval(category(fields.kind), &title, decisions);
    approval.tool = Some(fields.kind.map_or_else(|| "other".to_owned(), kind_name));
    approval.command_display = command_of(fields.raw_input.as_ref());
    approval.tool_input = fields.raw_input.as_ref().map(|input| bounded_json(input).0);
    // Host paths: the core redacts them to workdir-relative ones.
    approval.file_changes = fields
        .locations
        .as_ref()
        .filter(|locations| !locations.is_empty())
        .map(|locations| {
            locations
                .iter()
                .take(MAX_LOCATIONS)
                .map(|location| FileChange {
                    path: location.path.to_string_lossy().into_owned(),
                })
                .collect()
        });
    approval.options = Some(options);
    approval
}

/// The answer to `request` for the human's `resolution`: the chosen
/// option, which must be one of the request's offerable options of the
/// kind the decision stands for; `cancelled` for `cancel_task` (or, should
/// nothing match, rather than choosing for the human).
pub(crate) fn answer(
    request: &RequestPermissionRequest,
    resolution: &ApprovalResolution,
    session_scoped_allow_always: bool,
) -> RequestPermissionResponse {
    if resolution.decision == ApprovalDecision::CancelTask {
        return cancelled();
    }
    let chosen = offered(&request.options, session_scoped_allow_always)
        .into_iter()
        .filter(|option| option.kind.decision() == resolution.decision)
        .find(|option| {
            resolution
                .option_id
                .as_deref()
                .is_none_or(|chosen| chosen == option.option_id)
        });
    match chosen {
        Some(option) => RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
            SelectedPermissionOutcome::new(option.option_id),
        )),
        None => cancelled(),
    }
}

/// The `cancelled` outcome: what ACP requires for every pending request
/// once the prompt turn is being cancelled, and the answer when the human
/// chose `cancel_task`.
pub(crate) fn cancelled() -> RequestPermissionResponse {
    RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(options: Value) -> RequestPermissionRequest {
        serde_json::from_value(json!({
            "sessionId": "s1",
            "toolCall": {
                "toolCallId": "call-1",
                "title": "echo hi > created.txt",
                "kind": "execute",
                "rawInput": { "command": "echo hi > created.txt" },
                "locations": [{ "path": "/work/created.txt" }],
            },
            "options": options,
        }))
        .unwrap()
    }

    fn all_four() -> Value {
        json!([
            { "optionId": "once", "name": "Allow once", "kind": "allow_once" },
            { "optionId": "always", "name": "Always allow", "kind": "allow_always" },
            { "optionId": "reject", "name": "Reject", "kind": "reject_once" },
            { "optionId": "never", "name": "Never", "kind": "reject_always" },
        ])
    }

    fn resolution(decision: ApprovalDecision, option_id: Option<&str>) -> ApprovalResolution {
        ApprovalResolution {
            decision,
            granted_permission_ids: Vec::new(),
            option_id: option_id.map(str::to_owned),
        }
    }

    fn answered(response: &RequestPermissionResponse) -> Value {
        serde_json::to_value(response).unwrap()
    }

    #[test]
    fn the_agents_options_are_offered_but_never_reject_always() {
        let approval = approval(&request(all_four()), "acp-mock", false);
        assert_eq!(approval.category, ApprovalCategory::Command);
        assert_eq!(approval.title.as_deref(), Some("echo hi > created.txt"));
        assert_eq!(approval.tool.as_deref(), Some("execute"));
        assert_eq!(
            approval.command_display.as_deref(),
            Some("echo hi > created.txt")
        );
        assert_eq!(
            approval.file_changes,
            Some(vec![FileChange {
                path: "/work/created.txt".to_owned()
            }])
        );
        assert_eq!(
            approval.available_decisions,
            [
                ApprovalDecision::ApproveOnce,
                ApprovalDecision::Deny,
                ApprovalDecision::CancelTask
            ]
        );
        let ids: Vec<&str> = approval
            .options
            .iter()
            .flatten()
            .map(|option| option.option_id.as_str())
            .collect();
        assert_eq!(
            ids,
            ["once", "reject"],
            "allow_always not session-scoped, reject_always never"
        );

        let scoped = super::approval(&request(all_four()), "acp-mock", true);
        assert_eq!(
            scoped.available_decisions,
            ApprovalDecision::ALL.to_vec(),
            "a session-scoped always is offered as approve_session"
        );
    }

    #[test]
    fn a_missing_allow_once_is_not_invented() {
        let only_always = request(json!([
            { "optionId": "always", "name": "Always", "kind": "allow_always" },
            { "optionId": "reject", "name": "Reject", "kind": "reject_once" },
        ]));
        let approval = approval(&only_always, "acp-mock", false);
        assert_eq!(
            approval.available_decisions,
            [ApprovalDecision::Deny, ApprovalDecision::CancelTask]
        );
        // Nothing offerable at all: the human can only cancel the task.
        let never = request(json!([{ "optionId": "n", "name": "Never", "kind": "reject_always" }]));
        let approval = super::approval(&never, "acp-mock", true);
        assert_eq!(approval.available_decisions, [ApprovalDecision::CancelTask]);
        assert_eq!(approval.options, Some(Vec::new()));
    }

    #[test]
    fn answers_are_the_chosen_option_or_cancelled() {
        let request = request(all_four());
        let selected = |decision, id| answered(&answer(&request, &resolution(decision, id), true));
        assert_eq!(
            selected(ApprovalDecision::ApproveOnce, Some("once")),
            json!({ "outcome": { "outcome": "selected", "optionId": "once" } })
        );
        assert_eq!(
            selected(ApprovalDecision::ApproveSession, Some("always")),
            json!({ "outcome": { "outcome": "selected", "optionId": "always" } })
        );
        assert_eq!(
            selected(ApprovalDecision::Deny, Some("reject")),
            json!({ "outcome": { "outcome": "selected", "optionId": "reject" } })
        );
        let cancelled = json!({ "outcome": { "outcome": "cancelled" } });
        assert_eq!(selected(ApprovalDecision::CancelTask, None), cancelled);
        // Never forged: an id the agent did not offer, one of the wrong
        // kind, or one that is not offerable.
        assert_eq!(
            selected(ApprovalDecision::ApproveOnce, Some("forged")),
            cancelled
        );
        assert_eq!(
            selected(ApprovalDecision::ApproveOnce, Some("reject")),
            cancelled
        );
        assert_eq!(selected(ApprovalDecision::Deny, Some("never")), cancelled);
        assert_eq!(
            answered(&answer(
                &request,
                &resolution(ApprovalDecision::ApproveSession, Some("always")),
                false
            )),
            cancelled,
            "allow_always is not offered without session scope"
        );
    }

    #[test]
    fn other_tools_and_odd_inputs() {
        let request: RequestPermissionRequest = serde_json::from_value(json!({
            "sessionId": "s1",
            "toolCall": { "toolCallId": "c", "kind": "edit", "rawInput": { "command": ["git", "add", "x"] } },
            "options": [{ "optionId": "a", "name": "A", "kind": "allow_once" }],
        }))
        .unwrap();
        let approval = approval(&request, "acp-mock", false);
        assert_eq!(approval.category, ApprovalCategory::FileChange);
        assert_eq!(
            approval.title.as_deref(),
            Some("acp-mock asks for permission")
        );
        assert_eq!(approval.command_display.as_deref(), Some("git add x"));
        assert_eq!(approval.file_changes, None);
        assert_eq!(
            category(Some(ToolKind::Fetch)),
            ApprovalCategory::NetworkPermission
        );
        assert_eq!(category(Some(ToolKind::Read)), ApprovalCategory::Other);
        assert_eq!(category(None), ApprovalCategory::Other);
    }
}
