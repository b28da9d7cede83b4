//! Stage one and the whole request path: the spec's validation order,
//! the echoed id, request encoding, and response encoding and decoding.

use serde_json::{Value, json};
use serverfs_protocol::bridge::{
    BridgeErrorCode, BridgeRequest, ErrorBody, MAX_FRAME_BYTES, ProtocolError, RejectedRequest,
    Request, RequestEnvelope, Response, RuntimeListParams, TaskCancelResult, TaskGetParams,
    TaskStatus, TaskSubmitParams,
};

use super::object;

/// `frame` is refused with `error`, echoing `request_id`.
#[track_caller]
fn rejected(frame: &[u8], error: ProtocolError, request_id: Option<&str>) {
    assert_eq!(
        Request::from_frame(frame),
        Err(RejectedRequest {
            request_id: request_id.map(str::to_owned),
            error,
        }),
        "{}",
        String::from_utf8_lossy(frame)
    );
}

fn frame(json: &Value) -> Vec<u8> {
    serde_json::to_vec(json).unwrap()
}

fn good() -> Value {
    json!({
        "protocol_version": 1, "request_id": "r-1", "method": "task.get",
        "params": { "task_id": "agt_1" }
    })
}

fn with(key: &str, value: Value) -> Vec<u8> {
    let mut envelope = object(good());
    envelope.insert(key.to_owned(), value);
    frame(&Value::Object(envelope))
}

fn without(key: &str) -> Vec<u8> {
    let mut envelope = object(good());
    envelope.remove(key);
    frame(&Value::Object(envelope))
}

#[test]
fn a_valid_request_decodes() {
    let request = Request::from_frame(&frame(&good())).unwrap();
    assert_eq!(
        request,
        Request::new(
            "r-1",
            TaskGetParams {
                task_id: "agt_1".into()
            }
        )
    );
    assert_eq!(request.method().as_str(), "task.get");
    let envelope = RequestEnvelope::parse(&frame(&good())).unwrap();
    assert_eq!(
        envelope,
        RequestEnvelope {
            request_id: "r-1".into(),
            method: "task.get".into(),
            params: object(json!({ "task_id": "agt_1" })),
        }
    );
}

#[test]
fn step_1_invalid_json_echoes_null() {
    for bad in [
        &b""[..],
        b"\r",
        b"not json",
        b"{\"protocol_version\":1,",
        b"{\"protocol_version\":NaN,\"request_id\":\"r\",\"method\":\"task.get\",\"params\":{}}",
        b"{\"protocol_version\":Infinity,\"request_id\":\"r\",\"method\":\"task.get\",\"params\":{}}",
        b"{\"protocol_version\":-Infinity,\"request_id\":\"r\",\"method\":\"task.get\",\"params\":{}}",
        b"{\"protocol_version\":1,\"request_id\":\"r\xff\",\"method\":\"task.get\",\"params\":{}}",
        b"\xef\xbb\xbf{\"protocol_version\":1,\"request_id\":\"r\",\"method\":\"task.get\",\"params\":{}}",
        b"{} {}",
    ] {
        rejected(bad, ProtocolError::InvalidJson, None);
    }
}

#[test]
fn step_3_the_key_set_must_be_exact() {
    for top in [json!([]), json!("r"), json!(1), json!(null)] {
        rejected(&frame(&top), ProtocolError::EnvelopeFields, None);
    }
    // An unknown envelope field, with the id still echoed (step 2).
    rejected(
        &with("extra", json!(1)),
        ProtocolError::EnvelopeFields,
        Some("r-1"),
    );
    rejected(
        &with("jsonrpc", json!("2.0")),
        ProtocolError::EnvelopeFields,
        Some("r-1"),
    );
    for key in ["protocol_version", "method", "params"] {
        rejected(&without(key), ProtocolError::EnvelopeFields, Some("r-1"));
    }
    rejected(&without("request_id"), ProtocolError::EnvelopeFields, None);
    // The key set is checked before the version.
    let mut both = object(good());
    both.insert("protocol_version".into(), json!(2));
    both.insert("extra".into(), json!(1));
    rejected(
        &frame(&Value::Object(both)),
        ProtocolError::EnvelopeFields,
        Some("r-1"),
    );
}

