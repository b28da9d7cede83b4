//! Pending interactions: approvals and questions a provider raises, and the
//! client's answers (spec-agent-bridge.md §4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::field::{LiteralTrue, Nullable, present, present_value};
use super::{Advice, EpochMillis};

/// A client's answer to an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Allow this one action.
    ApproveOnce,
    /// Allow it for the rest of the provider session (never persistently).
    /// Sent with an exact option of kind `allow_always`, it instead labels
    /// the provider's allow-always, whose scope the provider decides; the
    /// option's kind and label are shown to the human.
    ApproveSession,
    /// Refuse the action; the task goes on.
    Deny,
    /// Refuse and cancel the task.
    CancelTask,
}

impl ApprovalDecision {
    /// Every decision, in wire order.
    pub const ALL: &'static [ApprovalDecision] = &[
        ApprovalDecision::ApproveOnce,
        ApprovalDecision::ApproveSession,
        ApprovalDecision::Deny,
        ApprovalDecision::CancelTask,
    ];

    /// The wire string, e.g. `"approve_once"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApprovalDecision::ApproveOnce => "approve_once",
            ApprovalDecision::ApproveSession => "approve_session",
            ApprovalDecision::Deny => "deny",
            ApprovalDecision::CancelTask => "cancel_task",
        }
    }

    /// Parses a wire string; `None` for anything else (the service answers
    /// that with `INVALID_APPROVAL_DECISION`, spec §4.5 step 7).
    pub fn from_wire(text: &str) -> Option<ApprovalDecision> {
        match text {
            "approve_once" => Some(ApprovalDecision::ApproveOnce),
            "approve_session" => Some(ApprovalDecision::ApproveSession),
            "deny" => Some(ApprovalDecision::Deny),
            "cancel_task" => Some(ApprovalDecision::CancelTask),
            _ => None,
        }
    }
}

/// What an approval is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalCategory {
    /// Running a command.
    Command,
    /// Changing files.
    FileChange,
    /// A provider permission set (each item in `requested_permissions`).
    ProviderPermission,
    /// Network access.
    NetworkPermission,
    /// Calling an MCP tool.
    McpTool,
    /// Anything else.
    Other,
}

/// A file an approval would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileChange {
    /// Workdir-relative path (`<outside-workdir>` for anything outside).
    pub path: String,
}

/// One permission of a provider permission set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestedPermission {
    /// The id to list in `granted_permission_ids`.
    pub permission_id: String,
    /// The provider's permission kind.
    pub kind: String,
    /// The provider's detail, host paths redacted.
    pub details: Value,
}

/// The kind of an exact option a provider offers (ACP's permission option
/// kinds, spec-agent-bridge.md §4.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalOptionKind {
    /// Allow this one action.
    AllowOnce,
    /// Allow it from now on, with a scope the provider decides (it may
    /// persist a rule).
    AllowAlways,
    /// Refuse this one action.
    RejectOnce,
    /// Refuse it from now on, with a scope the provider decides.
    RejectAlways,
}

impl ApprovalOptionKind {
    /// The decision a client sends together with an option of this kind.
    ///
    /// For exact options `approve_session` merely labels the provider's
    /// allow-always, whose scope the provider decides; the option's kind
    /// and label are shown to the human, so choosing it is an informed,
    /// explicit choice — never something a neutral `approve_session`
    /// produces by itself (the option id is required alongside it).
    pub const fn decision(self) -> ApprovalDecision {
        match self {
            ApprovalOptionKind::AllowOnce => ApprovalDecision::ApproveOnce,
            ApprovalOptionKind::AllowAlways => ApprovalDecision::ApproveSession,
            ApprovalOptionKind::RejectOnce | ApprovalOptionKind::RejectAlways => {
                ApprovalDecision::Deny
            }
        }
    }
}

/// One exact option a provider offers for an approval (e.g. an ACP
/// `session/request_permission` option). The client answers with its
/// `option_id` and the decision its kind maps to (allow_once: approve_once,
/// allow_always: approve_session, reject_once and reject_always: deny).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalOption {
    /// The provider's opaque option id, passed back as `option_id`.
    pub option_id: String,
    /// The provider's label, to show the human.
    pub label: String,
    /// What choosing the option does.
    pub kind: ApprovalOptionKind,
}

