//! Pending interactions: a per-task queue of approvals and questions, one
//! presented at a time, resolved by compare-and-swap (spec-agent-bridge.md
//! §4, ARCHITECTURE.md §6).
//!
//! A request is *queued* (status `pending`, not presented) or *presented*
//! (status `pending`, named by the task's `pending_request_id`, the task in
//! `waiting_for_approval`/`waiting_for_question`, `expires_at` set). When
//! the presented one is resolved or withdrawn, the task returns to
//! `running` and, in the same transaction, the oldest queued request is
//! presented, so the task waits again. Every step uses the transition
//! table.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serverfs_protocol::bridge::{
    ApprovalPayload, ApprovalResolution, EpochMillis, EventPayload, Interaction, InteractionKind,
    InteractionStatus, PendingInteraction, QuestionPayload, QuestionResolution, TaskStatus,
};

use super::StoreLimits;
use super::connection::Db;
use super::error::StoreError;
use super::event::try_append;
use super::id::check_request_id;
use super::task::{TaskRecord, check_transition, need_task};
use super::wire::{from_json, from_text, to_json, to_text};

/// What an interaction asks.
#[derive(Debug, Clone, PartialEq)]
pub enum InteractionPayload {
    /// An approval request.
    Approval(Box<ApprovalPayload>),
    /// One or more questions.
    Question(QuestionPayload),
}

impl InteractionPayload {
    /// Approval or question.
    pub const fn kind(&self) -> InteractionKind {
        match self {
            InteractionPayload::Approval(_) => InteractionKind::Approval,
            InteractionPayload::Question(_) => InteractionKind::Question,
        }
    }

    fn to_json(&self) -> Result<String, StoreError> {
        match self {
            InteractionPayload::Approval(payload) => to_json(payload, "interaction payload"),
            InteractionPayload::Question(payload) => to_json(payload, "interaction payload"),
        }
    }
}

/// How an interaction was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InteractionResolution {
    /// An approval decision.
    Approval(ApprovalResolution),
    /// Answers to a question.
    Question(QuestionResolution),
}

impl InteractionResolution {
    /// Approval or question.
    pub const fn kind(&self) -> InteractionKind {
        match self {
            InteractionResolution::Approval(_) => InteractionKind::Approval,
            InteractionResolution::Question(_) => InteractionKind::Question,
        }
    }

    fn to_json(&self) -> Result<String, StoreError> {
        match self {
            InteractionResolution::Approval(resolution) => {
                to_json(resolution, "interaction resolution")
            }
            InteractionResolution::Question(resolution) => {
                to_json(resolution, "interaction resolution")
            }
        }
    }

    /// The lifecycle event recording this resolution.
    fn event(&self) -> EventPayload {
        match self {
            InteractionResolution::Approval(resolution) => EventPayload::ApprovalResolved {
                decision: resolution.decision,
            },
            InteractionResolution::Question(resolution) => EventPayload::QuestionAnswered {
                question_count: u32::try_from(resolution.answers.len()).unwrap_or(u32::MAX),
            },
        }
    }
}

/// An interaction raised by a task's provider.
#[derive(Debug, Clone, PartialEq)]
pub struct NewInteraction {
    /// `req_` + 24 hex (see [`new_request_id`](super::new_request_id)).
    pub request_id: String,
    /// The task.
    pub task_id: String,
    /// What is asked (already redacted by the caller).
    pub payload: InteractionPayload,
    /// The interaction timeout, counted from presentation; the expiry is
    /// never later than the task deadline.
    pub timeout: Duration,
}

