//! Pending interactions: presentation, queueing, compare-and-swap
//! resolution, staleness.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serverfs_agent_bridge::BridgeErrorCode;
use serverfs_agent_bridge::store::{
    DATABASE_FILE, InteractionResolution, NewInteraction, StateDir, Store, StoreError, StoreLimits,
    Transition, new_request_id,
};
use serverfs_protocol::bridge::{
    ApprovalDecision, ApprovalResolution, EventPayload, InteractionStatus, QuestionAnswer,
    QuestionResolution, TaskStatus,
};

use super::{DEADLINE, Fixture, T0, approval, question};

fn approve() -> InteractionResolution {
    InteractionResolution::Approval(ApprovalResolution {
        decision: ApprovalDecision::ApproveOnce,
        granted_permission_ids: Vec::new(),
        option_id: None,
    })
}

fn answer() -> InteractionResolution {
    InteractionResolution::Question(QuestionResolution {
        answers: vec![QuestionAnswer {
            question_id: "q0".to_owned(),
            selected_option_ids: vec!["a".to_owned()],
            text: None,
        }],
    })
}

fn resolve(
    store: &Store,
    task_id: &str,
    request_id: &str,
    resolution: InteractionResolution,
    now: i64,
) -> Result<serverfs_agent_bridge::store::Resolved, StoreError> {
    let (task, request) = (task_id.to_owned(), request_id.to_owned());
    store.call_blocking(move |db| db.resolve_interaction(&task, &request, &resolution, now))
}

fn event_types(fixture: &Fixture, task_id: &str) -> Vec<&'static str> {
    let id = task_id.to_owned();
    fixture
        .store
        .call_blocking(move |db| db.read_events(&id, 0, 500))
        .unwrap()
        .events
        .iter()
        .map(|e| e.event.event_type())
        .collect()
}

#[test]
fn a_running_task_presents_at_once_with_a_bounded_expiry() {
    let fixture = Fixture::new();
    let task = fixture.task_in(TaskStatus::Running);
    let new = NewInteraction {
        request_id: new_request_id().unwrap(),
        task_id: task.task_id.clone(),
        payload: approval(),
        timeout: Duration::from_secs(60),
    };
    let added = fixture
        .store
        .call_blocking(move |db| db.add_interaction(&new, T0 + 100))
        .unwrap();
    assert!(added.presented);
    assert_eq!(added.task_status, TaskStatus::WaitingForApproval);
    assert_eq!(added.record.expires_at, Some(T0 + 100 + 60_000));
    assert!(added.event_id.is_some());
    assert_eq!(event_types(&fixture, &task.task_id), ["approval.requested"]);

    // An interaction timeout beyond the task deadline is cut to it.
    let late = fixture.task_in(TaskStatus::Running);
    let new = NewInteraction {
        request_id: new_request_id().unwrap(),
        task_id: late.task_id.clone(),
        payload: question(),
        timeout: Duration::from_secs(10 * 3600),
    };
    let added = fixture
        .store
        .call_blocking(move |db| db.add_interaction(&new, T0))
        .unwrap();
    assert_eq!(added.record.expires_at, Some(DEADLINE));
    let wire = added.record.to_wire().unwrap();
    assert_eq!(wire.status(), InteractionStatus::Pending);
}

