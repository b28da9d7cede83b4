//! The state database's schema, versioned by `PRAGMA user_version` like
//! the Bridge's store: `MIGRATIONS[n]` upgrades version `n` to `n + 1` in
//! the same transaction as the version bump; a newer version is refused.
//!
//! Conventions: epoch milliseconds as `INTEGER`, hashes as lowercase hex
//! `TEXT`, `STRICT` tables.

use rusqlite::{Connection, TransactionBehavior};

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i64 = 1;

/// `MIGRATIONS[n]` upgrades version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[V1];

/// Version 1.
///
/// * `clients` — self-registered clients; `granted` turns 1 at their
///   first grant (until then they live only a short time).
/// * `grants` — one per approval, looked up by its tokens' hashes.
/// * `retired_refresh` — hashes of refresh tokens rotated away, for reuse
///   detection; each lives until the token it was would have expired, and
///   a grant keeps only its newest few.
/// * `approval_codes` — hashes of unused one-time approval codes.
const V1: &str = "
CREATE TABLE clients (
    client_id          TEXT    NOT NULL PRIMARY KEY,
    client_name        TEXT    NOT NULL,
    redirect_uris_json TEXT    NOT NULL,
    created_ms         INTEGER NOT NULL,
    granted            INTEGER NOT NULL DEFAULT 0 CHECK (granted IN (0, 1))
) STRICT;
CREATE INDEX clients_unfinished ON clients (created_ms) WHERE granted = 0;

CREATE TABLE grants (
    id                 TEXT    NOT NULL PRIMARY KEY,
    client_id          TEXT    NOT NULL,
    client_name        TEXT    NOT NULL,
    scopes             TEXT    NOT NULL,
    resource           TEXT    NOT NULL,
    approved_by        TEXT    NOT NULL,
    created_ms         INTEGER NOT NULL,
    code_sha256        TEXT    NOT NULL,
    access_sha256      TEXT    NOT NULL,
    access_expires_ms  INTEGER NOT NULL,
    refresh_sha256     TEXT    NOT NULL,
    refresh_expires_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX grants_access ON grants (access_sha256);
CREATE INDEX grants_refresh ON grants (refresh_sha256);
CREATE INDEX grants_code ON grants (code_sha256);
CREATE INDEX grants_client ON grants (client_id);
CREATE INDEX grants_expiry ON grants (refresh_expires_ms);

CREATE TABLE retired_refresh (
    sha256     TEXT    NOT NULL PRIMARY KEY,
    grant_id   TEXT    NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    retired_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX retired_refresh_grant ON retired_refresh (grant_id, retired_ms);
CREATE INDEX retired_refresh_expiry ON retired_refresh (expires_ms);

CREATE TABLE approval_codes (
    sha256     TEXT    NOT NULL PRIMARY KEY,
    expires_ms INTEGER NOT NULL
) STRICT;
";

/// Why the schema cannot be used.
#[derive(Debug)]
pub enum SchemaProblem {
    /// A newer build wrote it.
    Newer(i64),
    /// SQLite failed.
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for SchemaProblem {
    fn from(e: rusqlite::Error) -> SchemaProblem {
        SchemaProblem::Sqlite(e)
    }
}

/// Brings `conn`'s schema to [`SCHEMA_VERSION`].
///
/// # Errors
///
/// A newer schema, or SQLite failed.
pub fn migrate(conn: &mut Connection) -> Result<(), SchemaProblem> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(SchemaProblem::Newer(found));
    }
    for (version, script) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(usize::try_from(found).unwrap_or(0))
    {
        tx.execute_batch(script)?;
        let next = i64::try_from(version + 1).unwrap_or(SCHEMA_VERSION);
        tx.pragma_update(None, "user_version", next)?;
    }
    tx.commit()?;
    Ok(())
}
