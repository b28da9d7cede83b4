//! Task rows: creation with idempotency and the active-task limit,
//! compare-and-set transitions, the reconciliation list, retention purge.

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use serde_json::{Map, Value};
use serverfs_protocol::bridge::{
    AgentProfile, BridgeErrorCode, EpochMillis, EventPayload, ResultStorage, TaskStatus, TaskView,
};

use super::connection::Db;
use super::error::StoreError;
use super::event::try_append;
use super::id::check_task_id;
use super::interaction::{leave_waiting, read_interaction, stale_all};
use super::result::StoredResult;
use super::spool;
use super::transition::transition_allowed;
use super::wire::{from_json, from_text, to_json, to_text, unsigned};

/// A task to insert (status `queued`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// `agt_` + 24 hex (see [`new_task_id`](super::new_task_id)).
    pub task_id: String,
    /// Runtime name.
    pub runtime: String,
    /// Workdir alias.
    pub workdir_alias: String,
    /// Legacy Compose slot `1..=16`, or `None` for an alias-keyed lease.
    pub workdir_slot: Option<u8>,
    /// Normalized relative working directory; `""` is the root.
    pub relative_cwd: String,
    /// The profile.
    pub profile: AgentProfile,
    /// Request-scoped model, `None` for the provider default.
    pub requested_model: Option<String>,
    /// Submission time plus the task timeout.
    pub deadline_at: EpochMillis,
    /// The task this one continues.
    pub continue_from_task_id: Option<String>,
    /// The native session inherited from `continue_from_task_id`; the
    /// runner continues it instead of starting a new one.
    pub native_session_id: Option<String>,
    /// Caller correlation id.
    pub correlation_id: Option<String>,
    /// Idempotency key and request fingerprint.
    pub idempotency: Option<IdempotencyKey>,
    /// The immutable execution manifest (spec §3.5).
    pub manifest: Map<String, Value>,
    /// SHA-256 of the manifest's canonical JSON, computed by the caller.
    pub manifest_sha256: String,
}

/// An idempotency key with the fingerprint of the request that used it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// The caller's opaque key.
    pub key: String,
    /// SHA-256 hex of the canonical request (spec §3.6).
    pub fingerprint: String,
}

/// The outcome of [`Db::create_task`].
#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    /// A new row, status `queued`.
    New(TaskRecord),
    /// The key was used before with the same fingerprint: the existing task,
    /// in its current status. No second turn may be started for it.
    Replayed(TaskRecord),
}

impl Created {
    /// The task, new or replayed.
    pub fn task(&self) -> &TaskRecord {
        match self {
            Created::New(task) | Created::Replayed(task) => task,
        }
    }
}

/// Why a task failed or was interrupted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskError {
    /// The stable code.
    pub code: BridgeErrorCode,
    /// Detail, host paths already redacted.
    pub message: String,
}

/// A persisted task (spec §3.2), including the internal fields the view
/// hides.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// The id.
    pub task_id: String,
    /// Runtime name.
    pub runtime: String,
    /// Workdir alias.
    pub workdir_alias: String,
    /// Legacy slot, `None` when alias-keyed.
    pub workdir_slot: Option<u8>,
    /// Normalized relative working directory.
    pub relative_cwd: String,
    /// Profile.
    pub profile: AgentProfile,
    /// Request-scoped model.
    pub requested_model: Option<String>,
    /// Current status.
    pub status: TaskStatus,
    /// Accepted at.
    pub created_at: EpochMillis,
    /// `queued → starting` at.
    pub started_at: Option<EpochMillis>,
    /// Last change.
    pub updated_at: EpochMillis,
    /// Reached a terminal status at.
    pub completed_at: Option<EpochMillis>,
    /// Deadline.
    pub deadline_at: EpochMillis,
    /// The continued task.
    pub continue_from_task_id: Option<String>,
    /// Correlation id.
    pub correlation_id: Option<String>,
    /// Idempotency key.
    pub idempotency_key: Option<String>,
    /// Request fingerprint (internal).
    pub request_fingerprint: Option<String>,
    /// Provider session id (internal; never returned to clients).
    pub native_session_id: Option<String>,
    /// Provider turn id (internal; never returned to clients).
    pub native_turn_id: Option<String>,
    /// The execution manifest.
    pub manifest: Map<String, Value>,
    /// Its SHA-256.
    pub manifest_sha256: String,
    /// Failure code.
    pub error_code: Option<BridgeErrorCode>,
    /// Failure detail.
    pub error_message: Option<String>,
    /// The presented interaction, while waiting.
    pub pending_request_id: Option<String>,
    /// Events recorded so far.
    pub event_count: u32,
    /// The stored result, once the task succeeded.
    pub result: Option<StoredResult>,
}

