//! Task rows: idempotency, limits, the transition table, views.

use serverfs_agent_bridge::BridgeErrorCode;
use serverfs_agent_bridge::store::{
    Created, StoreError, StoreLimits, Transition, allowed_targets, transition_allowed,
};
use serverfs_protocol::bridge::{EventPayload, TaskStatus};

use super::{DEADLINE, Fixture, T0, new_task};

#[test]
fn same_key_and_fingerprint_replays_the_existing_task() {
    let fixture = Fixture::new();
    let first = new_task(Some(("key-1", "fp-1")));
    let created = fixture
        .store
        .call_blocking(move |db| db.create_task(&first, T0))
        .unwrap();
    let Created::New(original) = created else {
        panic!("expected a new task")
    };
    fixture.drive(&original.task_id, TaskStatus::Running);

    // A retry carries a fresh task id but the same key and request.
    let retry = new_task(Some(("key-1", "fp-1")));
    let replayed = fixture
        .store
        .call_blocking(move |db| db.create_task(&retry, T0 + 5))
        .unwrap();
    let Created::Replayed(task) = replayed else {
        panic!("expected a replay, got {replayed:?}")
    };
    assert_eq!(task.task_id, original.task_id);
    assert_eq!(
        task.status,
        TaskStatus::Running,
        "current status, not queued"
    );
    assert_eq!(
        fixture
            .store
            .call_blocking(|db| db.count_active_tasks())
            .unwrap(),
        1
    );
}

#[test]
fn same_key_with_another_fingerprint_conflicts() {
    let fixture = Fixture::new();
    let first = new_task(Some(("key-1", "fp-1")));
    fixture
        .store
        .call_blocking(move |db| db.create_task(&first, T0))
        .unwrap();
    let other = new_task(Some(("key-1", "fp-2")));
    let error = fixture
        .store
        .call_blocking(move |db| db.create_task(&other, T0))
        .unwrap_err();
    assert!(matches!(error, StoreError::IdempotencyConflict));
    assert_eq!(error.code(), BridgeErrorCode::AgentIdempotencyConflict);
    let found = fixture
        .store
        .call_blocking(|db| db.find_by_idempotency_key("key-1"))
        .unwrap()
        .unwrap();
    assert_eq!(found.request_fingerprint.as_deref(), Some("fp-1"));
}

#[test]
fn id_collision_and_active_limit() {
    let fixture = Fixture::with_limits(StoreLimits {
        max_active_tasks: 2,
        ..StoreLimits::default()
    });
    let first = fixture.task();
    let mut duplicate = new_task(None);
    duplicate.task_id = first.task_id.clone();
    let error = fixture
        .store
        .call_blocking(move |db| db.create_task(&duplicate, T0))
        .unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentTaskExists);

    fixture.task();
    let third = new_task(None);
    let error = fixture
        .store
        .call_blocking(move |db| db.create_task(&third, T0))
        .unwrap_err();
    assert!(matches!(error, StoreError::TaskLimitReached { limit: 2 }));
    assert_eq!(error.code(), BridgeErrorCode::AgentTaskLimitReached);

    // A terminal task frees its slot.
    fixture
        .transition(
            &first.task_id,
            Transition::new(TaskStatus::Queued, TaskStatus::Cancelled),
        )
        .unwrap();
    let fourth = new_task(None);
    fixture
        .store
        .call_blocking(move |db| db.create_task(&fourth, T0))
        .unwrap();
}

#[test]
fn malformed_task_ids_are_refused() {
    let fixture = Fixture::new();
    for bad in [
        "agt_../../etc",
        "agt_ABCDEF0123456789abcdef01",
        "task-1",
        "",
    ] {
        let mut task = new_task(None);
        task.task_id = bad.to_owned();
        let error = fixture
            .store
            .call_blocking(move |db| db.create_task(&task, T0))
            .unwrap_err();
        assert_eq!(error.code(), BridgeErrorCode::InvalidRequest, "{bad}");
    }
}

