//! Error codes and the small enums clients bind to, pinned string by string.

use std::collections::BTreeSet;

use serverfs_protocol::bridge::{
    AgentProfile, ApprovalDecision, BridgeErrorCode, BridgeMethod, ErrorBody, ProtocolError,
    ReconcileStatus, TaskStatus,
};

#[test]
fn bridge_error_wire_strings_are_pinned() {
    let wire: Vec<&str> = BridgeErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        wire,
        [
            "INVALID_REQUEST",
            "PROTOCOL_VERSION_UNSUPPORTED",
            "METHOD_NOT_FOUND",
            "REQUEST_TOO_LARGE",
            "RESPONSE_TOO_LARGE",
            "BRIDGE_PROTOCOL_ERROR",
            "PEER_NOT_AUTHORIZED",
            "SOCKET_PATH_IN_USE",
            "SOCKET_DIRECTORY_UNSAFE",
            "SOCKET_PATH_TOO_LONG",
            "PIPE_NAME_UNAVAILABLE",
            "PEER_IDENTITY_UNAVAILABLE",
            "BRIDGE_IDENTITY_UNAVAILABLE",
            "BRIDGE_CLOSED",
            "BRIDGE_PLATFORM_UNSUPPORTED",
            "PRIVATE_STATE_UNSAFE",
            "DATA_HOME_UNAVAILABLE",
            "BRIDGE_CONFIG_INVALID",
            "WORKDIR_NOT_FOUND",
            "AGENT_DISABLED",
            "AGENT_RUNTIME_NOT_ALLOWED",
            "AGENT_PROFILE_NOT_ALLOWED",
            "INVALID_WORKDIR_PATH",
            "WORKDIR_PATH_NOT_FOUND",
            "AGENT_RUNTIME_UNAVAILABLE",
            "AGENT_RUNTIME_NOT_READY",
            "AGENT_PROVIDER_ERROR",
            "AGENT_PROVIDER_DISCONNECTED",
            "AGENT_PROVIDER_INACTIVE",
            "AGENT_SESSION_NOT_RESUMABLE",
            "AGENT_TASK_NOT_FOUND",
            "AGENT_TASK_EXISTS",
            "AGENT_TASK_LIMIT_REACHED",
            "AGENT_TASK_NOT_ACTIVE",
            "AGENT_TASK_TERMINAL",
            "AGENT_TASK_TIMED_OUT",
            "AGENT_PROMPT_TOO_LARGE",
            "AGENT_MESSAGE_TOO_LARGE",
            "AGENT_IDEMPOTENCY_CONFLICT",
            "INVALID_TASK_TRANSITION",
            "BRIDGE_SHUTDOWN",
            "BRIDGE_RESTARTED",
            "BRIDGE_SCHEDULING_FAILED",
            "AGENT_EVENT_TOO_LARGE",
            "AGENT_EVENT_LIMIT_REACHED",
            "INVALID_LIMIT",
            "REQUEST_NOT_FOUND",
            "REQUEST_ALREADY_RESOLVED",
            "REQUEST_STALE",
            "REQUEST_PENDING",
            "REQUEST_EXISTS",
            "INVALID_APPROVAL_DECISION",
            "INVALID_QUESTION_ANSWER",
            "PERMISSION_OUTSIDE_POLICY",
            "AGENT_INTERACTION_TOO_LARGE",
            "AGENT_INTERACTION_TIMED_OUT",
            "AGENT_INTERACTION_EXPIRED",
            "AGENT_RESULT_TOO_LARGE",
            "AGENT_RESULT_NOT_RETRIEVABLE",
            "AGENT_RESULT_STORAGE_ERROR",
            "INVALID_RESULT_OFFSET",
            "INVALID_RESULT_LIMIT",
            "WORKDIR_BUSY",
            "WORKDIR_RECOVERY_REQUIRED",
            "LOCK_PATH_UNSAFE",
            "INVALID_WORKDIR_SLOT",
            "AGENT_BRIDGE_UNAVAILABLE",
            "AGENT_BRIDGE_PROTOCOL_ERROR",
            "AGENT_BRIDGE_ERROR",
        ]
    );
}

