//! The ACP v1 messages the adapter exchanges, typed by the official
//! `agent-client-protocol` crate's schema (`agent_client_protocol::v1::schema`)
//! and carried by the kit's JSON-RPC peer.
//!
//! Our requests go out through [`call`]: the method name, the params'
//! shape and the result's type all come from the crate's `JsonRpcRequest`
//! implementation of the request type, so they cannot drift from the
//! schema the crate pins. What the agent sends is decoded by method into
//! [`AgentRequest`] and [`AgentNotification`]; anything else is
//! `Unsupported` or `Other`, never an error.

use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CancelRequestNotification, RequestPermissionRequest, SessionNotification,
};
use agent_client_protocol::{JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse};
use serde_json::Value;
use serverfs_agent_runtime::jsonrpc::{JsonRpcPeer, RequestId, RpcFailure};

/// JSON-RPC "method not found": an agent→client request the Bridge does
/// not serve (`fs/*`, `terminal/*` — never advertised — and anything
/// unknown; spec-adapters.md §5.1).
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// JSON-RPC "invalid params": a request the Bridge serves whose params
/// cannot be read.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// ACP's "request cancelled": the answer to a request the agent itself
/// cancelled with `$/cancel_request` (its protocol-level cancellation).
pub(crate) const REQUEST_CANCELLED: i64 = -32800;

/// ACP's "authentication required" (`session/new` of an agent that wants
/// a login first).
pub(crate) const AUTH_REQUIRED: i64 = -32000;

/// Why a request of ours failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallFailure {
    /// The JSON-RPC exchange failed.
    Rpc(RpcFailure),
    /// The agent answered, but not in the shape the method promises.
    Unreadable,
}

/// Sends `request` and decodes its result, waiting at most `timeout`.
pub(crate) async fn call<R: JsonRpcRequest + serde::Serialize>(
    peer: &JsonRpcPeer,
    request: &R,
    timeout: Duration,
) -> Result<R::Response, CallFailure> {
    let result = send(peer, request, timeout).await?;
    R::Response::from_json(request.method(), result).map_err(|_| CallFailure::Unreadable)
}

/// As [`call`], with the result also as the agent sent it: for what the
/// pinned schema does not type (a session's unstable `models` list).
pub(crate) async fn call_keeping_raw<R: JsonRpcRequest + serde::Serialize>(
    peer: &JsonRpcPeer,
    request: &R,
    timeout: Duration,
) -> Result<(R::Response, Value), CallFailure> {
    let result = send(peer, request, timeout).await?;
    let typed = R::Response::from_json(request.method(), result.clone())
        .map_err(|_| CallFailure::Unreadable)?;
    Ok((typed, result))
}

/// Sends `request`; its result undecoded.
async fn send<R: JsonRpcRequest + serde::Serialize>(
    peer: &JsonRpcPeer,
    request: &R,
    timeout: Duration,
) -> Result<Value, CallFailure> {
    let params = serde_json::to_value(request).map_err(|_| CallFailure::Unreadable)?;
    peer.request_within(request.method(), params, timeout)
        .await
        .map_err(CallFailure::Rpc)
}

/// Sends `notification` (best effort, as every notification).
pub(crate) fn notify<N: JsonRpcNotification + serde::Serialize>(
    peer: &JsonRpcPeer,
    notification: &N,
) {
    if let Ok(params) = serde_json::to_value(notification) {
        peer.notify(notification.method(), params);
    }
}

/// A request the agent sent us.
#[derive(Debug)]
pub(crate) enum AgentRequest {
    /// `session/request_permission`.
    Permission(Box<RequestPermissionRequest>),
    /// A request the Bridge serves, with params it cannot read.
    Malformed,
    /// Any other method: answered [`METHOD_NOT_FOUND`] at once.
    Unsupported,
}

impl AgentRequest {
    /// Decodes a request by its method.
    pub(crate) fn decode(method: &str, params: &Value) -> AgentRequest {
        if !RequestPermissionRequest::matches_method(method) {
            return AgentRequest::Unsupported;
        }
        match RequestPermissionRequest::parse_message(method, params) {
            Ok(request) => AgentRequest::Permission(Box::new(request)),
            Err(_) => AgentRequest::Malformed,
        }
    }
}

/// A notification the agent sent us.
#[derive(Debug)]
pub(crate) enum AgentNotification {
    /// `session/update`.
    Update(Box<SessionNotification>),
    /// `$/cancel_request`: the agent withdrew one of its requests.
    CancelRequest(RequestId),
    /// Anything else (unknown notifications are ignored, as ACP requires),
    /// or one of these whose params cannot be read.
    Other,
}

impl AgentNotification {
    /// Decodes a notification by its method.
    pub(crate) fn decode(method: &str, params: &Value) -> AgentNotification {
        if SessionNotification::matches_method(method) {
            return SessionNotification::parse_message(method, params)
                .map_or(AgentNotification::Other, |update| {
                    AgentNotification::Update(Box::new(update))
                });
        }
        if CancelRequestNotification::matches_method(method) {
            // The schema's id and the kit's share the JSON shape (an
            // integer or a string); the kit's is the one answers echo.
            return CancelRequestNotification::parse_message(method, params)
                .ok()
                .and_then(|cancel| serde_json::to_value(cancel.request_id).ok())
                .and_then(|id| serde_json::from_value::<RequestId>(id).ok())
                .map_or(AgentNotification::Other, AgentNotification::CancelRequest);
        }
        AgentNotification::Other
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn agent_messages_decode_by_method() {
        let permission = json!({
            "sessionId": "s1",
            "toolCall": { "toolCallId": "t1", "title": "Run ls", "kind": "execute" },
            "options": [{ "optionId": "once", "name": "Allow once", "kind": "allow_once" }],
        });
        assert!(matches!(
            AgentRequest::decode("session/request_permission", &permission),
            AgentRequest::Permission(_)
        ));
        assert!(matches!(
            AgentRequest::decode("session/request_permission", &json!({ "sessionId": 1 })),
            AgentRequest::Malformed
        ));
        for method in [
            "fs/read_text_file",
            "terminal/create",
            "x/custom",
            "session/prompt",
        ] {
            assert!(
                matches!(
                    AgentRequest::decode(method, &json!({})),
                    AgentRequest::Unsupported
                ),
                "{method}"
            );
        }
        let update = json!({
            "sessionId": "s1",
            "update": { "sessionUpdate": "agent_message_chunk",
                        "content": { "type": "text", "text": "hi" } },
        });
        assert!(matches!(
            AgentNotification::decode("session/update", &update),
            AgentNotification::Update(_)
        ));
        assert!(matches!(
            AgentNotification::decode(
                "session/update",
                &json!({ "sessionId": "s1", "update": { "sessionUpdate": "from_the_future" } })
            ),
            AgentNotification::Other
        ));
        assert!(matches!(
            AgentNotification::decode("$/cancel_request", &json!({ "requestId": 7 })),
            AgentNotification::CancelRequest(RequestId::Integer(7))
        ));
        assert!(matches!(
            AgentNotification::decode("$/cancel_request", &json!({ "requestId": "r-1" })),
            AgentNotification::CancelRequest(RequestId::String(id)) if id == "r-1"
        ));
        assert!(matches!(
            AgentNotification::decode("_vendor/status", &json!({})),
            AgentNotification::Other
        ));
    }
}
