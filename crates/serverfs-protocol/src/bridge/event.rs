//! Task events and their pagination: `task.events`
//! (spec-agent-bridge.md §5).
//!
//! An event's `event_type` and `payload` are one adjacently tagged enum,
//! [`EventPayload`], declared once in the table below; [`BridgeEvent`] adds
//! the envelope fields around it.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::BridgeErrorCode;
use super::field::{Nullable, is_false, present, present_value};
use super::interaction::{ApprovalDecision, ApprovalResolution, InteractionKind};
use super::result::ResultStorage;
use super::{Advice, EpochMillis};

/// The version of the event envelope; every event carries it.
pub const EVENT_SCHEMA_VERSION: u32 = 1;

/// `task.events` parameters.
///
/// The integers are plain `i64` here: a negative cursor or a limit outside
/// `1..=500` is the service's `INVALID_LIMIT`, not a protocol error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskEventsParams {
    /// The task id.
    pub task_id: String,
    /// Return events with a larger id. Absent: 0; never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "i64")]
    pub after_event_id: Option<i64>,
    /// Most events to return, `1..=500`. Absent: 100; never `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    #[schemars(with = "i64")]
    pub limit: Option<i64>,
}

impl TaskEventsParams {
    /// The page size used when `limit` is absent.
    pub const DEFAULT_LIMIT: i64 = 100;
    /// The largest page.
    pub const MAX_LIMIT: i64 = 500;
}

/// `task.events` result: one page, ascending by `event_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskEventsResult {
    /// The task's correlation id, if any.
    #[serde(deserialize_with = "Option::deserialize")]
    #[schemars(with = "Nullable<String>")]
    pub correlation_id: Option<String>,
    /// The events.
    pub events: Vec<BridgeEvent>,
    /// The cursor for the next page: the last returned id, or the request's
    /// cursor when the page is empty.
    pub next_after_event_id: i64,
}

/// One persisted task event:
/// `{event_id, task_id, correlation_id, event_type, payload, created_at,
/// schema_version: 1}`.
///
/// Decoding refuses unknown keys, an unknown `event_type`, a payload that
/// does not match its type, and any `schema_version` but 1.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "EventWire")]
pub struct BridgeEvent {
    /// Strictly increasing across all tasks (not dense per task).
    pub event_id: i64,
    /// The task.
    pub task_id: String,
    /// The task's correlation id, if any.
    pub correlation_id: Option<String>,
    /// When the event was recorded.
    pub created_at: EpochMillis,
    /// `event_type` and `payload`.
    pub event: EventPayload,
}

/// The envelope as encoded: borrowed, so encoding copies nothing.
#[derive(Serialize)]
struct EventOut<'a> {
    event_id: i64,
    task_id: &'a str,
    correlation_id: &'a Option<String>,
    // Flattening is for encoding only: decoding goes through `EventWire`,
    // which denies unknown fields without `flatten`.
    #[serde(flatten)]
    event: &'a EventPayload,
    created_at: EpochMillis,
    schema_version: u32,
}

impl Serialize for BridgeEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        EventOut {
            event_id: self.event_id,
            task_id: &self.task_id,
            correlation_id: &self.correlation_id,
            event: &self.event,
            created_at: self.created_at,
            schema_version: EVENT_SCHEMA_VERSION,
        }
        .serialize(serializer)
    }
}

/// Stage one of decoding: the strict envelope with the payload still raw.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventWire {
    event_id: i64,
    task_id: String,
    #[serde(deserialize_with = "Option::deserialize")]
    correlation_id: Option<String>,
    event_type: String,
    payload: Value,
    created_at: EpochMillis,
    schema_version: u32,
}

/// Why an event's envelope decoded but the event did not (serde reports
/// it as the decode error).
#[derive(Debug, thiserror::Error)]
enum EventDecodeError {
    #[error("unsupported event schema_version {0} (expected {EVENT_SCHEMA_VERSION})")]
    SchemaVersion(u32),
    #[error("{0}")]
    Payload(serde_json::Error),
}

impl TryFrom<EventWire> for BridgeEvent {
    type Error = EventDecodeError;

    fn try_from(wire: EventWire) -> Result<BridgeEvent, EventDecodeError> {
        if wire.schema_version != EVENT_SCHEMA_VERSION {
            return Err(EventDecodeError::SchemaVersion(wire.schema_version));
        }
        // Stage two: the adjacently tagged pair, decoded by its own type.
        let mut pair = Map::new();
        pair.insert("event_type".to_owned(), Value::String(wire.event_type));
        pair.insert("payload".to_owned(), wire.payload);
        let event =
            EventPayload::deserialize(Value::Object(pair)).map_err(EventDecodeError::Payload)?;
        Ok(BridgeEvent {
            event_id: wire.event_id,
            task_id: wire.task_id,
            correlation_id: wire.correlation_id,
            created_at: wire.created_at,
            event,
        })
    }
}

