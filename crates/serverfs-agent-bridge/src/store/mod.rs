//! The Bridge's durable task store: tasks, idempotency keys, pending
//! interactions, events and results in SQLite (WAL, `synchronous=FULL`),
//! inside a private state directory (spec-agent-bridge.md §3–§7,
//! ARCHITECTURE.md invariant 8 and §6).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use serverfs_agent_bridge::store::{StateDir, Store, StoreLimits};
//!
//! let state = StateDir::open("/home/bridge/.local/state/serverfs-agent-bridge")?;
//! let store = Store::open(state, StoreLimits::default())?;
//! // Start-up: every task found unfinished is reconciled, never re-run.
//! let unfinished = store.call_blocking(|db| db.list_active_tasks())?;
//! # let _ = unfinished;
//! # Ok(()) }
//! ```
//!
//! # Shape
//!
//! * [`StateDir`] creates and checks the directory, `state.sqlite3` and
//!   `results/` (private at creation; unsafe parts refused).
//! * [`Store`] is a cheap handle to one database thread that owns the
//!   connection. [`Store::call`] sends it a closure over [`Db`] and awaits
//!   the answer; [`Store::call_blocking`] is the start-up/CLI twin.
//! * [`Db`] holds the typed operations. **Each is one SQLite transaction**
//!   (`BEGIN IMMEDIATE` for writes). Jobs run one at a time, so a closure
//!   that reads then compare-and-sets runs without interleaving with other
//!   jobs of the same store.
//!
//! # Decisions
//!
//! * **No prompt on disk.** A task row keeps the execution manifest, the
//!   request fingerprint (which holds only the prompt's SHA-256) and the
//!   provider's native session id, which is all a continuation needs. The
//!   prompt is handed to the runner in memory: a task found unfinished at
//!   restart is interrupted, never re-run (spec §3.13), so it is never
//!   needed again.
//! * **Transitions** follow the frozen table of [`transition_allowed`],
//!   always as compare-and-set on the status the caller expects. Waiting
//!   states are entered only by presenting an interaction, so a waiting
//!   task always has its pending request.
//! * **Interactions queue.** Several native requests of one task are stored
//!   in arrival order; one is presented at a time (`pending_request_id`),
//!   and resolving or withdrawing it presents the next in the same
//!   transaction, so none is left unanswered (ARCHITECTURE.md §6). The
//!   interaction deadline starts when a request is presented.
//! * **Events have tiers** ([`EventClass`]): activity events may use the
//!   per-task cap minus [`StoreLimits::lifecycle_headroom`]; lifecycle
//!   events the cap minus [`StoreLimits::terminal_headroom`]; terminal
//!   events the whole cap. An event beyond its tier is refused with
//!   `AGENT_EVENT_LIMIT_REACHED` and nothing is stored. Events the store
//!   writes itself inside a state change (`approval.requested`, a terminal
//!   event passed to a transition) never make that change fail: the state
//!   is authoritative and the event is dropped when its tier is full.
//! * **Results** up to [`StoreLimits::max_inline_result_bytes`] are inline;
//!   larger ones are spooled to `results/<task_id>.txt` (0600, temp file +
//!   fsync + no-replace link), the SHA-256 computed while writing. Storing
//!   a result completes the task (`running → succeeded`) in the same
//!   transaction.

mod connection;
mod digest;
mod dir;
mod error;
mod event;
mod id;
mod interaction;
mod result;
mod schema;
mod spool;
mod task;
mod transition;
mod wire;

pub use connection::{Db, Store};
pub(crate) use digest::sha256_hex;
pub use dir::{DATABASE_FILE, RESULTS_DIR, STATE_DIR_FORBIDDEN_BITS, StateDir};
pub use error::{SpoolProblem, StatePart, StoreError, UnsafeReason};
pub use event::EventClass;
pub use id::{is_request_id, is_task_id, new_request_id, new_task_id};
pub use interaction::{
    AddedInteraction, InteractionPayload, InteractionRecord, InteractionResolution, NewInteraction,
    Resolved, Withdrawn,
};
pub use result::StoredResult;
pub use schema::SCHEMA_VERSION;
pub use task::{
    Created, IdempotencyKey, NewTask, Purged, TaskError, TaskRecord, Transition, Transitioned,
};
pub use transition::{allowed_targets, transition_allowed};

