//! The JSON-RPC envelope as the Codex App Server speaks it.
//!
//! Codex omits `"jsonrpc":"2.0"` from everything it sends and accepts client
//! messages with or without it (spec-adapters §2.1, measured on 0.171.0), so
//! the builders here never add it and [`classify`] never requires it.

use serde_json::{Map, Value, json};

/// Malformed JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// Codex answers unknown methods, missing fields and state errors with this.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// What a client answers to a server request it does not support.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// Used by the mock for the native-mode rule (forbidden override keys).
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC error the mock answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
}

impl RpcError {
    /// An `-32600` error, Codex's code for almost every refusal.
    pub(crate) fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError {
            code: INVALID_REQUEST,
            message: message.into(),
        }
    }

    /// An `-32602` error.
    pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError {
            code: INVALID_PARAMS,
            message: message.into(),
        }
    }
}

/// One message from the client, sorted by shape.
pub(crate) enum Incoming {
    /// `id` and `method`.
    Request {
        id: Value,
        method: String,
        params: Map<String, Value>,
    },
    /// `method` without `id`.
    Notification { method: String },
    /// `id` with `result` or `error`, no `method`.
    Response {
        id: Value,
        outcome: Result<Value, Value>,
    },
    /// Anything else; answered with an error carrying `id` (or `null`).
    Invalid { id: Value, reason: RpcError },
}

/// Sorts a parsed message by the shape rules of spec-adapters §2.1.
pub(crate) fn classify(msg: Value) -> Incoming {
    let Value::Object(mut obj) = msg else {
        return Incoming::Invalid {
            id: Value::Null,
            reason: RpcError::invalid_request("Invalid request: expected a JSON object"),
        };
    };
    let id = obj.remove("id");
    match (obj.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => {
            if !(id.is_string() || id.is_i64() || id.is_u64()) {
                return Incoming::Invalid {
                    id: Value::Null,
                    reason: RpcError::invalid_request(
                        "Invalid request: id must be a string or an integer",
                    ),
                };
            }
            match obj.remove("params") {
                None | Some(Value::Null) => Incoming::Request {
                    id,
                    method,
                    params: Map::new(),
                },
                Some(Value::Object(params)) => Incoming::Request { id, method, params },
                Some(_) => Incoming::Invalid {
                    id,
                    reason: RpcError::invalid_request("Invalid request: params must be an object"),
                },
            }
        }
        (Some(Value::String(method)), None) => Incoming::Notification { method },
        (Some(_), id) => Incoming::Invalid {
            id: id.unwrap_or(Value::Null),
            reason: RpcError::invalid_request("Invalid request: method must be a string"),
        },
        (None, Some(id)) => match (obj.remove("result"), obj.remove("error")) {
            (Some(result), None) => Incoming::Response {
                id,
                outcome: Ok(result),
            },
            (None, Some(error)) => Incoming::Response {
                id,
                outcome: Err(error),
            },
            _ => Incoming::Invalid {
                id,
                reason: RpcError::invalid_request(
                    "Invalid request: a response needs exactly one of result and error",
                ),
            },
        },
        (None, None) => Incoming::Invalid {
            id: Value::Null,
            reason: RpcError::invalid_request("Invalid request: neither method nor id"),
        },
    }
}

/// A successful response.
pub(crate) fn response(id: Value, result: Value) -> Value {
    json!({ "id": id, "result": result })
}

/// An error response.
pub(crate) fn error_response(id: Value, error: &RpcError) -> Value {
    json!({ "id": id, "error": { "code": error.code, "message": error.message } })
}

/// A server → client request.
pub(crate) fn request(id: Value, method: &str, params: Value) -> Value {
    json!({ "id": id, "method": method, "params": params })
}

/// A server → client notification.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({ "method": method, "params": params })
}
