//! Task events: append under the per-task cap with reserved headroom, and
//! cursor paging (spec-agent-bridge.md §5, ARCHITECTURE.md §6).

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::{Map, Value};
use serverfs_protocol::bridge::{
    BridgeEvent, EpochMillis, EventPayload, TaskEventsParams, TaskEventsResult,
};

use super::StoreLimits;
use super::connection::Db;
use super::error::StoreError;
use super::wire::from_json;

/// Which part of a task's event cap an event may use.
///
/// With cap `C`, lifecycle headroom `L` and terminal headroom `T`
/// ([`StoreLimits`]), an event is stored while the task has fewer than
/// `C - L` (activity), `C - T` (lifecycle) or `C` (terminal) events. So a
/// chatty provider can never crowd out the core's state events, and the
/// few events of the one terminal transition always fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventClass {
    /// Provider activity and client steering: unbounded in number.
    Activity,
    /// Core state events before the end: start, interactions, advice,
    /// reconciliation progress.
    Lifecycle,
    /// Events of the terminal transition (at most a handful per task).
    Terminal,
}

impl EventClass {
    /// The class of `event`.
    pub const fn of(event: &EventPayload) -> EventClass {
        match event {
            EventPayload::TurnStarted { .. }
            | EventPayload::AgentMessage { .. }
            | EventPayload::CommandStarted { .. }
            | EventPayload::FileChangeStarted { .. }
            | EventPayload::ToolStarted { .. }
            | EventPayload::ItemStarted(_)
            | EventPayload::ItemCompleted(_)
            | EventPayload::PlanUpdated { .. }
            | EventPayload::ProviderError { .. }
            | EventPayload::PermissionFailed { .. }
            | EventPayload::ApprovalObserved(_)
            // A client may steer as often as it likes.
            | EventPayload::UserMessage { .. } => EventClass::Activity,
            EventPayload::TaskPreflight(_)
            | EventPayload::TaskRoutingAdvice(_)
            | EventPayload::TaskStarted { .. }
            | EventPayload::ApprovalAdvice(_)
            | EventPayload::ApprovalRequested { .. }
            | EventPayload::QuestionRequested { .. }
            | EventPayload::ApprovalResolved { .. }
            | EventPayload::QuestionAnswered { .. }
            | EventPayload::InteractionStale { .. }
            | EventPayload::RuntimeReconcileStarted { .. }
            | EventPayload::RuntimeReconcileFinished { .. } => EventClass::Lifecycle,
            EventPayload::TaskResultSpooled { .. }
            | EventPayload::TaskCompleted { .. }
            | EventPayload::TaskFailed { .. }
            | EventPayload::TaskCancelled {}
            | EventPayload::TaskInterrupted { .. }
            | EventPayload::InteractionExpired { .. }
            | EventPayload::TaskReconciled { .. } => EventClass::Terminal,
        }
    }

    /// How many events a task may hold before one of this class is refused.
    pub fn ceiling(self, limits: &StoreLimits) -> u32 {
        match self {
            EventClass::Activity => limits.max_events_per_task - limits.lifecycle_headroom,
            EventClass::Lifecycle => limits.max_events_per_task - limits.terminal_headroom,
            EventClass::Terminal => limits.max_events_per_task,
        }
    }
}

/// Splits an event into its `event_type` and compact payload JSON.
fn encode(event: &EventPayload) -> Result<(&'static str, String), StoreError> {
    let mut pair = match serde_json::to_value(event) {
        Ok(Value::Object(pair)) => pair,
        _ => return Err(StoreError::corrupt("event payload")),
    };
    let payload = pair.remove("payload").unwrap_or(Value::Object(Map::new()));
    let text = serde_json::to_string(&payload).map_err(|_| StoreError::corrupt("event payload"))?;
    Ok((event.event_type(), text))
}

fn decode(event_type: String, payload_json: &str) -> Result<EventPayload, StoreError> {
    let payload: Value = from_json(payload_json, "event payload")?;
    let mut pair = Map::new();
    pair.insert("event_type".to_owned(), Value::String(event_type));
    pair.insert("payload".to_owned(), payload);
    serde_json::from_value(Value::Object(pair)).map_err(|_| StoreError::corrupt("event payload"))
}

