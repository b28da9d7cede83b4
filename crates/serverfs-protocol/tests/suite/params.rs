//! Stage two: every method's parameters, pinned both ways, with unknown,
//! missing, mistyped and `null` values.

use serde_json::{Value, json};
use serverfs_protocol::bridge::{
    ApprovalDecision, BridgeCall, BridgeMethod, BridgePeerParams, BridgeRequest, ProtocolError,
    QuestionAnswer, RuntimeListParams, RuntimeModelsParams, TaskApprovalRespondParams,
    TaskCancelParams, TaskEventsParams, TaskGetParams, TaskMessageSendParams,
    TaskQuestionAnswerParams, TaskResultReadParams, TaskSubmitParams,
};

use super::object;

/// `params` decodes for `method` to `call`, and `call` encodes back to
/// exactly `params`.
#[track_caller]
fn pin_params(method: &str, params: Value, call: impl Into<BridgeRequest>) {
    let call = call.into();
    assert_eq!(call.method().as_str(), method);
    assert_eq!(
        BridgeRequest::decode(method, object(params.clone())),
        Ok(call.clone())
    );
    assert_eq!(call.params().unwrap(), object(params));
}

/// `params` decodes to `call`, which encodes to `canonical`.
#[track_caller]
fn fold_params(method: &str, params: Value, call: impl Into<BridgeRequest>, canonical: Value) {
    let call = call.into();
    assert_eq!(
        BridgeRequest::decode(method, object(params)),
        Ok(call.clone())
    );
    assert_eq!(call.params().unwrap(), object(canonical));
}

#[track_caller]
fn refused(method: &str, params: Value) {
    assert_eq!(
        BridgeRequest::decode(method, object(params.clone())),
        Err(ProtocolError::InvalidParams),
        "{method} {params}"
    );
}

fn s(text: &str) -> Option<String> {
    Some(text.to_owned())
}

#[test]
fn unknown_methods_are_refused_before_params_are_looked_at() {
    assert_eq!(
        BridgeRequest::decode("task.delete", object(json!({ "anything": [1] }))),
        Err(ProtocolError::UnknownMethod("task.delete".into()))
    );
    assert_eq!(
        BridgeRequest::decode("Task.Get", object(json!({ "task_id": "t" }))),
        Err(ProtocolError::UnknownMethod("Task.Get".into()))
    );
}

#[test]
fn runtime_list_takes_an_empty_object() {
    pin_params("runtime.list", json!({}), RuntimeListParams {});
    refused("runtime.list", json!({ "runtime": "codex" }));
}

/// The diagnostic needs no task, workdir or runtime: nothing may be sent.
#[test]
fn bridge_peer_takes_an_empty_object() {
    pin_params("bridge.peer", json!({}), BridgePeerParams {});
    refused("bridge.peer", json!({ "uid": 0 }));
    refused("bridge.peer", json!({ "task_id": "agt_1" }));
}

#[test]
fn runtime_models() {
    pin_params(
        "runtime.models",
        json!({ "runtime": "codex" }),
        RuntimeModelsParams {
            runtime: "codex".into(),
            workdir: None,
            task_prompt: None,
            path: None,
            profile: None,
        },
    );
    let advice = RuntimeModelsParams {
        runtime: "codex".into(),
        workdir: s("docs"),
        task_prompt: s("fix the build"),
        path: s("src"),
        profile: s("review"),
    };
    pin_params(
        "runtime.models",
        json!({
            "runtime": "codex", "workdir": "docs", "task_prompt": "fix the build",
            "path": "src", "profile": "review"
        }),
        advice,
    );
    // workdir and task_prompt are str|null: null folds into absence.
    fold_params(
        "runtime.models",
        json!({ "runtime": "codex", "workdir": null, "task_prompt": null }),
        RuntimeModelsParams {
            runtime: "codex".into(),
            workdir: None,
            task_prompt: None,
            path: None,
            profile: None,
        },
        json!({ "runtime": "codex" }),
    );
    // path and profile are str when present: null is a type error.
    refused(
        "runtime.models",
        json!({ "runtime": "codex", "path": null }),
    );
    refused(
        "runtime.models",
        json!({ "runtime": "codex", "profile": null }),
    );
    refused("runtime.models", json!({}));
    refused("runtime.models", json!({ "runtime": 1 }));
    refused(
        "runtime.models",
        json!({ "runtime": "codex", "model": "x" }),
    );
    // An unknown profile is the service's AGENT_PROFILE_NOT_ALLOWED.
    let BridgeRequest::RuntimeModels(params) = BridgeRequest::decode(
        "runtime.models",
        object(json!({ "runtime": "codex", "profile": "admin" })),
    )
    .unwrap() else {
        panic!("wrong method");
    };
    assert_eq!(params.profile.as_deref(), Some("admin"));
}