// The published shape of `BridgeEvent`; used for schema generation only.
/// One task event: envelope fields plus an `event_type` and its `payload`.
#[derive(JsonSchema)]
#[schemars(rename = "BridgeEvent", extend("unevaluatedProperties" = false))]
#[expect(dead_code, reason = "schema generation only: never constructed")]
struct EventSchema {
    event_id: i64,
    task_id: String,
    #[schemars(with = "Nullable<String>")]
    correlation_id: Option<String>,
    #[serde(flatten)]
    event: EventPayload,
    created_at: EpochMillis,
    #[schemars(extend("const" = 1))]
    schema_version: u32,
}

impl JsonSchema for BridgeEvent {
    fn schema_name() -> Cow<'static, str> {
        "BridgeEvent".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        EventSchema::json_schema(generator)
    }
}

/// Outcome of reconciling a task with its provider after a restart or
/// before reusing a workdir (spec §8.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReconcileStatus {
    /// The provider turn is still running and was reattached.
    Reattached,
    /// The provider session can be continued by a new task.
    SessionResumable,
    /// Nothing can be recovered.
    NotRecoverable,
    /// The provider's state could not be established.
    Unknown,
}

/// One step of an agent's plan (`plan.updated`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanEntry {
    /// What the step is, redacted; the adapter may cut it (the event's
    /// `truncated` then says so).
    pub content: String,
    /// How far the agent got with it.
    pub status: PlanEntryStatus,
    /// How much it matters to the agent.
    pub priority: PlanEntryPriority,
}

/// Where a [`PlanEntry`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanEntryStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// How much a [`PlanEntry`] matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanEntryPriority {
    /// Critical to the goal.
    High,
    /// Important, not critical.
    Medium,
    /// Nice to have.
    Low,
}