/// A stored interaction.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractionRecord {
    /// The id.
    pub request_id: String,
    /// The task.
    pub task_id: String,
    /// Pending, resolved or stale.
    pub status: InteractionStatus,
    /// What is asked.
    pub payload: InteractionPayload,
    /// The answer, once resolved.
    pub resolution: Option<InteractionResolution>,
    /// Position in the task's queue (arrival order, from 1).
    pub queue_seq: i64,
    /// Raised at.
    pub created_at: EpochMillis,
    /// Presented to the client at; `None` while queued.
    pub presented_at: Option<EpochMillis>,
    /// Lapses at; set on presentation.
    pub expires_at: Option<EpochMillis>,
    /// Resolved or made stale at.
    pub resolved_at: Option<EpochMillis>,
}

impl InteractionRecord {
    /// Approval or question.
    pub const fn kind(&self) -> InteractionKind {
        self.payload.kind()
    }

    /// The wire record (spec §4.1); `None` for a request never presented
    /// (it has no expiry yet and no client has seen it).
    pub fn to_wire(&self) -> Option<PendingInteraction> {
        let expires_at = self.expires_at?;
        Some(match (&self.payload, &self.resolution) {
            (InteractionPayload::Approval(payload), resolution) => {
                PendingInteraction::Approval(Box::new(Interaction {
                    request_id: self.request_id.clone(),
                    task_id: self.task_id.clone(),
                    status: self.status,
                    payload: (**payload).clone(),
                    created_at: self.created_at,
                    expires_at,
                    resolved_at: self.resolved_at,
                    resolution: match resolution {
                        Some(InteractionResolution::Approval(resolution)) => {
                            Some(resolution.clone())
                        }
                        Some(InteractionResolution::Question(_)) | None => None,
                    },
                }))
            }
            (InteractionPayload::Question(payload), resolution) => {
                PendingInteraction::Question(Interaction {
                    request_id: self.request_id.clone(),
                    task_id: self.task_id.clone(),
                    status: self.status,
                    payload: payload.clone(),
                    created_at: self.created_at,
                    expires_at,
                    resolved_at: self.resolved_at,
                    resolution: match resolution {
                        Some(InteractionResolution::Question(resolution)) => {
                            Some(resolution.clone())
                        }
                        Some(InteractionResolution::Approval(_)) | None => None,
                    },
                })
            }
        })
    }
}

/// The outcome of [`Db::add_interaction`].
#[derive(Debug, Clone, PartialEq)]
pub struct AddedInteraction {
    /// The stored request.
    pub record: InteractionRecord,
    /// Whether it was presented now (else it waits behind another).
    pub presented: bool,
    /// The task's status afterwards.
    pub task_status: TaskStatus,
    /// The `approval.requested`/`question.requested` event, when presented
    /// and its tier had room.
    pub event_id: Option<i64>,
}

/// The outcome of [`Db::resolve_interaction`].
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The resolved request.
    pub record: InteractionRecord,
    /// The task's status afterwards: `running`, or waiting again when a
    /// queued request was presented.
    pub task_status: TaskStatus,
    /// The queued request presented in the same transaction, if any.
    pub next: Option<InteractionRecord>,
}

/// The outcome of [`Db::withdraw_interaction`].
#[derive(Debug, Clone, PartialEq)]
pub struct Withdrawn {
    /// Whether the withdrawn request was the presented one.
    pub was_presented: bool,
    /// The task's status afterwards.
    pub task_status: TaskStatus,
    /// The queued request presented in its place, if any.
    pub next: Option<InteractionRecord>,
}

const INTERACTION_SELECT: &str = "SELECT request_id, task_id, kind, status, queue_seq,
    payload_json, resolution_json, created_at, presented_at, expires_at, resolved_at
    FROM interactions";

type RawInteraction = (
    String,
    String,
    String,
    String,
    i64,
    String,
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

fn read_raw(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawInteraction> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(8)?,
        row.get(9)?,
        row.get(10)?,
    ))
}