#[test]
fn step_4_the_version_must_be_the_integer_1() {
    for bad in [
        json!(true),
        json!("1"),
        json!(1.0),
        json!(null),
        json!([1]),
        json!(1.5),
    ] {
        rejected(
            &with("protocol_version", bad),
            ProtocolError::ProtocolVersionType,
            Some("r-1"),
        );
    }
    for other in [
        json!(0),
        json!(2),
        json!(-1),
        json!(u64::MAX),
        json!(i64::MIN),
    ] {
        rejected(
            &with("protocol_version", other),
            ProtocolError::ProtocolVersionUnsupported,
            Some("r-1"),
        );
    }
    // Beyond 64 bits the number is a float to this decoder: a type error.
    rejected(
        &b"{\"protocol_version\":100000000000000000000,\"request_id\":\"r\",\"method\":\"task.get\",\"params\":{}}"[..],
        ProtocolError::ProtocolVersionType,
        Some("r"),
    );
    // The version is checked before request_id, method and params.
    let mut late = object(good());
    late.insert("protocol_version".into(), json!(2));
    late.insert("request_id".into(), json!(""));
    late.insert("method".into(), json!("task.delete"));
    late.insert("params".into(), json!([]));
    rejected(
        &frame(&Value::Object(late)),
        ProtocolError::ProtocolVersionUnsupported,
        None,
    );
}

#[test]
fn step_5_request_id_then_method_then_params() {
    for bad in [json!(""), json!(7), json!(null), json!(["r"])] {
        rejected(&with("request_id", bad), ProtocolError::RequestId, None);
    }
    for bad in [json!(""), json!(7), json!(null)] {
        rejected(&with("method", bad), ProtocolError::Method, Some("r-1"));
    }
    for bad in [json!([]), json!(null), json!("{}"), json!(1)] {
        rejected(&with("params", bad), ProtocolError::Params, Some("r-1"));
    }
    // request_id before method, method before params.
    let mut all_bad = object(good());
    all_bad.insert("request_id".into(), json!(1));
    all_bad.insert("method".into(), json!(1));
    all_bad.insert("params".into(), json!(1));
    rejected(
        &frame(&Value::Object(all_bad)),
        ProtocolError::RequestId,
        None,
    );
    let mut method_and_params = object(good());
    method_and_params.insert("method".into(), json!(1));
    method_and_params.insert("params".into(), json!(1));
    rejected(
        &frame(&Value::Object(method_and_params)),
        ProtocolError::Method,
        Some("r-1"),
    );
}

#[test]
fn step_6_unknown_methods_before_step_7_parameters() {
    let mut unknown = object(good());
    unknown.insert("method".into(), json!("task.delete"));
    unknown.insert("params".into(), json!({ "nonsense": true }));
    rejected(
        &frame(&Value::Object(unknown)),
        ProtocolError::UnknownMethod("task.delete".into()),
        Some("r-1"),
    );
    rejected(
        &with("params", json!({ "task_id": "agt_1", "extra": 1 })),
        ProtocolError::InvalidParams,
        Some("r-1"),
    );
    rejected(
        &with("params", json!({})),
        ProtocolError::InvalidParams,
        Some("r-1"),
    );
    rejected(
        &with("params", json!({ "task_id": true })),
        ProtocolError::InvalidParams,
        Some("r-1"),
    );
}

#[test]
fn refusals_become_error_frames() {
    let no_id = Request::from_frame(b"nope").unwrap_err().into_response();
    assert_eq!(
        no_id.into_frame(),
        b"{\"request_id\":null,\"ok\":false,\"error\":{\"code\":\"INVALID_REQUEST\",\"message\":\"request must be valid UTF-8 JSON\"}}\n"
    );
    let unknown = Request::from_frame(&with("method", json!("task.delete")))
        .unwrap_err()
        .into_response();
    assert_eq!(
        unknown.into_frame(),
        b"{\"request_id\":\"r-1\",\"ok\":false,\"error\":{\"code\":\"METHOD_NOT_FOUND\",\"message\":\"unknown bridge method: task.delete\"}}\n"
    );
    let version = Request::from_frame(&with("protocol_version", json!(2)))
        .unwrap_err()
        .into_response();
    assert_eq!(
        serde_json::to_value(&version).unwrap(),
        json!({
            "request_id": "r-1", "ok": false,
            "error": {
                "code": "PROTOCOL_VERSION_UNSUPPORTED",
                "message": "unsupported protocol version (this Bridge speaks version 1)"
            }
        })
    );
}