/// The spec's table (§3.1), written out independently of the store's.
fn expected(from: TaskStatus, to: TaskStatus) -> bool {
    use TaskStatus::*;
    matches!(
        (from, to),
        (Queued, Starting | Cancelled | Interrupted)
            | (Starting, Running | Failed | Cancelled | Interrupted)
            | (
                Running,
                WaitingForApproval
                    | WaitingForQuestion
                    | Succeeded
                    | Failed
                    | Cancelled
                    | Interrupted
            )
            | (WaitingForApproval, Running | Cancelled | Interrupted)
            | (WaitingForQuestion, Running | Cancelled | Interrupted)
    )
}

#[test]
fn the_table_is_exactly_the_spec() {
    let mut allowed = 0;
    for &from in TaskStatus::ALL {
        for &to in TaskStatus::ALL {
            assert_eq!(
                transition_allowed(from, to),
                expected(from, to),
                "{from:?} -> {to:?}"
            );
            allowed += usize::from(expected(from, to));
        }
        if from.is_terminal() {
            assert!(allowed_targets(from).is_empty());
        }
    }
    assert_eq!(allowed, 19);
}

#[test]
fn every_pair_through_the_database() {
    let fixture = Fixture::new();
    for &from in TaskStatus::ALL {
        for &to in TaskStatus::ALL {
            let task = fixture.task_in(from);
            assert_eq!(task.status, from);
            let result = fixture.transition(&task.task_id, Transition::new(from, to));
            let after = fixture.get(&task.task_id);
            let waiting = matches!(
                to,
                TaskStatus::WaitingForApproval | TaskStatus::WaitingForQuestion
            );
            match result {
                Ok(done) if expected(from, to) && !waiting => {
                    assert_eq!(done.task.status, to, "{from:?} -> {to:?}");
                    assert_eq!(after.status, to);
                    assert_eq!(after.updated_at, T0 + 10);
                    assert_eq!(after.completed_at.is_some(), to.is_terminal());
                    if to.is_terminal() {
                        assert_eq!(after.pending_request_id, None);
                    }
                }
                Err(StoreError::WaitingNeedsInteraction { .. })
                    if expected(from, to) && waiting =>
                {
                    assert_eq!(after.status, from);
                }
                Err(error @ StoreError::InvalidTransition { .. }) if !expected(from, to) => {
                    assert_eq!(error.code(), BridgeErrorCode::InvalidTaskTransition);
                    let name = |s: TaskStatus| serde_json::to_value(s).unwrap();
                    assert_eq!(
                        error.to_string(),
                        format!(
                            "task cannot transition from {} to {}",
                            name(from).as_str().unwrap(),
                            name(to).as_str().unwrap()
                        )
                    );
                    assert_eq!(after.status, from, "unchanged");
                }
                other => panic!("{from:?} -> {to:?}: {other:?}"),
            }
        }
    }
}

#[test]
fn waiting_states_are_entered_by_presenting_an_interaction() {
    let fixture = Fixture::new();
    for (target, payload) in [
        (TaskStatus::WaitingForApproval, super::approval()),
        (TaskStatus::WaitingForQuestion, super::question()),
    ] {
        let task = fixture.task_in(TaskStatus::Running);
        let request_id = fixture.ask(&task.task_id, payload);
        let after = fixture.get(&task.task_id);
        assert_eq!(after.status, target);
        assert_eq!(
            after.pending_request_id.as_deref(),
            Some(request_id.as_str())
        );
    }
}

#[test]
fn compare_and_set_refuses_a_stale_expectation() {
    let fixture = Fixture::new();
    let task = fixture.task_in(TaskStatus::Running);
    let error = fixture
        .transition(
            &task.task_id,
            Transition::new(TaskStatus::Starting, TaskStatus::Failed),
        )
        .unwrap_err();
    assert!(matches!(
        error,
        StoreError::StatusChanged {
            expected: TaskStatus::Starting,
            actual: TaskStatus::Running
        }
    ));
    assert_eq!(error.code(), BridgeErrorCode::InvalidTaskTransition);
    assert_eq!(fixture.get(&task.task_id).status, TaskStatus::Running);
    let error = fixture
        .transition(
            "agt_000000000000000000000000",
            Transition::new(TaskStatus::Queued, TaskStatus::Starting),
        )
        .unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentTaskNotFound);
}