macro_rules! bridge_events {
    ($( $(#[$doc:meta])* $variant:ident => $wire:literal $body:tt, )+) => {
        /// An event's type and payload, adjacently tagged as
        /// `{"event_type": …, "payload": …}`.
        ///
        /// Payloads never carry host paths, prompts or secrets; the Bridge
        /// redacts them before storing (spec §5.5).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "event_type", content = "payload", deny_unknown_fields)]
        pub enum EventPayload {
            $( $(#[$doc])* #[serde(rename = $wire)] $variant $body, )+
        }

        impl EventPayload {
            /// Every `event_type` wire string, in catalog order.
            pub const EVENT_TYPES: &'static [&'static str] = &[ $( $wire, )+ ];

            /// This event's `event_type` wire string.
            pub const fn event_type(&self) -> &'static str {
                match self {
                    $( EventPayload::$variant { .. } => $wire, )+
                }
            }
        }
    };
}

bridge_events! {
    /// Advisory preflight of the prompt (Jev), recorded at submit.
    TaskPreflight => "task.preflight" (Advice),
    /// Advisory routing hint derived from the preflight.
    TaskRoutingAdvice => "task.routing_advice" (Advice),
    /// The runner started the task.
    TaskStarted => "task.started" {
        /// Runtime name.
        runtime: String,
    },
    /// The provider began its turn.
    TurnStarted => "turn.started" {
        /// Runtime name, when the adapter reports it; never `null`.
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
        #[schemars(with = "String")]
        runtime: Option<String>,
    },
    /// A message from the agent. Oversized text is cut to a UTF-8-safe
    /// prefix with `truncated`, `size_bytes` and `sha256` describing the
    /// whole; the final result is never cut this way.
    AgentMessage => "agent.message" {
        /// The text, or its prefix when `truncated`.
        text: String,
        /// The provider's message phase, if any.
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
        #[schemars(with = "String")]
        phase: Option<String>,
        /// Whether `text` is a prefix. Absent when false.
        #[serde(default, skip_serializing_if = "is_false")]
        truncated: bool,
        /// Size of the whole text in bytes (only when truncated).
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
        #[schemars(with = "u64")]
        size_bytes: Option<u64>,
        /// SHA-256 of the whole text, lowercase hex (only when truncated).
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
        #[schemars(with = "String")]
        sha256: Option<String>,
    },
    /// The provider started a command.
    CommandStarted => "command.started" {
        /// The command, for display.
        command: String,
        /// The provider's tool-use id.
        tool_use_id: String,
    },
    /// The provider started changing files.
    FileChangeStarted => "file_change.started" {
        /// The provider's tool name.
        tool: String,
        /// The provider's tool-use id.
        tool_use_id: String,
        /// The tool input, redacted; absent when not reported.
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present_value")]
        #[schemars(with = "Value")]
        input: Option<Value>,
    },
    /// The provider started another tool.
    ToolStarted => "tool.started" {
        /// The provider's tool name.
        tool: String,
        /// The provider's tool-use id.
        tool_use_id: String,
        /// The tool input, redacted; absent when not reported.
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present_value")]
        #[schemars(with = "Value")]
        input: Option<Value>,
    },
    /// A provider item started (Codex): `{type, …}` as the provider reports it.
    ItemStarted => "item.started" (Map<String, Value>),
    /// A provider item completed (Codex): `{type, …}` as the provider reports it.
    ItemCompleted => "item.completed" (Map<String, Value>),
    /// The agent's plan for the turn as it stands now (ACP): each event
    /// replaces the one before. Bounded by the adapter: entries beyond its
    /// limit or of a kind it does not know are left out, and long ones cut.
    PlanUpdated => "plan.updated" {
        /// The steps, in the agent's order.
        entries: Vec<PlanEntry>,
        /// Whether entries were left out or cut. Absent when false.
        #[serde(default, skip_serializing_if = "is_false")]
        truncated: bool,
    },
    /// The provider reported an error.
    ProviderError => "provider.error" {
        /// The provider's message, redacted.
        message: String,
        /// Whether the provider retries by itself.
        will_retry: bool,
    },
    /// A permission-mode tool call failed (Qoder).
    PermissionFailed => "permission.failed" {
        /// The provider's tool name.
        tool: String,
        /// The provider's error class.
        error_class: String,
        /// The provider's message, redacted.
        message: String,
    },
    /// Advisory recommendation on the pending approval (Jev).
    ApprovalAdvice => "approval.advice" (Advice),
    /// The task now waits for an approval.
    ApprovalRequested => "approval.requested" {
        /// The approval's request id.
        request_id: String,
        /// When it lapses.
        expires_at: EpochMillis,
    },
    /// The task now waits for an answer.
    QuestionRequested => "question.requested" {
        /// The question's request id.
        request_id: String,
        /// When it lapses.
        expires_at: EpochMillis,
    },
    /// An approval was resolved.
    ApprovalResolved => "approval.resolved" {
        /// The decision.
        decision: ApprovalDecision,
    },
    /// A question was answered.
    QuestionAnswered => "question.answered" {
        /// How many questions were answered.
        question_count: u32,
    },
    /// The provider withdrew its request; the task runs again.
    InteractionStale => "interaction.stale" {
        /// The withdrawn request id.
        request_id: String,
    },
    /// An interaction lapsed; the task was interrupted.
    InteractionExpired => "interaction.expired" {
        /// The lapsed request id.
        request_id: String,
        /// Approval or question.
        kind: InteractionKind,
    },
    /// The client steered the task (the text itself is never recorded).
    UserMessage => "user.message" {
        /// Size of the message in bytes.
        bytes: u64,
    },
    /// The final result was written to the spool.
    TaskResultSpooled => "task.result_spooled" {
        /// Size in bytes.
        size_bytes: u64,
        /// SHA-256, lowercase hex.
        sha256: String,
    },
    /// The task succeeded.
    TaskCompleted => "task.completed" {
        /// Inline or spooled.
        result_storage: ResultStorage,
        /// Size of the result in bytes.
        result_size_bytes: u64,
    },
    /// The task failed.
    TaskFailed => "task.failed" {
        /// Why.
        error_code: BridgeErrorCode,
    },
    /// The task was cancelled.
    TaskCancelled => "task.cancelled" {},
    /// The task was interrupted.
    TaskInterrupted => "task.interrupted" {
        /// Why.
        error_code: BridgeErrorCode,
    },
    /// Reconciliation with a runtime began.
    RuntimeReconcileStarted => "runtime.reconcile_started" {
        /// Runtime name.
        runtime: String,
    },
    /// Reconciliation with a runtime ended.
    RuntimeReconcileFinished => "runtime.reconcile_finished" {
        /// Runtime name.
        runtime: String,
        /// The outcome.
        status: ReconcileStatus,
        /// Whether the provider still runs; `null` when unknown.
        #[serde(deserialize_with = "Option::deserialize")]
        #[schemars(with = "Nullable<bool>")]
        provider_active: Option<bool>,
    },
    /// A task was reconciled after a restart or before a workdir was reused.
    TaskReconciled => "task.reconciled" {
        /// The outcome.
        status: ReconcileStatus,
        /// Whether the provider still runs; `null` when unknown.
        #[serde(deserialize_with = "Option::deserialize")]
        #[schemars(with = "Nullable<bool>")]
        provider_active: Option<bool>,
        /// Why the task was interrupted, when it was; never `null`.
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
        #[schemars(with = "BridgeErrorCode")]
        error_code: Option<BridgeErrorCode>,
    },
    /// The fake runtime observed an approval's resolution (tests and demos).
    ApprovalObserved => "approval.observed" (ApprovalResolution),
}
