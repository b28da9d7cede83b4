//! Events: the adjacently tagged `event_type`/`payload` pair inside its
//! envelope, one pinned sample per event type.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use serverfs_protocol::bridge::{
    ApprovalDecision, ApprovalResolution, BridgeErrorCode, BridgeEvent, EVENT_SCHEMA_VERSION,
    EventPayload, InteractionKind, PlanEntry, PlanEntryPriority, PlanEntryStatus, ReconcileStatus,
    ResultStorage, TaskEventsResult,
};

use super::{folds, object, pin, refuses};

/// One sample payload per event type, with its wire form.
fn samples() -> Vec<(EventPayload, Value)> {
    let advice = object(json!({ "status": "completed", "automatic": false }));
    vec![
        (
            EventPayload::TaskPreflight(advice.clone()),
            json!({ "status": "completed", "automatic": false }),
        ),
        (
            EventPayload::TaskRoutingAdvice(advice.clone()),
            json!({ "status": "completed", "automatic": false }),
        ),
        (
            EventPayload::TaskStarted {
                runtime: "codex".into(),
            },
            json!({ "runtime": "codex" }),
        ),
        (EventPayload::TurnStarted { runtime: None }, json!({})),
        (
            EventPayload::AgentMessage {
                text: "done".into(),
                phase: Some("final".into()),
                truncated: false,
                size_bytes: None,
                sha256: None,
            },
            json!({ "text": "done", "phase": "final" }),
        ),
        (
            EventPayload::CommandStarted {
                command: "cargo test".into(),
                tool_use_id: "tu_1".into(),
            },
            json!({ "command": "cargo test", "tool_use_id": "tu_1" }),
        ),
        (
            EventPayload::FileChangeStarted {
                tool: "Edit".into(),
                tool_use_id: "tu_2".into(),
                input: Some(json!({ "file_path": "src/lib.rs" })),
            },
            json!({ "tool": "Edit", "tool_use_id": "tu_2", "input": { "file_path": "src/lib.rs" } }),
        ),
        (
            EventPayload::ToolStarted {
                tool: "WebFetch".into(),
                tool_use_id: "tu_3".into(),
                input: None,
            },
            json!({ "tool": "WebFetch", "tool_use_id": "tu_3" }),
        ),
        (
            EventPayload::ItemStarted(object(
                json!({ "type": "commandExecution", "status": "inProgress" }),
            )),
            json!({ "type": "commandExecution", "status": "inProgress" }),
        ),
        (
            EventPayload::ItemCompleted(object(json!({ "type": "agentMessage", "text": "hi" }))),
            json!({ "type": "agentMessage", "text": "hi" }),
        ),
        (
            EventPayload::PlanUpdated {
                entries: vec![
                    PlanEntry {
                        content: "read the tests".into(),
                        status: PlanEntryStatus::Completed,
                        priority: PlanEntryPriority::High,
                    },
                    PlanEntry {
                        content: "fix the parser".into(),
                        status: PlanEntryStatus::InProgress,
                        priority: PlanEntryPriority::Low,
                    },
                ],
                truncated: true,
            },
            json!({ "entries": [
                { "content": "read the tests", "status": "completed", "priority": "high" },
                { "content": "fix the parser", "status": "in_progress", "priority": "low" },
            ], "truncated": true }),
        ),
        (
            EventPayload::ProviderError {
                message: "rate limited".into(),
                will_retry: true,
            },
            json!({ "message": "rate limited", "will_retry": true }),
        ),
        (
            EventPayload::PermissionFailed {
                tool: "Bash".into(),
                error_class: "PermissionDenied".into(),
                message: "denied".into(),
            },
            json!({ "tool": "Bash", "error_class": "PermissionDenied", "message": "denied" }),
        ),
        (
            EventPayload::ApprovalAdvice(advice),
            json!({ "status": "completed", "automatic": false }),
        ),
        (
            EventPayload::ApprovalRequested {
                request_id: "req_1".into(),
                expires_at: 1_767_227_400_000,
            },
            json!({ "request_id": "req_1", "expires_at": 1_767_227_400_000_i64 }),
        ),
        (
            EventPayload::QuestionRequested {
                request_id: "req_2".into(),
                expires_at: 5,
            },
            json!({ "request_id": "req_2", "expires_at": 5 }),
        ),
        (
            EventPayload::ApprovalResolved {
                decision: ApprovalDecision::CancelTask,
            },
            json!({ "decision": "cancel_task" }),
        ),
        (
            EventPayload::QuestionAnswered { question_count: 2 },
            json!({ "question_count": 2 }),
        ),
        (
            EventPayload::InteractionStale {
                request_id: "req_1".into(),
            },
            json!({ "request_id": "req_1" }),
        ),
        (
            EventPayload::InteractionExpired {
                request_id: "req_1".into(),
                kind: InteractionKind::Question,
            },
            json!({ "request_id": "req_1", "kind": "question" }),
        ),
        (
            EventPayload::UserMessage { bytes: 42 },
            json!({ "bytes": 42 }),
        ),
        (
            EventPayload::TaskResultSpooled {
                size_bytes: 300_000,
                sha256: "ab".repeat(32),
            },
            json!({ "size_bytes": 300_000, "sha256": "ab".repeat(32) }),
        ),
        (
            EventPayload::TaskCompleted {
                result_storage: ResultStorage::Inline,
                result_size_bytes: 12,
            },
            json!({ "result_storage": "inline", "result_size_bytes": 12 }),
        ),
        (
            EventPayload::TaskFailed {
                error_code: BridgeErrorCode::AgentProviderError,
            },
            json!({ "error_code": "AGENT_PROVIDER_ERROR" }),
        ),
        (EventPayload::TaskCancelled {}, json!({})),
        (
            EventPayload::TaskInterrupted {
                error_code: BridgeErrorCode::BridgeShutdown,
            },
            json!({ "error_code": "BRIDGE_SHUTDOWN" }),
        ),
        (
            EventPayload::RuntimeReconcileStarted {
                runtime: "claude".into(),
            },
            json!({ "runtime": "claude" }),
        ),
        (
            EventPayload::RuntimeReconcileFinished {
                runtime: "claude".into(),
                status: ReconcileStatus::SessionResumable,
                provider_active: None,
            },
            json!({ "runtime": "claude", "status": "SESSION_RESUMABLE", "provider_active": null }),
        ),
        (
            EventPayload::TaskReconciled {
                status: ReconcileStatus::NotRecoverable,
                provider_active: Some(false),
                error_code: Some(BridgeErrorCode::BridgeRestarted),
            },
            json!({
                "status": "NOT_RECOVERABLE", "provider_active": false,
                "error_code": "BRIDGE_RESTARTED"
            }),
        ),
        (
            EventPayload::ApprovalObserved(ApprovalResolution {
                decision: ApprovalDecision::ApproveOnce,
                granted_permission_ids: vec![],
                option_id: None,
            }),
            json!({ "decision": "approve_once", "granted_permission_ids": [] }),
        ),
    ]
}