fn submit(path: &str) -> TaskSubmitParams {
    TaskSubmitParams {
        runtime: "codex".into(),
        workdir: "docs".into(),
        path: path.into(),
        profile: "workspace-write".into(),
        prompt: "tidy".into(),
        model: None,
        continue_from_task_id: None,
        correlation_id: None,
        idempotency_key: None,
    }
}

#[test]
fn task_submit() {
    let required = json!({
        "runtime": "codex", "workdir": "docs", "path": "", "profile": "workspace-write",
        "prompt": "tidy"
    });
    pin_params("task.submit", required.clone(), submit(""));
    pin_params(
        "task.submit",
        json!({
            "runtime": "codex", "workdir": "docs", "path": "src/lib", "profile": "workspace-write",
            "prompt": "tidy", "model": "gpt-5", "continue_from_task_id": "agt_0",
            "correlation_id": "c-1", "idempotency_key": "k-1"
        }),
        TaskSubmitParams {
            model: s("gpt-5"),
            continue_from_task_id: s("agt_0"),
            correlation_id: s("c-1"),
            idempotency_key: s("k-1"),
            ..submit("src/lib")
        },
    );
    fold_params(
        "task.submit",
        json!({
            "runtime": "codex", "workdir": "docs", "path": "", "profile": "workspace-write",
            "prompt": "tidy", "model": null, "continue_from_task_id": null,
            "correlation_id": null, "idempotency_key": null
        }),
        submit(""),
        required.clone(),
    );
    for missing in ["runtime", "workdir", "path", "profile", "prompt"] {
        let mut params = object(required.clone());
        params.remove(missing);
        refused("task.submit", Value::Object(params));
    }
    for (key, bad) in [
        ("prompt", json!(7)),
        ("path", json!(null)),
        ("model", json!(5)),
        ("correlation_id", json!(["c"])),
        ("timeout_seconds", json!(5)),
    ] {
        let mut params = object(required.clone());
        params.insert(key.into(), bad);
        refused("task.submit", Value::Object(params));
    }
}

#[test]
fn task_get_and_cancel() {
    pin_params(
        "task.get",
        json!({ "task_id": "agt_1" }),
        TaskGetParams {
            task_id: "agt_1".into(),
        },
    );
    pin_params(
        "task.cancel",
        json!({ "task_id": "agt_1" }),
        TaskCancelParams {
            task_id: "agt_1".into(),
        },
    );
    for method in ["task.get", "task.cancel"] {
        refused(method, json!({}));
        refused(method, json!({ "task_id": null }));
        refused(method, json!({ "task_id": "agt_1", "wait_seconds": 5 }));
    }
}

#[test]
fn task_events() {
    pin_params(
        "task.events",
        json!({ "task_id": "agt_1" }),
        TaskEventsParams {
            task_id: "agt_1".into(),
            after_event_id: None,
            limit: None,
        },
    );
    pin_params(
        "task.events",
        json!({ "task_id": "agt_1", "after_event_id": 41, "limit": 500 }),
        TaskEventsParams {
            task_id: "agt_1".into(),
            after_event_id: Some(41),
            limit: Some(500),
        },
    );
    // Range checks are the service's INVALID_LIMIT, not a protocol error.
    pin_params(
        "task.events",
        json!({ "task_id": "agt_1", "after_event_id": -1, "limit": 0 }),
        TaskEventsParams {
            task_id: "agt_1".into(),
            after_event_id: Some(-1),
            limit: Some(0),
        },
    );
    for bad in [
        json!({ "task_id": "agt_1", "limit": null }),
        json!({ "task_id": "agt_1", "after_event_id": null }),
        json!({ "task_id": "agt_1", "limit": true }),
        json!({ "task_id": "agt_1", "limit": 10.0 }),
        json!({ "task_id": "agt_1", "limit": "10" }),
        json!({ "task_id": "agt_1", "after_event_id": 9_223_372_036_854_775_808_u64 }),
        json!({ "after_event_id": 0 }),
    ] {
        refused("task.events", bad);
    }
    assert_eq!(TaskEventsParams::DEFAULT_LIMIT, 100);
    assert_eq!(TaskEventsParams::MAX_LIMIT, 500);
}

