//! The OAuth state store: dynamically registered clients, grants (one per
//! approval: its scopes, and the hashes of its current access and refresh
//! tokens) and the one-time approval codes `serverfs oauth approve-code`
//! prints.
//!
//! It is a SQLite database (WAL) of mode 0600 in an owner-only directory,
//! holding hashes only, like the bearer token file. Each change touches
//! only its own rows in one transaction (issue 27: the JSON file it
//! replaces was rewritten and re-parsed whole at every change, so a flood
//! of registrations made every OAuth call slow). The server and the
//! `serverfs oauth` commands open it concurrently; SQLite's locking (with
//! a busy timeout) orders their changes, and the server reads it at every
//! request, so a revocation takes effect on the next one.
//!
//! A JSON state file of earlier versions is imported once ([`legacy`]).
//!
//! Lookups by a token's hash go through an index rather than a
//! constant-time scan: the hash is of a 256-bit random token, so timing
//! can at most reveal bits of a hash nobody can invert.

mod legacy;
mod schema;

use std::io;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::private_file::{self, ModeProblem, PrivateFileError};

/// How long a self-registered client that never completed a grant lives
/// (a consent page lives 10 minutes, a code one more).
pub const UNFINISHED_CLIENT_TTL_MS: u64 = 15 * 60_000;
/// Retired refresh-token hashes a grant keeps for reuse detection (its
/// newest ones; an older leaked token is then merely invalid).
pub const MAX_RETIRED_PER_GRANT: usize = 8;
/// How long a call waits for another process's write (`serverfs oauth`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the state store cannot be used. Messages name the file (an
/// operator's path) and never a token or hash.
#[derive(Debug, Error)]
pub enum StoreError {
    /// It could not be read.
    #[error("OAuth state file {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A JSON state file to import is not of the expected shape.
    #[error("OAuth state file {} is malformed: {source}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// It has another format version.
    #[error("OAuth state file {} has version {found}, expected {expected}", .path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it has.
        found: i64,
        /// The version this build knows.
        expected: i64,
    },
    /// Not a regular file, or readable or writable by others.
    #[error("OAuth state file {} must be a regular file of mode 0600 (chmod 600)", .path.display())]
    NotPrivate {
        /// The file.
        path: PathBuf,
    },
    /// The database failed.
    #[error("OAuth state file {}: {source}", .path.display())]
    Database {
        /// The file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
    /// It could not be written or locked.
    #[error(transparent)]
    Write(#[from] PrivateFileError),
}

/// Everything the store holds (for listing, the doctor and the import).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    version: u32,
    /// Clients that registered themselves (RFC 7591).
    #[serde(default)]
    pub clients: Vec<RegisteredClient>,
    /// Live grants.
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// Unused approval codes.
    #[serde(default)]
    pub approval_codes: Vec<ApprovalCode>,
}

/// A dynamically registered client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisteredClient {
    /// Its `client_id` (random).
    pub client_id: String,
    /// The name it gave (shown on the consent page as "calls itself").
    pub client_name: String,
    /// Its redirect URIs, each loopback or allowlisted.
    pub redirect_uris: Vec<String>,
    /// Registration time, epoch milliseconds.
    pub created_ms: u64,
    /// When it goes unless it completes a grant first; `None` once it has.
    #[serde(skip)]
    pub expires_ms: Option<u64>,
}

