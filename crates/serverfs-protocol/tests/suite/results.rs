//! Method results and the records inside them, pinned both ways, with
//! unknown fields refused and absent-versus-`null` fixed per field.

use serde_json::{Map, Value, json};
use serverfs_protocol::bridge::{
    AgentProfile, ApprovalCategory, ApprovalDecision, ApprovalOption, ApprovalOptionKind,
    ApprovalPayload, ApprovalResolution, BridgeCall, BridgeErrorCode, BridgePeerResult,
    CapabilityState, CatalogScope, CatalogStatus, FileChange, InFlightRecovery, Interaction,
    InteractionKind, InteractionResolved, InteractionStatus, LiteralTrue, ModelCatalog,
    ModelDiscovery, ModelInfo, PendingInteraction, ProtocolError, Question, QuestionAnswer,
    QuestionOption, QuestionPayload, QuestionResolution, RequestedPermission, ResultStorage,
    ResultSummary, RuntimeInfo, RuntimeListResult, TaskCancelResult, TaskGetParams,
    TaskMessageSendResult, TaskResultChunk, TaskStatus, TaskSubmitResult, TaskView,
};

use super::{folds, object, pin, refuses};

/// `json` with `key` removed.
fn without(json: &Value, key: &str) -> Value {
    let mut map = object(json.clone());
    assert!(map.remove(key).is_some(), "{key} is not in the sample");
    Value::Object(map)
}

/// `json` with `key` set to `value`.
fn with(json: &Value, key: &str, value: Value) -> Value {
    let mut map = object(json.clone());
    map.insert(key.to_owned(), value);
    Value::Object(map)
}

fn codex() -> (RuntimeInfo, Value) {
    (
        RuntimeInfo {
            name: "codex".into(),
            available: true,
            version: Some("0.160.0".into()),
            persistent_session: true,
            live_steer: true,
            interactive_approval: true,
            interactive_question: true,
            in_flight_recovery: InFlightRecovery::SessionResume,
            model_override: true,
            model_discovery: ModelDiscovery::RuntimeCatalog,
            capability_state: None,
            capabilities_measured_at: None,
        },
        json!({
            "name": "codex", "available": true, "version": "0.160.0",
            "persistent_session": true, "live_steer": true, "interactive_approval": true,
            "interactive_question": true, "in_flight_recovery": "session-resume",
            "model_override": true, "model_discovery": "runtime_catalog"
        }),
    )
}

/// Both ids are required integers: a measurement is never partial.
#[test]
fn bridge_peer() {
    pin(
        &BridgePeerResult {
            uid: 1000,
            gid: 100,
        },
        json!({ "uid": 1000, "gid": 100 }),
    );
    refuses::<BridgePeerResult>(json!({ "uid": 1000 }));
    refuses::<BridgePeerResult>(json!({ "uid": 1000, "gid": null }));
    refuses::<BridgePeerResult>(json!({ "uid": -1, "gid": 100 }));
    refuses::<BridgePeerResult>(json!({ "uid": "1000", "gid": 100 }));
    refuses::<BridgePeerResult>(json!({ "uid": 1000, "gid": 100, "pid": 7 }));
}

#[test]
fn runtime_list() {
    let (info, json) = codex();
    let unavailable = RuntimeInfo {
        name: "qoder".into(),
        available: false,
        version: None,
        live_steer: false,
        in_flight_recovery: InFlightRecovery::None,
        model_discovery: ModelDiscovery::CurrentAccount,
        ..info.clone()
    };
    let unavailable_json = json!({
        "name": "qoder", "available": false, "version": null,
        "persistent_session": true, "live_steer": false, "interactive_approval": true,
        "interactive_question": true, "in_flight_recovery": "none",
        "model_override": true, "model_discovery": "current_account"
    });
    pin(
        &RuntimeListResult {
            runtimes: vec![info, unavailable],
        },
        json!({ "runtimes": [json.clone(), unavailable_json] }),
    );
    pin(
        &RuntimeInfo {
            in_flight_recovery: InFlightRecovery::Native,
            model_discovery: ModelDiscovery::Unsupported,
            ..codex().0
        },
        with(
            &with(&json, "in_flight_recovery", json!("native")),
            "model_discovery",
            json!("unsupported"),
        ),
    );
    // Every descriptor is always complete; `version` is present even when null.
    refuses::<RuntimeInfo>(without(&json, "version"));
    refuses::<RuntimeInfo>(without(&json, "live_steer"));
    refuses::<RuntimeInfo>(json!({ "name": "codex", "available": false }));
    refuses::<RuntimeInfo>(with(&json, "in_flight_recovery", json!("session_resume")));
    refuses::<RuntimeInfo>(with(&json, "healthy", json!(true)));
    refuses::<RuntimeListResult>(json!({ "runtimes": [], "count": 0 }));
}