/// A normalized approval request (spec §4.3).
///
/// Only `category` and `available_decisions` are always present; every
/// other field is absent when the provider gave nothing for it (never
/// `null`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalPayload {
    /// What the approval is about.
    pub category: ApprovalCategory,
    /// Short title.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub title: Option<String>,
    /// Why the provider asks.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub reason: Option<String>,
    /// The command, for display only (argv joined by spaces).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub command_display: Option<String>,
    /// Where the command would run, relative to the workdir.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub relative_cwd: Option<String>,
    /// Extra permissions the command asks for, as the provider states them.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    #[schemars(with = "Value")]
    pub additional_permissions: Option<Value>,
    /// Network context of the request, as the provider states it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    #[schemars(with = "Value")]
    pub network_approval_context: Option<Value>,
    /// Files the action would change.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Vec<FileChange>")]
    pub file_changes: Option<Vec<FileChange>>,
    /// The permission set of a `provider_permission` request.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Vec<RequestedPermission>")]
    pub requested_permissions: Option<Vec<RequestedPermission>>,
    /// The provider's tool name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub tool: Option<String>,
    /// The tool's input, host paths redacted.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    #[schemars(with = "Value")]
    pub tool_input: Option<Value>,
    /// The path the provider's sandbox blocked, relative to the workdir.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub blocked_path: Option<String>,
    /// The decisions on offer; when non-empty, any other is refused.
    pub available_decisions: Vec<ApprovalDecision>,
    /// The exact options on offer, for providers that need the human's
    /// choice of one native option rather than a coarse decision (spec
    /// §4.7). Absent when the provider offers only decisions; never `null`.
    /// When present and non-empty, every answer but `cancel_task` must name
    /// one of them by `option_id`, with the decision of its kind.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Vec<ApprovalOption>")]
    pub options: Option<Vec<ApprovalOption>>,
    /// Advisory recommendation added by the Bridge (Jev); never applied.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Advice")]
    pub approval_advice: Option<Advice>,
}

/// A normalized question request (spec §4.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionPayload {
    /// The questions; every one must be answered.
    pub questions: Vec<Question>,
}

/// One question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The id an answer names.
    pub question_id: String,
    /// The question text.
    pub prompt: String,
    /// The options to pick from (may be empty for free text).
    pub options: Vec<QuestionOption>,
    /// Whether more than one option may be picked.
    pub multi_select: bool,
    /// Whether a free-text answer is allowed.
    pub allow_free_text: bool,
}

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// The id an answer selects.
    pub option_id: String,
    /// Short label.
    pub label: String,
    /// Longer description.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub description: Option<String>,
    /// Preview of what the option leads to.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub preview: Option<String>,
}

/// The answer to one question: in `task.question.answer` and in the
/// normalized resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionAnswer {
    /// The question answered.
    pub question_id: String,
    /// Picked option ids. Absent: none (always written, possibly `[]`).
    #[serde(default)]
    pub selected_option_ids: Vec<String>,
    /// Free text, where the question allows it. Absent: none; never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub text: Option<String>,
}

/// How an approval was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalResolution {
    /// The decision.
    pub decision: ApprovalDecision,
    /// The permission ids the client selected; `[]` grants every requested
    /// permission on approval (and none on denial).
    pub granted_permission_ids: Vec<String>,
    /// The exact option the client chose, when the request offered
    /// options. Absent otherwise (and in resolutions stored before options
    /// existed); never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub option_id: Option<String>,
}

/// How a question was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionResolution {
    /// One answer per question.
    pub answers: Vec<QuestionAnswer>,
}

/// Whether an interaction still waits for an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InteractionStatus {
    /// Waiting.
    Pending,
    /// Answered.
    Resolved,
    /// Expired, withdrawn, or its task ended; late answers fail.
    Stale,
}

/// Approval or question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InteractionKind {
    /// An approval request.
    Approval,
    /// A question.
    Question,
}