#[test]
fn requests_encode_as_compact_frames_and_decode_back() {
    let request = Request::new(
        "mcp_0123456789abcdef01234567",
        TaskGetParams {
            task_id: "agt_1".into(),
        },
    );
    let bytes = request.to_frame().unwrap();
    assert_eq!(
        bytes,
        b"{\"protocol_version\":1,\"request_id\":\"mcp_0123456789abcdef01234567\",\"method\":\"task.get\",\"params\":{\"task_id\":\"agt_1\"}}\n"
    );
    assert_eq!(
        Request::from_frame(bytes.strip_suffix(b"\n").unwrap()),
        Ok(request)
    );

    let empty = Request::new("r", RuntimeListParams {});
    assert_eq!(
        serde_json::to_value(&empty).unwrap(),
        json!({ "protocol_version": 1, "request_id": "r", "method": "runtime.list", "params": {} })
    );
    let submit = Request::new(
        "r",
        BridgeRequest::TaskSubmit(TaskSubmitParams {
            runtime: "codex".into(),
            workdir: "docs".into(),
            path: String::new(),
            profile: "review".into(),
            prompt: "héllo \u{1F600}".into(),
            model: None,
            continue_from_task_id: None,
            correlation_id: Some("c".into()),
            idempotency_key: None,
        }),
    );
    let bytes = submit.to_frame().unwrap();
    assert!(
        std::str::from_utf8(&bytes)
            .unwrap()
            .contains("héllo \u{1F600}"),
        "non-ASCII stays UTF-8, unescaped"
    );
    assert_eq!(Request::from_frame(&bytes[..bytes.len() - 1]), Ok(submit));
}

#[test]
fn oversized_requests_are_not_encoded() {
    let prompt = "a".repeat(MAX_FRAME_BYTES);
    let request = Request::new(
        "r",
        TaskSubmitParams {
            runtime: "codex".into(),
            workdir: "docs".into(),
            path: String::new(),
            profile: "review".into(),
            prompt,
            model: None,
            continue_from_task_id: None,
            correlation_id: None,
            idempotency_key: None,
        },
    );
    assert_eq!(request.to_frame(), Err(ProtocolError::RequestTooLarge));
}

#[test]
fn responses_encode_exactly() {
    let success = Response::success(
        "r-1",
        &TaskCancelResult {
            task_id: "agt_1".into(),
            status: TaskStatus::Cancelled,
            correlation_id: None,
        },
    );
    assert_eq!(success.request_id(), Some("r-1"));
    // The envelope's keys come in wire order; the result is an object whose
    // key order is serde_json's map order, so compare it as a value.
    let frame = success.clone().into_frame();
    assert!(frame.starts_with(b"{\"request_id\":\"r-1\",\"ok\":true,\"result\":{"));
    assert!(frame.ends_with(b"}}\n"));
    assert_eq!(
        serde_json::from_slice::<Value>(&frame).unwrap(),
        json!({
            "request_id": "r-1", "ok": true,
            "result": { "task_id": "agt_1", "status": "cancelled", "correlation_id": null }
        })
    );
    assert_eq!(Response::from_frame(&frame[..frame.len() - 1]), Ok(success));
    let failure = Response::error(
        Some("r-2".into()),
        BridgeErrorCode::RequestStale,
        "request is no longer pending",
    );
    assert_eq!(
        serde_json::to_value(&failure).unwrap(),
        json!({
            "request_id": "r-2", "ok": false,
            "error": { "code": "REQUEST_STALE", "message": "request is no longer pending" }
        })
    );
    assert_eq!(
        Response::failure(None, &ProtocolError::RequestTooLarge).into_frame(),
        b"{\"request_id\":null,\"ok\":false,\"error\":{\"code\":\"REQUEST_TOO_LARGE\",\"message\":\"request exceeds 1048576 bytes\"}}\n"
    );
    // A result that is not an object is an internal failure, not a success.
    assert_eq!(
        Response::success("r-3", &json!([1, 2])),
        Response::Failure {
            request_id: Some("r-3".into()),
            error: ErrorBody::new(BridgeErrorCode::BridgeProtocolError, "protocol failure"),
        }
    );
}

