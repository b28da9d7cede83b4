//! What a client's JSON-RPC message must be before rmcp sees it, and the
//! error a client gets when it is not.
//!
//! rmcp drops a stdio line it cannot decode without a word, and answers an
//! undecodable HTTP body with `415 Unsupported Media Type`; JSON-RPC 2.0
//! asks for an answer: `-32700 Parse error` for text that is not JSON and
//! `-32600 Invalid Request` for JSON that is not a request, with the
//! request's id when it has a usable one, else `null`. Both transports run
//! every incoming message through [`decode`] and answer a [`Rejection`]
//! themselves, so a client learns what was wrong and the connection keeps
//! serving. A malformed notification (no `id`) gets no answer, as JSON-RPC
//! requires (over HTTP, where every request needs a response, it gets the
//! error anyway).
//!
//! A well-formed request whose `params` do not fit its method (a
//! `tools/call` without `params`, or with `arguments` that are not an
//! object) decodes in rmcp as a custom request; [`is_mcp_method`] lets the
//! server answer it `-32602 Invalid params` instead of `-32601 Method not
//! found`.

use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};

/// JSON-RPC's code for text that is not JSON.
pub const PARSE_ERROR: i32 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
pub const INVALID_REQUEST: i32 = -32600;

/// The smallest bound on one message (rmcp's default body limit).
const MIN_MESSAGE_BYTES: usize = 4 << 20;
/// Room for the JSON-RPC envelope around a base64 payload.
const ENVELOPE_BYTES: usize = 64 << 10;

/// Longest decoder message a rejection repeats (serde's messages quote a
/// little of the input).
const MAX_DETAIL_BYTES: usize = 200;

/// Why an incoming message is refused, and the answer it gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// [`PARSE_ERROR`] or [`INVALID_REQUEST`].
    pub code: i32,
    /// What was wrong, for the client.
    pub message: String,
    /// The request's id when it had a usable one (`null` otherwise).
    pub id: Value,
}

impl Rejection {
    /// The JSON-RPC error response, as one line of JSON (no newline).
    pub fn to_json(&self) -> Vec<u8> {
        let answer = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code, "message": self.message },
        });
        answer.to_string().into_bytes()
    }
}

/// What became of an incoming message.
#[derive(Debug)]
pub enum Intake {
    /// A message rmcp can handle.
    Message(Box<ClientJsonRpcMessage>),
    /// A broken request: answer it.
    Reject(Rejection),
    /// A broken notification: JSON-RPC forbids answering it, so only a
    /// transport that must answer every request (HTTP) sends this.
    BrokenNotification(Rejection),
}

/// Decodes one message (a stdio line or an HTTP body).
pub fn decode(bytes: &[u8]) -> Intake {
    // The common case decodes once; only a failure pays for the diagnosis.
    if let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        return Intake::Message(Box::new(message));
    }
    let value = match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => value,
        Err(e) => {
            return Intake::Reject(Rejection {
                code: PARSE_ERROR,
                message: format!("Parse error: {}", bounded(&e.to_string())),
                id: Value::Null,
            });
        }
    };
    let Value::Object(object) = &value else {
        let what = if value.is_array() {
            "a batch (JSON array); send one JSON-RPC object per message"
        } else {
            "not a JSON-RPC object"
        };
        return Intake::Reject(Rejection {
            code: INVALID_REQUEST,
            message: format!("Invalid Request: {what}"),
            id: Value::Null,
        });
    };
    let invalid = |why: String, id: Value| Rejection {
        code: INVALID_REQUEST,
        message: format!("Invalid Request: {why}"),
        id,
    };
    let why = |value: Value| match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(_) => "not a JSON-RPC 2.0 message".to_owned(),
        Err(e) => bounded(&e.to_string()),
    };
    let Some(id) = object.get("id") else {
        return Intake::BrokenNotification(invalid(why(value), Value::Null));
    };
    // A usable id is echoed; anything else (an object, a fraction) is not.
    let id = match id {
        Value::String(_) => id.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => id.clone(),
        _ => Value::Null,
    };
    Intake::Reject(invalid(why(value), id))
}

