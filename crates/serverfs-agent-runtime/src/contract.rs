//! The provider adapter interface (spec-agent-bridge.md §9,
//! spec-adapters.md §1): what the task core asks of a runtime, and the
//! [`Host`] callbacks a runtime uses to talk back to the core.
//!
//! One [`Adapter`] object serves one runtime name. The core calls
//! [`Adapter::run`] once per task with a [`TaskContext`] and an
//! `Arc<dyn Host>`; the adapter emits events, raises approvals and
//! questions, and records native ids through the host, and returns a
//! [`TurnOutcome`]. Steering ([`Adapter::send_message`]) and cancellation
//! ([`Adapter::cancel`]) arrive concurrently, keyed by task id, so an
//! adapter registers a task as active before its first await.
//!
//! Every operation returns a boxed `Send` future so that the trait stays
//! object-safe (`Arc<dyn Adapter>` in the runtime registry).
//!
//! Error messages ([`AgentError::message`]) are shown to clients: they
//! never carry a host path, a prompt or a secret (ARCHITECTURE.md
//! invariants 4 and 9).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serverfs_protocol::bridge::{
    AgentProfile, ApprovalPayload, ApprovalResolution, BridgeErrorCode, EventPayload,
    InFlightRecovery, ModelCatalog, ModelDiscovery, QuestionPayload, QuestionResolution,
    ReconcileStatus, RuntimeInfo,
};
use tokio::time::Instant;

use crate::turns::TurnControl;
use crate::{AgentError, ProcessGroupId, WorkingDir};

/// A boxed, sendable future borrowing from `'a`: the return type of every
/// adapter and host operation.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a runtime can do (the capability columns of `RuntimeInfo`,
/// spec-agent-bridge.md §9.2). Adapters report them honestly: the core
/// refuses requests a runtime cannot serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// A follow-up task can continue the provider session.
    pub persistent_session: bool,
    /// [`Adapter::send_message`] reaches the running turn.
    pub live_steer: bool,
    /// The runtime raises approvals through [`Host::request_approval`].
    pub interactive_approval: bool,
    /// The runtime raises questions through [`Host::ask_question`].
    pub interactive_question: bool,
    /// What of an in-flight task survives a Bridge restart.
    pub in_flight_recovery: InFlightRecovery,
    /// A request-scoped model ([`TaskContext::model`]) is honoured.
    pub model_override: bool,
    /// Where [`Adapter::models`] gets its catalog.
    pub model_discovery: ModelDiscovery,
}

/// The result of [`Adapter::probe`]: cheap, local, never starts a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The runtime can take tasks now.
    pub available: bool,
    /// The provider's own version string, when known.
    pub version: Option<String>,
}

impl Capabilities {
    /// The `RuntimeInfo` record of runtime `name` with this probe result.
    pub fn runtime_info(&self, name: &str, probe: &Probe) -> RuntimeInfo {
        RuntimeInfo {
            name: name.to_owned(),
            available: probe.available,
            version: probe.version.clone(),
            persistent_session: self.persistent_session,
            live_steer: self.live_steer,
            interactive_approval: self.interactive_approval,
            interactive_question: self.interactive_question,
            in_flight_recovery: self.in_flight_recovery,
            model_override: self.model_override,
            model_discovery: self.model_discovery,
            // Fixed by the adapter, not measured: the field stays absent.
            capability_state: None,
            capabilities_measured_at: None,
        }
    }
}

/// Everything an adapter needs to run one turn of one task.
///
/// Built by the core after every policy check: `cwd` is already the
/// authorized directory, `profile` already allowed for the workdir.
///
/// # Security
///
/// `Debug` hides the prompt and the host path (invariants 4 and 9).
#[derive(Clone)]
pub struct TaskContext {
    /// The task id.
    pub task_id: String,
    /// The authorized working directory, opened beneath the workdir root:
    /// start providers in it with [`ProviderCommand::new`], never by path.
    ///
    /// [`ProviderCommand::new`]: crate::ProviderCommand::new
    pub cwd: WorkingDir,
    /// The task's profile.
    pub profile: AgentProfile,
    /// The user's prompt.
    pub prompt: String,
    /// A request-scoped model, passed verbatim to the provider; `None`
    /// keeps the provider's own default.
    pub model: Option<String>,
    /// The native session to resume (a `continue_from_task_id` task);
    /// `None` starts a new session.
    pub continue_native_session_id: Option<String>,
    /// When the task's deadline passes, if it has one.
    pub deadline: Option<Instant>,
}

