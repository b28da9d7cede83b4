//! Bridge error codes, the error body of a failed response, and the
//! crate's codec error.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::frame::MAX_FRAME_BYTES;

macro_rules! bridge_error_codes {
    ($( $(#[$doc:meta])* $variant:ident => $wire:literal, )+) => {
        /// A stable error code of the Agent Bridge (spec-agent-bridge.md §11).
        ///
        /// Serializes to its `SCREAMING_SNAKE` wire string. The MCP server
        /// passes a Bridge error to its client verbatim as `CODE: message`,
        /// so these strings are as stable as the file-surface
        /// [`ErrorCode`](crate::ErrorCode)s.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema,
        )]
        pub enum BridgeErrorCode {
            $( $(#[$doc])* #[serde(rename = $wire)] $variant, )+
        }

        impl BridgeErrorCode {
            /// Every code, in the order of spec §11.
            pub const ALL: &'static [BridgeErrorCode] = &[ $( BridgeErrorCode::$variant, )+ ];

            /// The wire string, e.g. `"REQUEST_STALE"`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( BridgeErrorCode::$variant => $wire, )+
                }
            }
        }
    };
}

bridge_error_codes! {
    // Protocol (spec §2.3, §2.4).
    /// Malformed JSON, an envelope or parameter mismatch, a wrong type, or an
    /// invalid identifier, model, correlation id or idempotency key.
    InvalidRequest => "INVALID_REQUEST",
    /// `protocol_version` is an integer other than 1.
    ProtocolVersionUnsupported => "PROTOCOL_VERSION_UNSUPPORTED",
    /// The method is not a Bridge method (the ten of spec §2.5 or `bridge.peer`).
    MethodNotFound => "METHOD_NOT_FOUND",
    /// A request line is longer than 1 MiB; the connection is closed.
    RequestTooLarge => "REQUEST_TOO_LARGE",
    /// The encoded response would be longer than 1 MiB.
    ResponseTooLarge => "RESPONSE_TOO_LARGE",
    /// An unexpected internal failure; no detail is given.
    BridgeProtocolError => "BRIDGE_PROTOCOL_ERROR",
    // Transport and startup (spec §2.1, §2.2).
    /// The peer's uid/gid (or SID) is not allowed or could not be measured.
    PeerNotAuthorized => "PEER_NOT_AUTHORIZED",
    /// The socket path is occupied, active, or unsafe to recover.
    SocketPathInUse => "SOCKET_PATH_IN_USE",
    /// The socket's parent directory is unsafe, or its group could not be set.
    SocketDirectoryUnsafe => "SOCKET_DIRECTORY_UNSAFE",
    /// The socket path exceeds the `sun_path` budget (macOS).
    SocketPathTooLong => "SOCKET_PATH_TOO_LONG",
    /// The named pipe is squatted (Windows).
    PipeNameUnavailable => "PIPE_NAME_UNAVAILABLE",
    /// The pipe peer cannot be impersonated to measure its identity (Windows).
    PeerIdentityUnavailable => "PEER_IDENTITY_UNAVAILABLE",
    /// The Bridge's own canonical SID is unavailable (Windows).
    BridgeIdentityUnavailable => "BRIDGE_IDENTITY_UNAVAILABLE",
    // Service and platform.
    /// The Bridge is shutting down.
    BridgeClosed => "BRIDGE_CLOSED",
    /// A platform seam is not available on this operating system.
    BridgePlatformUnsupported => "BRIDGE_PLATFORM_UNSUPPORTED",
    /// The private state directory is unsafe (native/Windows state seam).
    PrivateStateUnsafe => "PRIVATE_STATE_UNSAFE",
    /// The data home cannot be located or created (native/Windows).
    DataHomeUnavailable => "DATA_HOME_UNAVAILABLE",
    /// The Bridge configuration is invalid (configuration tools).
    BridgeConfigInvalid => "BRIDGE_CONFIG_INVALID",
    // Policy (spec §8.6).
    /// The workdir alias is not configured.
    WorkdirNotFound => "WORKDIR_NOT_FOUND",
    /// Agent execution is disabled on the workdir.
    AgentDisabled => "AGENT_DISABLED",
    /// The runtime is not in the workdir's allowlist.
    AgentRuntimeNotAllowed => "AGENT_RUNTIME_NOT_ALLOWED",
    /// The profile is unknown, exceeds the workdir mode, targets a read-only
    /// workdir, escalates a continuation, or a native runtime lacks
    /// `workspace-write`.
    AgentProfileNotAllowed => "AGENT_PROFILE_NOT_ALLOWED",
    /// The task path contains NUL, a backslash or drive, is absolute, climbs
    /// with `..`, escapes the workdir, or is not a directory.
    InvalidWorkdirPath => "INVALID_WORKDIR_PATH",
    /// The task path does not exist.
    WorkdirPathNotFound => "WORKDIR_PATH_NOT_FOUND",
    // Runtimes and providers (spec §9).
    /// The adapter is missing, closed or disabled, or its probe failed.
    AgentRuntimeUnavailable => "AGENT_RUNTIME_UNAVAILABLE",
    /// The provider daemon or listener is not ready, or a required proxy is absent.
    AgentRuntimeNotReady => "AGENT_RUNTIME_NOT_READY",
    /// The provider failed, returned an invalid result or interaction, or
    /// does not support live steering.
    AgentProviderError => "AGENT_PROVIDER_ERROR",
    /// The provider transport was lost or stayed idle too long.
    AgentProviderDisconnected => "AGENT_PROVIDER_DISCONNECTED",
    /// Reconciliation proved the provider stopped; the task was interrupted.
    AgentProviderInactive => "AGENT_PROVIDER_INACTIVE",
    /// The preconditions of `continue_from_task_id` do not hold.
    AgentSessionNotResumable => "AGENT_SESSION_NOT_RESUMABLE",
    // Tasks (spec §3).
    /// The task id is unknown or was purged.
    AgentTaskNotFound => "AGENT_TASK_NOT_FOUND",
    /// A new task id collided with an existing one.
    AgentTaskExists => "AGENT_TASK_EXISTS",
    /// The maximum number of active tasks is reached.
    AgentTaskLimitReached => "AGENT_TASK_LIMIT_REACHED",
    /// Steering a task that is queued or whose provider is not active.
    AgentTaskNotActive => "AGENT_TASK_NOT_ACTIVE",
    /// Steering a task that already ended.
    AgentTaskTerminal => "AGENT_TASK_TERMINAL",
    /// The task deadline passed.
    AgentTaskTimedOut => "AGENT_TASK_TIMED_OUT",
    /// The prompt is larger than 64 KiB.
    AgentPromptTooLarge => "AGENT_PROMPT_TOO_LARGE",
    /// The steering message is larger than 64 KiB.
    AgentMessageTooLarge => "AGENT_MESSAGE_TOO_LARGE",
    /// An idempotency key was reused for a different request.
    AgentIdempotencyConflict => "AGENT_IDEMPOTENCY_CONFLICT",
    /// An illegal task state transition was attempted.
    InvalidTaskTransition => "INVALID_TASK_TRANSITION",
    /// The task was interrupted because the Bridge stopped.
    BridgeShutdown => "BRIDGE_SHUTDOWN",
    /// The task was found active when the Bridge restarted.
    BridgeRestarted => "BRIDGE_RESTARTED",
    /// Submission failed after the task row was created.
    BridgeSchedulingFailed => "BRIDGE_SCHEDULING_FAILED",
    // Events (spec §5).
    /// An event payload is larger than 64 KiB.
    AgentEventTooLarge => "AGENT_EVENT_TOO_LARGE",
    /// The task reached its event cap.
    AgentEventLimitReached => "AGENT_EVENT_LIMIT_REACHED",
    /// An event cursor or page limit is out of range.
    InvalidLimit => "INVALID_LIMIT",
    // Pending interactions (spec §4).
    /// The interaction request id is unknown.
    RequestNotFound => "REQUEST_NOT_FOUND",
    /// The interaction was already resolved (or another answer won the race).
    RequestAlreadyResolved => "REQUEST_ALREADY_RESOLVED",
    /// The interaction is no longer the task's active request: expired,
    /// withdrawn, or the task ended.
    RequestStale => "REQUEST_STALE",
    /// The task already has a pending interaction.
    RequestPending => "REQUEST_PENDING",
    /// An interaction request id collided with an existing one.
    RequestExists => "REQUEST_EXISTS",
    /// Wrong interaction kind, an unknown or unoffered decision, bad
    /// permission ids, or a missing, unknown, mismatched or unexpected
    /// `option_id`.
    InvalidApprovalDecision => "INVALID_APPROVAL_DECISION",
    /// The answers do not fit the question.
    InvalidQuestionAnswer => "INVALID_QUESTION_ANSWER",
    /// A granted permission was not requested, or a provider asked a secret question.
    PermissionOutsidePolicy => "PERMISSION_OUTSIDE_POLICY",
    /// An interaction payload or resolution is larger than 64 KiB.
    AgentInteractionTooLarge => "AGENT_INTERACTION_TOO_LARGE",
    /// The interaction deadline passed; the task was interrupted.
    AgentInteractionTimedOut => "AGENT_INTERACTION_TIMED_OUT",
    /// The interaction had already expired when the adapter awaited it.
    AgentInteractionExpired => "AGENT_INTERACTION_EXPIRED",
    // Results (spec §6).
    /// The final result is larger than 8 MiB.
    AgentResultTooLarge => "AGENT_RESULT_TOO_LARGE",
    /// The result is not spooled, or its spool file is missing.
    AgentResultNotRetrievable => "AGENT_RESULT_NOT_RETRIEVABLE",
    /// Writing, reading or deleting the result spool was unsafe or failed.
    AgentResultStorageError => "AGENT_RESULT_STORAGE_ERROR",
    /// A result offset is negative, past the end, or inside a UTF-8 character.
    InvalidResultOffset => "INVALID_RESULT_OFFSET",
    /// A result chunk limit is out of range or too small for one character.
    InvalidResultLimit => "INVALID_RESULT_LIMIT",
    // Writer lease and recovery guard (spec §8).
    /// Another writer holds the workdir's lease.
    WorkdirBusy => "WORKDIR_BUSY",
    /// The workdir has unresolved Agent recovery state.
    WorkdirRecoveryRequired => "WORKDIR_RECOVERY_REQUIRED",
    /// A lease artifact is missing or not a regular file.
    LockPathUnsafe => "LOCK_PATH_UNSAFE",
    /// A legacy slot number is outside `1..=16`.
    InvalidWorkdirSlot => "INVALID_WORKDIR_SLOT",
    // MCP-side Bridge client (spec §1.5); never sent by the Bridge itself.
    /// The Bridge could not be reached, timed out, or closed the connection.
    AgentBridgeUnavailable => "AGENT_BRIDGE_UNAVAILABLE",
    /// The Bridge answered with a malformed, mismatched or oversized response.
    AgentBridgeProtocolError => "AGENT_BRIDGE_PROTOCOL_ERROR",
    /// Any other failure of a Bridge call.
    AgentBridgeError => "AGENT_BRIDGE_ERROR",
}

