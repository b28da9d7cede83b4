//! Task lifecycle through the real daemon and the fake runtime
//! (spec-agent-bridge.md §3–§6): states, approvals and questions, stale and
//! double answers, steering, cancellation, continuation, idempotency,
//! deadlines, limits, spooled results, event paging and submit validation.
//!
//! A workspace-write task's runner releases the writer lease just after the
//! task turns terminal (spec §3.10 step 6), so a follow-up workspace-write
//! submit on the same workdir uses `Daemon::wait_submit`, which retries
//! `WORKDIR_BUSY` for that short window.

use serde_json::{Value, json};
use serverfs_agent_bridge::store::{InteractionResolution, StateDir, Store, StoreLimits};
use serverfs_protocol::bridge::{ApprovalDecision, ApprovalResolution};
use sha2::{Digest, Sha256};

use serverfs_testkit::bridge::{
    Daemon, Setup, WireError, Workdir, assert_in_order, code, count, request_id,
};

/// A task id that is well-formed but never issued.
const UNKNOWN_TASK: &str = "agt_000000000000000000000000";

/// The SHA-256 of `bytes`, lowercase hex, as the Bridge reports results.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Asserts that `expected` appear in `types` in this order (others may
/// sit between them).
#[test]
fn daemon_submit_returns_queued_and_the_task_succeeds() {
    let daemon = Setup::new().start();
    let submitted = daemon
        .submit_with(json!({ "prompt": "fake: complete hello world", "correlation_id": "c-1" }))
        .unwrap();
    assert_eq!(submitted["status"], "queued", "{submitted}");
    assert_eq!(submitted["correlation_id"], "c-1");
    assert_eq!(submitted["idempotency_key"], Value::Null);
    let task = submitted["task_id"].as_str().unwrap();
    assert!(task.starts_with("agt_") && task.len() == 28, "{task}");

    let view = daemon.wait_status(task, "succeeded");
    assert_eq!(view["final_response"], "hello world");
    assert_eq!(view["final_response_truncated"], false);
    assert_eq!(view["result"]["storage"], "inline");
    assert_eq!(view["result"]["retrievable"], false);
    assert_eq!(view["result"]["size_bytes"], 11);
    assert_eq!(view["result"]["sha256"], sha256_hex(b"hello world"));
    assert_eq!(view["error_code"], Value::Null);
    assert_eq!(view["pending_request"], Value::Null);
    assert_eq!(view["pending_request_id"], Value::Null);
    assert_eq!(view["workdir_alias"], "demo");
    // The root is spelled "" (spec §3.4 step 9, the wire type's doc).
    assert_eq!(view["relative_cwd"], "");
    assert_eq!(view["manifest"]["workspace"]["relative_cwd"], "");
    assert_eq!(view["correlation_id"], "c-1");
    let created = view["created_at"].as_i64().unwrap();
    let started = view["started_at"].as_i64().unwrap();
    let completed = view["completed_at"].as_i64().unwrap();
    assert!(created <= started && started <= completed, "{view}");
    // Provider-native ids never leave the Bridge.
    let text = view.to_string();
    assert!(
        !text.contains("fake-session") && !text.contains("fake-turn"),
        "{text}"
    );
    assert!(
        !text.contains(daemon.setup().root().to_str().unwrap()),
        "{text}"
    );

    let types = daemon.event_types(task);
    assert_in_order(
        &types,
        &[
            "task.started",
            "turn.started",
            "agent.message",
            "task.completed",
        ],
    );
    let events = daemon.events(task);
    assert!(events.iter().all(|e| e["correlation_id"] == "c-1"));
    let completed_event = events
        .iter()
        .find(|e| e["event_type"] == "task.completed")
        .unwrap();
    assert_eq!(completed_event["payload"]["result_storage"], "inline");
    assert_eq!(completed_event["payload"]["result_size_bytes"], 11);
    // A finished inline result is not readable in chunks.
    assert_eq!(
        daemon.err("task.result.read", json!({ "task_id": task })),
        "AGENT_RESULT_NOT_RETRIEVABLE"
    );
}

#[test]
fn daemon_approval_decisions() {
    let daemon = Setup::new().start();
    for (decision, status, text) in [
        ("approve_once", "succeeded", Some("approved: ls -la")),
        ("approve_session", "succeeded", Some("approved: ls -la")),
        ("deny", "succeeded", Some("denied: ls -la")),
        ("cancel_task", "cancelled", None),
    ] {
        let task = daemon.wait_submit(json!({ "prompt": "fake: approval ls -la" }));
        let pending = daemon.wait_pending(&task);
        let view = daemon.task(&task);
        assert_eq!(view["status"], "waiting_for_approval", "{view}");
        assert_eq!(view["pending_request_id"], pending["request_id"]);
        assert_eq!(pending["kind"], "approval");
        assert_eq!(pending["status"], "pending");
        assert_eq!(pending["task_id"], task.as_str());
        assert_eq!(pending["payload"]["category"], "command");
        assert_eq!(pending["payload"]["command_display"], "ls -la");
        assert_eq!(
            pending["payload"]["available_decisions"],
            json!(["approve_once", "approve_session", "deny", "cancel_task"])
        );
        assert!(pending["expires_at"].as_i64().unwrap() <= view["deadline_at"].as_i64().unwrap());
        let request = request_id(&pending);

        let resolved = daemon.respond(&task, &request, decision).unwrap();
        assert_eq!(
            resolved,
            json!({ "task_id": task, "request_id": request, "resolved": true, "correlation_id": null }),
        );
        let view = daemon.wait_status(&task, status);
        assert_eq!(view["final_response"].as_str(), text, "{decision}: {view}");
        assert_eq!(view["pending_request"], Value::Null);
        let types = daemon.event_types(&task);
        assert_in_order(&types, &["approval.requested", "approval.resolved"]);
        let events = daemon.events(&task);
        let resolved_event = events
            .iter()
            .find(|e| e["event_type"] == "approval.resolved")
            .unwrap();
        assert_eq!(resolved_event["payload"]["decision"], decision);
        if decision == "cancel_task" {
            assert_eq!(count(&types, "task.cancelled"), 1, "{types:?}");
            assert_eq!(view["error_code"], Value::Null, "{view}");
        } else {
            assert_in_order(
                &types,
                &["approval.resolved", "approval.observed", "task.completed"],
            );
        }
        // Answering again: already resolved.
        assert_eq!(
            code(daemon.respond(&task, &request, "deny")),
            "REQUEST_ALREADY_RESOLVED",
            "{decision}"
        );
    }
}