#[test]
fn several_requests_are_queued_and_presented_one_at_a_time() {
    let fixture = Fixture::new();
    let task = fixture.task_in(TaskStatus::Running);
    let id = task.task_id.as_str();
    let first = fixture.ask(id, approval());
    let second = fixture.ask(id, question());
    let third = fixture.ask(id, approval());

    let queue = fixture
        .store
        .call_blocking({
            let id = id.to_owned();
            move |db| db.list_interactions(&id)
        })
        .unwrap();
    assert_eq!(
        queue.iter().map(|r| r.queue_seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(queue[1].presented_at.is_none() && queue[1].to_wire().is_none());
    assert_eq!(
        fixture.get(id).pending_request_id.as_deref(),
        Some(first.as_str())
    );

    // A queued request cannot be answered before it is presented.
    let error = resolve(&fixture.store, id, &second, answer(), T0 + 30).unwrap_err();
    assert!(matches!(error, StoreError::RequestStale));

    let resolved = resolve(&fixture.store, id, &first, approve(), T0 + 1_000).unwrap();
    assert_eq!(resolved.record.status, InteractionStatus::Resolved);
    let next = resolved.next.unwrap();
    assert_eq!(next.request_id, second);
    assert_eq!(resolved.task_status, TaskStatus::WaitingForQuestion);
    assert_eq!(next.presented_at, Some(T0 + 1_000));
    assert_eq!(
        next.expires_at,
        Some(T0 + 1_000 + 30_000),
        "clock starts when presented"
    );

    let resolved = resolve(&fixture.store, id, &second, answer(), T0 + 2_000).unwrap();
    assert_eq!(resolved.next.unwrap().request_id, third);
    let resolved = resolve(&fixture.store, id, &third, approve(), T0 + 3_000).unwrap();
    assert_eq!(resolved.next, None);
    assert_eq!(resolved.task_status, TaskStatus::Running);
    let after = fixture.get(id);
    assert_eq!(after.status, TaskStatus::Running);
    assert_eq!(after.pending_request_id, None);
    assert_eq!(
        event_types(&fixture, id),
        [
            "approval.requested",
            "approval.resolved",
            "question.requested",
            "question.answered",
            "approval.requested",
            "approval.resolved",
        ]
    );
}

#[test]
fn the_chosen_option_is_stored_and_older_resolutions_still_decode() {
    let fixture = Fixture::new();
    let task = fixture.task_in(TaskStatus::Running);
    let request = fixture.ask(&task.task_id, approval());
    let chosen = InteractionResolution::Approval(ApprovalResolution {
        decision: ApprovalDecision::ApproveSession,
        granted_permission_ids: Vec::new(),
        option_id: Some("opt-allow-always".to_owned()),
    });
    resolve(
        &fixture.store,
        &task.task_id,
        &request,
        chosen.clone(),
        T0 + 50,
    )
    .unwrap();
    let read = |store: &Store| {
        let id = request.clone();
        store
            .call_blocking(move |db| db.get_interaction(&id))
            .unwrap()
            .resolution
    };
    assert_eq!(read(&fixture.store), Some(chosen));

    // A row written before options existed has no option_id key.
    let conn = rusqlite::Connection::open(fixture.state().join(DATABASE_FILE)).unwrap();
    let stored: String = conn
        .query_row(
            "SELECT resolution_json FROM interactions WHERE request_id = ?1",
            [&request],
            |row| row.get(0),
        )
        .unwrap();
    assert!(
        stored.contains(r#""option_id":"opt-allow-always""#),
        "{stored}"
    );
    conn.execute(
        "UPDATE interactions SET resolution_json = ?1 WHERE request_id = ?2",
        [
            r#"{"decision":"approve_once","granted_permission_ids":[]}"#,
            request.as_str(),
        ],
    )
    .unwrap();
    drop(conn);
    assert_eq!(read(&fixture.store), Some(approve()));
}

#[tokio::test]
async fn two_concurrent_resolvers_on_one_store_have_one_winner() {
    let fixture = Fixture::new();
    for _ in 0..10 {
        let task = fixture.task_in(TaskStatus::Running);
        let request = fixture.ask(&task.task_id, approval());
        let mut handles = Vec::new();
        for _ in 0..2 {
            let store = fixture.store.clone();
            let (task_id, request_id) = (task.task_id.clone(), request.clone());
            handles.push(tokio::spawn(async move {
                store
                    .call(move |db| {
                        db.resolve_interaction(&task_id, &request_id, &approve(), T0 + 50)
                    })
                    .await
            }));
        }
        let mut outcomes = Vec::new();
        for handle in handles {
            outcomes.push(handle.await.unwrap());
        }
        let winners = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(winners, 1, "{outcomes:?}");
        let loser = outcomes.into_iter().find_map(Result::err).unwrap();
        assert_eq!(loser.code(), BridgeErrorCode::RequestAlreadyResolved);
    }
}

#[test]
fn two_connections_racing_have_one_winner() {
    let fixture = Fixture::new();
    // A second store on the same files: its own thread and connection, so
    // the compare-and-swap is decided by SQLite's write lock, not by job
    // order on one thread.
    let second = Store::open(
        StateDir::open(fixture.state()).unwrap(),
        StoreLimits::default(),
    )
    .unwrap();
    for round in 0..10 {
        let task = fixture.task_in(TaskStatus::Running);
        let request = fixture.ask(&task.task_id, approval());
        let barrier = Arc::new(Barrier::new(2));
        let threads: Vec<_> = [fixture.store.clone(), second.clone()]
            .into_iter()
            .map(|store| {
                let barrier = Arc::clone(&barrier);
                let (task_id, request_id) = (task.task_id.clone(), request.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    resolve(&store, &task_id, &request_id, approve(), T0 + 50)
                })
            })
            .collect();
        let outcomes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(
            outcomes.iter().filter(|o| o.is_ok()).count(),
            1,
            "round {round}: {outcomes:?}"
        );
        assert!(
            outcomes
                .iter()
                .any(|o| matches!(o, Err(StoreError::RequestAlreadyResolved)))
        );
        assert_eq!(fixture.get(&task.task_id).status, TaskStatus::Running);
    }
}

#[test]
fn refusals_in_the_spec_order() {
    let fixture = Fixture::new();
    let task = fixture.task_in(TaskStatus::Running);
    let id = task.task_id.as_str();
    let request = fixture.ask(id, approval());

    let unknown = resolve(
        &fixture.store,
        id,
        "req_000000000000000000000000",
        approve(),
        T0,
    )
    .unwrap_err();
    assert_eq!(unknown.code(), BridgeErrorCode::RequestNotFound);

    let other = fixture.task_in(TaskStatus::Running);
    let wrong_task = resolve(&fixture.store, &other.task_id, &request, approve(), T0).unwrap_err();
    assert_eq!(wrong_task.code(), BridgeErrorCode::RequestNotFound);

    // `task.question.answer` on an approval, and the reverse (spec §4.5
    // step 6): the code names the method the client called.
    let wrong_kind = resolve(&fixture.store, id, &request, answer(), T0 + 30).unwrap_err();
    assert_eq!(wrong_kind.code(), BridgeErrorCode::InvalidQuestionAnswer);
    let asking = fixture.task_in(TaskStatus::WaitingForQuestion);
    let pending = asking.pending_request_id.unwrap();
    let wrong_kind = resolve(
        &fixture.store,
        &asking.task_id,
        &pending,
        approve(),
        T0 + 30,
    )
    .unwrap_err();
    assert_eq!(wrong_kind.code(), BridgeErrorCode::InvalidApprovalDecision);

    // Expired: 30 s after presentation at T0 + 20.
    let expired = resolve(&fixture.store, id, &request, approve(), T0 + 20 + 30_000).unwrap_err();
    assert!(matches!(expired, StoreError::RequestExpired));
    assert_eq!(expired.code(), BridgeErrorCode::RequestStale);

    resolve(&fixture.store, id, &request, approve(), T0 + 30).unwrap();
    let again = resolve(&fixture.store, id, &request, approve(), T0 + 31).unwrap_err();
    assert_eq!(again.code(), BridgeErrorCode::RequestAlreadyResolved);

    let duplicate = NewInteraction {
        request_id: request.clone(),
        task_id: id.to_owned(),
        payload: approval(),
        timeout: Duration::from_secs(30),
    };
    let error = fixture
        .store
        .call_blocking(move |db| db.add_interaction(&duplicate, T0 + 40))
        .unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::RequestExists);

    let queued = fixture.task();
    let early = NewInteraction {
        request_id: new_request_id().unwrap(),
        task_id: queued.task_id.clone(),
        payload: approval(),
        timeout: Duration::from_secs(30),
    };
    let error = fixture
        .store
        .call_blocking(move |db| db.add_interaction(&early, T0 + 40))
        .unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentTaskNotActive);
}