/// Whether `method` is one of MCP's own client request methods, whose
/// params therefore have a defined shape (a request rmcp decoded as a
/// custom one despite such a name had params that did not fit).
pub fn is_mcp_method(method: &str) -> bool {
    crate::mcp::methods::access(method).is_some()
}

/// The bound on one incoming message (an HTTP body, a stdio line): 4 MiB,
/// or enough for the largest binary upload encoded as base64 plus its
/// envelope.
pub fn max_message_bytes(largest_binary_cap: Option<u64>) -> usize {
    let binary = largest_binary_cap.map_or(0, |cap| {
        usize::try_from(cap.div_ceil(3) * 4)
            .unwrap_or(usize::MAX)
            .saturating_add(ENVELOPE_BYTES)
    });
    binary.max(MIN_MESSAGE_BYTES)
}

/// `text` cut to [`MAX_DETAIL_BYTES`] on a character boundary.
fn bounded(text: &str) -> String {
    if text.len() <= MAX_DETAIL_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_DETAIL_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejection(bytes: &[u8]) -> Rejection {
        match decode(bytes) {
            Intake::Reject(rejection) => rejection,
            other => panic!(
                "{:?}: expected a rejection, got {other:?}",
                String::from_utf8_lossy(bytes)
            ),
        }
    }

    #[test]
    fn requests_and_notifications_decode() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}"#,
        ] {
            assert!(
                matches!(decode(line.as_bytes()), Intake::Message(_)),
                "{line}"
            );
        }
    }

    #[test]
    fn text_that_is_not_json_is_a_parse_error_without_an_id() {
        for bytes in [
            &b"{bad json"[..],
            b"\xff\xfe{}",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","x":"\ud800"}"#,
            br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#,
            b"",
        ] {
            let r = rejection(bytes);
            assert_eq!((r.code, &r.id), (PARSE_ERROR, &Value::Null), "{r:?}");
            assert!(r.message.starts_with("Parse error: "), "{r:?}");
        }
    }

    #[test]
    fn json_that_is_not_a_request_is_invalid() {
        for (bytes, id) in [
            (&b"[]"[..], Value::Null),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                Value::Null,
            ),
            (b"null", Value::Null),
            (b"7", Value::Null),
            (br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3)),
            (br#"{"jsonrpc":"2.0","id":"x"}"#, json!("x")),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                Value::Null,
            ),
        ] {
            let r = rejection(bytes);
            assert_eq!((r.code, r.id.clone()), (INVALID_REQUEST, id), "{r:?}");
        }
        assert!(rejection(b"[]").message.contains("batch"));
    }

    #[test]
    fn a_broken_notification_is_dropped() {
        assert!(matches!(
            decode(br#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#),
            Intake::BrokenNotification(Rejection {
                code: INVALID_REQUEST,
                ..
            })
        ));
    }

    #[test]
    fn the_answer_is_a_json_rpc_error_and_its_detail_is_bounded() {
        let long = format!(
            "{{\"jsonrpc\":\"{}\",\"id\":5,\"method\":\"ping\"}}",
            "9".repeat(5000)
        );
        let r = rejection(long.as_bytes());
        assert!(
            r.message.len() < MAX_DETAIL_BYTES + 40,
            "{}",
            r.message.len()
        );
        let answer: Value = serde_json::from_slice(&r.to_json()).unwrap();
        assert_eq!(answer["jsonrpc"], "2.0");
        assert_eq!(answer["id"], 5);
        assert_eq!(answer["error"]["code"], INVALID_REQUEST);
    }

    #[test]
    fn mcp_methods_are_known_and_others_are_not() {
        assert!(is_mcp_method("tools/call"));
        assert!(is_mcp_method("resources/read"));
        assert!(!is_mcp_method("tools/run"));
        assert!(!is_mcp_method(""));
    }
}