#[test]
fn daemon_approval_refusals() {
    let daemon = Setup::new().start();
    let task = daemon.submit("fake: approval");
    let request = request_id(&daemon.wait_pending(&task));
    // Unknown or unoffered decisions.
    for decision in ["maybe", "", "APPROVE_ONCE", "approve", "allow_always"] {
        assert_eq!(
            code(daemon.respond(&task, &request, decision)),
            "INVALID_APPROVAL_DECISION",
            "{decision:?}"
        );
    }
    // A permission id the request never asked for.
    assert_eq!(
        code(daemon.call(
            "task.approval.respond",
            json!({ "task_id": task, "request_id": request, "decision": "approve_once",
                    "granted_permission_ids": ["net"] }),
        )),
        "PERMISSION_OUTSIDE_POLICY"
    );
    // An approval answered as a question.
    assert_eq!(
        code(daemon.answer(
            &task,
            &request,
            json!([{ "question_id": "q1", "selected_option_ids": ["a"] }])
        )),
        "INVALID_QUESTION_ANSWER"
    );
    // Unknown request, and a request named under another task.
    assert_eq!(
        code(daemon.respond(&task, "req_000000000000000000000000", "deny")),
        "REQUEST_NOT_FOUND"
    );
    let other = daemon
        .submit_with(json!({ "prompt": "fake: complete x", "profile": "review" }))
        .unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        code(daemon.respond(&other, &request, "deny")),
        "REQUEST_STALE"
    );
    // Empty ids are malformed.
    assert_eq!(
        code(daemon.respond("", &request, "deny")),
        "INVALID_REQUEST"
    );
    assert_eq!(code(daemon.respond(&task, "", "deny")), "INVALID_REQUEST");
    // None of that moved the task.
    let view = daemon.task(&task);
    assert_eq!(view["status"], "waiting_for_approval");
    assert_eq!(view["pending_request_id"], request.as_str());
    daemon.respond(&task, &request, "approve_once").unwrap();
    let view = daemon.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "approved: echo test");
}

/// `task.approval.respond` naming an exact option.
fn respond_option(
    daemon: &Daemon,
    task: &str,
    request: &str,
    decision: &str,
    option_id: &str,
) -> Result<Value, WireError> {
    daemon.call(
        "task.approval.respond",
        json!({ "task_id": task, "request_id": request, "decision": decision,
                "option_id": option_id }),
    )
}

/// The stored resolution of `request`, read beside the running daemon
/// through a read-only store (as `inspect` does).
fn stored_resolution(daemon: &Daemon, request: &str) -> Option<InteractionResolution> {
    let state = StateDir::open(daemon.setup().state_dir()).unwrap();
    let store = Store::open_read_only(state, StoreLimits::default()).unwrap();
    let id = request.to_owned();
    let record = store
        .call_blocking(move |db| db.get_interaction(&id))
        .unwrap();
    store.close().unwrap();
    record.resolution
}

#[test]
fn daemon_exact_option_round_trip() {
    let daemon = Setup::new().start();
    let task = daemon.submit("fake: options");
    let pending = daemon.wait_pending(&task);
    assert_eq!(
        pending["payload"],
        json!({
            "category": "other", "title": "Fake exact-option approval",
            "available_decisions": ["approve_once", "approve_session", "deny", "cancel_task"],
            "options": [
                { "option_id": "opt-allow-once", "label": "Allow once", "kind": "allow_once" },
                { "option_id": "opt-allow-always", "label": "Always allow",
                  "kind": "allow_always" },
                { "option_id": "opt-reject", "label": "Reject", "kind": "reject_once" }
            ]
        })
    );
    let request = request_id(&pending);

    let resolved = respond_option(
        &daemon,
        &task,
        &request,
        "approve_session",
        "opt-allow-always",
    )
    .unwrap();
    assert_eq!(
        resolved,
        json!({ "task_id": task, "request_id": request, "resolved": true, "correlation_id": null }),
    );
    let view = daemon.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "option=opt-allow-always", "{view}");
    let events = daemon.events(&task);
    let observed = events
        .iter()
        .find(|e| e["event_type"] == "approval.observed")
        .unwrap();
    assert_eq!(
        observed["payload"],
        json!({ "decision": "approve_session", "granted_permission_ids": [],
                "option_id": "opt-allow-always" })
    );
    let resolved_event = events
        .iter()
        .find(|e| e["event_type"] == "approval.resolved")
        .unwrap();
    assert_eq!(
        resolved_event["payload"],
        json!({ "decision": "approve_session" })
    );
    assert_eq!(
        stored_resolution(&daemon, &request),
        Some(InteractionResolution::Approval(ApprovalResolution {
            decision: ApprovalDecision::ApproveSession,
            granted_permission_ids: Vec::new(),
            option_id: Some("opt-allow-always".to_owned()),
        }))
    );
    // Answering again: already resolved, whatever the option.
    assert_eq!(
        code(respond_option(
            &daemon,
            &task,
            &request,
            "approve_once",
            "opt-allow-once"
        )),
        "REQUEST_ALREADY_RESOLVED"
    );
}