impl fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskContext")
            .field("task_id", &self.task_id)
            .field("profile", &self.profile)
            .field("prompt_bytes", &self.prompt.len())
            .field("model", &self.model)
            .field(
                "continues_session",
                &self.continue_native_session_id.is_some(),
            )
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// A provider's native session and turn ids, recorded as soon as known so
/// a crash mid-turn stays resumable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativeIds {
    /// The provider session (thread) id.
    pub session_id: Option<String>,
    /// The provider turn id.
    pub turn_id: Option<String>,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    /// The provider finished the turn; `final_text` is its answer.
    Completed,
    /// The turn failed with `code`; `final_text` is a client-safe reason.
    Failed {
        /// The stable code.
        code: BridgeErrorCode,
    },
    /// The user cancelled the turn ([`Adapter::cancel`] or a
    /// `cancel_task` approval decision).
    Cancelled,
    /// The turn was stopped without the user asking (adapter closed, Bridge
    /// shutting down).
    Interrupted,
}

/// What [`Adapter::run`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOutcome {
    /// How the turn ended.
    pub status: TurnStatus,
    /// The final answer (completed) or a client-safe reason (otherwise).
    pub final_text: String,
    /// The native ids of the turn, also given to
    /// [`Host::record_native_ids`] when known.
    pub native: NativeIds,
}

impl TurnOutcome {
    /// A completed turn.
    pub fn completed(final_text: impl Into<String>, native: NativeIds) -> Self {
        Self {
            status: TurnStatus::Completed,
            final_text: final_text.into(),
            native,
        }
    }

    /// A failed turn.
    pub fn failed(error: AgentError, native: NativeIds) -> Self {
        Self {
            status: TurnStatus::Failed { code: error.code },
            final_text: error.message,
            native,
        }
    }
}

/// What is known about a task's provider after a restart
/// ([`Adapter::reconcile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderState {
    /// What can be recovered.
    pub status: ReconcileStatus,
    /// Whether the provider still runs the turn; `None`: unknown.
    pub provider_active: Option<bool>,
}

impl ProviderState {
    /// The default answer: nothing is known.
    pub const UNKNOWN: ProviderState = ProviderState {
        status: ReconcileStatus::Unknown,
        provider_active: None,
    };

    /// What is known of a provider the Bridge owned (a child of its own,
    /// one per task): it can only still run inside its recorded process
    /// group, which the core checks beside this answer, so it is not active
    /// otherwise; its session is `resumable` or nothing can be recovered.
    pub const fn bridge_owned(resumable: bool) -> ProviderState {
        ProviderState {
            status: if resumable {
                ReconcileStatus::SessionResumable
            } else {
                ReconcileStatus::NotRecoverable
            },
            provider_active: Some(false),
        }
    }
}

/// The core's side of a running task, handed to [`Adapter::run`].
///
/// Implemented by the task core: it redacts and bounds events, persists
/// interactions (one pending request per task at a time, further requests
/// queued), and wakes the adapter when the human answers.
///
/// # Events: one policy for every adapter
///
/// An adapter's events are progress reports: losing one never changes
/// what the provider does. So adapters emit through [`Host::report`],
/// which is best-effort: a refused event (the task's event cap, an
/// oversized payload, storage trouble) is logged by its code and the turn
/// goes on — stopping a provider mid-turn because a progress line could
/// not be stored would leave its work half-done, and on a shared daemon
/// running unobserved. Lifecycle and terminal events are the core's own,
/// with reserved headroom. Interactions and native ids are not events:
/// their errors propagate, since the turn cannot go on without them.
pub trait Host: Send + Sync {
    /// Appends an event to the task. Errors (event cap, oversized payload)
    /// are returned; adapters use [`report`](Self::report) instead.
    fn emit(&self, event: EventPayload) -> BoxFuture<'_, Result<(), AgentError>>;

