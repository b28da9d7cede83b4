//! Events: tiers under the per-task cap, size cap, cursor paging.

use serverfs_agent_bridge::BridgeErrorCode;
use serverfs_agent_bridge::store::{EventClass, StoreError, StoreLimits, Transition};
use serverfs_protocol::bridge::{EventPayload, TaskStatus};

use super::{Fixture, T0, message};

fn append(fixture: &Fixture, task_id: &str, event: EventPayload) -> Result<i64, StoreError> {
    let id = task_id.to_owned();
    fixture
        .store
        .call_blocking(move |db| db.append_event(&id, &event, T0 + 40))
}

fn small_caps() -> Fixture {
    Fixture::with_limits(StoreLimits {
        max_events_per_task: 20,
        lifecycle_headroom: 5,
        terminal_headroom: 2,
        ..StoreLimits::default()
    })
}

#[test]
fn classes_follow_the_catalog() {
    assert_eq!(EventClass::of(&message("x")), EventClass::Activity);
    assert_eq!(
        EventClass::of(&EventPayload::UserMessage { bytes: 3 }),
        EventClass::Activity
    );
    assert_eq!(
        EventClass::of(&EventPayload::TaskStarted {
            runtime: "fake".to_owned()
        }),
        EventClass::Lifecycle
    );
    assert_eq!(
        EventClass::of(&EventPayload::TaskCancelled {}),
        EventClass::Terminal
    );
}

#[test]
fn lifecycle_and_terminal_events_fit_after_activity_fills_its_share() {
    let fixture = small_caps();
    let task = fixture.task_in(TaskStatus::Running);
    let id = task.task_id.as_str();

    // Activity may use 20 - 5 = 15 slots.
    for n in 0..15 {
        append(&fixture, id, message(&format!("m{n}"))).unwrap();
    }
    let refused = append(&fixture, id, message("one too many")).unwrap_err();
    assert!(matches!(refused, StoreError::EventLimitReached));
    assert_eq!(refused.code(), BridgeErrorCode::AgentEventLimitReached);

    // Lifecycle events still fit, up to 20 - 2 = 18.
    for _ in 15..18 {
        append(&fixture, id, EventPayload::UserMessage { bytes: 1 })
            .map(|_| ())
            .unwrap_err();
        append(
            &fixture,
            id,
            EventPayload::InteractionStale {
                request_id: "req_000000000000000000000000".to_owned(),
            },
        )
        .unwrap();
    }
    let refused = append(
        &fixture,
        id,
        EventPayload::TaskStarted {
            runtime: "fake".to_owned(),
        },
    )
    .unwrap_err();
    assert!(matches!(refused, StoreError::EventLimitReached));

    // The terminal transition always records its event.
    let done = fixture
        .transition(
            id,
            Transition::new(TaskStatus::Running, TaskStatus::Cancelled)
                .with_event(EventPayload::TaskCancelled {}),
        )
        .unwrap();
    assert!(done.event_id.is_some(), "terminal event dropped");
    append(
        &fixture,
        id,
        EventPayload::TaskInterrupted {
            error_code: BridgeErrorCode::BridgeRestarted,
        },
    )
    .unwrap();
    assert_eq!(fixture.get(id).event_count, 20);

    // Past the whole cap even a terminal event is dropped, but the state
    // change it accompanies still happens.
    let other = fixture.task_in(TaskStatus::Running);
    for n in 0..15 {
        append(&fixture, &other.task_id, message(&format!("m{n}"))).unwrap();
    }
    for _ in 15..18 {
        append(
            &fixture,
            &other.task_id,
            EventPayload::ApprovalResolved {
                decision: serverfs_protocol::bridge::ApprovalDecision::Deny,
            },
        )
        .unwrap();
    }
    for _ in 18..20 {
        append(&fixture, &other.task_id, EventPayload::TaskCancelled {}).unwrap();
    }
    let done = fixture
        .transition(
            &other.task_id,
            Transition::new(TaskStatus::Running, TaskStatus::Failed)
                .with_error(BridgeErrorCode::AgentProviderError, "gone")
                .with_event(EventPayload::TaskFailed {
                    error_code: BridgeErrorCode::AgentProviderError,
                }),
        )
        .unwrap();
    assert_eq!(done.task.status, TaskStatus::Failed);
    assert_eq!(done.event_id, None);
    assert_eq!(done.task.event_count, 20);
}

#[test]
fn oversized_payloads_are_refused() {
    let fixture = Fixture::with_limits(StoreLimits {
        max_event_bytes: 100,
        ..StoreLimits::default()
    });
    let task = fixture.task();
    append(&fixture, &task.task_id, message(&"x".repeat(80))).unwrap();
    let error = append(&fixture, &task.task_id, message(&"x".repeat(100))).unwrap_err();
    assert!(matches!(
        error,
        StoreError::EventTooLarge { limit: 100, .. }
    ));
    assert_eq!(error.code(), BridgeErrorCode::AgentEventTooLarge);
    assert_eq!(fixture.get(&task.task_id).event_count, 1);
}

#[test]
fn cursor_paging_returns_each_event_once_in_order() {
    let fixture = Fixture::new();
    let task = fixture.task();
    let noise = fixture.task();
    let mut ids = Vec::new();
    for n in 0..7 {
        ids.push(append(&fixture, &task.task_id, message(&format!("m{n}"))).unwrap());
        append(&fixture, &noise.task_id, message("other task")).unwrap();
    }
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));

    let mut cursor = 0;
    let mut seen = Vec::new();
    loop {
        let id = task.task_id.clone();
        let page = fixture
            .store
            .call_blocking(move |db| db.read_events(&id, cursor, 3))
            .unwrap();
        assert_eq!(page.correlation_id.as_deref(), Some("corr-1"));
        if page.events.is_empty() {
            assert_eq!(
                page.next_after_event_id, cursor,
                "empty page keeps the cursor"
            );
            break;
        }
        assert!(page.events.len() <= 3);
        for event in &page.events {
            assert_eq!(event.task_id, task.task_id);
            assert_eq!(event.created_at, T0 + 40);
            seen.push((event.event_id, event.event.clone()));
        }
        cursor = page.next_after_event_id;
        assert_eq!(cursor, page.events.last().unwrap().event_id);
    }
    let want: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| (*id, message(&format!("m{n}"))))
        .collect();
    assert_eq!(seen, want);
}

#[test]
fn bad_cursors_and_limits() {
    let fixture = Fixture::new();
    let task = fixture.task();
    for (after, limit) in [(-1, 10), (0, 0), (0, 501), (0, -3)] {
        let id = task.task_id.clone();
        let error = fixture
            .store
            .call_blocking(move |db| db.read_events(&id, after, limit))
            .unwrap_err();
        assert_eq!(
            error.code(),
            BridgeErrorCode::InvalidLimit,
            "{after} {limit}"
        );
    }
    let error = fixture
        .store
        .call_blocking(|db| db.read_events("agt_000000000000000000000000", 0, 10))
        .unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentTaskNotFound);
    let error = append(&fixture, "agt_000000000000000000000000", message("x")).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentTaskNotFound);
}