#[test]
fn daemon_exact_option_refusals() {
    let daemon = Setup::new().start();
    let task = daemon.submit("fake: options");
    let request = request_id(&daemon.wait_pending(&task));
    let refusal = |result: Result<Value, WireError>| match result {
        Ok(value) => panic!("expected an error, got {value}"),
        Err(error) => (error.code, error.message),
    };
    let invalid = |message: &str| ("INVALID_APPROVAL_DECISION".to_owned(), message.to_owned());
    // A bare decision, even the neutral approve_session, picks no option.
    for decision in ["approve_once", "approve_session", "deny"] {
        assert_eq!(
            refusal(daemon.respond(&task, &request, decision)),
            invalid("choose one of the request's options by option_id"),
            "{decision}"
        );
    }
    // Forged or unknown option ids.
    for option in ["opt-forged", "", "OPT-ALLOW-ONCE", "allow_once"] {
        assert_eq!(
            refusal(respond_option(
                &daemon,
                &task,
                &request,
                "approve_once",
                option
            )),
            invalid("the option was not offered for this request"),
            "{option:?}"
        );
    }
    // A decision that does not match the option's kind.
    for (decision, option) in [
        ("approve_once", "opt-allow-always"),
        ("approve_session", "opt-allow-once"),
        ("deny", "opt-allow-once"),
        ("approve_once", "opt-reject"),
        ("cancel_task", "opt-reject"),
    ] {
        assert_eq!(
            refusal(respond_option(&daemon, &task, &request, decision, option)),
            invalid("the decision does not match the chosen option's kind"),
            "{decision} {option}"
        );
    }
    // The decision is still checked first.
    assert_eq!(
        code(respond_option(
            &daemon,
            &task,
            &request,
            "maybe",
            "opt-reject"
        )),
        "INVALID_APPROVAL_DECISION"
    );
    // option_id is a string or absent, never null.
    assert_eq!(
        daemon.err(
            "task.approval.respond",
            json!({ "task_id": task, "request_id": request, "decision": "deny",
                    "option_id": null }),
        ),
        "INVALID_REQUEST"
    );
    // None of that moved the task.
    let view = daemon.task(&task);
    assert_eq!(view["status"], "waiting_for_approval");
    assert_eq!(view["pending_request_id"], request.as_str());

    // cancel_task needs no option: it cancels the task.
    daemon.respond(&task, &request, "cancel_task").unwrap();
    let view = daemon.wait_status(&task, "cancelled");
    assert_eq!(view["error_code"], Value::Null, "{view}");
    assert_eq!(
        stored_resolution(&daemon, &request),
        Some(InteractionResolution::Approval(ApprovalResolution {
            decision: ApprovalDecision::CancelTask,
            granted_permission_ids: Vec::new(),
            option_id: None,
        }))
    );
}

#[test]
fn daemon_option_id_on_a_request_without_options_is_refused() {
    let daemon = Setup::new().start();
    let task = daemon.submit("fake: approval");
    let request = request_id(&daemon.wait_pending(&task));
    for (decision, option) in [
        ("approve_once", "opt-allow-once"),
        ("approve_session", "opt-allow-always"),
        ("cancel_task", "opt-reject"),
    ] {
        let error = respond_option(&daemon, &task, &request, decision, option).unwrap_err();
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            (
                "INVALID_APPROVAL_DECISION",
                "this request offers no options"
            ),
            "{decision}"
        );
    }
    assert_eq!(daemon.task(&task)["status"], "waiting_for_approval");
    daemon.respond(&task, &request, "approve_once").unwrap();
    let view = daemon.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "approved: echo test");
    assert_eq!(
        stored_resolution(&daemon, &request),
        Some(InteractionResolution::Approval(ApprovalResolution {
            decision: ApprovalDecision::ApproveOnce,
            granted_permission_ids: Vec::new(),
            option_id: None,
        }))
    );
}

#[test]
fn daemon_question_answered_and_refused() {
    let daemon = Setup::new().start();
    let task = daemon.submit("fake: question Which one?");
    let pending = daemon.wait_pending(&task);
    assert_eq!(daemon.task(&task)["status"], "waiting_for_question");
    assert_eq!(pending["kind"], "question");
    let questions = &pending["payload"]["questions"];
    assert_eq!(questions[0]["question_id"], "q1");
    assert_eq!(questions[0]["prompt"], "Which one?");
    let request = request_id(&pending);

    let invalid = [
        json!([]),
        json!([5]),
        json!(["q1"]),
        json!([{ "question_id": "q2", "selected_option_ids": ["a"] }]),
        json!([{ "question_id": "q1", "selected_option_ids": ["z"] }]),
        json!([{ "question_id": "q1", "selected_option_ids": ["a", "b"] }]),
        json!([{ "question_id": "q1", "selected_option_ids": ["a", "a"] }]),
        json!([{ "question_id": "q1", "selected_option_ids": [] }]),
        json!([{ "question_id": "q1", "selected_option_ids": [], "text": "" }]),
        json!([{ "question_id": "q1", "selected_option_ids": [1] }]),
        json!([{ "question_id": "q1", "selected_option_ids": "a" }]),
        json!([{ "question_id": "q1", "selected_option_ids": ["a"], "text": 3 }]),
        json!([{ "question_id": "q1", "selected_option_ids": ["a"], "extra": true }]),
        json!([{ "selected_option_ids": ["a"] }]),
        json!([
            { "question_id": "q1", "selected_option_ids": ["a"] },
            { "question_id": "q1", "selected_option_ids": ["b"] }
        ]),
    ];
    for answers in invalid {
        assert_eq!(
            code(daemon.answer(&task, &request, answers.clone())),
            "INVALID_QUESTION_ANSWER",
            "{answers}"
        );
    }
    // A question answered as an approval.
    assert_eq!(
        code(daemon.respond(&task, &request, "approve_once")),
        "INVALID_APPROVAL_DECISION"
    );
    assert_eq!(daemon.task(&task)["status"], "waiting_for_question");

    let resolved = daemon
        .answer(
            &task,
            &request,
            json!([{ "question_id": "q1", "selected_option_ids": ["a"] }]),
        )
        .unwrap();
    assert_eq!(resolved["resolved"], true);
    let view = daemon.wait_status(&task, "succeeded");
    let text = view["final_response"].as_str().unwrap();
    let resolution: Value =
        serde_json::from_str(text.strip_prefix("answers=").expect(text)).unwrap();
    assert_eq!(resolution["answers"][0]["question_id"], "q1");
    assert_eq!(
        resolution["answers"][0]["selected_option_ids"],
        json!(["a"])
    );
    let events = daemon.events(&task);
    let answered = events
        .iter()
        .find(|e| e["event_type"] == "question.answered")
        .expect("question.answered");
    assert_eq!(answered["payload"]["question_count"], 1);
    // The answer is not echoed into events.
    assert_in_order(
        &daemon.event_types(&task),
        &["question.requested", "question.answered", "task.completed"],
    );
    assert_eq!(
        code(daemon.answer(
            &task,
            &request,
            json!([{ "question_id": "q1", "selected_option_ids": ["b"] }])
        )),
        "REQUEST_ALREADY_RESOLVED"
    );

    // Free text alone is an answer too.
    let task = daemon.wait_submit(json!({ "prompt": "fake: question" }));
    let request = request_id(&daemon.wait_pending(&task));
    daemon
        .answer(
            &task,
            &request,
            json!([{ "question_id": "q1", "selected_option_ids": [], "text": "neither" }]),
        )
        .unwrap();
    let view = daemon.wait_status(&task, "succeeded");
    assert!(
        view["final_response"].as_str().unwrap().contains("neither"),
        "{view}"
    );
}