/// A compare-and-set state change.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The status the caller believes the task has; anything else is
    /// `INVALID_TASK_TRANSITION` ([`StoreError::StatusChanged`]).
    pub from: TaskStatus,
    /// The target status; must be in the table.
    pub to: TaskStatus,
    /// For `failed`/`interrupted`: why.
    pub error: Option<TaskError>,
    /// An event to record in the same transaction (typically the lifecycle
    /// event of the change: `task.started`, `task.cancelled`, …). Dropped,
    /// not fatal, when its tier is full.
    pub event: Option<EventPayload>,
}

impl Transition {
    /// `from → to` with nothing else.
    pub fn new(from: TaskStatus, to: TaskStatus) -> Transition {
        Transition {
            from,
            to,
            error: None,
            event: None,
        }
    }

    /// Adds an event to record with the change.
    pub fn with_event(mut self, event: EventPayload) -> Transition {
        self.event = Some(event);
        self
    }

    /// Adds the failure code and detail.
    pub fn with_error(mut self, code: BridgeErrorCode, message: impl Into<String>) -> Transition {
        self.error = Some(TaskError {
            code,
            message: message.into(),
        });
        self
    }
}

/// The outcome of [`Db::transition`].
#[derive(Debug, Clone, PartialEq)]
pub struct Transitioned {
    /// The task after the change.
    pub task: TaskRecord,
    /// The id of the event recorded with it; `None` when none was given or
    /// its tier was full.
    pub event_id: Option<i64>,
}

/// The outcome of [`Db::purge_terminal_before`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Purged {
    /// Tasks deleted with their events, interactions, results and spool files.
    pub purged: Vec<String>,
    /// Tasks kept because their spool file could not be deleted.
    pub skipped: Vec<String>,
}

const TASK_SELECT: &str = "
SELECT t.task_id, t.runtime, t.workdir_alias, t.workdir_slot, t.relative_cwd, t.profile,
       t.requested_model, t.status, t.created_at, t.started_at, t.updated_at,
       t.completed_at, t.deadline_at, t.continue_from_task_id, t.correlation_id,
       t.idempotency_key, t.request_fingerprint, t.native_session_id, t.native_turn_id,
       t.manifest_json, t.manifest_sha256, t.error_code, t.error_message,
       t.pending_request_id, t.event_count,
       r.storage, r.final_response, r.spool_name, r.size_bytes, r.sha256
FROM tasks t LEFT JOIN results r ON r.task_id = t.task_id";

const ACTIVE: &str =
    "('queued', 'starting', 'running', 'waiting_for_approval', 'waiting_for_question')";

/// One task row as SQLite types, before the enums and JSON are decoded.
struct RawTask {
    task_id: String,
    runtime: String,
    workdir_alias: String,
    workdir_slot: Option<i64>,
    relative_cwd: String,
    profile: String,
    requested_model: Option<String>,
    status: String,
    created_at: i64,
    started_at: Option<i64>,
    updated_at: i64,
    completed_at: Option<i64>,
    deadline_at: i64,
    continue_from_task_id: Option<String>,
    correlation_id: Option<String>,
    idempotency_key: Option<String>,
    request_fingerprint: Option<String>,
    native_session_id: Option<String>,
    native_turn_id: Option<String>,
    manifest_json: String,
    manifest_sha256: String,
    error_code: Option<String>,
    error_message: Option<String>,
    pending_request_id: Option<String>,
    event_count: i64,
    result_storage: Option<String>,
    result_text: Option<String>,
    result_spool_name: Option<String>,
    result_size_bytes: Option<i64>,
    result_sha256: Option<String>,
}

