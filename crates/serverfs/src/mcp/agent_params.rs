//! Arguments of the ten agent tools (spec-agent-bridge.md §1.4). Unknown
//! arguments are refused, as for the file tools. Doc comments become the
//! published `inputSchema` descriptions.

use schemars::JsonSchema;
use serde::Deserialize;

/// The longest `wait_seconds` of the long-poll tools.
pub const MAX_WAIT_SECONDS: u64 = 45;

/// `list_agent_runtimes` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAgentRuntimesParams {}

/// What an agent task may do in its workdir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
pub enum ProfileParam {
    /// Read and report only.
    #[serde(rename = "review")]
    Review,
    /// May change files in the workdir (needs a workspace-write workdir).
    #[serde(rename = "workspace-write")]
    #[default]
    WorkspaceWrite,
}

impl ProfileParam {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProfileParam::Review => "review",
            ProfileParam::WorkspaceWrite => "workspace-write",
        }
    }
}

/// Arguments of `list_agent_models`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAgentModelsParams {
    /// Runtime name, as reported by `list_agent_runtimes`.
    pub runtime: String,
    /// For model advice: the workdir the task would run in.
    pub workdir: Option<String>,
    /// For model advice: the prompt the task would get.
    pub task_prompt: Option<String>,
    /// For model advice: the working directory, relative to the workdir.
    #[serde(default)]
    pub path: String,
    /// For model advice: the profile the task would use.
    #[serde(default)]
    pub profile: ProfileParam,
}

/// Arguments of `submit_agent_task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitAgentTaskParams {
    /// Runtime name, allowed on the workdir (see `list_workdirs`).
    pub runtime: String,
    /// Workdir alias, as reported by `list_workdirs`.
    pub workdir: String,
    /// What the agent should do (at most 64 KiB).
    pub prompt: String,
    /// Working directory of the agent, relative to the workdir root ("" is the root).
    #[serde(default)]
    pub path: String,
    /// `review` (read only) or `workspace-write` (may change files).
    #[serde(default)]
    pub profile: ProfileParam,
    /// A model for this task only; omit for the runtime's own default.
    #[schemars(length(max = 512))]
    pub model: Option<String>,
    /// A finished task of the same runtime and workdir whose session this
    /// task continues.
    pub continue_from_task_id: Option<String>,
    /// Your own id for this task, echoed in results and events.
    pub correlation_id: Option<String>,
    /// Makes the submission safe to retry: the same key with the same
    /// request returns the same task instead of starting another.
    pub idempotency_key: Option<String>,
}

/// Arguments of `get_agent_task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAgentTaskParams {
    /// The task id returned by `submit_agent_task`.
    pub task_id: String,
    /// Wait up to this many seconds (0–45) for the task to change before
    /// answering; 0 answers at once.
    #[schemars(range(max = 45))]
    #[serde(default)]
    pub wait_seconds: u64,
}

/// Arguments of `read_agent_task_events`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadAgentTaskEventsParams {
    /// The task id.
    pub task_id: String,
    /// Return events after this id; pass the previous `next_after_event_id`.
    #[schemars(range(min = 0))]
    #[serde(default)]
    pub after_event_id: i64,
    /// Most events to return (1–500).
    #[schemars(range(min = 1, max = 500))]
    #[serde(default = "default_event_limit")]
    pub limit: i64,
    /// Wait up to this many seconds (0–45) for a new event before
    /// answering with none.
    #[schemars(range(max = 45))]
    #[serde(default)]
    pub wait_seconds: u64,
}

fn default_event_limit() -> i64 {
    100
}

/// Arguments of `read_agent_task_result`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadAgentTaskResultParams {
    /// The task id.
    pub task_id: String,
    /// Byte offset to read from; pass the previous `next_offset_bytes`.
    #[schemars(range(min = 0))]
    #[serde(default)]
    pub offset_bytes: i64,
    /// Most bytes to return (1–65536); a chunk never splits a character.
    #[schemars(range(min = 1, max = 65536))]
    #[serde(default = "default_chunk")]
    pub max_bytes: i64,
}

fn default_chunk() -> i64 {
    65_536
}

/// A decision on a pending approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionParam {
    /// Allow this one action.
    ApproveOnce,
    /// Allow this action for the rest of the agent's session.
    ApproveSession,
    /// Refuse the action; the agent continues.
    Deny,
    /// Refuse and cancel the whole task.
    CancelTask,
}

impl DecisionParam {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            DecisionParam::ApproveOnce => "approve_once",
            DecisionParam::ApproveSession => "approve_session",
            DecisionParam::Deny => "deny",
            DecisionParam::CancelTask => "cancel_task",
        }
    }
}

/// Arguments of `respond_agent_approval`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RespondAgentApprovalParams {
    /// The task id.
    pub task_id: String,
    /// The `request_id` of the task's `pending_request`.
    pub request_id: String,
    /// One of the request's `available_decisions`.
    pub decision: DecisionParam,
    /// For a permission request: the `permission_id`s to grant (default:
    /// all requested, when approving).
    pub granted_permission_ids: Option<Vec<String>>,
    /// When the request lists `options`: the `option_id` your user chose,
    /// one of `pending_request.payload.options[].option_id`, with the
    /// decision its kind maps to (allow_once: approve_once, allow_always:
    /// approve_session, reject_once and reject_always: deny). Required
    /// then, except for cancel_task; refused when the request lists none.
    /// Show your user each option's label and kind: an allow_always option
    /// may let the agent's provider remember the permission beyond this
    /// task.
    pub option_id: Option<String>,
}

/// One answer of `answer_agent_question`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerParam {
    /// The question's `question_id`.
    pub question_id: String,
    /// Chosen `option_id`s (one unless the question is multi-select).
    #[serde(default)]
    pub selected_option_ids: Vec<String>,
    /// Free text, where the question allows it.
    pub text: Option<String>,
}

/// Arguments of `answer_agent_question`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerAgentQuestionParams {
    /// The task id.
    pub task_id: String,
    /// The `request_id` of the task's `pending_request`.
    pub request_id: String,
    /// One answer per question.
    #[schemars(length(min = 1))]
    pub answers: Vec<AnswerParam>,
}

/// Arguments of `send_agent_message`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendAgentMessageParams {
    /// The task id of a running task.
    pub task_id: String,
    /// Guidance for the agent (at most 64 KiB).
    pub message: String,
}

/// Arguments of `cancel_agent_task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelAgentTaskParams {
    /// The task id.
    pub task_id: String,
}
