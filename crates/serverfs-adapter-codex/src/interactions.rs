//! Codex server requests ↔ neutral interactions (spec-adapters.md §2.5).
//!
//! Only natively offered decisions are exposed; an unknown decision
//! variant is never mapped to a neighbour (it is dropped from the offer).
//! Object-shaped native decisions (e.g. `acceptWithExecpolicyAmendment`)
//! are parsed without failing and not offered; a request offering nothing
//! else is refused at once.

use serde_json::{Map, Value, json};
use serverfs_agent_runtime::payload;
use serverfs_protocol::bridge::{
    ApprovalCategory, ApprovalDecision, ApprovalPayload, ApprovalResolution, FileChange, Question,
    QuestionOption, QuestionPayload, QuestionResolution, RequestedPermission,
};

use crate::wire::{
    Decision, DecisionList, Malformed, NativeDecision, ServerRequest, UserInputParams,
};

/// What a server request asks of the human, or why it is refused at once.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    /// A command, file-change or permission approval.
    Approval(Box<ApprovalPayload>, ApprovalKind),
    /// Questions for the human.
    Question(QuestionPayload),
    /// Answer the request with this JSON-RPC error, without asking.
    Refuse {
        /// JSON-RPC code.
        code: i64,
        /// Message for the provider.
        message: &'static str,
    },
    /// Answer with this result without asking (e.g. an empty permission
    /// set).
    Answer(Value),
}

/// Which approval response shape the request needs.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalKind {
    /// `{decision}` with a native decision string.
    Decision,
    /// `{permissions, scope}` granting a subset of these native entries.
    Permissions(Map<String, Value>),
}

/// JSON-RPC "method not found": a request kind the Bridge does not serve.
pub const UNSUPPORTED: i64 = -32601;
/// JSON-RPC server error: a request the Bridge refuses.
pub const REFUSED: i64 = -32000;

/// The neutral decision of a native one; none for a name the Bridge does
/// not know.
fn neutral_decision(native: &NativeDecision) -> Option<ApprovalDecision> {
    match native {
        NativeDecision::Accept => Some(ApprovalDecision::ApproveOnce),
        NativeDecision::AcceptForSession => Some(ApprovalDecision::ApproveSession),
        NativeDecision::Decline => Some(ApprovalDecision::Deny),
        NativeDecision::Cancel => Some(ApprovalDecision::CancelTask),
        NativeDecision::Unknown(_) => None,
    }
}

/// The native decision of a neutral one.
pub fn native_decision(decision: ApprovalDecision) -> NativeDecision {
    match decision {
        ApprovalDecision::ApproveOnce => NativeDecision::Accept,
        ApprovalDecision::ApproveSession => NativeDecision::AcceptForSession,
        ApprovalDecision::Deny => NativeDecision::Decline,
        ApprovalDecision::CancelTask => NativeDecision::Cancel,
    }
}

/// The offer: native string decisions mapped, deduplicated, in the
/// neutral order; the spec's default when Codex gives no list (absent,
/// `null` or empty). `None` when Codex gave a list of which nothing maps
/// (only object-shaped or unknown decisions), or no list at all: offering
/// the default then would let the human pick a decision Codex never
/// offered.
fn offered(listed: Option<&DecisionList>) -> Option<Vec<ApprovalDecision>> {
    let listed = match listed {
        None | Some(DecisionList::Other(Value::Null)) => &[][..],
        Some(DecisionList::List(list)) => list.as_slice(),
        Some(DecisionList::Other(_)) => return None,
    };
    if listed.is_empty() {
        return Some(vec![
            ApprovalDecision::ApproveOnce,
            ApprovalDecision::Deny,
            ApprovalDecision::CancelTask,
        ]);
    }
    let native: Vec<ApprovalDecision> = listed
        .iter()
        .filter_map(|decision| match decision {
            Decision::Name(name) => neutral_decision(name),
            Decision::Object(_) => None,
        })
        .collect();
    let offer: Vec<ApprovalDecision> = ApprovalDecision::ALL
        .iter()
        .copied()
        .filter(|decision| native.contains(decision))
        .collect();
    (!offer.is_empty()).then_some(offer)
}