/// A pending (or past) interaction record (spec §4.1), tagged by `kind`:
/// `{request_id, task_id, kind, status, payload, created_at, expires_at,
/// resolved_at, resolution}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PendingInteraction {
    /// An approval request.
    Approval(Box<Interaction<ApprovalPayload, ApprovalResolution>>),
    /// A question.
    Question(Interaction<QuestionPayload, QuestionResolution>),
}

impl PendingInteraction {
    /// Approval or question.
    pub const fn kind(&self) -> InteractionKind {
        match self {
            PendingInteraction::Approval(_) => InteractionKind::Approval,
            PendingInteraction::Question(_) => InteractionKind::Question,
        }
    }

    /// The interaction's request id.
    pub fn request_id(&self) -> &str {
        match self {
            PendingInteraction::Approval(record) => &record.request_id,
            PendingInteraction::Question(record) => &record.request_id,
        }
    }

    /// The interaction's status.
    pub const fn status(&self) -> InteractionStatus {
        match self {
            PendingInteraction::Approval(record) => record.status,
            PendingInteraction::Question(record) => record.status,
        }
    }
}

/// The fields of an interaction record besides its `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "P: Deserialize<'de>, R: Deserialize<'de>")
)]
#[schemars(rename = "{P}Record")]
pub struct Interaction<P, R> {
    /// The interaction id (`req_` + 24 hex).
    pub request_id: String,
    /// The task that raised it.
    pub task_id: String,
    /// Whether it still waits.
    pub status: InteractionStatus,
    /// What is asked.
    pub payload: P,
    /// When it was raised.
    pub created_at: EpochMillis,
    /// When it lapses: the interaction timeout or the task deadline,
    /// whichever is earlier.
    pub expires_at: EpochMillis,
    /// When it was resolved or went stale; `null` while pending.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<EpochMillis>")]
    pub resolved_at: Option<EpochMillis>,
    /// The normalized answer; `null` unless resolved.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<R>")]
    pub resolution: Option<R>,
}

/// `task.approval.respond` parameters.
///
/// `decision` stays a string here: the service checks the request's state
/// first and only then the decision (`INVALID_APPROVAL_DECISION`, spec §4.5
/// steps 2–7). Parse it with [`ApprovalDecision::from_wire`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskApprovalRespondParams {
    /// The task id.
    pub task_id: String,
    /// The approval's request id.
    pub request_id: String,
    /// One of [`ApprovalDecision`]'s wire strings.
    #[schemars(with = "ApprovalDecision")]
    pub decision: String,
    /// For a permission set, the ids to grant. Absent: all on approval;
    /// never `null`. A non-string item is `INVALID_REQUEST`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "Vec<String>")]
    pub granted_permission_ids: Option<Vec<String>>,
    /// The chosen exact option, one of the request's
    /// `payload.options[].option_id`: required when the request lists
    /// options (except for `cancel_task`), refused when it lists none.
    /// Absent: no option; never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "String")]
    pub option_id: Option<String>,
}

/// `task.question.answer` parameters.
///
/// `answers` is checked here only for being a list; the shape of each
/// answer is the service's `INVALID_QUESTION_ANSWER` (spec §4.5), after the
/// request's state. Decode them with
/// [`answers`](TaskQuestionAnswerParams::answers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskQuestionAnswerParams {
    /// The task id.
    pub task_id: String,
    /// The question's request id.
    pub request_id: String,
    /// One [`QuestionAnswer`] per question.
    #[schemars(with = "Vec<QuestionAnswer>")]
    pub answers: Vec<Value>,
}

impl TaskQuestionAnswerParams {
    /// The answers decoded strictly (unknown keys, a `null` text or a
    /// non-string id refused); `None` when any answer does not decode.
    pub fn answers(&self) -> Option<Vec<QuestionAnswer>> {
        self.answers
            .iter()
            .map(|answer| QuestionAnswer::deserialize(answer).ok())
            .collect()
    }
}

/// Result of `task.approval.respond` and `task.question.answer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InteractionResolved {
    /// The task id.
    pub task_id: String,
    /// The resolved request id.
    pub request_id: String,
    /// Always `true`.
    pub resolved: LiteralTrue,
    /// The task's correlation id, if any.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub correlation_id: Option<String>,
}
