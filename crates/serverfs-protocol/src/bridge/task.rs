//! Tasks: submission, the task view, steering and cancellation
//! (spec-agent-bridge.md §2.5, §2.6, §3).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::BridgeErrorCode;
use super::field::{LiteralTrue, Nullable, present};
use super::interaction::PendingInteraction;
use super::result::ResultSummary;
use super::{Advice, EpochMillis};

/// The lifecycle state of a task (spec §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Accepted, not yet started.
    Queued,
    /// The runner is starting the provider turn.
    Starting,
    /// The provider is working.
    Running,
    /// Blocked on a pending approval.
    WaitingForApproval,
    /// Blocked on a pending question.
    WaitingForQuestion,
    /// Finished with a result (terminal).
    Succeeded,
    /// Finished with an error (terminal).
    Failed,
    /// Cancelled by the client (terminal).
    Cancelled,
    /// Stopped by a timeout, shutdown, restart or reconciliation (terminal).
    Interrupted,
}

impl TaskStatus {
    /// Every status, non-terminal first.
    pub const ALL: &'static [TaskStatus] = &[
        TaskStatus::Queued,
        TaskStatus::Starting,
        TaskStatus::Running,
        TaskStatus::WaitingForApproval,
        TaskStatus::WaitingForQuestion,
        TaskStatus::Succeeded,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
        TaskStatus::Interrupted,
    ];

    /// The wire name, e.g. `"waiting_for_approval"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Starting => "starting",
            TaskStatus::Running => "running",
            TaskStatus::WaitingForApproval => "waiting_for_approval",
            TaskStatus::WaitingForQuestion => "waiting_for_question",
            TaskStatus::Succeeded => "succeeded",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Interrupted => "interrupted",
        }
    }

    /// Whether the task has ended; a terminal task never runs again.
    pub const fn is_terminal(self) -> bool {
        match self {
            TaskStatus::Queued
            | TaskStatus::Starting
            | TaskStatus::Running
            | TaskStatus::WaitingForApproval
            | TaskStatus::WaitingForQuestion => false,
            TaskStatus::Succeeded
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted => true,
        }
    }
}

/// What a task may do to its workdir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum AgentProfile {
    /// Read and report only; takes no writer lease.
    #[serde(rename = "review")]
    Review,
    /// May modify the workdir; holds its writer lease while active.
    #[serde(rename = "workspace-write")]
    WorkspaceWrite,
}

impl AgentProfile {
    /// The profile used when a request names none.
    pub const DEFAULT: AgentProfile = AgentProfile::WorkspaceWrite;

    /// The wire string, e.g. `"workspace-write"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AgentProfile::Review => "review",
            AgentProfile::WorkspaceWrite => "workspace-write",
        }
    }

    /// Parses a wire string; `None` for anything else (the service answers
    /// that with `AGENT_PROFILE_NOT_ALLOWED`, spec §3.4 step 8).
    pub fn from_wire(text: &str) -> Option<AgentProfile> {
        match text {
            "review" => Some(AgentProfile::Review),
            "workspace-write" => Some(AgentProfile::WorkspaceWrite),
            _ => None,
        }
    }
}

/// `task.submit` parameters.
///
/// `profile` stays a string here: an unknown profile is the service's
/// `AGENT_PROFILE_NOT_ALLOWED`, checked after the prompt size (spec §3.4),
/// not a protocol `INVALID_REQUEST`. Parse it with [`AgentProfile::from_wire`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSubmitParams {
    /// Runtime name, e.g. `codex`.
    pub runtime: String,
    /// Workdir alias.
    pub workdir: String,
    /// Working directory relative to the workdir root; `""` is the root.
    /// Required (may be empty).
    pub path: String,
    /// `review` or `workspace-write`.
    #[schemars(with = "AgentProfile")]
    pub profile: String,
    /// The task prompt (at most 64 KiB of UTF-8).
    pub prompt: String,
    /// Request-scoped model override. Absent or `null`: the provider default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A terminal task of the same runtime and workdir to continue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continue_from_task_id: Option<String>,
    /// Opaque caller correlation id, echoed in results and events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// Opaque key making the submission idempotent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// `task.submit` result. Submission returns before the task runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSubmitResult {
    /// The task id (`agt_` + 24 hex).
    pub task_id: String,
    /// `queued` for a new task; the current status on an idempotent replay.
    pub status: TaskStatus,
    /// The task's correlation id, `null` when none was given.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub correlation_id: Option<String>,
    /// The task's idempotency key, `null` when none was given.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub idempotency_key: Option<String>,
    /// Advisory preflight (Jev), only for a new task when the advisor is on.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Advice")]
    pub preflight: Option<Advice>,
    /// Advisory routing hint derived from the preflight; never applied.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Advice")]
    pub routing_advice: Option<Advice>,
}