#[test]
fn task_result_read() {
    pin_params(
        "task.result.read",
        json!({ "task_id": "agt_1" }),
        TaskResultReadParams {
            task_id: "agt_1".into(),
            offset_bytes: None,
            max_bytes: None,
        },
    );
    pin_params(
        "task.result.read",
        json!({ "task_id": "agt_1", "offset_bytes": 65536, "max_bytes": 1 }),
        TaskResultReadParams {
            task_id: "agt_1".into(),
            offset_bytes: Some(65_536),
            max_bytes: Some(1),
        },
    );
    for bad in [
        json!({ "task_id": "agt_1", "offset_bytes": null }),
        json!({ "task_id": "agt_1", "max_bytes": false }),
        json!({ "task_id": "agt_1", "max_bytes": 1.5 }),
        json!({ "task_id": "agt_1", "length": 1 }),
    ] {
        refused("task.result.read", bad);
    }
    assert_eq!(TaskResultReadParams::DEFAULT_OFFSET_BYTES, 0);
    assert_eq!(TaskResultReadParams::MAX_CHUNK_BYTES, 65_536);
}

#[test]
fn task_approval_respond() {
    pin_params(
        "task.approval.respond",
        json!({ "task_id": "agt_1", "request_id": "req_1", "decision": "approve_once" }),
        TaskApprovalRespondParams {
            task_id: "agt_1".into(),
            request_id: "req_1".into(),
            decision: "approve_once".into(),
            granted_permission_ids: None,
            option_id: None,
        },
    );
    pin_params(
        "task.approval.respond",
        json!({
            "task_id": "agt_1", "request_id": "req_1", "decision": "approve_session",
            "granted_permission_ids": ["network", "fs"]
        }),
        TaskApprovalRespondParams {
            task_id: "agt_1".into(),
            request_id: "req_1".into(),
            decision: "approve_session".into(),
            granted_permission_ids: Some(vec!["network".into(), "fs".into()]),
            option_id: None,
        },
    );
    // An exact option travels beside the decision that matches its kind.
    pin_params(
        "task.approval.respond",
        json!({
            "task_id": "agt_1", "request_id": "req_1", "decision": "approve_session",
            "option_id": "opt-allow-always"
        }),
        TaskApprovalRespondParams {
            task_id: "agt_1".into(),
            request_id: "req_1".into(),
            decision: "approve_session".into(),
            granted_permission_ids: None,
            option_id: s("opt-allow-always"),
        },
    );
    // The decision is checked by the service after the request's state.
    let BridgeRequest::TaskApprovalRespond(params) = BridgeRequest::decode(
        "task.approval.respond",
        object(json!({ "task_id": "agt_1", "request_id": "req_1", "decision": "maybe" })),
    )
    .unwrap() else {
        panic!("wrong method");
    };
    assert_eq!(ApprovalDecision::from_wire(&params.decision), None);
    for bad in [
        json!({ "task_id": "agt_1", "request_id": "req_1" }),
        json!({ "task_id": "agt_1", "request_id": "req_1", "decision": 1 }),
        json!({
            "task_id": "agt_1", "request_id": "req_1", "decision": "deny",
            "granted_permission_ids": [1]
        }),
        json!({
            "task_id": "agt_1", "request_id": "req_1", "decision": "deny",
            "granted_permission_ids": null
        }),
        json!({
            "task_id": "agt_1", "request_id": "req_1", "decision": "deny", "note": "x"
        }),
        // option_id: absent or a string, never null.
        json!({
            "task_id": "agt_1", "request_id": "req_1", "decision": "deny", "option_id": null
        }),
        json!({
            "task_id": "agt_1", "request_id": "req_1", "decision": "deny", "option_id": 1
        }),
        json!({
            "task_id": "agt_1", "request_id": "req_1", "decision": "deny",
            "option_id": ["opt-reject"]
        }),
    ] {
        refused("task.approval.respond", bad);
    }
}