#[test]
fn measured_capabilities_are_additive() {
    let (info, json) = codex();
    // A runtime whose flags come from its provider says how they were
    // established; a native runtime's descriptor stays as it was.
    pin(
        &RuntimeInfo {
            name: "acp-opencode".into(),
            capability_state: Some(CapabilityState::Measured),
            capabilities_measured_at: Some(1_764_633_600_000),
            ..info.clone()
        },
        with(
            &with(
                &with(&json, "name", json!("acp-opencode")),
                "capability_state",
                json!("measured"),
            ),
            "capabilities_measured_at",
            json!(1_764_633_600_000_i64),
        ),
    );
    pin(
        &RuntimeInfo {
            capability_state: Some(CapabilityState::Unmeasured),
            ..info
        },
        with(&json, "capability_state", json!("unmeasured")),
    );
    refuses::<RuntimeInfo>(with(&json, "capability_state", Value::Null));
    refuses::<RuntimeInfo>(with(&json, "capability_state", json!("guessed")));
    refuses::<RuntimeInfo>(with(&json, "capabilities_measured_at", Value::Null));
}

fn minimal_model() -> (ModelInfo, Value) {
    (
        ModelInfo {
            id: "gpt-5".into(),
            display_name: "GPT-5".into(),
            enabled: Some(true),
            is_default: None,
            hidden: Some(false),
            description: None,
            input_modalities: None,
            reasoning: None,
            context: None,
            service_tiers: None,
            is_free: None,
            price_factor: None,
            is_new: None,
        },
        json!({
            "id": "gpt-5", "display_name": "GPT-5", "enabled": true, "is_default": null,
            "hidden": false
        }),
    )
}