/// The `error` object of a failed response: `{"code", "message"}`.
///
/// The message is short, stable, and never holds a host path or secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// The stable code.
    pub code: BridgeErrorCode,
    /// Human-readable detail, safe to show a client.
    pub message: String,
}

impl ErrorBody {
    /// An error body with `code` and `message`.
    pub fn new(code: BridgeErrorCode, message: impl Into<String>) -> ErrorBody {
        ErrorBody {
            code,
            message: message.into(),
        }
    }
}

impl From<&ProtocolError> for ErrorBody {
    fn from(error: &ProtocolError) -> ErrorBody {
        ErrorBody::new(error.code(), error.to_string())
    }
}

/// A failure to frame, decode or encode a Bridge message.
///
/// `Display` is the stable `message` of the error response and never quotes
/// caller input except the (bounded) name of an unknown method; every
/// variant maps to one [`BridgeErrorCode`] through [`ProtocolError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The frame is not UTF-8 JSON (`NaN` and `Infinity` are not JSON).
    #[error("request must be valid UTF-8 JSON")]
    InvalidJson,
    /// The request is not an object whose keys are exactly
    /// `protocol_version`, `request_id`, `method` and `params`.
    #[error("request fields must be exactly protocol_version, request_id, method and params")]
    EnvelopeFields,
    /// `protocol_version` is not a JSON integer (booleans included).
    #[error("protocol_version must be an integer")]
    ProtocolVersionType,
    /// `protocol_version` is an integer other than
    /// [`PROTOCOL_VERSION`](super::PROTOCOL_VERSION).
    #[error("unsupported protocol version (this Bridge speaks version 1)")]
    ProtocolVersionUnsupported,
    /// `request_id` is not a non-empty string.
    #[error("request_id must be a non-empty string")]
    RequestId,
    /// `method` is not a non-empty string.
    #[error("method must be a non-empty string")]
    Method,
    /// `params` is not a JSON object.
    #[error("params must be a JSON object")]
    Params,
    /// The method is not a Bridge method; holds its name, cut to 128 bytes.
    #[error("unknown bridge method: {0}")]
    UnknownMethod(String),
    /// A required parameter is missing, an unknown one is present, or one
    /// has the wrong type.
    #[error("method parameters do not match protocol")]
    InvalidParams,
    /// A request line (newline included) is longer than [`MAX_FRAME_BYTES`].
    #[error("request exceeds {MAX_FRAME_BYTES} bytes")]
    RequestTooLarge,
    /// A response line (newline included) would be longer than
    /// [`MAX_FRAME_BYTES`].
    #[error("response exceeds {MAX_FRAME_BYTES} bytes")]
    ResponseTooLarge,
    /// A response frame is not a well-formed response envelope, or its
    /// result does not match the method (client side).
    #[error("Agent Bridge protocol failure")]
    MalformedResponse,
    /// Encoding failed in a way the types rule out; reported without detail.
    #[error("protocol failure")]
    Internal,
}

