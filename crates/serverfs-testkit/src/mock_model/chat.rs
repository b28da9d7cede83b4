//! The OpenAI Chat Completions dialect (`POST {base}/chat/completions`,
//! used by OpenCode's `@ai-sdk/openai-compatible` provider): chunk shapes
//! as spec-adapters.md §6.1 measured them. A streamed reply is `data:`
//! lines only (no `event:` field), ended by `data: [DONE]`.

use serde_json::{Value, json};

use super::script::{Reply, flat_tool_name};

/// The chunks of a streamed reply; `n` numbers the ids (`chatcmpl_n`,
/// `call_n`), `model` is echoed. `None` for a failure, which is an HTTP
/// error instead of a stream (the status and body of [`failure`]).
pub(crate) fn chunks(reply: &Reply, n: u64, model: &str) -> Option<Vec<Value>> {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": format!("chatcmpl_{n}"), "object": "chat.completion.chunk",
            "created": 0, "model": model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
        })
    };
    let usage = json!({
        "id": format!("chatcmpl_{n}"), "object": "chat.completion.chunk", "created": 0,
        "model": model, "choices": [],
        "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 },
    });
    match reply {
        Reply::Text(text) => Some(vec![
            chunk(json!({ "role": "assistant", "content": "" }), Value::Null),
            chunk(json!({ "content": text }), Value::Null),
            chunk(json!({}), json!("stop")),
            usage,
        ]),
        // The call first with empty arguments, then the arguments as one
        // fragment (a valid split of the JSON text).
        Reply::ToolCall {
            name,
            namespace,
            arguments,
        } => Some(vec![
            chunk(
                json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": format!("call_{n}"),
                    "type": "function", "function": {
                        "name": flat_tool_name(name, namespace.as_deref()), "arguments": "" } }] }),
                Value::Null,
            ),
            chunk(
                json!({ "tool_calls": [{ "index": 0,
                    "function": { "arguments": arguments.to_string() } }] }),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            usage,
        ]),
        Reply::Fail { .. } => None,
        // The server has already waited; render what follows the wait.
        Reply::Delayed(_, inner) => chunks(inner, n, model),
    }
}

/// The status and body of a failed reply: rate limits 429, anything else
/// 500, with OpenAI's error shape.
pub(crate) fn failure(reply: &Reply) -> (u16, Value) {
    match reply {
        Reply::Fail { code, message } => {
            let status = if code == "rate_limit_exceeded" {
                429
            } else {
                500
            };
            (
                status,
                json!({ "error": { "code": code, "message": message, "type": code } }),
            )
        }
        Reply::Delayed(_, inner) => failure(inner),
        Reply::Text(_) | Reply::ToolCall { .. } => (
            500,
            json!({ "error": { "code": "mock", "message": "not a failure" } }),
        ),
    }
}

/// The body of a reply that was not streamed (`stream` absent or false).
pub(crate) fn completion(reply: &Reply, n: u64, model: &str) -> (u16, Value) {
    let message = match reply {
        Reply::Text(text) => json!({ "role": "assistant", "content": text }),
        Reply::ToolCall {
            name,
            namespace,
            arguments,
        } => json!({
            "role": "assistant", "content": null,
            "tool_calls": [{ "id": format!("call_{n}"), "type": "function",
                "function": { "name": flat_tool_name(name, namespace.as_deref()),
                    "arguments": arguments.to_string() } }],
        }),
        Reply::Fail { .. } => return failure(reply),
        Reply::Delayed(_, inner) => return completion(inner, n, model),
    };
    let finish = if message["tool_calls"].is_array() {
        "tool_calls"
    } else {
        "stop"
    };
    (
        200,
        json!({
            "id": format!("chatcmpl_{n}"), "object": "chat.completion", "created": 0,
            "model": model,
            "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
            "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 },
        }),
    )
}