#[test]
fn model_catalog() {
    pin(
        &ModelCatalog {
            runtime: "claude".into(),
            status: CatalogStatus::Unsupported,
            scope: CatalogScope::None,
            source: "claude".into(),
            models: vec![],
            detail: None,
            model_advice: None,
        },
        json!({
            "runtime": "claude", "status": "unsupported", "scope": "none", "source": "claude",
            "models": []
        }),
    );

    let (model, model_json) = minimal_model();
    let mut reasoning = Map::new();
    reasoning.insert("supported".into(), json!(["low", "high"]));
    reasoning.insert("default".into(), json!("high"));
    let full = ModelInfo {
        description: Some("Flagship".into()),
        input_modalities: Some(vec!["text".into(), "image".into()]),
        reasoning: Some(reasoning),
        context: Some(object(json!({ "window": 400_000 }))),
        service_tiers: Some(json!(["flex"])),
        is_free: Some(false),
        price_factor: Some(1.5),
        is_new: Some(true),
        ..model.clone()
    };
    let full_json = json!({
        "id": "gpt-5", "display_name": "GPT-5", "enabled": true, "is_default": null,
        "hidden": false, "description": "Flagship", "input_modalities": ["text", "image"],
        "reasoning": { "supported": ["low", "high"], "default": "high" },
        "context": { "window": 400_000 }, "service_tiers": ["flex"], "is_free": false,
        "price_factor": 1.5, "is_new": true
    });
    pin(
        &ModelCatalog {
            runtime: "codex".into(),
            status: CatalogStatus::Ok,
            scope: CatalogScope::RuntimeCatalog,
            source: "codex".into(),
            models: vec![model.clone(), full],
            detail: None,
            model_advice: Some(object(json!({ "status": "disabled", "automatic": false }))),
        },
        json!({
            "runtime": "codex", "status": "ok", "scope": "runtime_catalog", "source": "codex",
            "models": [model_json.clone(), full_json],
            "model_advice": { "status": "disabled", "automatic": false }
        }),
    );
    pin(
        &ModelCatalog {
            runtime: "qoder".into(),
            status: CatalogStatus::Unavailable,
            scope: CatalogScope::CurrentAccount,
            source: "qoder".into(),
            models: vec![],
            detail: Some("runtime is unavailable".into()),
            model_advice: None,
        },
        json!({
            "runtime": "qoder", "status": "unavailable", "scope": "current_account",
            "source": "qoder", "models": [], "detail": "runtime is unavailable"
        }),
    );

    // enabled/is_default/hidden: always present, nullable.
    refuses::<ModelInfo>(without(&model_json, "is_default"));
    // The optional extras are absent when unknown, never null.
    for key in [
        "description",
        "reasoning",
        "service_tiers",
        "price_factor",
        "is_new",
    ] {
        refuses::<ModelInfo>(with(&model_json, key, Value::Null));
    }
    refuses::<ModelInfo>(with(&model_json, "vendor", json!("x")));
    refuses::<ModelCatalog>(json!({
        "runtime": "claude", "status": "unsupported", "scope": "none", "source": "claude",
        "models": [], "detail": null
    }));
    refuses::<ModelCatalog>(json!({
        "runtime": "claude", "status": "broken", "scope": "none", "source": "claude",
        "models": []
    }));
}

#[test]
fn task_submit_result() {
    let queued = TaskSubmitResult {
        task_id: "agt_1".into(),
        status: TaskStatus::Queued,
        correlation_id: None,
        idempotency_key: None,
        preflight: None,
        routing_advice: None,
    };
    let queued_json = json!({
        "task_id": "agt_1", "status": "queued", "correlation_id": null, "idempotency_key": null
    });
    pin(&queued, queued_json.clone());
    pin(
        &TaskSubmitResult {
            status: TaskStatus::Running,
            correlation_id: Some("c-1".into()),
            idempotency_key: Some("k-1".into()),
            preflight: Some(object(
                json!({ "status": "completed", "model": "jev-1.13.0" }),
            )),
            routing_advice: Some(object(json!({ "status": "completed", "automatic": false }))),
            ..queued
        },
        json!({
            "task_id": "agt_1", "status": "running", "correlation_id": "c-1",
            "idempotency_key": "k-1",
            "preflight": { "status": "completed", "model": "jev-1.13.0" },
            "routing_advice": { "status": "completed", "automatic": false }
        }),
    );
    refuses::<TaskSubmitResult>(without(&queued_json, "correlation_id"));
    refuses::<TaskSubmitResult>(without(&queued_json, "idempotency_key"));
    refuses::<TaskSubmitResult>(with(&queued_json, "preflight", Value::Null));
    refuses::<TaskSubmitResult>(with(&queued_json, "status", json!("pending")));
    refuses::<TaskSubmitResult>(with(&queued_json, "lease_id", json!("alias:docs")));
}

fn approval() -> (PendingInteraction, Value) {
    let payload = ApprovalPayload {
        category: ApprovalCategory::Command,
        title: Some("Run tests".into()),
        reason: None,
        command_display: Some("cargo test".into()),
        relative_cwd: Some("crates".into()),
        additional_permissions: None,
        network_approval_context: None,
        file_changes: None,
        requested_permissions: None,
        tool: None,
        tool_input: None,
        blocked_path: None,
        available_decisions: vec![
            ApprovalDecision::ApproveOnce,
            ApprovalDecision::Deny,
            ApprovalDecision::CancelTask,
        ],
        options: None,
        approval_advice: None,
    };
    (
        PendingInteraction::Approval(Box::new(Interaction {
            request_id: "req_1".into(),
            task_id: "agt_1".into(),
            status: InteractionStatus::Pending,
            payload,
            created_at: 1_767_225_600_000,
            expires_at: 1_767_227_400_000,
            resolved_at: None,
            resolution: None,
        })),
        json!({
            "request_id": "req_1", "task_id": "agt_1", "kind": "approval", "status": "pending",
            "payload": {
                "category": "command", "title": "Run tests", "command_display": "cargo test",
                "relative_cwd": "crates",
                "available_decisions": ["approve_once", "deny", "cancel_task"]
            },
            "created_at": 1_767_225_600_000_i64, "expires_at": 1_767_227_400_000_i64,
            "resolved_at": null, "resolution": null
        }),
    )
}