impl ProtocolError {
    /// The stable code of this failure.
    pub const fn code(&self) -> BridgeErrorCode {
        match self {
            ProtocolError::InvalidJson
            | ProtocolError::EnvelopeFields
            | ProtocolError::ProtocolVersionType
            | ProtocolError::RequestId
            | ProtocolError::Method
            | ProtocolError::Params
            | ProtocolError::InvalidParams => BridgeErrorCode::InvalidRequest,
            ProtocolError::ProtocolVersionUnsupported => {
                BridgeErrorCode::ProtocolVersionUnsupported
            }
            ProtocolError::UnknownMethod(_) => BridgeErrorCode::MethodNotFound,
            ProtocolError::RequestTooLarge => BridgeErrorCode::RequestTooLarge,
            ProtocolError::ResponseTooLarge => BridgeErrorCode::ResponseTooLarge,
            ProtocolError::MalformedResponse => BridgeErrorCode::AgentBridgeProtocolError,
            ProtocolError::Internal => BridgeErrorCode::BridgeProtocolError,
        }
    }

    /// An [`UnknownMethod`](ProtocolError::UnknownMethod) error whose echoed
    /// name is cut at a character boundary to at most 128 bytes, so a huge
    /// method string cannot inflate the error response.
    #[cold]
    pub fn unknown_method(method: &str) -> ProtocolError {
        const MAX_ECHO: usize = 128;
        let end = method
            .char_indices()
            .map(|(at, c)| at + c.len_utf8())
            .take_while(|&end| end <= MAX_ECHO)
            .last()
            .unwrap_or(0);
        ProtocolError::UnknownMethod(method[..end].to_owned())
    }
}