/// `task.get` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskGetParams {
    /// The task id.
    pub task_id: String,
}

/// A task as `task.get` reports it (spec §3.3).
///
/// Provider-native session and turn ids, the request fingerprint and the
/// spool location are never part of the view. Times are epoch milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskView {
    /// The task id.
    pub task_id: String,
    /// Runtime name.
    pub runtime: String,
    /// Workdir alias.
    pub workdir_alias: String,
    /// Legacy Compose slot (`1..=16`) keying the writer lease, or `null` for
    /// an alias-keyed lease (the reference used the sentinel `0`).
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<u8>")]
    pub workdir_slot: Option<u8>,
    /// Normalized working directory relative to the workdir; `""` is the root.
    pub relative_cwd: String,
    /// The task's profile.
    pub profile: AgentProfile,
    /// The request-scoped model, `null` for the provider default.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub requested_model: Option<String>,
    /// Current state.
    pub status: TaskStatus,
    /// When the task was accepted.
    pub created_at: EpochMillis,
    /// When the runner started it; `null` while queued.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<EpochMillis>")]
    pub started_at: Option<EpochMillis>,
    /// Last state change.
    pub updated_at: EpochMillis,
    /// When it reached a terminal state; `null` before.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<EpochMillis>")]
    pub completed_at: Option<EpochMillis>,
    /// Submission time plus the task timeout.
    pub deadline_at: EpochMillis,
    /// The task this one continues, if any.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub continue_from_task_id: Option<String>,
    /// The caller's correlation id, if any.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub correlation_id: Option<String>,
    /// The idempotency key, if any.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub idempotency_key: Option<String>,
    /// The final response: the whole text when stored inline, a UTF-8-safe
    /// prefix when spooled; `null` until the task succeeds.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub final_response: Option<String>,
    /// Whether `final_response` is only a prefix (the result is spooled;
    /// read it with `task.result.read`).
    pub final_response_truncated: bool,
    /// Size and digest of the stored result; `null` until there is one.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<ResultSummary>")]
    pub result: Option<ResultSummary>,
    /// The immutable execution manifest (spec §3.5, schema v2).
    pub manifest: Map<String, Value>,
    /// SHA-256 (lowercase hex) of the manifest's canonical JSON.
    pub manifest_sha256: String,
    /// Why the task failed or was interrupted; `null` otherwise.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<BridgeErrorCode>")]
    pub error_code: Option<BridgeErrorCode>,
    /// Detail for `error_code` (host paths redacted); `null` otherwise.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub error_message: Option<String>,
    /// The id of the pending interaction, if the task is waiting on one.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub pending_request_id: Option<String>,
    /// The full pending interaction when `pending_request_id` is set.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<PendingInteraction>")]
    pub pending_request: Option<PendingInteraction>,
}

/// `task.message.send` parameters: steer an active task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskMessageSendParams {
    /// The task id.
    pub task_id: String,
    /// The message (at most 64 KiB of UTF-8).
    pub message: String,
}

/// `task.message.send` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskMessageSendResult {
    /// The task id.
    pub task_id: String,
    /// Always `true`.
    pub accepted: LiteralTrue,
    /// The task's correlation id, if any.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub correlation_id: Option<String>,
}

/// `task.cancel` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskCancelParams {
    /// The task id.
    pub task_id: String,
}

/// `task.cancel` result; repeat-safe (a terminal task reports its status
/// unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskCancelResult {
    /// The task id.
    pub task_id: String,
    /// `cancelled`, or the terminal status the task already had.
    pub status: TaskStatus,
    /// The task's correlation id, if any.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub correlation_id: Option<String>,
}