/// Appends inside the caller's transaction; returns the event id.
pub(crate) fn append(
    conn: &Connection,
    limits: &StoreLimits,
    task_id: &str,
    event: &EventPayload,
    now: EpochMillis,
) -> Result<i64, StoreError> {
    let (event_type, payload) = encode(event)?;
    if payload.len() > limits.max_event_bytes {
        return Err(StoreError::EventTooLarge {
            bytes: payload.len(),
            limit: limits.max_event_bytes,
        });
    }
    // The counter moves in the same transaction as the insert, guarded by
    // the ceiling in the `WHERE`: no count can exceed its tier.
    let ceiling = EventClass::of(event).ceiling(limits);
    let counted = conn.execute(
        "UPDATE tasks SET event_count = event_count + 1
         WHERE task_id = ?1 AND event_count < ?2",
        params![task_id, ceiling],
    )?;
    if counted == 0 {
        let exists = conn
            .query_row("SELECT 1 FROM tasks WHERE task_id = ?1", [task_id], |_| {
                Ok(())
            })
            .optional()?;
        return Err(match exists {
            Some(()) => StoreError::EventLimitReached,
            None => StoreError::TaskNotFound,
        });
    }
    conn.execute(
        "INSERT INTO events (task_id, event_type, payload_json, created_at)
         VALUES (?1, ?2, ?3, ?4)",
        params![task_id, event_type, payload, now],
    )?;
    Ok(conn.last_insert_rowid())
}

/// [`append`] for events the store records alongside a state change: a
/// full tier drops the event (`None`) instead of failing the change.
pub(crate) fn try_append(
    conn: &Connection,
    limits: &StoreLimits,
    task_id: &str,
    event: &EventPayload,
    now: EpochMillis,
) -> Result<Option<i64>, StoreError> {
    match append(conn, limits, task_id, event, now) {
        Ok(event_id) => Ok(Some(event_id)),
        Err(StoreError::EventLimitReached) => Ok(None),
        Err(error) => Err(error),
    }
}

impl Db {
    /// Records an event for a task and returns its id (the cursor value).
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_FOUND`; `AGENT_EVENT_TOO_LARGE` when the payload's
    /// compact JSON exceeds [`StoreLimits::max_event_bytes`];
    /// `AGENT_EVENT_LIMIT_REACHED` when the task holds as many events as
    /// the event's [`EventClass`] may use (nothing is stored).
    pub fn append_event(
        &mut self,
        task_id: &str,
        event: &EventPayload,
        now: EpochMillis,
    ) -> Result<i64, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let event_id = append(&tx, &self.limits, task_id, event, now)?;
        tx.commit()?;
        Ok(event_id)
    }

    /// One page of a task's events with `event_id > after_event_id`,
    /// ascending, at most `limit` (spec §5.2).
    ///
    /// # Errors
    ///
    /// `INVALID_LIMIT` for a negative cursor or a limit outside
    /// `1..=500`; `AGENT_TASK_NOT_FOUND`.
    pub fn read_events(
        &mut self,
        task_id: &str,
        after_event_id: i64,
        limit: i64,
    ) -> Result<TaskEventsResult, StoreError> {
        if after_event_id < 0 || !(1..=TaskEventsParams::MAX_LIMIT).contains(&limit) {
            return Err(StoreError::InvalidEventPage);
        }
        // One read transaction: the correlation id and the page come from
        // the same snapshot.
        let tx = self.conn.transaction()?;
        let correlation_id: Option<String> = tx
            .query_row(
                "SELECT correlation_id FROM tasks WHERE task_id = ?1",
                [task_id],
                |row| row.get(0),
            )
            .optional()?
            .ok_or(StoreError::TaskNotFound)?;
        let rows: Vec<(i64, String, String, i64)> = {
            let mut statement = tx.prepare(
                "SELECT event_id, event_type, payload_json, created_at FROM events
                 WHERE task_id = ?1 AND event_id > ?2 ORDER BY event_id LIMIT ?3",
            )?;
            statement
                .query_map(params![task_id, after_event_id, limit], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })?
                .collect::<rusqlite::Result<_>>()?
        };
        let mut events = Vec::with_capacity(rows.len());
        for (event_id, event_type, payload_json, created_at) in rows {
            events.push(BridgeEvent {
                event_id,
                task_id: task_id.to_owned(),
                correlation_id: correlation_id.clone(),
                created_at,
                event: decode(event_type, &payload_json)?,
            });
        }
        let next_after_event_id = events.last().map_or(after_event_id, |e| e.event_id);
        Ok(TaskEventsResult {
            correlation_id,
            events,
            next_after_event_id,
        })
    }
}
