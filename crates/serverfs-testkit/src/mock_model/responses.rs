//! The OpenAI Responses dialect (`POST {base}/responses`, used by Codex):
//! event shapes as measured with codex-cli 0.171.0 (spec-adapters.md §6.1).

use serde_json::{Value, json};

use super::http::Event;
use super::script::Reply;

/// The SSE events answering with `reply`; `n` numbers this response's ids
/// (`resp_n`, `msg_n`, `call_n`). Responses always streams: Codex always
/// sends `stream: true`.
pub(crate) fn events(reply: &Reply, n: u64) -> Vec<Event> {
    let id = format!("resp_{n}");
    let created = Event {
        name: "response.created",
        data: json!({"type": "response.created", "response": {"id": id}}),
    };
    let completed = Event {
        name: "response.completed",
        data: json!({"type": "response.completed", "response": {"id": id, "usage": {
            "input_tokens": 1, "input_tokens_details": null,
            "output_tokens": 1, "output_tokens_details": null, "total_tokens": 2}}}),
    };
    match reply {
        Reply::Text(text) => {
            let item_id = format!("msg_{n}");
            vec![
                created,
                output_item(
                    "response.output_item.added",
                    json!({"type": "message", "role": "assistant", "id": item_id, "content": []}),
                ),
                Event {
                    name: "response.output_text.delta",
                    data: json!({"type": "response.output_text.delta", "delta": text,
                        "item_id": item_id, "output_index": 0, "content_index": 0}),
                },
                output_item(
                    "response.output_item.done",
                    json!({"type": "message", "role": "assistant", "id": item_id,
                        "content": [{"type": "output_text", "text": text}]}),
                ),
                completed,
            ]
        }
        Reply::ToolCall {
            name,
            namespace,
            arguments,
        } => {
            // The API carries arguments as a JSON string, not an object.
            let mut call = json!({"type": "function_call", "call_id": format!("call_{n}"),
                "name": name, "arguments": arguments.to_string()});
            if let Some(namespace) = namespace {
                call["namespace"] = json!(namespace);
            }
            vec![
                created,
                output_item("response.output_item.done", call),
                completed,
            ]
        }
        Reply::Fail { code, message } => vec![
            created,
            Event {
                name: "response.failed",
                data: json!({"type": "response.failed", "response": {"id": id,
                    "error": {"code": code, "message": message}}}),
            },
        ],
        // The server has already waited; render what follows the wait.
        Reply::Delayed(_, inner) => events(inner, n),
    }
}

fn output_item(name: &'static str, item: Value) -> Event {
    Event {
        name,
        data: json!({"type": name, "item": item}),
    }
}