#[test]
fn daemon_stale_and_double_answers() {
    let daemon = Setup::new().start();
    // Cancelled while waiting: the request goes stale.
    let task = daemon.submit("fake: approval");
    let request = request_id(&daemon.wait_pending(&task));
    let cancelled = daemon.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(
        code(daemon.respond(&task, &request, "approve_once")),
        "REQUEST_STALE"
    );
    let view = daemon.task(&task);
    assert_eq!(view["status"], "cancelled");
    assert_eq!(view["pending_request"], Value::Null);

    // Same for a question.
    let task = daemon.wait_submit(json!({ "prompt": "fake: question" }));
    let request = request_id(&daemon.wait_pending(&task));
    daemon.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(
        code(daemon.answer(
            &task,
            &request,
            json!([{ "question_id": "q1", "selected_option_ids": ["a"] }])
        )),
        "REQUEST_STALE"
    );

    // Answered twice: the second is refused, whatever it says.
    let task = daemon.wait_submit(json!({ "prompt": "fake: approval" }));
    let request = request_id(&daemon.wait_pending(&task));
    daemon.respond(&task, &request, "deny").unwrap();
    assert_eq!(
        code(daemon.respond(&task, &request, "deny")),
        "REQUEST_ALREADY_RESOLVED"
    );
    assert_eq!(
        code(daemon.respond(&task, &request, "approve_once")),
        "REQUEST_ALREADY_RESOLVED"
    );
    let view = daemon.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "denied: echo test");
}

#[test]
fn daemon_two_approvals_are_presented_one_at_a_time() {
    let daemon = Setup::new().start();
    let task = daemon.submit("fake: two-approvals");
    let first = daemon.wait_pending(&task);
    let first_id = request_id(&first);
    let first_command = first["payload"]["command_display"]
        .as_str()
        .unwrap()
        .to_owned();
    // The second request is queued, not presented: it stays invisible
    // while the first is pending.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let view = daemon.task(&task);
    assert_eq!(view["pending_request_id"], first_id.as_str(), "{view}");
    let requested = daemon.event_types(&task);
    assert_eq!(count(&requested, "approval.requested"), 1, "{requested:?}");

    daemon.respond(&task, &first_id, "approve_once").unwrap();
    let second = daemon.wait_task(&task, "the second approval", |view| {
        view["pending_request"].is_object() && view["pending_request_id"] != first_id.as_str()
    })["pending_request"]
        .clone();
    let second_id = request_id(&second);
    assert_ne!(second_id, first_id);
    let second_command = second["payload"]["command_display"].as_str().unwrap();
    let mut commands = [first_command.as_str(), second_command];
    commands.sort_unstable();
    assert_eq!(commands, ["echo first", "echo second"]);
    // The first can no longer be answered.
    assert_eq!(
        code(daemon.respond(&task, &first_id, "deny")),
        "REQUEST_ALREADY_RESOLVED"
    );
    daemon.respond(&task, &second_id, "deny").unwrap();
    let view = daemon.wait_status(&task, "succeeded");
    // The fake reports its decisions in its own (first, second) order.
    let expected = if first_command == "echo first" {
        "approvals=approve_once,deny"
    } else {
        "approvals=deny,approve_once"
    };
    assert_eq!(view["final_response"], expected);
    let types = daemon.event_types(&task);
    assert_eq!(count(&types, "approval.requested"), 2, "{types:?}");
    assert_eq!(count(&types, "approval.resolved"), 2, "{types:?}");
}

#[test]
fn daemon_steering() {
    let daemon = Setup::new().start();
    let task = daemon.submit("fake: steer");
    daemon.wait_event(&task, "turn.started");
    let sent = daemon.ok(
        "task.message.send",
        json!({ "task_id": task, "message": "go left ✓" }),
    );
    assert_eq!(
        sent,
        json!({ "task_id": task, "accepted": true, "correlation_id": null })
    );
    let view = daemon.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"], "steered=go left ✓");
    let events = daemon.events(&task);
    let message = events
        .iter()
        .find(|e| e["event_type"] == "user.message")
        .expect("user.message");
    assert_eq!(message["payload"]["bytes"], "go left ✓".len());

    // A finished task, an unknown task, an oversized message.
    assert_eq!(
        daemon.err(
            "task.message.send",
            json!({ "task_id": task, "message": "again" })
        ),
        "AGENT_TASK_TERMINAL"
    );
    assert_eq!(
        daemon.err(
            "task.message.send",
            json!({ "task_id": UNKNOWN_TASK, "message": "hi" })
        ),
        "AGENT_TASK_NOT_FOUND"
    );
    assert_eq!(
        daemon.err(
            "task.message.send",
            json!({ "task_id": UNKNOWN_TASK, "message": "x".repeat(65_537) })
        ),
        "AGENT_MESSAGE_TOO_LARGE"
    );
    // A cancelled task is terminal too.
    let task = daemon.wait_submit(json!({ "prompt": "fake: steer" }));
    daemon.wait_event(&task, "turn.started");
    daemon.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(
        daemon.err(
            "task.message.send",
            json!({ "task_id": task, "message": "late" })
        ),
        "AGENT_TASK_TERMINAL"
    );
    // A message of exactly the limit is accepted.
    let task = daemon.wait_submit(json!({ "prompt": "fake: steer" }));
    daemon.wait_event(&task, "turn.started");
    let long = "y".repeat(65_536);
    daemon.ok(
        "task.message.send",
        json!({ "task_id": task, "message": long }),
    );
    let view = daemon.wait_status(&task, "succeeded");
    assert_eq!(view["final_response"].as_str().unwrap().len(), 65_536 + 8);
}