#[test]
fn side_effects_of_transitions() {
    let fixture = Fixture::new();
    let task = fixture.task();
    assert_eq!(task.started_at, None);
    let started = fixture
        .transition(
            &task.task_id,
            Transition::new(TaskStatus::Queued, TaskStatus::Starting).with_event(
                EventPayload::TaskStarted {
                    runtime: "fake".to_owned(),
                },
            ),
        )
        .unwrap();
    assert_eq!(started.task.started_at, Some(T0 + 10));
    assert!(started.event_id.is_some());
    let failed = fixture
        .transition(
            &task.task_id,
            Transition::new(TaskStatus::Starting, TaskStatus::Failed)
                .with_error(BridgeErrorCode::AgentProviderError, "the provider exited")
                .with_event(EventPayload::TaskFailed {
                    error_code: BridgeErrorCode::AgentProviderError,
                }),
        )
        .unwrap();
    assert_eq!(failed.task.completed_at, Some(T0 + 10));
    assert_eq!(
        failed.task.error_code,
        Some(BridgeErrorCode::AgentProviderError)
    );
    assert_eq!(
        failed.task.error_message.as_deref(),
        Some("the provider exited")
    );
    assert_eq!(failed.task.event_count, 2);
}

#[test]
fn reconciliation_lists_only_unfinished_tasks_oldest_first() {
    let fixture = Fixture::new();
    let queued = fixture.task_in(TaskStatus::Queued);
    let waiting = fixture.task_in(TaskStatus::WaitingForQuestion);
    let _done = fixture.task_in(TaskStatus::Succeeded);
    let _cancelled = fixture.task_in(TaskStatus::Cancelled);
    let running = fixture.task_in(TaskStatus::Running);
    let listed = fixture
        .store
        .call_blocking(|db| db.list_active_tasks())
        .unwrap();
    let ids: Vec<_> = listed.iter().map(|t| t.task_id.clone()).collect();
    let mut want = vec![queued.task_id, waiting.task_id, running.task_id];
    // Same created_at (fixed clock): ties are ordered by id.
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(
        fixture
            .store
            .call_blocking(|db| db.count_active_tasks())
            .unwrap(),
        3
    );
}

#[test]
fn the_view_hides_internals_and_shows_the_pending_request() {
    let fixture = Fixture::new();
    let task = fixture.task_in(TaskStatus::Running);
    let id = task.task_id.clone();
    fixture
        .store
        .call_blocking(move |db| db.set_native_ids(&id, Some("sess-1"), None, T0 + 11))
        .unwrap();
    let id = task.task_id.clone();
    fixture
        .store
        .call_blocking(move |db| db.set_native_ids(&id, None, Some("turn-1"), T0 + 12))
        .unwrap();
    let record = fixture.get(&task.task_id);
    assert_eq!(record.native_session_id.as_deref(), Some("sess-1"));
    assert_eq!(record.native_turn_id.as_deref(), Some("turn-1"));

    let request_id = fixture.ask(&task.task_id, super::approval());
    let id = task.task_id.clone();
    let view = fixture
        .store
        .call_blocking(move |db| db.task_view(&id))
        .unwrap();
    let json = serde_json::to_string(&view).unwrap();
    assert!(!json.contains("sess-1") && !json.contains("turn-1"));
    assert!(!json.contains("request_fingerprint"));
    assert_eq!(view.status, TaskStatus::WaitingForApproval);
    assert_eq!(view.deadline_at, DEADLINE);
    assert_eq!(view.correlation_id.as_deref(), Some("corr-1"));
    assert_eq!(
        view.pending_request
            .as_ref()
            .map(|p| p.request_id().to_owned()),
        Some(request_id)
    );
    assert_eq!(view.result, None);
    assert!(!view.final_response_truncated);
}