fn question() -> (PendingInteraction, Value) {
    (
        PendingInteraction::Question(Interaction {
            request_id: "req_2".into(),
            task_id: "agt_1".into(),
            status: InteractionStatus::Resolved,
            payload: QuestionPayload {
                questions: vec![Question {
                    question_id: "q1".into(),
                    prompt: "Which?".into(),
                    options: vec![
                        QuestionOption {
                            option_id: "a".into(),
                            label: "A".into(),
                            description: Some("first".into()),
                            preview: None,
                        },
                        QuestionOption {
                            option_id: "b".into(),
                            label: "B".into(),
                            description: None,
                            preview: Some("b()".into()),
                        },
                    ],
                    multi_select: false,
                    allow_free_text: true,
                }],
            },
            created_at: 10,
            expires_at: 20,
            resolved_at: Some(15),
            resolution: Some(QuestionResolution {
                answers: vec![QuestionAnswer {
                    question_id: "q1".into(),
                    selected_option_ids: vec!["a".into()],
                    text: None,
                }],
            }),
        }),
        json!({
            "request_id": "req_2", "task_id": "agt_1", "kind": "question", "status": "resolved",
            "payload": { "questions": [{
                "question_id": "q1", "prompt": "Which?",
                "options": [
                    { "option_id": "a", "label": "A", "description": "first" },
                    { "option_id": "b", "label": "B", "preview": "b()" }
                ],
                "multi_select": false, "allow_free_text": true
            }]},
            "created_at": 10, "expires_at": 20, "resolved_at": 15,
            "resolution": { "answers": [{ "question_id": "q1", "selected_option_ids": ["a"] }] }
        }),
    )
}