/// Reads the columns of [`TASK_SELECT`], in order.
fn read_raw(row: &Row<'_>) -> rusqlite::Result<RawTask> {
    Ok(RawTask {
        task_id: row.get(0)?,
        runtime: row.get(1)?,
        workdir_alias: row.get(2)?,
        workdir_slot: row.get(3)?,
        relative_cwd: row.get(4)?,
        profile: row.get(5)?,
        requested_model: row.get(6)?,
        status: row.get(7)?,
        created_at: row.get(8)?,
        started_at: row.get(9)?,
        updated_at: row.get(10)?,
        completed_at: row.get(11)?,
        deadline_at: row.get(12)?,
        continue_from_task_id: row.get(13)?,
        correlation_id: row.get(14)?,
        idempotency_key: row.get(15)?,
        request_fingerprint: row.get(16)?,
        native_session_id: row.get(17)?,
        native_turn_id: row.get(18)?,
        manifest_json: row.get(19)?,
        manifest_sha256: row.get(20)?,
        error_code: row.get(21)?,
        error_message: row.get(22)?,
        pending_request_id: row.get(23)?,
        event_count: row.get(24)?,
        result_storage: row.get(25)?,
        result_text: row.get(26)?,
        result_spool_name: row.get(27)?,
        result_size_bytes: row.get(28)?,
        result_sha256: row.get(29)?,
    })
}

impl RawTask {
    fn decode(self) -> Result<TaskRecord, StoreError> {
        let result = match self.result_storage {
            None => None,
            Some(storage) => {
                let broken = || StoreError::corrupt("result row");
                Some(StoredResult {
                    storage: from_text::<ResultStorage>(storage, "result storage")?,
                    final_response: self.result_text.ok_or_else(broken)?,
                    spool_name: self.result_spool_name,
                    size_bytes: unsigned(
                        self.result_size_bytes.ok_or_else(broken)?,
                        "result size",
                    )?,
                    sha256: self.result_sha256.ok_or_else(broken)?,
                })
            }
        };
        Ok(TaskRecord {
            task_id: self.task_id,
            runtime: self.runtime,
            workdir_alias: self.workdir_alias,
            workdir_slot: self
                .workdir_slot
                .map(|slot| unsigned(slot, "workdir slot"))
                .transpose()?,
            relative_cwd: self.relative_cwd,
            profile: from_text(self.profile, "task profile")?,
            requested_model: self.requested_model,
            status: from_text(self.status, "task status")?,
            created_at: self.created_at,
            started_at: self.started_at,
            updated_at: self.updated_at,
            completed_at: self.completed_at,
            deadline_at: self.deadline_at,
            continue_from_task_id: self.continue_from_task_id,
            correlation_id: self.correlation_id,
            idempotency_key: self.idempotency_key,
            request_fingerprint: self.request_fingerprint,
            native_session_id: self.native_session_id,
            native_turn_id: self.native_turn_id,
            manifest: from_json(&self.manifest_json, "task manifest")?,
            manifest_sha256: self.manifest_sha256,
            error_code: self
                .error_code
                .map(|code| from_text(code, "task error code"))
                .transpose()?,
            error_message: self.error_message,
            pending_request_id: self.pending_request_id,
            event_count: unsigned(self.event_count, "event count")?,
            result,
        })
    }
}

/// Reads one task inside the caller's transaction.
pub(crate) fn read_task(
    conn: &Connection,
    task_id: &str,
) -> Result<Option<TaskRecord>, StoreError> {
    let raw = conn
        .query_row(
            &format!("{TASK_SELECT} WHERE t.task_id = ?1"),
            [task_id],
            read_raw,
        )
        .optional()?;
    raw.map(RawTask::decode).transpose()
}

/// Reads one task that must exist.
pub(crate) fn need_task(conn: &Connection, task_id: &str) -> Result<TaskRecord, StoreError> {
    read_task(conn, task_id)?.ok_or(StoreError::TaskNotFound)
}