#[test]
fn responses_decode_strictly() {
    let ok = br#"{"request_id":"r-1","ok":true,"result":{"task_id":"agt_1"}}"#;
    assert_eq!(
        Response::from_frame(ok),
        Ok(Response::Success {
            request_id: "r-1".into(),
            result: object(json!({ "task_id": "agt_1" })),
        })
    );
    let err =
        br#"{"request_id":null,"ok":false,"error":{"code":"PEER_NOT_AUTHORIZED","message":"no"}}"#;
    assert_eq!(
        Response::from_frame(err),
        Ok(Response::Failure {
            request_id: None,
            error: ErrorBody::new(BridgeErrorCode::PeerNotAuthorized, "no"),
        })
    );
    for bad in [
        &br#"{"request_id":"r","ok":true,"result":{},"extra":1}"#[..],
        br#"{"request_id":"r","ok":"true","result":{}}"#,
        br#"{"request_id":"r","ok":1,"result":{}}"#,
        br#"{"request_id":"r","ok":true}"#,
        br#"{"request_id":"r","ok":true,"result":[]}"#,
        br#"{"request_id":"r","ok":true,"result":null}"#,
        br#"{"request_id":"r","ok":true,"result":{},"error":{"code":"INVALID_REQUEST","message":""}}"#,
        br#"{"request_id":null,"ok":true,"result":{}}"#,
        br#"{"ok":true,"result":{}}"#,
        br#"{"ok":false,"error":{"code":"INVALID_REQUEST","message":"m"}}"#,
        br#"{"request_id":"r","ok":false,"result":{}}"#,
        br#"{"request_id":"r","ok":false,"error":null}"#,
        br#"{"request_id":"r","ok":false,"error":{"code":"NOPE","message":"m"}}"#,
        br#"{"request_id":"r","ok":false,"error":{"code":"INVALID_REQUEST"}}"#,
        br#"{"request_id":"r","ok":false,"error":{"code":"INVALID_REQUEST","message":"m","detail":1}}"#,
        br#"{"request_id":7,"ok":false,"error":{"code":"INVALID_REQUEST","message":"m"}}"#,
        br#"[]"#,
        b"",
    ] {
        assert_eq!(
            Response::from_frame(bad),
            Err(ProtocolError::MalformedResponse),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

/// `{"request_id":"r","ok":true,"result":{"text":"…"}}\n` with a text of
/// `len` bytes.
fn text_response(len: usize) -> Response {
    Response::success("r", &json!({ "text": "a".repeat(len) }))
}

#[test]
fn a_response_of_exactly_the_limit_is_sent_and_one_byte_more_is_replaced() {
    let overhead = text_response(0).into_frame().len();
    let exact = text_response(MAX_FRAME_BYTES - overhead).into_frame();
    assert_eq!(exact.len(), MAX_FRAME_BYTES);
    assert!(exact.starts_with(b"{\"request_id\":\"r\",\"ok\":true"));

    let over = text_response(MAX_FRAME_BYTES - overhead + 1).into_frame();
    assert_eq!(
        over,
        b"{\"request_id\":\"r\",\"ok\":false,\"error\":{\"code\":\"RESPONSE_TOO_LARGE\",\"message\":\"response exceeds 1048576 bytes\"}}\n"
    );
}

#[test]
fn a_replacement_that_still_does_not_fit_drops_the_id() {
    let id = "i".repeat(MAX_FRAME_BYTES);
    let frame = Response::success(id, &json!({})).into_frame();
    assert_eq!(
        frame,
        b"{\"request_id\":null,\"ok\":false,\"error\":{\"code\":\"RESPONSE_TOO_LARGE\",\"message\":\"response exceeds 1048576 bytes\"}}\n"
    );
    assert!(frame.len() <= MAX_FRAME_BYTES);
}