/// One approval: what a client may do, and its current tokens' hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// Short id the `serverfs oauth` commands name it by.
    pub id: String,
    /// The client it was issued to.
    pub client_id: String,
    /// The client's name at approval.
    pub client_name: String,
    /// Granted scopes (space-separated).
    pub scopes: String,
    /// The canonical resource URI its tokens are bound to (audience).
    pub resource: String,
    /// How the owner proved ownership: `token:NAME` or `approval code`.
    pub approved_by: String,
    /// Approval time, epoch milliseconds.
    pub created_ms: u64,
    /// Hash of the authorization code it was issued for (a replayed code
    /// revokes the grant).
    pub code_sha256: String,
    /// Hash of the current access token.
    pub access_sha256: String,
    /// When the access token expires, epoch milliseconds.
    pub access_expires_ms: u64,
    /// Hash of the current refresh token.
    pub refresh_sha256: String,
    /// When the refresh token expires (and the grant with it).
    pub refresh_expires_ms: u64,
    /// Hashes of refresh tokens already rotated away (only in a JSON file
    /// to import; the database keeps them in their own table).
    #[serde(default)]
    pub retired_refresh_sha256: Vec<String>,
}

/// A one-time approval code (its hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalCode {
    /// Hash of the code.
    pub sha256: String,
    /// When it stops working, epoch milliseconds.
    pub expires_ms: u64,
}

/// A grant's new tokens at a refresh.
#[derive(Debug, Clone)]
pub struct Rotation {
    /// The scopes it keeps (possibly narrowed).
    pub scopes: String,
    /// Hash of the new access token.
    pub access_sha256: String,
    /// When it expires.
    pub access_expires_ms: u64,
    /// Hash of the new refresh token.
    pub refresh_sha256: String,
    /// When it expires.
    pub refresh_expires_ms: u64,
}

/// Why a refresh did not rotate.
#[derive(Debug)]
pub enum RotateRefusal<E> {
    /// The token was rotated away before: the grant (its id) is revoked.
    Reused(String),
    /// No grant has it.
    Unknown,
    /// The caller's check refused.
    Refused(E),
}

/// What the doctor reports of the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Grants.
    pub grants: usize,
    /// Self-registered clients.
    pub clients: usize,
}

/// What a registration found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// Stored.
    Stored,
    /// The bound of registered clients is reached.
    Full,
}

/// The state store at a path.
#[derive(Debug)]
pub struct OAuthStore {
    path: PathBuf,
    /// Opened at first use (the `serverfs oauth` commands and the doctor
    /// make a store without wanting a file created).
    conn: Mutex<Option<Connection>>,
}