#[test]
fn daemon_cancel_while_running_and_while_waiting() {
    let daemon = Setup::new().start();
    for (prompt, before) in [
        ("fake: wait 60000", "running"),
        ("fake: approval", "waiting_for_approval"),
    ] {
        let task = daemon.wait_submit(json!({ "prompt": prompt }));
        daemon.wait_status(&task, before);
        daemon.wait_event(&task, "turn.started");
        let started = std::time::Instant::now();
        let cancelled = daemon.ok("task.cancel", json!({ "task_id": task }));
        assert_eq!(
            cancelled,
            json!({ "task_id": task, "status": "cancelled", "correlation_id": null })
        );
        // Terminal before the reply: no polling needed.
        let view = daemon.task(&task);
        assert_eq!(view["status"], "cancelled", "{view}");
        assert!(view["completed_at"].is_i64());
        assert_eq!(view["pending_request"], Value::Null);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // Repeat-safe.
        let again = daemon.ok("task.cancel", json!({ "task_id": task }));
        assert_eq!(again["status"], "cancelled");
        // Events settle with exactly one task.cancelled and nothing after it
        // that claims another ending.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let types = daemon.event_types(&task);
        assert_eq!(count(&types, "task.cancelled"), 1, "{prompt}: {types:?}");
        for other in ["task.completed", "task.failed", "task.interrupted"] {
            assert_eq!(count(&types, other), 0, "{prompt}: {types:?}");
        }
        assert_eq!(daemon.task(&task)["status"], "cancelled");
    }
    // The workspace-write lease came back: a new task may run there.
    let task = daemon.wait_submit(json!({ "prompt": "fake: complete after" }));
    daemon.wait_status(&task, "succeeded");

    // A finished task: cancel reports its status unchanged.
    let cancelled = daemon.ok("task.cancel", json!({ "task_id": task }));
    assert_eq!(cancelled["status"], "succeeded");
    assert_eq!(daemon.task(&task)["status"], "succeeded");
    assert_eq!(
        daemon.err("task.cancel", json!({ "task_id": UNKNOWN_TASK })),
        "AGENT_TASK_NOT_FOUND"
    );
}

#[test]
fn daemon_continuation() {
    let setup = Setup::new().workdir(Workdir::new("other", "workspace-write", &["fake"]));
    let daemon = setup.start();
    let first = daemon.submit("fake: complete first");
    daemon.wait_status(&first, "succeeded");
    let second = daemon
        .wait_submit(json!({ "prompt": "fake: complete second", "continue_from_task_id": first }));
    assert_ne!(second, first);
    let view = daemon.wait_status(&second, "succeeded");
    assert_eq!(view["final_response"], "second");
    assert_eq!(view["continue_from_task_id"], first.as_str());
    assert_eq!(
        view["manifest"]["continuation"]["from_task_id"],
        first.as_str()
    );
    // A chain: continuing the continuation works as well.
    let third = daemon
        .wait_submit(json!({ "prompt": "fake: complete third", "continue_from_task_id": second }));
    daemon.wait_status(&third, "succeeded");

    // Unknown prior.
    assert_eq!(
        code(daemon.submit_with(json!({ "continue_from_task_id": UNKNOWN_TASK }))),
        "AGENT_TASK_NOT_FOUND"
    );
    // Another workdir.
    assert_eq!(
        code(daemon.submit_with(json!({ "workdir": "other", "continue_from_task_id": first }))),
        "AGENT_SESSION_NOT_RESUMABLE"
    );
    // Escalation from review to workspace-write.
    let review = daemon
        .submit_with(json!({ "prompt": "fake: complete r", "profile": "review" }))
        .unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.wait_status(&review, "succeeded");
    assert_eq!(
        code(daemon.submit_with(json!({ "continue_from_task_id": review }))),
        "AGENT_PROFILE_NOT_ALLOWED"
    );
    // A prior that is still running.
    let waiting = daemon.wait_submit(json!({ "prompt": "fake: approval" }));
    daemon.wait_pending(&waiting);
    assert_eq!(
        code(daemon.submit_with(json!({
            "profile": "review", "continue_from_task_id": waiting
        }))),
        "AGENT_SESSION_NOT_RESUMABLE"
    );
    daemon.ok("task.cancel", json!({ "task_id": waiting }));
    assert!(
        daemon.inspect().contains("tasks: 5 shown"),
        "{}",
        daemon.inspect()
    );
}

#[test]
fn daemon_idempotent_replay_and_conflict() {
    let daemon = Setup::new().start();
    let params =
        json!({ "prompt": "fake: approval", "idempotency_key": "key-1", "correlation_id": "c" });
    let first = daemon.submit_with(params.clone()).unwrap();
    assert_eq!(first["idempotency_key"], "key-1");
    let task = first["task_id"].as_str().unwrap().to_owned();
    daemon.wait_pending(&task);
    // The replay returns the same task in its current status, and starts
    // nothing (one task.started, one approval).
    let replay = daemon.submit_with(params.clone()).unwrap();
    assert_eq!(replay["task_id"], task.as_str());
    assert_eq!(replay["status"], "waiting_for_approval");
    assert_eq!(replay["idempotency_key"], "key-1");
    assert_eq!(replay["correlation_id"], "c");
    let types = daemon.event_types(&task);
    assert_eq!(count(&types, "task.started"), 1);
    assert_eq!(count(&types, "approval.requested"), 1);
    assert!(
        daemon.inspect().contains("tasks: 1 shown"),
        "{}",
        daemon.inspect()
    );

    // The same key with anything else different conflicts.
    for change in [
        json!({ "prompt": "fake: complete other" }),
        json!({ "correlation_id": "d" }),
        json!({ "profile": "review" }),
        json!({ "path": "sub" }),
    ] {
        let mut changed = params.clone();
        for (key, value) in change.as_object().unwrap() {
            changed[key] = value.clone();
        }
        assert_eq!(
            code(daemon.submit_with(changed)),
            "AGENT_IDEMPOTENCY_CONFLICT",
            "{change}"
        );
    }
    // A replay after the task finished still returns it.
    daemon.ok("task.cancel", json!({ "task_id": task }));
    let replay = daemon.submit_with(params).unwrap();
    assert_eq!(replay["task_id"], task.as_str());
    assert_eq!(replay["status"], "cancelled");
    assert!(
        daemon.inspect().contains("tasks: 1 shown"),
        "{}",
        daemon.inspect()
    );
    // Key validation.
    for key in [json!(""), json!("k\u{1}"), json!("k".repeat(257))] {
        assert_eq!(
            code(daemon.submit_with(json!({ "idempotency_key": key }))),
            "INVALID_REQUEST",
            "{key}"
        );
    }
}