#[test]
fn pending_interactions() {
    let (pending, pending_json) = approval();
    pin(&pending, pending_json.clone());
    assert_eq!(pending.kind(), InteractionKind::Approval);
    assert_eq!(pending.request_id(), "req_1");
    assert_eq!(pending.status(), InteractionStatus::Pending);

    let (answered, answered_json) = question();
    pin(&answered, answered_json.clone());
    assert_eq!(answered.kind(), InteractionKind::Question);

    // A resolved permission-set approval with every optional payload field.
    let payload = ApprovalPayload {
        category: ApprovalCategory::ProviderPermission,
        title: None,
        reason: Some("needs network".into()),
        command_display: None,
        relative_cwd: None,
        additional_permissions: Some(json!({ "network": true })),
        network_approval_context: Some(json!({ "host": "example.com" })),
        file_changes: Some(vec![FileChange {
            path: "src/lib.rs".into(),
        }]),
        requested_permissions: Some(vec![RequestedPermission {
            permission_id: "network".into(),
            kind: "network".into(),
            details: json!({ "enabled": true }),
        }]),
        tool: Some("Bash".into()),
        tool_input: Some(json!({ "command": "curl example.com" })),
        blocked_path: Some("<outside-workdir>".into()),
        available_decisions: ApprovalDecision::ALL.to_vec(),
        options: None,
        approval_advice: Some(object(json!({ "status": "unavailable" }))),
    };
    pin(
        &PendingInteraction::Approval(Box::new(Interaction {
            request_id: "req_3".into(),
            task_id: "agt_1".into(),
            status: InteractionStatus::Resolved,
            payload,
            created_at: 1,
            expires_at: 2,
            resolved_at: Some(2),
            resolution: Some(ApprovalResolution {
                decision: ApprovalDecision::ApproveSession,
                granted_permission_ids: vec!["network".into()],
                option_id: None,
            }),
        })),
        json!({
            "request_id": "req_3", "task_id": "agt_1", "kind": "approval", "status": "resolved",
            "payload": {
                "category": "provider_permission", "reason": "needs network",
                "additional_permissions": { "network": true },
                "network_approval_context": { "host": "example.com" },
                "file_changes": [{ "path": "src/lib.rs" }],
                "requested_permissions": [{
                    "permission_id": "network", "kind": "network", "details": { "enabled": true }
                }],
                "tool": "Bash", "tool_input": { "command": "curl example.com" },
                "blocked_path": "<outside-workdir>",
                "available_decisions": ["approve_once", "approve_session", "deny", "cancel_task"],
                "approval_advice": { "status": "unavailable" }
            },
            "created_at": 1, "expires_at": 2, "resolved_at": 2,
            "resolution": { "decision": "approve_session", "granted_permission_ids": ["network"] }
        }),
    );

    // The kind selects the payload type.
    refuses::<PendingInteraction>(with(&pending_json, "kind", json!("question")));
    refuses::<PendingInteraction>(with(&answered_json, "kind", json!("approval")));
    refuses::<PendingInteraction>(with(&pending_json, "kind", json!("notice")));
    refuses::<PendingInteraction>(without(&pending_json, "kind"));
    // Record fields: resolved_at and resolution always present.
    refuses::<PendingInteraction>(without(&pending_json, "resolved_at"));
    refuses::<PendingInteraction>(without(&pending_json, "resolution"));
    refuses::<PendingInteraction>(with(&pending_json, "extra", json!(1)));
    // Payload fields: absent when unknown, never null; decisions required.
    let payload = pending_json["payload"].clone();
    refuses::<PendingInteraction>(with(
        &pending_json,
        "payload",
        with(&payload, "reason", Value::Null),
    ));
    refuses::<PendingInteraction>(with(
        &pending_json,
        "payload",
        with(&payload, "tool_input", Value::Null),
    ));
    refuses::<PendingInteraction>(with(
        &pending_json,
        "payload",
        without(&payload, "available_decisions"),
    ));
    refuses::<PendingInteraction>(with(
        &pending_json,
        "payload",
        with(&payload, "category", json!("filesystem_permission")),
    ));
    refuses::<PendingInteraction>(with(
        &pending_json,
        "payload",
        with(&payload, "secret", json!("x")),
    ));
    // Question options: description and preview absent, never null.
    refuses::<QuestionOption>(json!({ "option_id": "a", "label": "A", "description": null }));
    // Answers in a resolution: text absent, never null; ids default to [].
    folds(
        json!({ "question_id": "q1" }),
        &QuestionAnswer {
            question_id: "q1".into(),
            selected_option_ids: vec![],
            text: None,
        },
        json!({ "question_id": "q1", "selected_option_ids": [] }),
    );
    refuses::<QuestionAnswer>(json!({ "question_id": "q1", "text": null }));
}