/// Epoch milliseconds as SQLite's integer (saturating; times are far
/// below `i64::MAX`).
fn sql_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A stored integer back as epoch milliseconds (a negative is `0`).
fn ms_of(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

const GRANT_COLUMNS: &str = "id, client_id, client_name, scopes, resource, approved_by, \
     created_ms, code_sha256, access_sha256, access_expires_ms, refresh_sha256, \
     refresh_expires_ms";

fn grant_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<Grant> {
    Ok(Grant {
        id: row.get(0)?,
        client_id: row.get(1)?,
        client_name: row.get(2)?,
        scopes: row.get(3)?,
        resource: row.get(4)?,
        approved_by: row.get(5)?,
        created_ms: ms_of(row.get(6)?),
        code_sha256: row.get(7)?,
        access_sha256: row.get(8)?,
        access_expires_ms: ms_of(row.get(9)?),
        refresh_sha256: row.get(10)?,
        refresh_expires_ms: ms_of(row.get(11)?),
        retired_refresh_sha256: Vec::new(),
    })
}

fn client_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<RegisteredClient> {
    let uris: String = row.get(2)?;
    let created_ms = ms_of(row.get(3)?);
    let granted: i64 = row.get(4)?;
    Ok(RegisteredClient {
        client_id: row.get(0)?,
        client_name: row.get(1)?,
        // Written by this module from a `Vec<String>`; anything else reads
        // as no redirect URI at all, which matches nothing.
        redirect_uris: serde_json::from_str(&uris).unwrap_or_default(),
        created_ms,
        expires_ms: (granted == 0).then(|| created_ms.saturating_add(UNFINISHED_CLIENT_TTL_MS)),
    })
}

const CLIENT_COLUMNS: &str = "client_id, client_name, redirect_uris_json, created_ms, granted";

impl OAuthStore {
    /// A store at `path` (the file may not exist yet).
    pub fn new(path: PathBuf) -> OAuthStore {
        OAuthStore {
            path,
            conn: Mutex::new(None),
        }
    }

    fn database_error(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Database {
            path: self.path.clone(),
            source,
        }
    }

    /// Fails unless the file is a private regular file (checked at every
    /// use, so a `chmod` fails closed at once).
    fn check_private(&self) -> Result<(), StoreError> {
        let meta = std::fs::symlink_metadata(&self.path).map_err(|source| StoreError::Read {
            path: self.path.clone(),
            source,
        })?;
        if matches!(
            private_file::mode_problem(&meta),
            Some(ModeProblem::NotRegular | ModeProblem::NotPrivate(_))
        ) {
            return Err(StoreError::NotPrivate {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    /// Opens (creating, importing a JSON state file, migrating) the
    /// database.
    fn open(&self) -> Result<Connection, StoreError> {
        {
            // Serialises the import and the creation with other processes.
            let _lock = private_file::lock(&self.path)?;
            legacy::import_if_needed(&self.path)?;
            private_file::create_empty(&self.path)?;
        }
        self.check_private()?;
        let mut conn = Connection::open(&self.path).map_err(|e| self.database_error(e))?;
        let setup = |conn: &mut Connection| -> rusqlite::Result<()> {
            conn.busy_timeout(BUSY_TIMEOUT)?;
            conn.pragma_update_and_check(None, "journal_mode", "wal", |row| {
                row.get::<_, String>(0)
            })?;
            conn.pragma_update(None, "synchronous", "FULL")?;
            // The write-ahead log is folded back every 64 pages (256 KiB)
            // and cut back to that size afterwards, so that the file and
            // its log stay small however many refreshes there are.
            conn.pragma_update(None, "wal_autocheckpoint", 64)?;
            conn.pragma_update(None, "journal_size_limit", 256 * 1024)?;
            conn.pragma_update(None, "foreign_keys", "ON")
        };
        setup(&mut conn).map_err(|e| self.database_error(e))?;
        match schema::migrate(&mut conn) {
            Ok(()) => Ok(conn),
            Err(schema::SchemaProblem::Newer(found)) => Err(StoreError::Version {
                path: self.path.clone(),
                found,
                expected: schema::SCHEMA_VERSION,
            }),
            Err(schema::SchemaProblem::Sqlite(e)) => Err(self.database_error(e)),
        }
    }

    /// Runs `work` in one writing transaction (`BEGIN IMMEDIATE`, so a
    /// read-then-write never races another writer) and commits it.
    fn with<R>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<R>,
    ) -> Result<R, StoreError> {
        self.transaction(TransactionBehavior::Immediate, work)
    }

    /// Runs `work`, which only reads, in one transaction (a snapshot that
    /// blocks no writer).
    fn read<R>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<R>,
    ) -> Result<R, StoreError> {
        self.transaction(TransactionBehavior::Deferred, work)
    }

    fn transaction<R>(
        &self,
        behavior: TransactionBehavior,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<R>,
    ) -> Result<R, StoreError> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(self.open()?);
        } else {
            self.check_private()?;
        }
        let Some(conn) = guard.as_mut() else {
            return Err(self.database_error(rusqlite::Error::InvalidQuery));
        };
        let run = |conn: &mut Connection| {
            let tx = conn.transaction_with_behavior(behavior)?;
            let result = work(&tx)?;
            tx.commit()?;
            Ok(result)
        };
        run(conn).map_err(|e| self.database_error(e))
    }

    /// Everything stored, as of `now_ms` (what expired is left out).
    ///
    /// # Errors
    ///
    /// Unreadable, malformed or not private.
    pub fn list(&self, now_ms: u64) -> Result<State, StoreError> {
        self.with(|tx| {
            prune(tx, now_ms)?;
            let clients = tx
                .prepare(&format!(
                    "SELECT {CLIENT_COLUMNS} FROM clients ORDER BY created_ms"
                ))?
                .query_map([], client_of)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let grants = tx
                .prepare(&format!(
                    "SELECT {GRANT_COLUMNS} FROM grants ORDER BY created_ms"
                ))?
                .query_map([], grant_of)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let approval_codes = tx
                .prepare("SELECT sha256, expires_ms FROM approval_codes")?
                .query_map([], |row| {
                    Ok(ApprovalCode {
                        sha256: row.get(0)?,
                        expires_ms: ms_of(row.get(1)?),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(State {
                version: legacy::JSON_VERSION,
                clients,
                grants,
                approval_codes,
            })
        })
    }

    /// How many grants and self-registered clients the file holds,
    /// without changing anything (the doctor): the database, else a JSON
    /// state file still to import, else none.
    ///
    /// # Errors
    ///
    /// Unreadable, malformed or not private.
    pub fn inspect(&self) -> Result<Counts, StoreError> {
        if let Some(source) = legacy::pending_import(&self.path)? {
            let state = legacy::read(&source)?;
            return Ok(Counts {
                grants: state.grants.len(),
                clients: state.clients.len(),
            });
        }
        if !self.path.exists() {
            return Ok(Counts::default());
        }
        self.check_private()?;
        let conn = Connection::open_with_flags(
            &self.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| self.database_error(e))?;
        let count = |table: &str| -> rusqlite::Result<usize> {
            conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|n| usize::try_from(n).unwrap_or(0))
        };
        let counted = count("grants").and_then(|grants| {
            Ok(Counts {
                grants,
                clients: count("clients")?,
            })
        });
        counted.map_err(|e| self.database_error(e))
    }

    /// The self-registered client `client_id`, unless it expired unfinished.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn client(
        &self,
        client_id: &str,
        now_ms: u64,
    ) -> Result<Option<RegisteredClient>, StoreError> {
        self.read(|tx| {
            let client = tx
                .query_row(
                    &format!("SELECT {CLIENT_COLUMNS} FROM clients WHERE client_id = ?1"),
                    [client_id],
                    client_of,
                )
                .optional()?;
            Ok(client.filter(|c| c.expires_ms.is_none_or(|at| at > now_ms)))
        })
    }

    /// Stores a new self-registered client. When `max` are stored, the
    /// oldest that never completed a grant makes room; when every one has
    /// a grant, [`Registered::Full`].
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn register(
        &self,
        client: &RegisteredClient,
        max: usize,
        now_ms: u64,
    ) -> Result<Registered, StoreError> {
        let uris = serde_json::to_string(&client.redirect_uris).unwrap_or_else(|_| "[]".into());
        self.with(|tx| {
            prune(tx, now_ms)?;
            let count: i64 = tx.query_row("SELECT count(*) FROM clients", [], |row| row.get(0))?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= max {
                let evicted = tx.execute(
                    "DELETE FROM clients WHERE client_id = (SELECT client_id FROM clients \
                     WHERE granted = 0 ORDER BY created_ms LIMIT 1)",
                    [],
                )?;
                if evicted == 0 {
                    return Ok(Registered::Full);
                }
            }
            tx.execute(
                "INSERT INTO clients (client_id, client_name, redirect_uris_json, created_ms) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    client.client_id,
                    client.client_name,
                    uris,
                    sql_ms(client.created_ms)
                ],
            )?;
            Ok(Registered::Stored)
        })
    }

    /// Stores a new grant; its client (if self-registered) is kept from
    /// now on.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn add_grant(&self, grant: &Grant, now_ms: u64) -> Result<(), StoreError> {
        self.with(|tx| {
            prune(tx, now_ms)?;
            insert_grant(tx, grant)?;
            tx.execute(
                "UPDATE clients SET granted = 1 WHERE client_id = ?1",
                [&grant.client_id],
            )?;
            Ok(())
        })
    }

    /// The grant whose current access token hashes to `access_sha256`.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn grant_by_access(&self, access_sha256: &str) -> Result<Option<Grant>, StoreError> {
        self.read(|tx| {
            tx.query_row(
                &format!("SELECT {GRANT_COLUMNS} FROM grants WHERE access_sha256 = ?1"),
                [access_sha256],
                grant_of,
            )
            .optional()
        })
    }

    /// Ids of the grants not yet expired at `now_ms`.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn live_grant_ids(&self, now_ms: u64) -> Result<Vec<String>, StoreError> {
        self.read(|tx| {
            tx.prepare("SELECT id FROM grants WHERE refresh_expires_ms > ?1")?
                .query_map([sql_ms(now_ms)], |row| row.get(0))?
                .collect()
        })
    }

    /// Revokes the grant issued for the code hashing to `code_sha256`.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn revoke_by_code(&self, code_sha256: &str) -> Result<bool, StoreError> {
        self.with(|tx| {
            Ok(tx.execute("DELETE FROM grants WHERE code_sha256 = ?1", [code_sha256])? > 0)
        })
    }

    /// Revokes the grant whose current access or refresh token hashes to
    /// `token_sha256`.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn revoke_by_token(&self, token_sha256: &str) -> Result<bool, StoreError> {
        self.with(|tx| {
            Ok(tx.execute(
                "DELETE FROM grants WHERE access_sha256 = ?1 OR refresh_sha256 = ?1",
                [token_sha256],
            )? > 0)
        })
    }

    /// Revokes the grant with id `target`, or every grant of the client
    /// `target` together with its self-registration: how many grants and
    /// clients went.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn revoke(&self, target: &str) -> Result<(usize, usize), StoreError> {
        self.with(|tx| {
            let grants = tx.execute(
                "DELETE FROM grants WHERE id = ?1 OR client_id = ?1",
                [target],
            )?;
            let clients = tx.execute("DELETE FROM clients WHERE client_id = ?1", [target])?;
            Ok((grants, clients))
        })
    }

    /// Rotates the grant whose refresh token hashes to `presented`: the
    /// old hash is retired (a second use of it revokes the grant), and
    /// `decide` — given the grant — says the new tokens or refuses, in
    /// which case nothing changes. All in one transaction: two refreshes
    /// racing with one token cannot both succeed (the loser is a reuse).
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn rotate_refresh<E>(
        &self,
        presented: &str,
        now_ms: u64,
        decide: impl FnOnce(&Grant) -> Result<Rotation, E>,
    ) -> Result<Result<String, RotateRefusal<E>>, StoreError> {
        self.with(|tx| {
            prune(tx, now_ms)?;
            let reused: Option<String> = tx
                .query_row(
                    "SELECT grant_id FROM retired_refresh WHERE sha256 = ?1",
                    [presented],
                    |row| row.get(0),
                )
                .optional()?;
            if let Some(grant_id) = reused {
                tx.execute("DELETE FROM grants WHERE id = ?1", [&grant_id])?;
                return Ok(Err(RotateRefusal::Reused(grant_id)));
            }
            let grant = tx
                .query_row(
                    &format!("SELECT {GRANT_COLUMNS} FROM grants WHERE refresh_sha256 = ?1"),
                    [presented],
                    grant_of,
                )
                .optional()?;
            let Some(grant) = grant else {
                return Ok(Err(RotateRefusal::Unknown));
            };
            let rotation = match decide(&grant) {
                Ok(rotation) => rotation,
                Err(e) => return Ok(Err(RotateRefusal::Refused(e))),
            };
            retire(
                tx,
                &grant.id,
                &grant.refresh_sha256,
                grant.refresh_expires_ms,
                now_ms,
            )?;
            tx.execute(
                "UPDATE grants SET scopes = ?2, access_sha256 = ?3, access_expires_ms = ?4, \
                 refresh_sha256 = ?5, refresh_expires_ms = ?6 WHERE id = ?1",
                params![
                    grant.id,
                    rotation.scopes,
                    rotation.access_sha256,
                    sql_ms(rotation.access_expires_ms),
                    rotation.refresh_sha256,
                    sql_ms(rotation.refresh_expires_ms),
                ],
            )?;
            Ok(Ok(rotation.scopes))
        })
    }

    /// Stores a one-time approval code's hash.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn add_approval_code(&self, code: &ApprovalCode, now_ms: u64) -> Result<(), StoreError> {
        self.with(|tx| {
            prune(tx, now_ms)?;
            tx.execute(
                "INSERT OR REPLACE INTO approval_codes (sha256, expires_ms) VALUES (?1, ?2)",
                params![code.sha256, sql_ms(code.expires_ms)],
            )?;
            Ok(())
        })
    }

    /// Uses up the live approval code hashing to `sha256`: whether there
    /// was one.
    ///
    /// # Errors
    ///
    /// The store is unusable.
    pub fn take_approval_code(&self, sha256: &str, now_ms: u64) -> Result<bool, StoreError> {
        self.with(|tx| {
            prune(tx, now_ms)?;
            Ok(tx.execute("DELETE FROM approval_codes WHERE sha256 = ?1", [sha256])? > 0)
        })
    }
}