#[test]
fn daemon_task_deadline_interrupts() {
    let daemon = Setup::new().agent("task_timeout_seconds", "1").start();
    let task = daemon.submit("fake: wait 60000");
    let view = daemon.wait_status(&task, "interrupted");
    assert_eq!(view["error_code"], "AGENT_TASK_TIMED_OUT", "{view}");
    let submitted = view["created_at"].as_i64().unwrap();
    assert!(
        view["deadline_at"].as_i64().unwrap() - submitted <= 1_000,
        "{view}"
    );
    let types = daemon.event_types(&task);
    assert_eq!(count(&types, "task.interrupted"), 1, "{types:?}");
    let events = daemon.events(&task);
    let interrupted = events
        .iter()
        .find(|e| e["event_type"] == "task.interrupted")
        .unwrap();
    assert_eq!(interrupted["payload"]["error_code"], "AGENT_TASK_TIMED_OUT");
    // The lease is free again.
    let next = daemon.wait_submit(json!({ "prompt": "fake: complete next" }));
    daemon.wait_status(&next, "succeeded");
}

/// A request still waiting when the task deadline passes: its expiry was
/// capped at the deadline, and the deadline governs (spec §3.8), whichever
/// timer fires first.
#[test]
fn daemon_task_deadline_governs_a_waiting_request() {
    // The deadline leaves time to reach the request on a slow machine; the
    // request's expiry is read from its stored event, not from a poll of
    // the short waiting state.
    let daemon = Setup::new()
        .agent("task_timeout_seconds", "3")
        .agent("interaction_timeout_seconds", "60")
        .start();
    let task = daemon.submit("fake: approval");
    let view = daemon.wait_status(&task, "interrupted");
    assert_eq!(view["error_code"], "AGENT_TASK_TIMED_OUT", "{view}");
    let asked = daemon.wait_event(&task, "approval.requested");
    assert_eq!(
        asked["payload"]["expires_at"], view["deadline_at"],
        "{asked}"
    );
}

#[test]
fn daemon_interaction_expiry_interrupts() {
    // Long enough for the poll below to see the request on a slow machine.
    let daemon = Setup::new()
        .agent("interaction_timeout_seconds", "3")
        .start();
    let task = daemon.submit("fake: approval");
    let pending = daemon.wait_pending(&task);
    let request = request_id(&pending);
    let lifetime =
        pending["expires_at"].as_i64().unwrap() - pending["created_at"].as_i64().unwrap();
    assert!((2_900..=3_100).contains(&lifetime), "{pending}");
    let view = daemon.wait_status(&task, "interrupted");
    assert_eq!(view["error_code"], "AGENT_INTERACTION_TIMED_OUT", "{view}");
    assert_eq!(view["pending_request"], Value::Null);
    let events = daemon.events(&task);
    let expired = events
        .iter()
        .find(|e| e["event_type"] == "interaction.expired")
        .unwrap_or_else(|| panic!("no interaction.expired in {events:?}"));
    assert_eq!(expired["payload"]["request_id"], request.as_str());
    assert_eq!(expired["payload"]["kind"], "approval");
    assert_in_order(
        &daemon.event_types(&task),
        &[
            "approval.requested",
            "interaction.expired",
            "task.interrupted",
        ],
    );
    assert_eq!(
        code(daemon.respond(&task, &request, "approve_once")),
        "REQUEST_STALE"
    );
    assert_eq!(daemon.task(&task)["status"], "interrupted");
}

#[test]
fn daemon_active_task_limit_and_workdir_lease() {
    let daemon = Setup::new().agent("max_active_tasks", "2").start();
    let writer = daemon.submit("fake: approval");
    daemon.wait_pending(&writer);
    // The workspace-write lease of `demo` is taken.
    assert_eq!(
        code(daemon.submit_with(json!({ "prompt": "fake: complete w2" }))),
        "WORKDIR_BUSY"
    );
    let reviewer = daemon
        .submit_with(json!({ "prompt": "fake: approval", "profile": "review" }))
        .unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.wait_pending(&reviewer);
    assert_eq!(
        code(daemon.submit_with(json!({ "prompt": "fake: complete r3", "profile": "review" }))),
        "AGENT_TASK_LIMIT_REACHED"
    );
    assert!(
        daemon.inspect().contains("tasks: 2 shown"),
        "{}",
        daemon.inspect()
    );
    // A slot frees up once a task ends.
    daemon.ok("task.cancel", json!({ "task_id": reviewer }));
    let third = daemon
        .submit_with(json!({ "prompt": "fake: complete r3", "profile": "review" }))
        .unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.wait_status(&third, "succeeded");
    daemon.ok("task.cancel", json!({ "task_id": writer }));
    let w2 = daemon.wait_submit(json!({ "prompt": "fake: complete w2" }));
    daemon.wait_status(&w2, "succeeded");
}