fn decode(raw: RawInteraction) -> Result<InteractionRecord, StoreError> {
    let (
        request_id,
        task_id,
        kind,
        status,
        queue_seq,
        payload_json,
        resolution_json,
        created_at,
        presented_at,
        expires_at,
        resolved_at,
    ) = raw;
    let kind: InteractionKind = from_text(kind, "interaction kind")?;
    let (payload, resolution) = match kind {
        InteractionKind::Approval => (
            InteractionPayload::Approval(Box::new(from_json(
                &payload_json,
                "interaction payload",
            )?)),
            resolution_json
                .map(|json| from_json(&json, "interaction resolution"))
                .transpose()?
                .map(InteractionResolution::Approval),
        ),
        InteractionKind::Question => (
            InteractionPayload::Question(from_json(&payload_json, "interaction payload")?),
            resolution_json
                .map(|json| from_json(&json, "interaction resolution"))
                .transpose()?
                .map(InteractionResolution::Question),
        ),
    };
    Ok(InteractionRecord {
        request_id,
        task_id,
        status: from_text(status, "interaction status")?,
        payload,
        resolution,
        queue_seq,
        created_at,
        presented_at,
        expires_at,
        resolved_at,
    })
}

pub(crate) fn read_interaction(
    conn: &Connection,
    request_id: &str,
) -> Result<Option<InteractionRecord>, StoreError> {
    conn.query_row(
        &format!("{INTERACTION_SELECT} WHERE request_id = ?1"),
        [request_id],
        read_raw,
    )
    .optional()?
    .map(decode)
    .transpose()
}

/// The request `request_id` of task `task_id`, still pending; the spec's
/// order of refusals (§4.5 steps 2–3).
fn pending_of(
    conn: &Connection,
    task_id: &str,
    request_id: &str,
) -> Result<InteractionRecord, StoreError> {
    let record = read_interaction(conn, request_id)?
        .filter(|record| record.task_id == task_id)
        .ok_or(StoreError::RequestNotFound)?;
    match record.status {
        InteractionStatus::Pending => Ok(record),
        InteractionStatus::Resolved => Err(StoreError::RequestAlreadyResolved),
        InteractionStatus::Stale => Err(StoreError::RequestStale),
    }
}