#[test]
fn task_question_answer() {
    let params = TaskQuestionAnswerParams {
        task_id: "agt_1".into(),
        request_id: "req_1".into(),
        answers: vec![json!({ "question_id": "q1", "selected_option_ids": ["a"] })],
    };
    pin_params(
        "task.question.answer",
        json!({
            "task_id": "agt_1", "request_id": "req_1",
            "answers": [{ "question_id": "q1", "selected_option_ids": ["a"] }]
        }),
        params.clone(),
    );
    assert_eq!(
        params.answers(),
        Some(vec![QuestionAnswer {
            question_id: "q1".into(),
            selected_option_ids: vec!["a".into()],
            text: None,
        }])
    );

    // The shape of each answer is the service's INVALID_QUESTION_ANSWER:
    // stage two keeps it, and `answers()` refuses it.
    for answer in [
        json!({ "question_id": "q1", "bogus": true }),
        json!({ "question_id": "q1", "text": null }),
        json!({ "question_id": 1 }),
        json!({ "question_id": "q1", "selected_option_ids": "a" }),
        json!("q1"),
    ] {
        let call = BridgeRequest::decode(
            "task.question.answer",
            object(json!({ "task_id": "agt_1", "request_id": "req_1", "answers": [answer] })),
        )
        .unwrap();
        let BridgeRequest::TaskQuestionAnswer(params) = call else {
            panic!("wrong method");
        };
        assert_eq!(params.answers(), None, "{answer}");
    }

    // `selected_option_ids` defaults to [], `text` is absent when not given.
    let free_text = TaskQuestionAnswerParams {
        task_id: "agt_1".into(),
        request_id: "req_1".into(),
        answers: vec![json!({ "question_id": "q1", "text": "neither" })],
    };
    assert_eq!(
        free_text.answers(),
        Some(vec![QuestionAnswer {
            question_id: "q1".into(),
            selected_option_ids: vec![],
            text: Some("neither".into()),
        }])
    );

    for bad in [
        json!({ "task_id": "agt_1", "request_id": "req_1" }),
        json!({ "task_id": "agt_1", "request_id": "req_1", "answers": {} }),
        json!({ "task_id": "agt_1", "request_id": "req_1", "answers": null }),
    ] {
        refused("task.question.answer", bad);
    }
}

#[test]
fn task_message_send() {
    pin_params(
        "task.message.send",
        json!({ "task_id": "agt_1", "message": "also update the docs" }),
        TaskMessageSendParams {
            task_id: "agt_1".into(),
            message: "also update the docs".into(),
        },
    );
    refused("task.message.send", json!({ "task_id": "agt_1" }));
    refused(
        "task.message.send",
        json!({ "task_id": "agt_1", "message": null }),
    );
}

/// Each parameter type names its own method, and converting it into a
/// request selects that method.
#[test]
fn every_params_type_is_tied_to_its_method() {
    fn check<P: BridgeCall>(params: P) -> BridgeMethod {
        let method = P::METHOD;
        assert_eq!(params.into().method(), method);
        method
    }
    let methods = [
        check(RuntimeListParams {}),
        check(RuntimeModelsParams {
            runtime: "codex".into(),
            workdir: None,
            task_prompt: None,
            path: None,
            profile: None,
        }),
        check(submit("")),
        check(TaskGetParams {
            task_id: "t".into(),
        }),
        check(TaskEventsParams {
            task_id: "t".into(),
            after_event_id: None,
            limit: None,
        }),
        check(TaskResultReadParams {
            task_id: "t".into(),
            offset_bytes: None,
            max_bytes: None,
        }),
        check(TaskApprovalRespondParams {
            task_id: "t".into(),
            request_id: "r".into(),
            decision: "deny".into(),
            granted_permission_ids: None,
            option_id: None,
        }),
        check(TaskQuestionAnswerParams {
            task_id: "t".into(),
            request_id: "r".into(),
            answers: vec![],
        }),
        check(TaskMessageSendParams {
            task_id: "t".into(),
            message: "m".into(),
        }),
        check(TaskCancelParams {
            task_id: "t".into(),
        }),
        check(BridgePeerParams {}),
    ];
    assert_eq!(methods.as_slice(), BridgeMethod::ALL);
}