#[test]
fn approval_options() {
    // Each option kind answers with one public decision; both "always"
    // kinds keep their own identity in the option the human picked.
    assert_eq!(
        [
            ApprovalOptionKind::AllowOnce,
            ApprovalOptionKind::AllowAlways,
            ApprovalOptionKind::RejectOnce,
            ApprovalOptionKind::RejectAlways,
        ]
        .map(ApprovalOptionKind::decision),
        [
            ApprovalDecision::ApproveOnce,
            ApprovalDecision::ApproveSession,
            ApprovalDecision::Deny,
            ApprovalDecision::Deny,
        ]
    );
    let option = |id: &str, label: &str, kind| ApprovalOption {
        option_id: id.into(),
        label: label.into(),
        kind,
    };
    let payload = ApprovalPayload {
        category: ApprovalCategory::Other,
        title: Some("Edit files".into()),
        reason: None,
        command_display: None,
        relative_cwd: None,
        additional_permissions: None,
        network_approval_context: None,
        file_changes: None,
        requested_permissions: None,
        tool: None,
        tool_input: None,
        blocked_path: None,
        available_decisions: ApprovalDecision::ALL.to_vec(),
        options: Some(vec![
            option("o1", "Allow once", ApprovalOptionKind::AllowOnce),
            option("o2", "Always allow", ApprovalOptionKind::AllowAlways),
            option("o3", "Reject", ApprovalOptionKind::RejectOnce),
            option("o4", "Never", ApprovalOptionKind::RejectAlways),
        ]),
        approval_advice: None,
    };
    let record = PendingInteraction::Approval(Box::new(Interaction {
        request_id: "req_4".into(),
        task_id: "agt_1".into(),
        status: InteractionStatus::Resolved,
        payload,
        created_at: 1,
        expires_at: 2,
        resolved_at: Some(2),
        resolution: Some(ApprovalResolution {
            decision: ApprovalDecision::ApproveSession,
            granted_permission_ids: vec![],
            option_id: Some("o2".into()),
        }),
    }));
    let record_json = json!({
        "request_id": "req_4", "task_id": "agt_1", "kind": "approval", "status": "resolved",
        "payload": {
            "category": "other", "title": "Edit files",
            "available_decisions": ["approve_once", "approve_session", "deny", "cancel_task"],
            "options": [
                { "option_id": "o1", "label": "Allow once", "kind": "allow_once" },
                { "option_id": "o2", "label": "Always allow", "kind": "allow_always" },
                { "option_id": "o3", "label": "Reject", "kind": "reject_once" },
                { "option_id": "o4", "label": "Never", "kind": "reject_always" }
            ]
        },
        "created_at": 1, "expires_at": 2, "resolved_at": 2,
        "resolution": {
            "decision": "approve_session", "granted_permission_ids": [], "option_id": "o2"
        }
    });
    pin(&record, record_json.clone());

    // A resolution stored before options existed still decodes, without
    // an option; and one without an option is written the old way.
    pin(
        &ApprovalResolution {
            decision: ApprovalDecision::Deny,
            granted_permission_ids: vec![],
            option_id: None,
        },
        json!({ "decision": "deny", "granted_permission_ids": [] }),
    );
    // option_id and options: absent, never null.
    refuses::<ApprovalResolution>(
        json!({ "decision": "deny", "granted_permission_ids": [], "option_id": null }),
    );
    refuses::<ApprovalResolution>(
        json!({ "decision": "deny", "granted_permission_ids": [], "option_id": 3 }),
    );
    let payload = record_json["payload"].clone();
    refuses::<PendingInteraction>(with(
        &record_json,
        "payload",
        with(&payload, "options", Value::Null),
    ));
    // Options are strict: known kinds (snake_case), every field, no extras.
    let one = |option: Value| {
        with(
            &record_json,
            "payload",
            with(&payload, "options", json!([option])),
        )
    };
    for bad in [
        json!({ "option_id": "o1", "label": "Allow", "kind": "allow" }),
        json!({ "option_id": "o1", "label": "Allow", "kind": "allowOnce" }),
        json!({ "option_id": "o1", "label": "Allow", "kind": "approve_once" }),
        json!({ "option_id": "o1", "kind": "allow_once" }),
        json!({ "label": "Allow", "kind": "allow_once" }),
        json!({ "option_id": null, "label": "Allow", "kind": "allow_once" }),
        json!({ "option_id": "o1", "label": "Allow", "kind": "allow_once", "scope": "x" }),
    ] {
        refuses::<PendingInteraction>(one(bad));
    }
    pin(
        &ApprovalOption {
            option_id: "o4".into(),
            label: "Never".into(),
            kind: ApprovalOptionKind::RejectAlways,
        },
        json!({ "option_id": "o4", "label": "Never", "kind": "reject_always" }),
    );
}