/// Makes every pending (presented or queued) request of the task stale and
/// clears the pointer; the task's status is the caller's business.
pub(crate) fn stale_all(
    conn: &Connection,
    task_id: &str,
    now: EpochMillis,
) -> Result<Vec<String>, StoreError> {
    let ids: Vec<String> = {
        let mut statement = conn.prepare(
            "SELECT request_id FROM interactions
             WHERE task_id = ?1 AND status = 'pending' ORDER BY queue_seq",
        )?;
        statement
            .query_map([task_id], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?
    };
    conn.execute(
        "UPDATE interactions SET status = 'stale', resolved_at = ?2
         WHERE task_id = ?1 AND status = 'pending'",
        params![task_id, now],
    )?;
    conn.execute(
        "UPDATE tasks SET pending_request_id = NULL WHERE task_id = ?1",
        [task_id],
    )?;
    Ok(ids)
}

fn waiting_status(kind: InteractionKind) -> TaskStatus {
    match kind {
        InteractionKind::Approval => TaskStatus::WaitingForApproval,
        InteractionKind::Question => TaskStatus::WaitingForQuestion,
    }
}

/// Presents the oldest queued request of a `running` task, if any: the
/// task moves to the matching waiting status and the request gets its
/// expiry and its `*.requested` event (whose id is returned alongside).
fn present_next(
    conn: &Connection,
    limits: &StoreLimits,
    task_id: &str,
    now: EpochMillis,
) -> Result<Option<(InteractionRecord, Option<i64>)>, StoreError> {
    let next = conn
        .query_row(
            &format!(
                "{INTERACTION_SELECT} WHERE task_id = ?1 AND status = 'pending'
                 AND presented_at IS NULL ORDER BY queue_seq LIMIT 1"
            ),
            [task_id],
            read_raw,
        )
        .optional()?
        .map(decode)
        .transpose()?;
    let Some(next) = next else {
        return Ok(None);
    };
    let task = need_task(conn, task_id)?;
    let waiting = waiting_status(next.kind());
    check_transition(&task, TaskStatus::Running, waiting)?;
    let timeout_ms: i64 = conn.query_row(
        "SELECT timeout_ms FROM interactions WHERE request_id = ?1",
        [&next.request_id],
        |row| row.get(0),
    )?;
    let expires_at = now.saturating_add(timeout_ms).min(task.deadline_at);
    conn.execute(
        "UPDATE interactions SET presented_at = ?2, expires_at = ?3 WHERE request_id = ?1",
        params![next.request_id, now, expires_at],
    )?;
    conn.execute(
        "UPDATE tasks SET status = ?2, pending_request_id = ?3, updated_at = ?4
         WHERE task_id = ?1",
        params![
            task_id,
            to_text(&waiting, "task status")?,
            next.request_id,
            now
        ],
    )?;
    let event = match next.kind() {
        InteractionKind::Approval => EventPayload::ApprovalRequested {
            request_id: next.request_id.clone(),
            expires_at,
        },
        InteractionKind::Question => EventPayload::QuestionRequested {
            request_id: next.request_id.clone(),
            expires_at,
        },
    };
    let event_id = try_append(conn, limits, task_id, &event, now)?;
    let presented =
        read_interaction(conn, &next.request_id)?.ok_or(StoreError::corrupt("interaction row"))?;
    Ok(Some((presented, event_id)))
}

/// Returns a waiting task whose presented request was just resolved or
/// made stale to `running`, then presents the next queued request.
fn resume(
    conn: &Connection,
    limits: &StoreLimits,
    task: &TaskRecord,
    now: EpochMillis,
) -> Result<Option<InteractionRecord>, StoreError> {
    check_transition(task, task.status, TaskStatus::Running)?;
    let changed = conn.execute(
        "UPDATE tasks SET status = 'running', pending_request_id = NULL, updated_at = ?3
         WHERE task_id = ?1 AND pending_request_id IS ?2",
        params![task.task_id, task.pending_request_id, now],
    )?;
    if changed != 1 {
        return Err(StoreError::RequestStale);
    }
    Ok(present_next(conn, limits, &task.task_id, now)?.map(|(next, _)| next))
}

/// `transition(waiting_* → running)`: the presented request is withdrawn
/// (stale, `interaction.stale` recorded) and the next one presented.
pub(crate) fn leave_waiting(
    conn: &Connection,
    limits: &StoreLimits,
    task: &TaskRecord,
    now: EpochMillis,
) -> Result<(), StoreError> {
    if let Some(request_id) = &task.pending_request_id {
        conn.execute(
            "UPDATE interactions SET status = 'stale', resolved_at = ?2
             WHERE request_id = ?1 AND status = 'pending'",
            params![request_id, now],
        )?;
        let event = EventPayload::InteractionStale {
            request_id: request_id.clone(),
        };
        try_append(conn, limits, &task.task_id, &event, now)?;
    }
    resume(conn, limits, task, now)?;
    Ok(())
}

impl Db {
    /// Stores an interaction a provider raised. A `running` task presents
    /// it at once (→ `waiting_for_approval`/`waiting_for_question`, expiry
    /// `min(now + timeout, deadline)`, `*.requested` event); a task already
    /// waiting queues it behind the presented one.
    ///
    /// # Errors
    ///
    /// `INVALID_REQUEST` (malformed id), `AGENT_TASK_NOT_FOUND`,
    /// `REQUEST_EXISTS`, `AGENT_INTERACTION_TOO_LARGE`,
    /// `AGENT_TASK_NOT_ACTIVE` when the task is queued, starting or ended.
    pub fn add_interaction(
        &mut self,
        new: &NewInteraction,
        now: EpochMillis,
    ) -> Result<AddedInteraction, StoreError> {
        check_request_id(&new.request_id)?;
        let payload = new.payload.to_json()?;
        if payload.len() > self.limits.max_interaction_bytes {
            return Err(StoreError::InteractionTooLarge {
                bytes: payload.len(),
                limit: self.limits.max_interaction_bytes,
            });
        }
        let timeout_ms = i64::try_from(new.timeout.as_millis())
            .unwrap_or(i64::MAX)
            .max(1);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let task = need_task(&tx, &new.task_id)?;
        match task.status {
            TaskStatus::Running
            | TaskStatus::WaitingForApproval
            | TaskStatus::WaitingForQuestion => {}
            TaskStatus::Queued
            | TaskStatus::Starting
            | TaskStatus::Succeeded
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted => {
                return Err(StoreError::TaskNotActive {
                    status: task.status,
                });
            }
        }
        if read_interaction(&tx, &new.request_id)?.is_some() {
            return Err(StoreError::RequestExists);
        }
        tx.execute(
            "INSERT INTO interactions (request_id, task_id, kind, status, queue_seq,
                 payload_json, timeout_ms, created_at)
             VALUES (?1, ?2, ?3, 'pending',
                 (SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM interactions WHERE task_id = ?2),
                 ?4, ?5, ?6)",
            params![
                new.request_id,
                new.task_id,
                to_text(&new.payload.kind(), "interaction kind")?,
                payload,
                timeout_ms,
                now
            ],
        )?;
        // A running task has no queued request (returning to `running`
        // always presents the next one), so the one presented is this one.
        let presented = task.status == TaskStatus::Running;
        let event_id = if presented {
            present_next(&tx, &self.limits, &new.task_id, now)?.and_then(|(_, event_id)| event_id)
        } else {
            None
        };
        let record = read_interaction(&tx, &new.request_id)?
            .ok_or(StoreError::corrupt("interaction row"))?;
        let task_status = need_task(&tx, &new.task_id)?.status;
        tx.commit()?;
        Ok(AddedInteraction {
            record,
            presented,
            task_status,
            event_id,
        })
    }

    /// Resolves the task's presented request by compare-and-swap: exactly
    /// one caller wins; the task returns to `running` (or presents its next
    /// queued request) and `approval.resolved`/`question.answered` is
    /// recorded, all in one transaction.
    ///
    /// # Errors
    ///
    /// In the spec's order (§4.5): `REQUEST_NOT_FOUND` (unknown, or another
    /// task's), `REQUEST_ALREADY_RESOLVED` (also for the loser of a race),
    /// `REQUEST_STALE` (stale, not the presented request, or expired —
    /// [`StoreError::RequestExpired`]; the caller then interrupts the task),
    /// `INVALID_APPROVAL_DECISION`/`INVALID_QUESTION_ANSWER` (wrong kind),
    /// `AGENT_INTERACTION_TOO_LARGE`.
    pub fn resolve_interaction(
        &mut self,
        task_id: &str,
        request_id: &str,
        resolution: &InteractionResolution,
        now: EpochMillis,
    ) -> Result<Resolved, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let record = pending_of(&tx, task_id, request_id)?;
        let task = need_task(&tx, task_id)?;
        if task.pending_request_id.as_deref() != Some(request_id) {
            return Err(StoreError::RequestStale);
        }
        if record
            .expires_at
            .is_some_and(|expires_at| expires_at <= now)
        {
            return Err(StoreError::RequestExpired);
        }
        if record.kind() != resolution.kind() {
            return Err(StoreError::WrongInteractionKind {
                kind: resolution.kind(),
            });
        }
        let resolution_json = resolution.to_json()?;
        if resolution_json.len() > self.limits.max_interaction_bytes {
            return Err(StoreError::InteractionTooLarge {
                bytes: resolution_json.len(),
                limit: self.limits.max_interaction_bytes,
            });
        }
        // The conditional updates must each hit exactly one row: that is
        // the compare-and-swap, and it holds across connections too.
        let changed = tx.execute(
            "UPDATE interactions SET status = 'resolved', resolution_json = ?2, resolved_at = ?3
             WHERE request_id = ?1 AND status = 'pending'",
            params![request_id, resolution_json, now],
        )?;
        if changed != 1 {
            return Err(StoreError::RequestAlreadyResolved);
        }
        try_append(&tx, &self.limits, task_id, &resolution.event(), now)?;
        let next = resume(&tx, &self.limits, &task, now)?;
        let record =
            read_interaction(&tx, request_id)?.ok_or(StoreError::corrupt("interaction row"))?;
        let task_status = need_task(&tx, task_id)?.status;
        tx.commit()?;
        Ok(Resolved {
            record,
            task_status,
            next,
        })
    }

    /// The provider withdrew a request (spec §4.6): it becomes stale and
    /// `interaction.stale` is recorded. If it was the presented one, the
    /// task returns to `running` and the next queued request is presented.
    ///
    /// # Errors
    ///
    /// `REQUEST_NOT_FOUND`, `REQUEST_ALREADY_RESOLVED`, `REQUEST_STALE`.
    pub fn withdraw_interaction(
        &mut self,
        task_id: &str,
        request_id: &str,
        now: EpochMillis,
    ) -> Result<Withdrawn, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        pending_of(&tx, task_id, request_id)?;
        let task = need_task(&tx, task_id)?;
        let was_presented = task.pending_request_id.as_deref() == Some(request_id);
        let next = if was_presented {
            leave_waiting(&tx, &self.limits, &task, now)?;
            read_interaction_presented(&tx, task_id)?
        } else {
            tx.execute(
                "UPDATE interactions SET status = 'stale', resolved_at = ?2
                 WHERE request_id = ?1 AND status = 'pending'",
                params![request_id, now],
            )?;
            let event = EventPayload::InteractionStale {
                request_id: request_id.to_owned(),
            };
            try_append(&tx, &self.limits, task_id, &event, now)?;
            None
        };
        let task_status = need_task(&tx, task_id)?.status;
        tx.commit()?;
        Ok(Withdrawn {
            was_presented,
            task_status,
            next,
        })
    }

    /// Makes every pending request of the task (presented or queued) stale
    /// and clears `pending_request_id`, without changing the task's status
    /// (the timeout path does that next). Returns the ids made stale.
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_FOUND`.
    pub fn stale_interactions(
        &mut self,
        task_id: &str,
        now: EpochMillis,
    ) -> Result<Vec<String>, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        need_task(&tx, task_id)?;
        let ids = stale_all(&tx, task_id, now)?;
        tx.commit()?;
        Ok(ids)
    }

    /// One interaction.
    ///
    /// # Errors
    ///
    /// `REQUEST_NOT_FOUND`.
    pub fn get_interaction(&mut self, request_id: &str) -> Result<InteractionRecord, StoreError> {
        let tx = self.conn.transaction()?;
        read_interaction(&tx, request_id)?.ok_or(StoreError::RequestNotFound)
    }

    /// All interactions of a task, in queue order.
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_FOUND`.
    pub fn list_interactions(
        &mut self,
        task_id: &str,
    ) -> Result<Vec<InteractionRecord>, StoreError> {
        let tx = self.conn.transaction()?;
        need_task(&tx, task_id)?;
        let raws = {
            let mut statement = tx.prepare(&format!(
                "{INTERACTION_SELECT} WHERE task_id = ?1 ORDER BY queue_seq"
            ))?;
            statement
                .query_map([task_id], read_raw)?
                .collect::<rusqlite::Result<Vec<_>>>()?
        };
        raws.into_iter().map(decode).collect()
    }
}

fn read_interaction_presented(
    conn: &Connection,
    task_id: &str,
) -> Result<Option<InteractionRecord>, StoreError> {
    let pending: Option<String> = conn.query_row(
        "SELECT pending_request_id FROM tasks WHERE task_id = ?1",
        [task_id],
        |row| row.get(0),
    )?;
    match pending {
        Some(request_id) => read_interaction(conn, &request_id),
        None => Ok(None),
    }
}