fn envelope(event_type: &str, payload: Value) -> Value {
    json!({
        "event_id": 7, "task_id": "agt_1", "correlation_id": "c-1",
        "event_type": event_type, "payload": payload,
        "created_at": 1_767_225_600_000_i64, "schema_version": 1
    })
}

fn event(payload: EventPayload) -> BridgeEvent {
    BridgeEvent {
        event_id: 7,
        task_id: "agt_1".into(),
        correlation_id: Some("c-1".into()),
        created_at: 1_767_225_600_000,
        event: payload,
    }
}

#[test]
fn event_types_are_pinned() {
    assert_eq!(
        EventPayload::EVENT_TYPES,
        [
            "task.preflight",
            "task.routing_advice",
            "task.started",
            "turn.started",
            "agent.message",
            "command.started",
            "file_change.started",
            "tool.started",
            "item.started",
            "item.completed",
            "plan.updated",
            "provider.error",
            "permission.failed",
            "approval.advice",
            "approval.requested",
            "question.requested",
            "approval.resolved",
            "question.answered",
            "interaction.stale",
            "interaction.expired",
            "user.message",
            "task.result_spooled",
            "task.completed",
            "task.failed",
            "task.cancelled",
            "task.interrupted",
            "runtime.reconcile_started",
            "runtime.reconcile_finished",
            "task.reconciled",
            "approval.observed",
        ]
    );
    assert_eq!(EVENT_SCHEMA_VERSION, 1);
}

