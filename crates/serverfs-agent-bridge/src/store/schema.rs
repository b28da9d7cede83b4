//! Schema and migrations, versioned by `PRAGMA user_version`
//! (ARCHITECTURE.md §6; replaces the reference's column sniffing).
//!
//! Version 1 creates everything. A later version appends one script to
//! [`MIGRATIONS`]; each runs in the same `BEGIN IMMEDIATE` transaction as
//! the version bump, so a crash leaves the old schema or the new one. A
//! file of a newer version is refused, never downgraded, and a file with
//! tables but version 0 is not adopted.
//!
//! Conventions: timestamps are `INTEGER` epoch milliseconds; enums are
//! their wire strings, guarded by `CHECK`; JSON columns hold compact
//! UTF-8 JSON; tables are `STRICT`.

use rusqlite::{Connection, TransactionBehavior};

use super::error::StoreError;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i64 = 1;

/// `MIGRATIONS[n]` upgrades version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[V1];

/// Version 1.
///
/// * `tasks` — the task record (spec §3.2) minus the prompt: the prompt
///   lives only in memory from submit to the provider turn, because a task
///   found unfinished at restart is interrupted, never re-run (spec §3.13),
///   and a continuation needs only the stored native session id. The
///   idempotency mapping is the pair (`idempotency_key`,
///   `request_fingerprint`) with a partial unique index: a purge frees the
///   key with its task. `event_count` is the per-task event counter,
///   updated in the insert transaction.
/// * `events` — `event_id` is a global `AUTOINCREMENT`, so cursors stay
///   strictly increasing even after a purge frees rowids.
/// * `interactions` — approvals and questions. `queue_seq` orders several
///   requests of one task; the task's `pending_request_id` names the one
///   presented. `presented_at`/`expires_at` are set when it is presented;
///   `timeout_ms` is the interaction timeout to apply then.
/// * `results` — final responses: the whole text inline, or a preview plus
///   the spool file name; size and SHA-256 of the whole text either way.
const V1: &str = "
CREATE TABLE tasks (
    task_id               TEXT    NOT NULL PRIMARY KEY,
    runtime               TEXT    NOT NULL,
    workdir_alias         TEXT    NOT NULL,
    workdir_slot          INTEGER,
    relative_cwd          TEXT    NOT NULL,
    profile               TEXT    NOT NULL,
    requested_model       TEXT,
    status                TEXT    NOT NULL,
    created_at            INTEGER NOT NULL,
    started_at            INTEGER,
    updated_at            INTEGER NOT NULL,
    completed_at          INTEGER,
    deadline_at           INTEGER NOT NULL,
    continue_from_task_id TEXT,
    correlation_id        TEXT,
    idempotency_key       TEXT,
    request_fingerprint   TEXT,
    native_session_id     TEXT,
    native_turn_id        TEXT,
    manifest_json         TEXT    NOT NULL,
    manifest_sha256       TEXT    NOT NULL,
    error_code            TEXT,
    error_message         TEXT,
    pending_request_id    TEXT,
    event_count           INTEGER NOT NULL DEFAULT 0,
    CHECK (workdir_slot IS NULL OR workdir_slot BETWEEN 1 AND 16),
    CHECK (profile IN ('review', 'workspace-write')),
    CHECK (status IN ('queued', 'starting', 'running', 'waiting_for_approval',
                      'waiting_for_question', 'succeeded', 'failed', 'cancelled',
                      'interrupted')),
    CHECK ((idempotency_key IS NULL) = (request_fingerprint IS NULL)),
    CHECK (event_count >= 0)
) STRICT;
CREATE UNIQUE INDEX tasks_idempotency_key ON tasks (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_status_created ON tasks (status, created_at);
CREATE INDEX tasks_completed ON tasks (completed_at) WHERE completed_at IS NOT NULL;

CREATE TABLE events (
    event_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id      TEXT    NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    event_type   TEXT    NOT NULL,
    payload_json TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX events_task_cursor ON events (task_id, event_id);

CREATE TABLE interactions (
    request_id      TEXT    NOT NULL PRIMARY KEY,
    task_id         TEXT    NOT NULL REFERENCES tasks (task_id) ON DELETE CASCADE,
    kind            TEXT    NOT NULL,
    status          TEXT    NOT NULL,
    queue_seq       INTEGER NOT NULL,
    payload_json    TEXT    NOT NULL,
    resolution_json TEXT,
    timeout_ms      INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    presented_at    INTEGER,
    expires_at      INTEGER,
    resolved_at     INTEGER,
    UNIQUE (task_id, queue_seq),
    CHECK (kind IN ('approval', 'question')),
    CHECK (status IN ('pending', 'resolved', 'stale')),
    CHECK ((status = 'resolved') = (resolution_json IS NOT NULL)),
    CHECK ((presented_at IS NULL) = (expires_at IS NULL)),
    CHECK (timeout_ms > 0)
) STRICT;
CREATE INDEX interactions_task_queue ON interactions (task_id, status, queue_seq);

CREATE TABLE results (
    task_id        TEXT    NOT NULL PRIMARY KEY
                           REFERENCES tasks (task_id) ON DELETE CASCADE,
    storage        TEXT    NOT NULL,
    final_response TEXT    NOT NULL,
    spool_name     TEXT,
    size_bytes     INTEGER NOT NULL,
    sha256         TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    CHECK (storage IN ('inline', 'spool')),
    CHECK ((storage = 'spool') = (spool_name IS NOT NULL)),
    CHECK (size_bytes >= 0)
) STRICT;
";

/// Brings the database to [`SCHEMA_VERSION`]; a no-op when it is there.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found < 0 {
        return Err(StoreError::SchemaUnknown);
    }
    if found == 0 {
        let objects: i64 =
            tx.query_row("SELECT COUNT(*) FROM sqlite_schema", [], |row| row.get(0))?;
        if objects != 0 {
            return Err(StoreError::SchemaUnknown);
        }
    }
    let applied = usize::try_from(found).map_err(|_| StoreError::SchemaUnknown)?;
    for script in MIGRATIONS.iter().skip(applied) {
        tx.execute_batch(script)?;
    }
    if found != SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(())
}