#[test]
fn daemon_large_result_is_spooled_and_read_in_chunks() {
    let daemon = Setup::new()
        .agent("result_spool_threshold_bytes", "1024")
        .start();
    // ~40 KiB of one- to four-byte characters.
    let unit = "héllo wörld ✓ 日本語 🚀 ";
    let text = format!("{}end", unit.repeat(40 * 1024 / unit.len()));
    assert!(text.len() > 40_000 && text.len() < 60_000);
    let task = daemon.submit(&format!("fake: complete {text}"));
    let view = daemon.wait_status(&task, "succeeded");
    assert_eq!(view["final_response_truncated"], true);
    assert_eq!(view["result"]["storage"], "spool");
    assert_eq!(view["result"]["retrievable"], true);
    assert_eq!(view["result"]["size_bytes"], text.len());
    let digest = sha256_hex(text.as_bytes());
    assert_eq!(view["result"]["sha256"], digest.as_str());
    let preview = view["final_response"].as_str().unwrap();
    assert!(
        preview.len() <= 1024 && !preview.is_empty(),
        "{}",
        preview.len()
    );
    assert!(text.starts_with(preview));
    assert_in_order(
        &daemon.event_types(&task),
        &["task.result_spooled", "task.completed"],
    );

    // Read it back in 1000-byte chunks.
    let mut read = String::new();
    let mut offset = 0_u64;
    let mut chunks = 0;
    loop {
        let chunk = daemon.ok(
            "task.result.read",
            json!({ "task_id": task, "offset_bytes": offset, "max_bytes": 1000 }),
        );
        let part = chunk["text"].as_str().unwrap();
        assert_eq!(chunk["offset_bytes"], offset);
        assert!(part.len() <= 1000);
        // Only an incomplete last character is trimmed (at most 3 bytes);
        // the last chunk is whatever remains.
        assert!(
            part.len() >= 997 || chunk["eof"] == true,
            "a chunk trimmed more than one character: {} at {offset}",
            part.len()
        );
        offset += part.len() as u64;
        assert_eq!(chunk["next_offset_bytes"], offset);
        read.push_str(part);
        chunks += 1;
        if chunk["eof"] == true {
            break;
        }
        assert!(chunks < 100, "no eof");
    }
    assert_eq!(read.len(), text.len());
    assert_eq!(sha256_hex(read.as_bytes()), digest);
    assert_eq!(read, text);

    // At the end: empty, eof.
    let end = daemon.ok(
        "task.result.read",
        json!({ "task_id": task, "offset_bytes": text.len() }),
    );
    assert_eq!(end["text"], "");
    assert_eq!(end["eof"], true);
    assert_eq!(end["next_offset_bytes"], text.len());
    // Mid-character and past the end.
    let mid = text
        .char_indices()
        .find(|(_, c)| c.len_utf8() > 1)
        .unwrap()
        .0
        + 1;
    for offset in [json!(mid), json!(text.len() + 1), json!(-1)] {
        assert_eq!(
            daemon.err(
                "task.result.read",
                json!({ "task_id": task, "offset_bytes": offset })
            ),
            "INVALID_RESULT_OFFSET",
            "{offset}"
        );
    }
    for max in [0, 65_537, -5] {
        assert_eq!(
            daemon.err(
                "task.result.read",
                json!({ "task_id": task, "max_bytes": max })
            ),
            "INVALID_RESULT_LIMIT",
            "{max}"
        );
    }
    // Default chunk: everything up to 64 KiB from the start.
    let whole = daemon.ok("task.result.read", json!({ "task_id": task }));
    assert_eq!(whole["text"], text.as_str());
    assert_eq!(whole["eof"], true);
    assert_eq!(
        daemon.err("task.result.read", json!({ "task_id": UNKNOWN_TASK })),
        "AGENT_TASK_NOT_FOUND"
    );
}