#[test]
fn bridge_error_codes_serialize_as_unique_screaming_snake_strings() {
    let mut seen = BTreeSet::new();
    for code in BridgeErrorCode::ALL {
        let s = code.as_str();
        assert!(seen.insert(s), "{s} is listed twice");
        assert!(
            s.starts_with(|c: char| c.is_ascii_uppercase())
                && s.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
            "{s}"
        );
        let json = serde_json::to_string(code).unwrap();
        assert_eq!(json, format!("\"{s}\""));
        assert_eq!(
            serde_json::from_str::<BridgeErrorCode>(&json).unwrap(),
            *code
        );
    }
    assert!(serde_json::from_str::<BridgeErrorCode>("\"NOT_A_CODE\"").is_err());
}

#[test]
fn protocol_errors_map_to_their_codes_and_stable_messages() {
    let cases = [
        (
            ProtocolError::InvalidJson,
            "INVALID_REQUEST",
            "request must be valid UTF-8 JSON",
        ),
        (
            ProtocolError::EnvelopeFields,
            "INVALID_REQUEST",
            "request fields must be exactly protocol_version, request_id, method and params",
        ),
        (
            ProtocolError::ProtocolVersionType,
            "INVALID_REQUEST",
            "protocol_version must be an integer",
        ),
        (
            ProtocolError::ProtocolVersionUnsupported,
            "PROTOCOL_VERSION_UNSUPPORTED",
            "unsupported protocol version (this Bridge speaks version 1)",
        ),
        (
            ProtocolError::RequestId,
            "INVALID_REQUEST",
            "request_id must be a non-empty string",
        ),
        (
            ProtocolError::Method,
            "INVALID_REQUEST",
            "method must be a non-empty string",
        ),
        (
            ProtocolError::Params,
            "INVALID_REQUEST",
            "params must be a JSON object",
        ),
        (
            ProtocolError::UnknownMethod("task.delete".into()),
            "METHOD_NOT_FOUND",
            "unknown bridge method: task.delete",
        ),
        (
            ProtocolError::InvalidParams,
            "INVALID_REQUEST",
            "method parameters do not match protocol",
        ),
        (
            ProtocolError::RequestTooLarge,
            "REQUEST_TOO_LARGE",
            "request exceeds 1048576 bytes",
        ),
        (
            ProtocolError::ResponseTooLarge,
            "RESPONSE_TOO_LARGE",
            "response exceeds 1048576 bytes",
        ),
        (
            ProtocolError::MalformedResponse,
            "AGENT_BRIDGE_PROTOCOL_ERROR",
            "Agent Bridge protocol failure",
        ),
        (
            ProtocolError::Internal,
            "BRIDGE_PROTOCOL_ERROR",
            "protocol failure",
        ),
    ];
    for (error, code, message) in cases {
        assert_eq!(error.code().as_str(), code, "{error:?}");
        assert_eq!(error.to_string(), message, "{error:?}");
        assert_eq!(
            serde_json::to_value(ErrorBody::from(&error)).unwrap(),
            serde_json::json!({ "code": code, "message": message })
        );
    }
}

#[test]
fn unknown_method_echo_is_bounded_at_a_character_boundary() {
    let short = ProtocolError::unknown_method("x.y");
    assert_eq!(short, ProtocolError::UnknownMethod("x.y".into()));

    // 'é' is two bytes: 64 of them fill the 128-byte budget exactly.
    let long = "é".repeat(200);
    let ProtocolError::UnknownMethod(echo) = ProtocolError::unknown_method(&long) else {
        panic!("wrong variant");
    };
    assert_eq!(echo, "é".repeat(64));

    let odd = format!("a{}", "é".repeat(200));
    let ProtocolError::UnknownMethod(echo) = ProtocolError::unknown_method(&odd) else {
        panic!("wrong variant");
    };
    assert_eq!(echo.len(), 127, "never splits a character");
}