    /// Appends an event, best-effort (see "Events" above).
    fn report(&self, event: EventPayload) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(error) = self.emit(event).await {
                tracing::debug!(
                    error.code = error.code.as_str(),
                    "provider event not recorded"
                );
            }
        })
    }

    /// Raises an approval and waits for the human's decision, which is one
    /// of `payload.available_decisions`. Several concurrent calls of one
    /// task are queued and presented one at a time. Fails on timeout
    /// (`AGENT_INTERACTION_TIMED_OUT`) or when the task ends; dropping the
    /// future withdraws the request.
    fn request_approval(
        &self,
        payload: ApprovalPayload,
    ) -> BoxFuture<'_, Result<ApprovalResolution, AgentError>>;

    /// Asks questions and waits for the validated answers; otherwise as
    /// [`request_approval`](Self::request_approval).
    fn ask_question(
        &self,
        payload: QuestionPayload,
    ) -> BoxFuture<'_, Result<QuestionResolution, AgentError>>;

    /// The provider withdrew its current request: mark it stale, the task
    /// runs again. Safe when nothing is pending.
    fn abandon_interaction(&self) -> BoxFuture<'_, Result<(), AgentError>>;

    /// Persists native ids as soon as they are known.
    fn record_native_ids(&self, ids: NativeIds) -> BoxFuture<'_, Result<(), AgentError>>;

    /// Records the process group of a provider process the adapter spawned
    /// for this turn, before it can write anything. The core keeps it in the
    /// recovery guard, so that after a Bridge crash the guard is removed only
    /// once that group is proven gone (spec-agent-bridge.md §8.4).
    fn record_process_group(&self, group: ProcessGroupId) -> BoxFuture<'_, Result<(), AgentError>>;
}

/// One runtime: the operations the task core calls (spec-agent-bridge.md
/// §9.2). Object-safe; shared as `Arc<dyn Adapter>`.
pub trait Adapter: Send + Sync {
    /// The runtime name (the key in configuration and allowlists).
    fn name(&self) -> &str;

    /// What the runtime can do.
    fn capabilities(&self) -> Capabilities;

    /// The runtime's `runtime.list` descriptor with this probe result:
    /// [`capabilities`](Self::capabilities) as they are. A runtime that
    /// measures its capabilities from the provider (an ACP profile) says
    /// so here, with when it measured them.
    fn runtime_info(&self, probe: &Probe) -> RuntimeInfo {
        self.capabilities().runtime_info(self.name(), probe)
    }

    /// Cheap availability check: never starts a turn, a provider daemon or
    /// an install. Any failure is `available: false`, never an error.
    fn probe(&self) -> BoxFuture<'_, Probe>;

    /// The runtime's model catalog; must not start a turn.
    fn models(&self) -> BoxFuture<'_, ModelCatalog>;

    /// Runs one turn of `ctx.prompt` to its end: a new native session, or
    /// the one named by `ctx.continue_native_session_id`. Every failure,
    /// cancellation and precondition refusal is reported in the outcome.
    fn run(&self, ctx: TaskContext, host: std::sync::Arc<dyn Host>) -> BoxFuture<'_, TurnOutcome>;

    /// The adapter's running turns (its [`TurnRegistry`]), which the
    /// default [`send_message`](Self::send_message),
    /// [`cancel`](Self::cancel) and [`close`](Self::close) act on.
    ///
    /// [`TurnRegistry`]: crate::turns::TurnRegistry
    fn turns(&self) -> &dyn TurnControl;

    /// Steers the running turn of `task_id` with `text`. The default is a
    /// runtime without live steering, which refuses every message.
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_ACTIVE` when the task is not running here,
    /// `AGENT_PROVIDER_ERROR` when the runtime has no live steer.
    fn send_message<'a>(
        &'a self,
        task_id: &'a str,
        _text: String,
    ) -> BoxFuture<'a, Result<(), AgentError>> {
        let refused = self.turns().refuse_steering(task_id);
        Box::pin(async move { refused })
    }

    /// Best-effort interrupt of `task_id`'s turn: [`run`](Self::run) then
    /// returns [`TurnStatus::Cancelled`]. A no-op for an unknown task.
    ///
    /// The default tells the turn through its stop signal and returns at
    /// once: the turn loop does the provider's side (an interrupt, a
    /// bounded grace, the process group stopped).
    fn cancel<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, ()> {
        self.turns().cancel(task_id);
        Box::pin(async {})
    }

    /// What is known about the provider side of `task_id` after a restart.
    fn reconcile<'a>(
        &'a self,
        task_id: &'a str,
        native: &'a NativeIds,
    ) -> BoxFuture<'a, ProviderState>;

    /// Releases every provider resource; running turns end as
    /// [`TurnStatus::Interrupted`] and later runs are refused. Idempotent.
    ///
    /// The default closes the turn registry, which stops every running turn
    /// ([`Stop::Closed`](crate::turns::Stop::Closed)) and refuses new ones;
    /// each turn releases its own provider as it ends.
    fn close(&self) -> BoxFuture<'_, ()> {
        self.turns().close();
        Box::pin(async {})
    }
}
