//! Agent Bridge RPC v1: the wire types and codec between the MCP server
//! (client) and the Agent Bridge (server).
//!
//! The contract is `spec-agent-bridge.md` §2–§6 and §11, with the
//! project's deliberate changes (ARCHITECTURE.md §6): times are integer
//! epoch milliseconds, never ISO strings.
//!
//! # Layers
//!
//! - [`FrameDecoder`] splits a byte stream into newline-terminated frames of
//!   at most [`MAX_FRAME_BYTES`] (newline included).
//! - [`RequestEnvelope::parse`] checks a request's envelope (stage one, in
//!   the spec's validation order); [`RequestEnvelope::decode`] turns its
//!   `params` into the method's typed parameters (stage two, unknown fields
//!   refused). [`Request::from_frame`] does both.
//! - [`BridgeRequest`] is the typed call, one variant per method of the
//!   table in `method.rs`; [`BridgeCall`] ties each parameter type to its
//!   result type.
//! - [`Response`] is the reply envelope; [`Response::into_frame`] applies
//!   the response size rule.
//! - Every refusal is a [`ProtocolError`] with one [`BridgeErrorCode`].
//!
//! # Absent versus `null`
//!
//! Each optional field documents whether it may be absent, `null`, or
//! both, and the wire tests pin it. Parameters a client may omit are
//! written absent when `None`. Result and record fields the spec lists
//! unconditionally are always present and `null` when empty. A few fields
//! the service validates with a dedicated code (`profile`, `decision`,
//! `answers`, event and result cursors) keep their plain wire type here, so
//! that the service can report the spec's code in the spec's order.
//!
//! # The client
//!
//! Everything above is synchronous and does no I/O. With the `client`
//! feature (Unix only), `bridge::client` adds the async client used by
//! `serverfs`, the only place this crate links tokio. Its
//! `BridgeClient::call` takes any [`BridgeCall`] parameter type and returns
//! that method's result type, built on [`Request::to_frame`],
//! [`FrameDecoder`], [`Response::from_frame`] and
//! [`BridgeCall::decode_result`]. It bounds every connect and every call,
//! reuses one idle connection for sequential calls while concurrent calls
//! each open their own, and maps every failure to one [`BridgeErrorCode`]
//! (`AGENT_BRIDGE_UNAVAILABLE`, `AGENT_BRIDGE_PROTOCOL_ERROR`, or the
//! Bridge's own code); the `client` module docs give the rules.
//!
//! ```no_run
//! # #[cfg(all(feature = "client", unix))]
//! # async fn demo() -> Result<(), serverfs_protocol::bridge::client::ClientError> {
//! use std::path::PathBuf;
//! use std::time::Duration;
//!
//! use serverfs_protocol::bridge::TaskGetParams;
//! use serverfs_protocol::bridge::client::{BridgeClient, ClientOptions};
//!
//! let options = ClientOptions { call_timeout: Duration::from_secs(10), ..ClientOptions::default() };
//! let bridge = BridgeClient::new(PathBuf::from("/run/serverfs-agent-bridge/bridge.sock"), options);
//! match bridge.call(TaskGetParams { task_id: "agt_1".into() }).await {
//!     Ok(view) => println!("{:?}", view.status),
//!     // The MCP tool error: `CODE: message`, safe to show a client.
//!     Err(error) => println!("{}: {error}", error.code().as_str()),
//! }
//! # Ok(())
//! # }
//! ```

#[cfg(all(feature = "client", unix))]
pub mod client;
mod envelope;
mod error;
mod event;
mod field;
mod frame;
mod interaction;
mod method;
mod peer;
mod result;
mod runtime;
mod schema;
mod task;

pub use envelope::{RejectedRequest, Request, RequestEnvelope, Response};
pub use error::{BridgeErrorCode, ErrorBody, ProtocolError};
pub use event::{
    BridgeEvent, EVENT_SCHEMA_VERSION, EventPayload, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    ReconcileStatus, TaskEventsParams, TaskEventsResult,
};
pub use field::LiteralTrue;
pub use frame::{FrameDecoder, FrameTooLarge, MAX_FRAME_BYTES};
pub use interaction::{
    ApprovalCategory, ApprovalDecision, ApprovalOption, ApprovalOptionKind, ApprovalPayload,
    ApprovalResolution, FileChange, Interaction, InteractionKind, InteractionResolved,
    InteractionStatus, PendingInteraction, Question, QuestionAnswer, QuestionOption,
    QuestionPayload, QuestionResolution, RequestedPermission, TaskApprovalRespondParams,
    TaskQuestionAnswerParams,
};
pub use method::{BridgeCall, BridgeMethod, BridgeRequest};
pub use peer::{BridgePeerParams, BridgePeerResult};
pub use result::{ResultStorage, ResultSummary, TaskResultChunk, TaskResultReadParams};
pub use runtime::{
    CapabilityState, CatalogScope, CatalogStatus, InFlightRecovery, ModelCatalog, ModelDiscovery,
    ModelInfo, RuntimeInfo, RuntimeListParams, RuntimeListResult, RuntimeModelsParams,
};
pub use schema::json_schemas;
pub use task::{
    AgentProfile, TaskCancelParams, TaskCancelResult, TaskGetParams, TaskMessageSendParams,
    TaskMessageSendResult, TaskStatus, TaskSubmitParams, TaskSubmitResult, TaskView,
};

/// The Bridge RPC protocol version; a request with any other
/// `protocol_version` is refused with `PROTOCOL_VERSION_UNSUPPORTED`.
pub const PROTOCOL_VERSION: u32 = 1;

/// A point in time as integer milliseconds since the Unix epoch (UTC).
pub type EpochMillis = i64;

/// A free-form advisory object (Jev preflight, routing, model or approval
/// advice). Advice is never authorization and is never applied
/// automatically; its shape belongs to the advisor.
pub type Advice = serde_json::Map<String, serde_json::Value>;