fn read_tasks(
    conn: &Connection,
    tail: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<TaskRecord>, StoreError> {
    let mut statement = conn.prepare(&format!("{TASK_SELECT} {tail}"))?;
    let raws = statement
        .query_map(params, read_raw)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raws.into_iter().map(RawTask::decode).collect()
}

/// Sets a task's status and `updated_at`, with the table's side effects
/// for terminal targets; the caller has checked the table and the CAS.
pub(crate) fn set_status(
    conn: &Connection,
    task_id: &str,
    to: TaskStatus,
    now: EpochMillis,
) -> Result<(), StoreError> {
    let status = to_text(&to, "task status")?;
    if to.is_terminal() {
        stale_all(conn, task_id, now)?;
        conn.execute(
            "UPDATE tasks SET status = ?2, updated_at = ?3, completed_at = ?3,
                 pending_request_id = NULL
             WHERE task_id = ?1",
            params![task_id, status, now],
        )?;
    } else {
        conn.execute(
            "UPDATE tasks SET status = ?2, updated_at = ?3 WHERE task_id = ?1",
            params![task_id, status, now],
        )?;
    }
    Ok(())
}

/// Checks `Transition::from` against the task and the table.
pub(crate) fn check_transition(
    task: &TaskRecord,
    from: TaskStatus,
    to: TaskStatus,
) -> Result<(), StoreError> {
    if task.status != from {
        return Err(StoreError::StatusChanged {
            expected: from,
            actual: task.status,
        });
    }
    if !transition_allowed(from, to) {
        return Err(StoreError::InvalidTransition { from, to });
    }
    Ok(())
}

impl Db {
    /// Inserts a `queued` task, or replays the task of an idempotency key
    /// used before with the same fingerprint.
    ///
    /// One transaction: idempotency lookup, id collision, active-task
    /// limit, insert.
    ///
    /// # Errors
    ///
    /// `AGENT_IDEMPOTENCY_CONFLICT` (same key, other fingerprint),
    /// `AGENT_TASK_EXISTS`, `AGENT_TASK_LIMIT_REACHED`, `INVALID_REQUEST`
    /// (malformed task id).
    pub fn create_task(&mut self, task: &NewTask, now: EpochMillis) -> Result<Created, StoreError> {
        check_task_id(&task.task_id)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(idempotency) = &task.idempotency
            && let Some(existing) = find_by_key(&tx, &idempotency.key)?
        {
            return if existing.request_fingerprint.as_deref()
                == Some(idempotency.fingerprint.as_str())
            {
                Ok(Created::Replayed(existing))
            } else {
                Err(StoreError::IdempotencyConflict)
            };
        }
        if read_task(&tx, &task.task_id)?.is_some() {
            return Err(StoreError::TaskExists);
        }
        let active = count_active(&tx)?;
        if active >= self.limits.max_active_tasks {
            return Err(StoreError::TaskLimitReached {
                limit: self.limits.max_active_tasks,
            });
        }
        tx.execute(
            "INSERT INTO tasks (task_id, runtime, workdir_alias, workdir_slot, relative_cwd,
                 profile, requested_model, status, created_at, updated_at, deadline_at,
                 continue_from_task_id, native_session_id, correlation_id, idempotency_key,
                 request_fingerprint, manifest_json, manifest_sha256)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', ?8, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
                 ?15, ?16)",
            params![
                task.task_id,
                task.runtime,
                task.workdir_alias,
                task.workdir_slot,
                task.relative_cwd,
                task.profile.as_str(),
                task.requested_model,
                now,
                task.deadline_at,
                task.continue_from_task_id,
                task.native_session_id,
                task.correlation_id,
                task.idempotency.as_ref().map(|i| &i.key),
                task.idempotency.as_ref().map(|i| &i.fingerprint),
                to_json(&task.manifest, "task manifest")?,
                task.manifest_sha256,
            ],
        )?;
        let created = need_task(&tx, &task.task_id)?;
        tx.commit()?;
        Ok(Created::New(created))
    }

    /// The task with this id.
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_FOUND`.
    pub fn get_task(&mut self, task_id: &str) -> Result<TaskRecord, StoreError> {
        let tx = self.conn.transaction()?;
        need_task(&tx, task_id)
    }

    /// The task that used this idempotency key, if any (the submit fast
    /// path, before policy checks).
    ///
    /// # Errors
    ///
    /// Database failures only.
    pub fn find_by_idempotency_key(&mut self, key: &str) -> Result<Option<TaskRecord>, StoreError> {
        let tx = self.conn.transaction()?;
        find_by_key(&tx, key)
    }

    /// The task as `task.get` reports it, with its presented interaction.
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_FOUND`.
    pub fn task_view(&mut self, task_id: &str) -> Result<TaskView, StoreError> {
        let tx = self.conn.transaction()?;
        let task = need_task(&tx, task_id)?;
        let pending_request = match &task.pending_request_id {
            Some(request_id) => read_interaction(&tx, request_id)?.and_then(|r| r.to_wire()),
            None => None,
        };
        Ok(TaskView {
            final_response_truncated: task
                .result
                .as_ref()
                .is_some_and(|r| r.storage == ResultStorage::Spool),
            result: task.result.as_ref().map(StoredResult::summary),
            final_response: task.result.map(|r| r.final_response),
            task_id: task.task_id,
            runtime: task.runtime,
            workdir_alias: task.workdir_alias,
            workdir_slot: task.workdir_slot,
            relative_cwd: task.relative_cwd,
            profile: task.profile,
            requested_model: task.requested_model,
            status: task.status,
            created_at: task.created_at,
            started_at: task.started_at,
            updated_at: task.updated_at,
            completed_at: task.completed_at,
            deadline_at: task.deadline_at,
            continue_from_task_id: task.continue_from_task_id,
            correlation_id: task.correlation_id,
            idempotency_key: task.idempotency_key,
            manifest: task.manifest,
            manifest_sha256: task.manifest_sha256,
            error_code: task.error_code,
            error_message: task.error_message,
            pending_request_id: task.pending_request_id,
            pending_request,
        })
    }

    /// Changes a task's status by compare-and-set on `transition.from`.
    ///
    /// Side effects (spec §3.1): `queued → starting` sets `started_at`; a
    /// terminal target sets `completed_at`, turns every pending or queued
    /// interaction `stale` and clears `pending_request_id`; leaving a
    /// waiting state for `running` withdraws the presented interaction and
    /// presents the next queued one, if any (the task then waits again).
    /// The optional event is recorded in the same transaction.
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_FOUND`; `INVALID_TASK_TRANSITION` for a status other
    /// than `from` ([`StoreError::StatusChanged`]), a pair outside the table
    /// ([`StoreError::InvalidTransition`]) or a waiting target
    /// ([`StoreError::WaitingNeedsInteraction`]: use
    /// [`Db::add_interaction`]).
    pub fn transition(
        &mut self,
        task_id: &str,
        transition: Transition,
        now: EpochMillis,
    ) -> Result<Transitioned, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let task = need_task(&tx, task_id)?;
        let Transition {
            from,
            to,
            error,
            event,
        } = transition;
        check_transition(&task, from, to)?;
        match to {
            TaskStatus::WaitingForApproval | TaskStatus::WaitingForQuestion => {
                return Err(StoreError::WaitingNeedsInteraction { to });
            }
            TaskStatus::Running
                if matches!(
                    from,
                    TaskStatus::WaitingForApproval | TaskStatus::WaitingForQuestion
                ) =>
            {
                leave_waiting(&tx, &self.limits, &task, now)?;
            }
            TaskStatus::Queued
            | TaskStatus::Starting
            | TaskStatus::Running
            | TaskStatus::Succeeded
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted => set_status(&tx, task_id, to, now)?,
        }
        if from == TaskStatus::Queued && to == TaskStatus::Starting {
            tx.execute(
                "UPDATE tasks SET started_at = ?2 WHERE task_id = ?1",
                params![task_id, now],
            )?;
        }
        if let Some(error) = error {
            tx.execute(
                "UPDATE tasks SET error_code = ?2, error_message = ?3 WHERE task_id = ?1",
                params![task_id, error.code.as_str(), error.message],
            )?;
        }
        let event_id = match &event {
            Some(event) => try_append(&tx, &self.limits, task_id, event, now)?,
            None => None,
        };
        let task = need_task(&tx, task_id)?;
        tx.commit()?;
        Ok(Transitioned { task, event_id })
    }

    /// Records the provider's native ids; `None` keeps the stored value.
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_FOUND`.
    pub fn set_native_ids(
        &mut self,
        task_id: &str,
        session_id: Option<&str>,
        turn_id: Option<&str>,
        now: EpochMillis,
    ) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let changed = tx.execute(
            "UPDATE tasks SET native_session_id = COALESCE(?2, native_session_id),
                 native_turn_id = COALESCE(?3, native_turn_id), updated_at = ?4
             WHERE task_id = ?1",
            params![task_id, session_id, turn_id, now],
        )?;
        if changed == 0 {
            return Err(StoreError::TaskNotFound);
        }
        tx.commit()?;
        Ok(())
    }

    /// How many tasks are not terminal (all workdirs, all profiles).
    ///
    /// # Errors
    ///
    /// Database failures only.
    pub fn count_active_tasks(&mut self) -> Result<u32, StoreError> {
        let tx = self.conn.transaction()?;
        count_active(&tx)
    }

    /// Every non-terminal task, oldest first: the start-up reconciliation
    /// list (spec §8.5). Nothing in it is re-run automatically.
    ///
    /// # Errors
    ///
    /// Database failures only.
    pub fn list_active_tasks(&mut self) -> Result<Vec<TaskRecord>, StoreError> {
        let tx = self.conn.transaction()?;
        read_tasks(
            &tx,
            &format!("WHERE t.status IN {ACTIVE} ORDER BY t.created_at, t.task_id"),
            [],
        )
    }

    /// The `limit` most recently created tasks, newest first (`inspect`).
    ///
    /// # Errors
    ///
    /// Database failures only.
    pub fn list_recent_tasks(&mut self, limit: u32) -> Result<Vec<TaskRecord>, StoreError> {
        let tx = self.conn.transaction()?;
        read_tasks(
            &tx,
            "ORDER BY t.created_at DESC, t.task_id DESC LIMIT ?1",
            [limit],
        )
    }

    /// Deletes terminal tasks completed before `cutoff` (retention, spec
    /// §3.9) with their events, interactions, result rows and spool files,
    /// except those in `keep` (still referenced by a recovery guard). A
    /// task whose spool file cannot be deleted is kept and reported.
    ///
    /// Spool files are deleted before the rows, in the same write
    /// transaction: a crash in between leaves a row whose file is gone
    /// (the next purge finishes it), never an orphaned file.
    ///
    /// # Errors
    ///
    /// Database failures only.
    pub fn purge_terminal_before(
        &mut self,
        cutoff: EpochMillis,
        keep: &[String],
    ) -> Result<Purged, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let candidates: Vec<(String, Option<String>)> = {
            let mut statement = tx.prepare(&format!(
                "SELECT t.task_id, r.spool_name FROM tasks t
                 LEFT JOIN results r ON r.task_id = t.task_id
                 WHERE t.status NOT IN {ACTIVE} AND t.completed_at < ?1
                 ORDER BY t.completed_at"
            ))?;
            statement
                .query_map([cutoff], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?
        };
        let mut report = Purged::default();
        for (task_id, spool_name) in candidates {
            if keep.contains(&task_id) {
                continue;
            }
            if let Some(name) = spool_name
                && spool::remove(&self.state, &name).is_err()
            {
                report.skipped.push(task_id);
                continue;
            }
            tx.execute("DELETE FROM tasks WHERE task_id = ?1", [&task_id])?;
            report.purged.push(task_id);
        }
        tx.commit()?;
        Ok(report)
    }
}

fn find_by_key(conn: &Connection, key: &str) -> Result<Option<TaskRecord>, StoreError> {
    Ok(read_tasks(conn, "WHERE t.idempotency_key = ?1", [key])?
        .into_iter()
        .next())
}

fn count_active(conn: &Connection) -> Result<u32, StoreError> {
    let count: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM tasks WHERE status IN {ACTIVE}"),
        [],
        |row| row.get(0),
    )?;
    unsigned(count, "task count")
}