#[test]
fn method_names_are_pinned() {
    let wire: Vec<&str> = BridgeMethod::ALL.iter().map(|m| m.as_str()).collect();
    assert_eq!(
        wire,
        [
            "runtime.list",
            "runtime.models",
            "task.submit",
            "task.get",
            "task.events",
            "task.result.read",
            "task.approval.respond",
            "task.question.answer",
            "task.message.send",
            "task.cancel",
            "bridge.peer",
        ]
    );
    for method in BridgeMethod::ALL {
        assert_eq!(BridgeMethod::from_wire(method.as_str()), Some(*method));
        assert_eq!(
            serde_json::to_value(method).unwrap(),
            serde_json::json!(method.as_str())
        );
    }
    assert_eq!(BridgeMethod::from_wire("task.Get"), None);
    assert_eq!(BridgeMethod::from_wire(""), None);
}

#[test]
fn task_statuses_and_their_terminality_are_pinned() {
    let wire: Vec<(String, bool)> = TaskStatus::ALL
        .iter()
        .map(|s| {
            let serialized = serde_json::to_value(s).unwrap();
            assert_eq!(
                serialized.as_str(),
                Some(s.as_str()),
                "as_str matches serde"
            );
            (s.as_str().to_owned(), s.is_terminal())
        })
        .collect();
    let expected = [
        ("queued", false),
        ("starting", false),
        ("running", false),
        ("waiting_for_approval", false),
        ("waiting_for_question", false),
        ("succeeded", true),
        ("failed", true),
        ("cancelled", true),
        ("interrupted", true),
    ];
    assert_eq!(wire, expected.map(|(s, t)| (s.to_owned(), t)).to_vec());
}

#[test]
fn profiles_decisions_and_reconcile_statuses_use_their_wire_strings() {
    for (profile, wire) in [
        (AgentProfile::Review, "review"),
        (AgentProfile::WorkspaceWrite, "workspace-write"),
    ] {
        assert_eq!(profile.as_str(), wire);
        assert_eq!(AgentProfile::from_wire(wire), Some(profile));
        assert_eq!(
            serde_json::to_value(profile).unwrap(),
            serde_json::json!(wire)
        );
    }
    assert_eq!(AgentProfile::DEFAULT, AgentProfile::WorkspaceWrite);
    assert_eq!(AgentProfile::from_wire("workspace_write"), None);

    let decisions: Vec<&str> = ApprovalDecision::ALL.iter().map(|d| d.as_str()).collect();
    assert_eq!(
        decisions,
        ["approve_once", "approve_session", "deny", "cancel_task"]
    );
    for decision in ApprovalDecision::ALL {
        assert_eq!(
            ApprovalDecision::from_wire(decision.as_str()),
            Some(*decision)
        );
        assert_eq!(
            serde_json::to_value(decision).unwrap(),
            serde_json::json!(decision.as_str())
        );
    }
    assert_eq!(ApprovalDecision::from_wire("approve"), None);

    assert_eq!(
        serde_json::to_value([
            ReconcileStatus::Reattached,
            ReconcileStatus::SessionResumable,
            ReconcileStatus::NotRecoverable,
            ReconcileStatus::Unknown,
        ])
        .unwrap(),
        serde_json::json!([
            "REATTACHED",
            "SESSION_RESUMABLE",
            "NOT_RECOVERABLE",
            "UNKNOWN"
        ])
    );
}

#[test]
fn every_bridge_code_is_documented() {
    let doc = include_str!("../../../../docs/bridge-error-codes.md");
    for code in serverfs_protocol::bridge::BridgeErrorCode::ALL {
        assert!(
            doc.contains(&format!("`{}`", code.as_str())),
            "{} is missing from docs/bridge-error-codes.md",
            code.as_str()
        );
    }
}