use serverfs_protocol::bridge::EpochMillis;

/// The bounds the store enforces (spec §10.3, plus the event headroom of
/// ARCHITECTURE.md §6). [`Default`] gives the spec's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLimits {
    /// Most non-terminal tasks at once (all workdirs). Default 4.
    pub max_active_tasks: u32,
    /// Most events of one task, all tiers together. Default 10,000.
    pub max_events_per_task: u32,
    /// Slots at the top of the cap that activity events may not use.
    /// Default 100.
    pub lifecycle_headroom: u32,
    /// Slots at the top of the cap only terminal events may use. Must be
    /// smaller than `lifecycle_headroom`. Default 10.
    pub terminal_headroom: u32,
    /// Largest event payload, as compact JSON. Default 65,536.
    pub max_event_bytes: usize,
    /// Largest interaction payload or resolution, as compact JSON.
    /// Default 65,536.
    pub max_interaction_bytes: usize,
    /// Largest result stored inline (`max_final_response_bytes`, the spool
    /// threshold). Default 262,144.
    pub max_inline_result_bytes: usize,
    /// Largest result at all. Default 8,388,608.
    pub max_spooled_result_bytes: usize,
    /// Size of the inline preview of a spooled result. Default 65,536.
    pub result_preview_bytes: usize,
    /// Largest chunk of `read_result`. Default 65,536.
    pub max_result_chunk_bytes: usize,
}

impl Default for StoreLimits {
    fn default() -> StoreLimits {
        StoreLimits {
            max_active_tasks: 4,
            max_events_per_task: 10_000,
            lifecycle_headroom: 100,
            terminal_headroom: 10,
            max_event_bytes: 65_536,
            max_interaction_bytes: 65_536,
            max_inline_result_bytes: 262_144,
            max_spooled_result_bytes: 8_388_608,
            result_preview_bytes: 65_536,
            max_result_chunk_bytes: 65_536,
        }
    }
}

impl StoreLimits {
    /// Checks that the limits are positive and nested as the store needs.
    ///
    /// # Errors
    ///
    /// `BRIDGE_CONFIG_INVALID` ([`StoreError::InvalidLimits`]).
    pub fn validate(&self) -> Result<(), StoreError> {
        let fail = |why| Err(StoreError::InvalidLimits(why));
        if self.max_active_tasks == 0 {
            return fail("max_active_tasks must be positive");
        }
        if !(0 < self.terminal_headroom
            && self.terminal_headroom < self.lifecycle_headroom
            && self.lifecycle_headroom < self.max_events_per_task)
        {
            return fail("need 0 < terminal_headroom < lifecycle_headroom < max_events_per_task");
        }
        if self.max_event_bytes == 0 || self.max_interaction_bytes == 0 {
            return fail("event and interaction caps must be positive");
        }
        if !(0 < self.result_preview_bytes
            && self.result_preview_bytes <= self.max_inline_result_bytes
            && self.max_inline_result_bytes <= self.max_spooled_result_bytes)
        {
            return fail(
                "need 0 < result_preview_bytes <= max_inline_result_bytes <= max_spooled_result_bytes",
            );
        }
        if self.max_result_chunk_bytes == 0 {
            return fail("max_result_chunk_bytes must be positive");
        }
        Ok(())
    }
}

/// The current time as epoch milliseconds (the unit of every stored time).
pub fn now_millis() -> EpochMillis {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    EpochMillis::try_from(since_epoch.as_millis()).unwrap_or(EpochMillis::MAX)
}
