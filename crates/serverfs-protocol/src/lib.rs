//! The stable wire vocabulary of ServerFS.
//!
//! Clients, prompts and operators bind to these strings and shapes, so they
//! never change once published. The crate holds two vocabularies:
//!
//! - **The MCP file surface.** Every error a ServerFS process reports to an
//!   MCP client carries exactly one [`ErrorCode`]; its [`ErrorCode::as_str`]
//!   form is the `SCREAMING_SNAKE` token that starts the error text
//!   (`CODE: message`) and fills `error.code` in the structured result. The
//!   list with explanations lives in `docs/error-codes.md`; a test pins every
//!   string.
//! - **The Agent Bridge RPC v1** ([`bridge`]): the newline-delimited JSON
//!   protocol between the MCP server and the host-side Agent Bridge over a
//!   local Unix socket: framing, the request and response envelopes decoded
//!   in two stages, the ten task methods and the diagnostic `bridge.peer`
//!   with their typed parameters and results, task events, and the
//!   [`bridge::BridgeErrorCode`]s. Its JSON Schemas are committed under
//!   `schema/` and pinned by a test.
//!
//! Both are plain data with `serde`; by default nothing here does I/O or
//! needs an async runtime, so the filesystem kernel can link it freely. The
//! `client` feature adds `bridge::client`, the async (tokio) Bridge client
//! the MCP server uses; see [`bridge`].
//!
//! # Example
//!
//! The Bridge side of one request, from bytes to a typed call and back:
//!
//! ```
//! use serverfs_protocol::bridge::{
//!     BridgeErrorCode, BridgeRequest, FrameDecoder, Request, Response, TaskCancelResult,
//!     TaskGetParams, TaskStatus,
//! };
//!
//! let mut frames = FrameDecoder::new();
//! frames.push(b"{\"protocol_version\":1,\"request_id\":\"r1\",");
//! frames.push(b"\"method\":\"task.get\",\"params\":{\"task_id\":\"agt_1\"}}\n");
//! let frame = frames.next_frame()?.ok_or("no complete frame yet")?;
//!
//! let request = Request::from_frame(&frame)?;
//! assert_eq!(request.call, BridgeRequest::TaskGet(TaskGetParams { task_id: "agt_1".into() }));
//!
//! // A parameter the method does not define is refused before dispatch.
//! let bad = br#"{"protocol_version":1,"request_id":"r2","method":"task.get","params":{"task_id":"agt_1","x":1}}"#;
//! let rejected = Request::from_frame(bad).unwrap_err();
//! assert_eq!(rejected.error.code(), BridgeErrorCode::InvalidRequest);
//! assert_eq!(
//!     rejected.into_response().into_frame(),
//!     br#"{"request_id":"r2","ok":false,"error":{"code":"INVALID_REQUEST","message":"method parameters do not match protocol"}}
//! "#.to_vec(),
//! );
//!
//! let reply = Response::success(
//!     request.request_id,
//!     &TaskCancelResult { task_id: "agt_1".into(), status: TaskStatus::Cancelled, correlation_id: None },
//! );
//! assert_eq!(reply.request_id(), Some("r1"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bridge;
pub mod display;
mod error_code;

pub use error_code::ErrorCode;