#[test]
fn a_terminal_transition_makes_every_pending_request_stale() {
    let fixture = Fixture::new();
    let task = fixture.task_in(TaskStatus::Running);
    let id = task.task_id.as_str();
    let presented = fixture.ask(id, approval());
    let queued = fixture.ask(id, question());
    fixture
        .transition(
            id,
            Transition::new(TaskStatus::WaitingForApproval, TaskStatus::Cancelled)
                .with_event(EventPayload::TaskCancelled {}),
        )
        .unwrap();
    let after = fixture.get(id);
    assert_eq!(after.pending_request_id, None);
    for request in [&presented, &queued] {
        let request_id = request.clone();
        let record = fixture
            .store
            .call_blocking(move |db| db.get_interaction(&request_id))
            .unwrap();
        assert_eq!(record.status, InteractionStatus::Stale);
        assert_eq!(record.resolved_at, Some(T0 + 10));
    }
    let late = resolve(&fixture.store, id, &presented, approve(), T0 + 50).unwrap_err();
    assert_eq!(late.code(), BridgeErrorCode::RequestStale);
}

#[test]
fn stale_marking_keeps_the_status_and_withdrawal_presents_the_next() {
    let fixture = Fixture::new();
    let task = fixture.task_in(TaskStatus::Running);
    let id = task.task_id.as_str();
    let first = fixture.ask(id, approval());
    let second = fixture.ask(id, question());

    // The provider withdraws the presented request: the next one shows.
    let withdrawn = fixture
        .store
        .call_blocking({
            let (id, first) = (id.to_owned(), first.clone());
            move |db| db.withdraw_interaction(&id, &first, T0 + 60)
        })
        .unwrap();
    assert!(withdrawn.was_presented);
    assert_eq!(withdrawn.next.unwrap().request_id, second);
    assert_eq!(withdrawn.task_status, TaskStatus::WaitingForQuestion);

    // Mark everything stale (deadline path): status unchanged, pointer gone.
    let staled = fixture
        .store
        .call_blocking({
            let id = id.to_owned();
            move |db| db.stale_interactions(&id, T0 + 70)
        })
        .unwrap();
    assert_eq!(staled, std::slice::from_ref(&second));
    let after = fixture.get(id);
    assert_eq!(after.status, TaskStatus::WaitingForQuestion);
    assert_eq!(after.pending_request_id, None);
    let late = resolve(&fixture.store, id, &second, answer(), T0 + 80).unwrap_err();
    assert_eq!(late.code(), BridgeErrorCode::RequestStale);
    assert_eq!(
        event_types(&fixture, id),
        [
            "approval.requested",
            "interaction.stale",
            "question.requested"
        ]
    );
}

#[test]
fn oversized_interactions_are_refused() {
    let fixture = Fixture::with_limits(StoreLimits {
        max_interaction_bytes: 64,
        ..StoreLimits::default()
    });
    let task = fixture.task_in(TaskStatus::Running);
    let new = NewInteraction {
        request_id: new_request_id().unwrap(),
        task_id: task.task_id.clone(),
        payload: approval(),
        timeout: Duration::from_secs(30),
    };
    let error = fixture
        .store
        .call_blocking(move |db| db.add_interaction(&new, T0))
        .unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentInteractionTooLarge);
    assert_eq!(fixture.get(&task.task_id).status, TaskStatus::Running);
}