fn insert_grant(tx: &rusqlite::Transaction<'_>, grant: &Grant) -> rusqlite::Result<()> {
    tx.execute(
        &format!(
            "INSERT INTO grants ({GRANT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, \
             ?10, ?11, ?12)"
        ),
        params![
            grant.id,
            grant.client_id,
            grant.client_name,
            grant.scopes,
            grant.resource,
            grant.approved_by,
            sql_ms(grant.created_ms),
            grant.code_sha256,
            grant.access_sha256,
            sql_ms(grant.access_expires_ms),
            grant.refresh_sha256,
            sql_ms(grant.refresh_expires_ms),
        ],
    )?;
    Ok(())
}

/// Remembers a rotated-away refresh token's hash until the token would
/// have expired, keeping only the grant's newest [`MAX_RETIRED_PER_GRANT`].
fn retire(
    tx: &rusqlite::Transaction<'_>,
    grant_id: &str,
    sha256: &str,
    expires_ms: u64,
    now_ms: u64,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT OR REPLACE INTO retired_refresh (sha256, grant_id, retired_ms, expires_ms) \
         VALUES (?1, ?2, ?3, ?4)",
        params![sha256, grant_id, sql_ms(now_ms), sql_ms(expires_ms)],
    )?;
    tx.execute(
        "DELETE FROM retired_refresh WHERE grant_id = ?1 AND sha256 NOT IN (SELECT sha256 FROM \
         retired_refresh WHERE grant_id = ?1 ORDER BY retired_ms DESC, rowid DESC LIMIT ?2)",
        params![
            grant_id,
            i64::try_from(MAX_RETIRED_PER_GRANT).unwrap_or(i64::MAX)
        ],
    )?;
    Ok(())
}

/// Drops what expired before `now_ms`: grants (with their retired
/// hashes), retired hashes, approval codes, and self-registered clients
/// that never completed a grant within [`UNFINISHED_CLIENT_TTL_MS`].
fn prune(tx: &rusqlite::Transaction<'_>, now_ms: u64) -> rusqlite::Result<()> {
    let now = sql_ms(now_ms);
    tx.execute("DELETE FROM grants WHERE refresh_expires_ms <= ?1", [now])?;
    tx.execute("DELETE FROM retired_refresh WHERE expires_ms <= ?1", [now])?;
    tx.execute("DELETE FROM approval_codes WHERE expires_ms <= ?1", [now])?;
    tx.execute(
        "DELETE FROM clients WHERE granted = 0 AND created_ms <= ?1",
        [sql_ms(now_ms.saturating_sub(UNFINISHED_CLIENT_TTL_MS))],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
