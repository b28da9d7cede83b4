//! The Anthropic Messages dialect (`POST /v1/messages`, used by Claude
//! Code): event shapes as measured with Claude Code 2.1 (spec-adapters.md
//! §6.1).

use serde_json::{Value, json};

use super::http::Event;
use super::script::{Reply, flat_tool_name as tool_name};

/// The SSE events of a streamed reply; `n` numbers the ids (`msg_n`,
/// `toolu_n`), `model` is echoed from the request.
pub(crate) fn stream(reply: &Reply, n: u64, model: &str) -> Vec<Event> {
    let (block, delta, stop_reason) = match reply {
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
            "end_turn",
        ),
        Reply::ToolCall {
            name,
            namespace,
            arguments,
        } => (
            // Arguments arrive as `input_json_delta` fragments; one fragment
            // holding the whole JSON is a valid split.
            json!({"type": "tool_use", "id": format!("toolu_{n}"),
                "name": tool_name(name, namespace.as_deref()), "input": {}}),
            json!({"type": "input_json_delta", "partial_json": arguments.to_string()}),
            "tool_use",
        ),
        // The API reports a failure inside an open stream as an `error`
        // event; the client raises it as an API error of that type.
        Reply::Fail { code, message } => {
            return vec![Event {
                name: "error",
                data: json!({"type": "error", "error": {"type": code, "message": message}}),
            }];
        }
        // The server has already waited; render what follows the wait.
        Reply::Delayed(_, inner) => return stream(inner, n, model),
    };
    let event = |name: &'static str, data: Value| Event { name, data };
    vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": format!("msg_{n}"),
                "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": 1}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
}

/// The status and JSON body of a non-streaming reply (`stream` absent or
/// false; Claude Code sends a few such side requests).
pub(crate) fn message(reply: &Reply, n: u64, model: &str) -> (u16, Value) {
    let (content, stop_reason) = match reply {
        Reply::Text(text) => (json!([{"type": "text", "text": text}]), "end_turn"),
        Reply::ToolCall {
            name,
            namespace,
            arguments,
        } => (
            json!([{"type": "tool_use", "id": format!("toolu_{n}"),
                "name": tool_name(name, namespace.as_deref()), "input": arguments}]),
            "tool_use",
        ),
        Reply::Fail { code, message } => {
            return (
                error_status(code),
                json!({"type": "error", "error": {"type": code, "message": message}}),
            );
        }
        Reply::Delayed(_, inner) => return message(inner, n, model),
    };
    let body = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
        "model": model, "content": content, "stop_reason": stop_reason,
        "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}});
    (200, body)
}

/// The HTTP status the API pairs with an error type, so a failing reply is
/// retried (or not) by the client as a real one would be. Unknown codes
/// get 400, which clients do not retry.
fn error_status(code: &str) -> u16 {
    match code {
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "overloaded_error" => 529,
        _ => 400,
    }
}

/// The body of `POST /v1/messages/count_tokens`: a rough, deterministic
/// estimate (four bytes a token) that is never zero.
pub(crate) fn count_tokens(body_bytes: usize) -> Value {
    json!({"input_tokens": (body_bytes / 4).max(1)})
}