#[test]
fn daemon_events_page_with_cursors() {
    let daemon = Setup::new().start();
    let task = daemon.submit("fake: approval\nfake: question\nfake: complete end");
    let request = request_id(&daemon.wait_pending(&task));
    daemon.respond(&task, &request, "approve_once").unwrap();
    let question = daemon.wait_task(&task, "the question", |view| {
        view["pending_request"]["kind"] == "question"
    })["pending_request"]
        .clone();
    daemon
        .answer(
            &task,
            &request_id(&question),
            json!([{ "question_id": "q1", "selected_option_ids": ["b"] }]),
        )
        .unwrap();
    daemon.wait_status(&task, "succeeded");
    // Another task's events interleave in the global id sequence.
    let other = daemon
        .submit_with(json!({ "prompt": "fake: complete o", "profile": "review" }))
        .unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.wait_status(&other, "succeeded");

    let all = daemon.events(&task);
    assert!(all.len() >= 8, "{all:?}");
    let ids: Vec<i64> = all
        .iter()
        .map(|e| e["event_id"].as_i64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(all.iter().all(|e| e["task_id"] == task.as_str()));
    assert!(all.iter().all(|e| e["schema_version"] == 1));

    let mut paged = Vec::new();
    let mut after = 0_i64;
    loop {
        let page = daemon.ok(
            "task.events",
            json!({ "task_id": task, "after_event_id": after, "limit": 3 }),
        );
        let events = page["events"].as_array().unwrap().clone();
        assert!(events.len() <= 3);
        let next = page["next_after_event_id"].as_i64().unwrap();
        if events.is_empty() {
            // Nothing more: the cursor stays where it was.
            assert_eq!(next, after);
            break;
        }
        assert_eq!(next, events.last().unwrap()["event_id"].as_i64().unwrap());
        assert!(events[0]["event_id"].as_i64().unwrap() > after);
        paged.extend(events);
        after = next;
    }
    assert_eq!(paged, all);
    // Default limit and a cursor in the middle.
    let page = daemon.ok(
        "task.events",
        json!({ "task_id": task, "after_event_id": ids[2] }),
    );
    assert_eq!(page["events"].as_array().unwrap(), &all[3..]);
    assert_eq!(page["correlation_id"], Value::Null);

    for bad in [
        json!({ "task_id": task, "limit": 0 }),
        json!({ "task_id": task, "limit": 501 }),
        json!({ "task_id": task, "after_event_id": -1 }),
    ] {
        assert_eq!(
            daemon.err("task.events", bad.clone()),
            "INVALID_LIMIT",
            "{bad}"
        );
    }
    let max = daemon.ok("task.events", json!({ "task_id": task, "limit": 500 }));
    assert_eq!(max["events"].as_array().unwrap().len(), all.len());
    assert_eq!(
        daemon.err("task.events", json!({ "task_id": UNKNOWN_TASK })),
        "AGENT_TASK_NOT_FOUND"
    );
}

#[test]
fn daemon_submit_validation_codes() {
    let setup = Setup::new()
        .workdir(Workdir::new("rev", "review", &["fake"]))
        .workdir(Workdir::new("off", "disabled", &[]));
    let work = setup.work_dir();
    std::fs::create_dir_all(work.join("sub/deeper")).unwrap();
    std::fs::write(work.join("file.txt"), "x").unwrap();
    std::os::unix::fs::symlink(work.join("sub"), work.join("link")).unwrap();
    std::os::unix::fs::symlink(setup.root(), work.join("escape")).unwrap();
    let daemon = setup.start();

    let cases = [
        (
            json!({ "prompt": "x".repeat(65_537) }),
            "AGENT_PROMPT_TOO_LARGE",
        ),
        (json!({ "profile": "admin" }), "AGENT_PROFILE_NOT_ALLOWED"),
        (json!({ "profile": "" }), "AGENT_PROFILE_NOT_ALLOWED"),
        (json!({ "path": ".." }), "INVALID_WORKDIR_PATH"),
        (json!({ "path": "sub/../.." }), "INVALID_WORKDIR_PATH"),
        (json!({ "path": "sub/../sub" }), "INVALID_WORKDIR_PATH"),
        (json!({ "path": "/etc" }), "INVALID_WORKDIR_PATH"),
        (
            json!({ "path": work.to_str().unwrap() }),
            "INVALID_WORKDIR_PATH",
        ),
        (json!({ "path": "sub\u{0}x" }), "INVALID_WORKDIR_PATH"),
        (json!({ "path": "sub\\deeper" }), "INVALID_WORKDIR_PATH"),
        (json!({ "path": "missing" }), "WORKDIR_PATH_NOT_FOUND"),
        (json!({ "path": "sub/missing" }), "WORKDIR_PATH_NOT_FOUND"),
        (json!({ "path": "link" }), "INVALID_WORKDIR_PATH"),
        (json!({ "path": "link/deeper" }), "INVALID_WORKDIR_PATH"),
        (json!({ "path": "escape" }), "INVALID_WORKDIR_PATH"),
        (json!({ "path": "file.txt" }), "INVALID_WORKDIR_PATH"),
        (json!({ "workdir": "nowhere" }), "WORKDIR_NOT_FOUND"),
        (json!({ "workdir": "" }), "INVALID_REQUEST"),
        (json!({ "runtime": "" }), "INVALID_REQUEST"),
        (json!({ "runtime": "codex" }), "AGENT_RUNTIME_NOT_ALLOWED"),
        (
            json!({ "runtime": "codex", "workdir": "rev", "profile": "review" }),
            "AGENT_RUNTIME_NOT_ALLOWED",
        ),
        (
            json!({ "workdir": "off", "profile": "review" }),
            "AGENT_DISABLED",
        ),
        (json!({ "workdir": "rev" }), "AGENT_PROFILE_NOT_ALLOWED"),
        (json!({ "model": "" }), "INVALID_REQUEST"),
        (json!({ "model": " gpt" }), "INVALID_REQUEST"),
        (json!({ "model": "m\u{7f}" }), "INVALID_REQUEST"),
        (json!({ "model": "m".repeat(513) }), "INVALID_REQUEST"),
        (json!({ "correlation_id": "c\n" }), "INVALID_REQUEST"),
        (
            json!({ "correlation_id": "c".repeat(257) }),
            "INVALID_REQUEST",
        ),
    ];
    for (params, expected) in &cases {
        let shown = params.to_string();
        let shown = &shown[..shown.len().min(120)];
        let error = daemon.submit_with(params.clone()).expect_err(shown);
        assert_eq!(error.code, *expected, "{shown}: {}", error.message);
        assert!(
            !error.message.contains(setup.root().to_str().unwrap()),
            "a host path in {:?}",
            error.message
        );
    }
    assert!(
        daemon.inspect().contains("tasks: 0 shown"),
        "{}",
        daemon.inspect()
    );

    // The boundaries that are allowed.
    let ok = [
        json!({ "prompt": format!("fake: complete {}", "p".repeat(65_536 - 15)), "profile": "review" }),
        json!({ "path": "sub/deeper", "profile": "review" }),
        json!({ "path": "./sub//deeper/", "profile": "review" }),
        json!({ "path": ".", "profile": "review" }),
        json!({ "workdir": "rev", "profile": "review" }),
        json!({ "correlation_id": "", "profile": "review" }),
    ];
    for params in ok {
        let submitted = daemon.submit_with(params.clone()).unwrap_or_else(|e| {
            panic!(
                "{}: {e:?}",
                &params.to_string()[..80.min(params.to_string().len())]
            )
        });
        let task = submitted["task_id"].as_str().unwrap();
        daemon.wait_status(task, "succeeded");
    }
    let task = daemon
        .submit_with(json!({ "path": "./sub//deeper/", "profile": "review" }))
        .unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        daemon.wait_status(&task, "succeeded")["relative_cwd"],
        "sub/deeper"
    );
}

/// A cancel that lands right after submission races the runner starting
/// the provider. Whoever wins, the task ends `cancelled` (or had already
/// succeeded) and nothing the provider emits is recorded after
/// `task.cancelled`: the terminal event stays the last word. Raced many
/// times.
#[test]
fn daemon_no_provider_event_follows_a_cancel() {
    let daemon = Setup::new().start();
    for round in 0..40 {
        let task = daemon.wait_submit(json!({ "prompt": format!("fake: write m{round}.txt x") }));
        daemon.ok("task.cancel", json!({ "task_id": task }));
        let view = daemon.wait_task(&task, "terminal", |v| v["completed_at"].is_number());
        assert!(
            ["cancelled", "succeeded"].contains(&view["status"].as_str().unwrap()),
            "{view}"
        );
        // The runner has ended once the workdir can be leased again.
        let next = daemon.wait_submit(json!({ "prompt": "fake: complete next" }));
        daemon.wait_status(&next, "succeeded");
        let types = daemon.event_types(&task);
        if let Some(cancelled) = types.iter().position(|t| *t == "task.cancelled") {
            assert_eq!(
                cancelled + 1,
                types.len(),
                "round {round}: events after the cancel: {types:?}"
            );
        }
    }
}