#[test]
fn every_event_type_round_trips_in_its_envelope() {
    let mut covered = BTreeSet::new();
    for (payload, payload_json) in samples() {
        let event_type = payload.event_type();
        assert!(covered.insert(event_type), "{event_type} sampled twice");
        pin(
            &event(payload.clone()),
            envelope(event_type, payload_json.clone()),
        );
        // The bare pair is the adjacently tagged enum itself.
        pin(
            &payload,
            json!({ "event_type": event_type, "payload": payload_json }),
        );
    }
    let all: BTreeSet<&str> = EventPayload::EVENT_TYPES.iter().copied().collect();
    assert_eq!(covered, all, "every event type has a sample");
}

#[test]
fn events_with_no_correlation_id_carry_null() {
    let bare = BridgeEvent {
        correlation_id: None,
        ..event(EventPayload::TaskCancelled {})
    };
    pin(
        &bare,
        json!({
            "event_id": 7, "task_id": "agt_1", "correlation_id": null,
            "event_type": "task.cancelled", "payload": {},
            "created_at": 1_767_225_600_000_i64, "schema_version": 1
        }),
    );
}

#[test]
fn the_envelope_is_strict() {
    let good = envelope("task.started", json!({ "runtime": "codex" }));
    let mut extra = object(good.clone());
    extra.insert("seq".into(), json!(1));
    refuses::<BridgeEvent>(Value::Object(extra));
    for key in [
        "event_id",
        "task_id",
        "correlation_id",
        "event_type",
        "payload",
        "created_at",
        "schema_version",
    ] {
        let mut missing = object(good.clone());
        missing.remove(key);
        refuses::<BridgeEvent>(Value::Object(missing));
    }
    let mut version = object(good.clone());
    version.insert("schema_version".into(), json!(2));
    refuses::<BridgeEvent>(Value::Object(version));
    let mut time = object(good);
    time.insert("created_at".into(), json!("2026-01-01T00:00:00Z"));
    refuses::<BridgeEvent>(Value::Object(time));
}

#[test]
fn payloads_are_strict() {
    refuses::<BridgeEvent>(envelope("task.exploded", json!({})));
    refuses::<BridgeEvent>(envelope(
        "task.started",
        json!({ "runtime": "codex", "pid": 4 }),
    ));
    refuses::<BridgeEvent>(envelope("task.started", json!({})));
    refuses::<BridgeEvent>(envelope("task.cancelled", json!({ "reason": "x" })));
    refuses::<BridgeEvent>(envelope("task.cancelled", Value::Null));
    refuses::<BridgeEvent>(envelope("turn.started", json!({ "runtime": null })));
    refuses::<BridgeEvent>(envelope("task.failed", json!({ "error_code": "OOPS" })));
    refuses::<BridgeEvent>(envelope(
        "runtime.reconcile_finished",
        json!({ "runtime": "claude", "status": "UNKNOWN" }),
    ));
    refuses::<BridgeEvent>(envelope(
        "task.reconciled",
        json!({ "status": "UNKNOWN", "provider_active": null, "error_code": null }),
    ));
    refuses::<BridgeEvent>(envelope(
        "file_change.started",
        json!({ "tool": "Edit", "tool_use_id": "t", "input": null }),
    ));
    refuses::<EventPayload>(json!({
        "event_type": "task.started", "payload": { "runtime": "codex" }, "extra": 1
    }));
    // A plan's entries are typed: no raw ACP (`_meta`, unknown statuses).
    let entry = json!({ "content": "step", "status": "pending", "priority": "medium" });
    let mut with_meta = object(entry.clone());
    with_meta.insert("_meta".into(), json!({}));
    let mut unknown_status = object(entry.clone());
    unknown_status.insert("status".into(), json!("skipped"));
    for bad in [
        json!({ "entries": [with_meta] }),
        json!({ "entries": [unknown_status] }),
        json!({ "entries": [entry], "truncated": null }),
        json!({}),
    ] {
        refuses::<BridgeEvent>(envelope("plan.updated", bad));
    }
}