/// The refusal of an approval whose offered decisions the Bridge cannot
/// present: answered at once, so nothing unoffered is ever sent.
const NOTHING_OFFERABLE: Ask = Ask::Refuse {
    code: REFUSED,
    message: "no decision the Bridge can offer",
};

/// The refusal of a served request whose params cannot be read.
const MALFORMED: Ask = Ask::Refuse {
    code: REFUSED,
    message: "malformed request",
};

/// Maps one decoded server request. Unknown methods are refused as
/// unsupported and unreadable ones as malformed, so that the turn never
/// hangs on an unanswered request.
pub fn ask(request: Result<ServerRequest, Malformed>) -> Ask {
    let request = match request {
        Ok(request) => request,
        Err(Malformed) => return MALFORMED,
    };
    match request {
        ServerRequest::CommandApproval(params) => {
            let Some(offer) = offered(params.available_decisions.as_ref()) else {
                return NOTHING_OFFERABLE;
            };
            let mut payload =
                payload::approval(ApprovalCategory::Command, "Codex command approval", offer);
            payload.reason = params.reason;
            payload.command_display = match params.command {
                Some(Value::String(command)) => Some(command),
                Some(Value::Array(argv)) => Some(
                    argv.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            };
            payload.relative_cwd = params.cwd;
            payload.network_approval_context =
                params.network_approval_context.filter(|v| !v.is_null());
            payload.additional_permissions = params.additional_permissions.filter(|v| !v.is_null());
            Ask::Approval(Box::new(payload), ApprovalKind::Decision)
        }
        ServerRequest::FileChangeApproval(params) => {
            let Some(offer) = offered(params.available_decisions.as_ref()) else {
                return NOTHING_OFFERABLE;
            };
            let mut payload = payload::approval(
                ApprovalCategory::FileChange,
                "Codex file-change approval",
                offer,
            );
            payload.reason = params.reason;
            payload.file_changes = params.grant_root.map(|path| vec![FileChange { path }]);
            Ask::Approval(Box::new(payload), ApprovalKind::Decision)
        }
        ServerRequest::PermissionsApproval(params) => {
            let Some(permissions) = params.permissions.filter(|p| !p.is_empty()) else {
                return Ask::Answer(json!({ "permissions": {}, "scope": "turn" }));
            };
            // A permission request has no decision list: the response
            // shape (`permissions` + `scope`) expresses all four.
            let mut payload = payload::approval(
                ApprovalCategory::ProviderPermission,
                "Codex permission request",
                ApprovalDecision::ALL.to_vec(),
            );
            payload.reason = params.reason;
            payload.requested_permissions = Some(
                permissions
                    .iter()
                    .map(|(key, details)| RequestedPermission {
                        permission_id: key.clone(),
                        kind: key.clone(),
                        details: details.clone(),
                    })
                    .collect(),
            );
            Ask::Approval(Box::new(payload), ApprovalKind::Permissions(permissions))
        }
        ServerRequest::UserInput(params) => questions(params),
        ServerRequest::Unsupported => Ask::Refuse {
            code: UNSUPPORTED,
            message: "unsupported request",
        },
    }
}

fn questions(params: UserInputParams) -> Ask {
    let mut questions = Vec::new();
    for (index, question) in params.questions.into_iter().enumerate() {
        if question.is_secret == Some(true) {
            // A secret must never travel through the task store or a
            // remote client.
            return Ask::Refuse {
                code: REFUSED,
                message: "secret questions are not supported",
            };
        }
        let options: Vec<QuestionOption> = question
            .options
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .filter_map(|(option_index, option)| {
                Some(QuestionOption {
                    option_id: format!("opt_{index}_{option_index}"),
                    label: option.label?,
                    description: option.description,
                    preview: None,
                })
            })
            .collect();
        questions.push(Question {
            question_id: question.id,
            prompt: question.question,
            allow_free_text: question.is_other == Some(true) || options.is_empty(),
            options,
            multi_select: false,
        });
    }
    if questions.is_empty() {
        return MALFORMED;
    }
    Ask::Question(QuestionPayload { questions })
}

/// The native response to an approval.
pub fn approval_response(kind: &ApprovalKind, resolution: &ApprovalResolution) -> Value {
    match kind {
        ApprovalKind::Decision => {
            json!({ "decision": native_decision(resolution.decision).as_str() })
        }
        ApprovalKind::Permissions(requested) => {
            let (granted, scope) = match resolution.decision {
                ApprovalDecision::ApproveOnce => (true, "turn"),
                ApprovalDecision::ApproveSession => (true, "session"),
                ApprovalDecision::Deny | ApprovalDecision::CancelTask => (false, "turn"),
            };
            // Exactly the ids given: the core already turned an absent
            // selection into "everything requested", so an empty list
            // here means the human granted nothing.
            let permissions: Map<String, Value> = if granted {
                requested
                    .iter()
                    .filter(|(key, _)| resolution.granted_permission_ids.contains(key))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            } else {
                Map::new()
            };
            json!({ "permissions": permissions, "scope": scope })
        }
    }
}

/// The native response to answered questions: per question, the chosen
/// option labels followed by the free text.
pub fn question_response(payload: &QuestionPayload, resolution: &QuestionResolution) -> Value {
    let answers: Map<String, Value> = payload::answer_labels(payload, resolution)
        .into_iter()
        .map(|(question, given)| (question.question_id.clone(), json!({ "answers": given })))
        .collect();
    json!({ "answers": answers })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serverfs_protocol::bridge::QuestionAnswer;

    use super::*;

    /// Maps a request as it arrives: method and params.
    fn ask_raw(method: &str, params: &Value) -> Ask {
        ask(ServerRequest::decode(method.to_owned(), params.clone()))
    }

    #[test]
    fn offers_only_native_string_decisions() {
        let params = json!({
            "command": "pytest -q",
            "availableDecisions": [
                "accept",
                { "acceptWithExecpolicyAmendment": { "execpolicy_amendment": ["pytest"] } },
                "cancel",
                "somethingNew"
            ]
        });
        let Ask::Approval(payload, ApprovalKind::Decision) =
            ask_raw("item/commandExecution/requestApproval", &params)
        else {
            panic!("not an approval");
        };
        assert_eq!(
            payload.available_decisions,
            vec![ApprovalDecision::ApproveOnce, ApprovalDecision::CancelTask]
        );
        assert_eq!(payload.command_display.as_deref(), Some("pytest -q"));
        let default = ask_raw(
            "item/fileChange/requestApproval",
            &json!({ "grantRoot": "/w" }),
        );
        let Ask::Approval(payload, _) = default else {
            panic!("not an approval");
        };
        assert_eq!(
            payload.available_decisions,
            vec![
                ApprovalDecision::ApproveOnce,
                ApprovalDecision::Deny,
                ApprovalDecision::CancelTask
            ]
        );
        assert_eq!(payload.file_changes.unwrap()[0].path, "/w");
    }

    #[test]
    fn an_offer_of_nothing_mappable_is_refused_not_defaulted() {
        let default = vec![
            ApprovalDecision::ApproveOnce,
            ApprovalDecision::Deny,
            ApprovalDecision::CancelTask,
        ];
        for absent in [
            json!({}),
            json!({ "availableDecisions": null }),
            json!({ "availableDecisions": [] }),
        ] {
            let Ask::Approval(payload, _) =
                ask_raw("item/commandExecution/requestApproval", &absent)
            else {
                panic!("not an approval: {absent}");
            };
            assert_eq!(payload.available_decisions, default, "{absent}");
        }
        for unmappable in [
            json!({ "availableDecisions": [{ "acceptWithExecpolicyAmendment": {} }] }),
            json!({ "availableDecisions": ["somethingNew", 7] }),
            json!({ "availableDecisions": "accept" }),
        ] {
            for method in [
                "item/commandExecution/requestApproval",
                "item/fileChange/requestApproval",
            ] {
                assert_eq!(
                    ask_raw(method, &unmappable),
                    Ask::Refuse {
                        code: REFUSED,
                        message: "no decision the Bridge can offer",
                    },
                    "{method} {unmappable}"
                );
            }
        }
    }

    #[test]
    fn argv_commands_are_joined() {
        let Ask::Approval(payload, _) = ask_raw(
            "item/commandExecution/requestApproval",
            &json!({ "command": ["cargo", "test"] }),
        ) else {
            panic!("not an approval");
        };
        assert_eq!(payload.command_display.as_deref(), Some("cargo test"));
    }

    #[test]
    fn decisions_map_both_ways() {
        for decision in ApprovalDecision::ALL {
            assert_eq!(
                neutral_decision(&native_decision(*decision)),
                Some(*decision)
            );
        }
    }

    #[test]
    fn permissions_grant_the_selected_subset_with_a_scope() {
        let params = json!({ "permissions": { "fileSystem": { "write": ["/w"] }, "network": { "enabled": true } } });
        let Ask::Approval(payload, kind) = ask_raw("item/permissions/requestApproval", &params)
        else {
            panic!("not an approval");
        };
        assert_eq!(payload.available_decisions, ApprovalDecision::ALL.to_vec());
        let resolution = |decision, ids: &[&str]| ApprovalResolution {
            decision,
            granted_permission_ids: ids.iter().map(|s| (*s).to_owned()).collect(),
            option_id: None,
        };
        assert_eq!(
            approval_response(
                &kind,
                &resolution(ApprovalDecision::ApproveSession, &["network"])
            ),
            json!({ "permissions": { "network": { "enabled": true } }, "scope": "session" })
        );
        // The core resolves an absent selection to every requested id; an
        // empty one reaching the adapter grants nothing.
        assert_eq!(
            approval_response(
                &kind,
                &resolution(ApprovalDecision::ApproveOnce, &["fileSystem", "network"])
            )["permissions"]
                .as_object()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            approval_response(&kind, &resolution(ApprovalDecision::ApproveOnce, &[])),
            json!({ "permissions": {}, "scope": "turn" })
        );
        assert_eq!(
            approval_response(&kind, &resolution(ApprovalDecision::Deny, &["network"])),
            json!({ "permissions": {}, "scope": "turn" })
        );
        assert_eq!(
            ask_raw(
                "item/permissions/requestApproval",
                &json!({ "permissions": {} })
            ),
            Ask::Answer(json!({ "permissions": {}, "scope": "turn" }))
        );
    }

    #[test]
    fn questions_round_trip_and_secrets_are_refused() {
        let params = json!({ "questions": [{
            "id": "q1", "header": "H", "question": "Pick", "isOther": true, "isSecret": false,
            "options": [{ "label": "A", "description": "first" }, { "label": "B" }]
        }]});
        let Ask::Question(payload) = ask_raw("item/tool/requestUserInput", &params) else {
            panic!("not a question");
        };
        assert_eq!(payload.questions[0].options[1].option_id, "opt_0_1");
        assert!(payload.questions[0].allow_free_text);
        let resolution = QuestionResolution {
            answers: vec![QuestionAnswer {
                question_id: "q1".to_owned(),
                selected_option_ids: vec!["opt_0_1".to_owned()],
                text: Some("details".to_owned()),
            }],
        };
        assert_eq!(
            question_response(&payload, &resolution),
            json!({ "answers": { "q1": { "answers": ["B", "details"] } } })
        );
        let mut secret = params.clone();
        secret["questions"][0]["isSecret"] = json!(true);
        assert!(matches!(
            ask_raw("item/tool/requestUserInput", &secret),
            Ask::Refuse { code: REFUSED, .. }
        ));
        assert!(matches!(
            ask_raw("item/tool/requestUserInput", &json!({ "questions": [42] })),
            Ask::Refuse { code: REFUSED, .. }
        ));
        assert!(matches!(
            ask_raw("mcpServer/elicitation/request", &json!({})),
            Ask::Refuse {
                code: UNSUPPORTED,
                ..
            }
        ));
    }
}