fn view() -> (TaskView, Value) {
    (
        TaskView {
            task_id: "agt_1".into(),
            runtime: "codex".into(),
            workdir_alias: "docs".into(),
            workdir_slot: None,
            relative_cwd: String::new(),
            profile: AgentProfile::WorkspaceWrite,
            requested_model: None,
            status: TaskStatus::Queued,
            created_at: 1_000,
            started_at: None,
            updated_at: 1_000,
            completed_at: None,
            deadline_at: 7_201_000,
            continue_from_task_id: None,
            correlation_id: None,
            idempotency_key: None,
            final_response: None,
            final_response_truncated: false,
            result: None,
            manifest: object(json!({ "schema_version": 2, "protocol_version": 1 })),
            manifest_sha256: "ab".repeat(32),
            error_code: None,
            error_message: None,
            pending_request_id: None,
            pending_request: None,
        },
        json!({
            "task_id": "agt_1", "runtime": "codex", "workdir_alias": "docs",
            "workdir_slot": null, "relative_cwd": "", "profile": "workspace-write",
            "requested_model": null, "status": "queued", "created_at": 1000,
            "started_at": null, "updated_at": 1000, "completed_at": null,
            "deadline_at": 7_201_000, "continue_from_task_id": null, "correlation_id": null,
            "idempotency_key": null, "final_response": null, "final_response_truncated": false,
            "result": null, "manifest": { "schema_version": 2, "protocol_version": 1 },
            "manifest_sha256": "ab".repeat(32), "error_code": null, "error_message": null,
            "pending_request_id": null, "pending_request": null
        }),
    )
}

#[test]
fn task_view() {
    let (queued, queued_json) = view();
    pin(&queued, queued_json.clone());

    let (pending, pending_json) = approval();
    let waiting = TaskView {
        workdir_slot: Some(3),
        relative_cwd: "crates".into(),
        profile: AgentProfile::Review,
        requested_model: Some("gpt-5".into()),
        status: TaskStatus::WaitingForApproval,
        started_at: Some(1_100),
        updated_at: 1_200,
        continue_from_task_id: Some("agt_0".into()),
        correlation_id: Some("c-1".into()),
        idempotency_key: Some("k-1".into()),
        pending_request_id: Some("req_1".into()),
        pending_request: Some(pending),
        ..queued.clone()
    };
    let mut waiting_json = object(queued_json.clone());
    for (key, value) in [
        ("workdir_slot", json!(3)),
        ("relative_cwd", json!("crates")),
        ("profile", json!("review")),
        ("requested_model", json!("gpt-5")),
        ("status", json!("waiting_for_approval")),
        ("started_at", json!(1_100)),
        ("updated_at", json!(1_200)),
        ("continue_from_task_id", json!("agt_0")),
        ("correlation_id", json!("c-1")),
        ("idempotency_key", json!("k-1")),
        ("pending_request_id", json!("req_1")),
        ("pending_request", pending_json),
    ] {
        waiting_json.insert(key.into(), value);
    }
    pin(&waiting, Value::Object(waiting_json));

    let spooled = TaskView {
        status: TaskStatus::Succeeded,
        started_at: Some(1_100),
        completed_at: Some(9_000),
        final_response: Some("prefix…".into()),
        final_response_truncated: true,
        result: Some(ResultSummary {
            storage: ResultStorage::Spool,
            size_bytes: 300_000,
            sha256: "cd".repeat(32),
            retrievable: true,
        }),
        ..queued.clone()
    };
    let spooled_json = with(
        &with(
            &with(
                &with(
                    &with(
                        &with(&queued_json, "status", json!("succeeded")),
                        "started_at",
                        json!(1_100),
                    ),
                    "completed_at",
                    json!(9_000),
                ),
                "final_response",
                json!("prefix…"),
            ),
            "final_response_truncated",
            json!(true),
        ),
        "result",
        json!({ "storage": "spool", "size_bytes": 300_000, "sha256": "cd".repeat(32),
                "retrievable": true }),
    );
    pin(&spooled, spooled_json);

    let failed = TaskView {
        status: TaskStatus::Interrupted,
        error_code: Some(BridgeErrorCode::AgentTaskTimedOut),
        error_message: Some("task deadline passed".into()),
        ..queued
    };
    pin(
        &failed,
        with(
            &with(
                &with(&queued_json, "status", json!("interrupted")),
                "error_code",
                json!("AGENT_TASK_TIMED_OUT"),
            ),
            "error_message",
            json!("task deadline passed"),
        ),
    );

    // Every view key is always present.
    for key in object(queued_json.clone()).keys() {
        refuses::<TaskView>(without(&queued_json, key));
    }
    // Provider-native ids and storage internals are not part of the view.
    for key in [
        "native_session_id",
        "request_fingerprint",
        "result_storage",
        "lease_id",
    ] {
        refuses::<TaskView>(with(&queued_json, key, json!("x")));
    }
    refuses::<TaskView>(with(&queued_json, "manifest", Value::Null));
    refuses::<TaskView>(with(&queued_json, "error_code", json!("SOMETHING_ELSE")));
    refuses::<TaskView>(with(
        &queued_json,
        "created_at",
        json!("2026-01-01T00:00:00Z"),
    ));
}