#[test]
fn an_untruncated_plan_says_nothing_of_it() {
    let plan = EventPayload::PlanUpdated {
        entries: Vec::new(),
        truncated: false,
    };
    pin(
        &plan,
        json!({ "event_type": "plan.updated", "payload": { "entries": [] } }),
    );
}

#[test]
fn agent_message_truncation_fields_are_absent_unless_truncated() {
    let whole = EventPayload::AgentMessage {
        text: "hi".into(),
        phase: None,
        truncated: false,
        size_bytes: None,
        sha256: None,
    };
    pin(
        &whole,
        json!({ "event_type": "agent.message", "payload": { "text": "hi" } }),
    );
    folds(
        json!({ "event_type": "agent.message", "payload": { "text": "hi", "truncated": false } }),
        &whole,
        json!({ "event_type": "agent.message", "payload": { "text": "hi" } }),
    );
    pin(
        &EventPayload::AgentMessage {
            text: "h".into(),
            phase: None,
            truncated: true,
            size_bytes: Some(100_000),
            sha256: Some("ef".repeat(32)),
        },
        json!({ "event_type": "agent.message", "payload": {
            "text": "h", "truncated": true, "size_bytes": 100_000, "sha256": "ef".repeat(32)
        }}),
    );
    refuses::<EventPayload>(json!({
        "event_type": "agent.message", "payload": { "text": "hi", "phase": null }
    }));
}

#[test]
fn task_events_result() {
    let page = TaskEventsResult {
        correlation_id: Some("c-1".into()),
        events: vec![
            event(EventPayload::TaskStarted {
                runtime: "codex".into(),
            }),
            BridgeEvent {
                event_id: 9,
                ..event(EventPayload::TaskCancelled {})
            },
        ],
        next_after_event_id: 9,
    };
    let mut second = envelope("task.cancelled", json!({}));
    second["event_id"] = json!(9);
    pin(
        &page,
        json!({
            "correlation_id": "c-1",
            "events": [envelope("task.started", json!({ "runtime": "codex" })), second],
            "next_after_event_id": 9
        }),
    );
    pin(
        &TaskEventsResult {
            correlation_id: None,
            events: vec![],
            next_after_event_id: 0,
        },
        json!({ "correlation_id": null, "events": [], "next_after_event_id": 0 }),
    );
    refuses::<TaskEventsResult>(json!({ "events": [], "next_after_event_id": 0 }));
    refuses::<TaskEventsResult>(json!({
        "correlation_id": null, "events": [], "next_after_event_id": 0, "has_more": false
    }));
}

#[test]
fn approval_observed_carries_the_chosen_option() {
    pin(
        &EventPayload::ApprovalObserved(ApprovalResolution {
            decision: ApprovalDecision::ApproveSession,
            granted_permission_ids: vec![],
            option_id: Some("opt-allow-always".into()),
        }),
        json!({
            "event_type": "approval.observed",
            "payload": {
                "decision": "approve_session", "granted_permission_ids": [],
                "option_id": "opt-allow-always"
            }
        }),
    );
}