#[test]
fn task_result_chunk() {
    let chunk = TaskResultChunk {
        text: "héllo".into(),
        offset_bytes: 65_536,
        next_offset_bytes: 65_542,
        eof: false,
        correlation_id: None,
    };
    let chunk_json = json!({
        "text": "héllo", "offset_bytes": 65_536, "next_offset_bytes": 65_542, "eof": false,
        "correlation_id": null
    });
    pin(&chunk, chunk_json.clone());
    pin(
        &TaskResultChunk {
            text: String::new(),
            offset_bytes: 10,
            next_offset_bytes: 10,
            eof: true,
            correlation_id: Some("c-1".into()),
        },
        json!({
            "text": "", "offset_bytes": 10, "next_offset_bytes": 10, "eof": true,
            "correlation_id": "c-1"
        }),
    );
    refuses::<TaskResultChunk>(without(&chunk_json, "correlation_id"));
    refuses::<TaskResultChunk>(with(&chunk_json, "offset_bytes", json!(-1)));
    refuses::<TaskResultChunk>(with(&chunk_json, "sha256", json!("ab")));
    refuses::<ResultSummary>(json!({
        "storage": "inline", "size_bytes": 1, "sha256": "ab", "retrievable": false, "path": "/x"
    }));
}

#[test]
fn literal_true_acknowledgements() {
    let resolved = InteractionResolved {
        task_id: "agt_1".into(),
        request_id: "req_1".into(),
        resolved: LiteralTrue,
        correlation_id: Some("c-1".into()),
    };
    let resolved_json = json!({
        "task_id": "agt_1", "request_id": "req_1", "resolved": true, "correlation_id": "c-1"
    });
    pin(&resolved, resolved_json.clone());
    refuses::<InteractionResolved>(with(&resolved_json, "resolved", json!(false)));
    refuses::<InteractionResolved>(with(&resolved_json, "resolved", json!(1)));
    refuses::<InteractionResolved>(without(&resolved_json, "correlation_id"));

    let accepted_json = json!({ "task_id": "agt_1", "accepted": true, "correlation_id": null });
    pin(
        &TaskMessageSendResult {
            task_id: "agt_1".into(),
            accepted: LiteralTrue,
            correlation_id: None,
        },
        accepted_json.clone(),
    );
    refuses::<TaskMessageSendResult>(with(&accepted_json, "accepted", json!(false)));
}

#[test]
fn task_cancel_result() {
    let json = json!({ "task_id": "agt_1", "status": "cancelled", "correlation_id": null });
    pin(
        &TaskCancelResult {
            task_id: "agt_1".into(),
            status: TaskStatus::Cancelled,
            correlation_id: None,
        },
        json.clone(),
    );
    refuses::<TaskCancelResult>(with(&json, "cancelled", json!(true)));
}

#[test]
fn clients_decode_results_through_the_params_type() {
    let (view, view_json) = view();
    assert_eq!(
        TaskGetParams::decode_result(object(view_json.clone())),
        Ok(view)
    );
    assert_eq!(
        TaskGetParams::decode_result(object(with(&view_json, "surprise", json!(1)))),
        Err(ProtocolError::MalformedResponse)
    );
}
