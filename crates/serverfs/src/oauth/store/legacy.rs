//! The JSON state file of earlier versions, imported once into the
//! database and then kept aside (renamed `<name>.imported`), never read
//! again.
//!
//! Two places hold one: the configured path itself (an operator's
//! explicit `state_file`), or `oauth.json` beside a state file named
//! `oauth.sqlite3` that does not exist yet (the old default beside the new
//! one). The database is built under a temporary name and renamed into
//! place, so a crash leaves either the JSON file or the finished database;
//! an import that failed half-way starts over.

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::{MAX_RETIRED_PER_GRANT, State, StoreError, insert_grant, retire, schema};
use crate::private_file::{self, ModeProblem};

/// The JSON file's format version.
pub const JSON_VERSION: u32 = 1;
/// The default name of the database, beside which the old default
/// `oauth.json` is looked for.
const DEFAULT_NAME: &str = "oauth.sqlite3";
const OLD_DEFAULT_NAME: &str = "oauth.json";
/// How every SQLite database file starts.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// The JSON file to import for a store at `path`, if any.
///
/// # Errors
///
/// `path` cannot be read.
pub fn pending_import(path: &Path) -> Result<Option<PathBuf>, StoreError> {
    let read_error = |source| StoreError::Read {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.len() == 0 => Ok(None),
        Ok(meta) if meta.file_type().is_file() => {
            use std::io::Read;
            let mut head = [0u8; SQLITE_MAGIC.len()];
            let mut file = std::fs::File::open(path).map_err(read_error)?;
            let got = file.read(&mut head).map_err(read_error)?;
            Ok((head[..got] != *SQLITE_MAGIC).then(|| path.to_path_buf()))
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if path.file_name().is_some_and(|n| n == DEFAULT_NAME) {
                let old = path.with_file_name(OLD_DEFAULT_NAME);
                return Ok(old.exists().then_some(old));
            }
            Ok(None)
        }
        Err(e) => Err(read_error(e)),
    }
}

/// Reads a JSON state file (private, of the known version).
///
/// # Errors
///
/// Unreadable, malformed, of another version, or not private.
pub fn read(source: &Path) -> Result<State, StoreError> {
    let read_error = |source_error| StoreError::Read {
        path: source.to_path_buf(),
        source: source_error,
    };
    let meta = std::fs::symlink_metadata(source).map_err(read_error)?;
    if matches!(
        private_file::mode_problem(&meta),
        Some(ModeProblem::NotRegular | ModeProblem::NotPrivate(_))
    ) {
        return Err(StoreError::NotPrivate {
            path: source.to_path_buf(),
        });
    }
    let text = std::fs::read_to_string(source).map_err(read_error)?;
    let state: State = serde_json::from_str(&text).map_err(|e| StoreError::Malformed {
        path: source.to_path_buf(),
        source: e,
    })?;
    if state.version != JSON_VERSION {
        return Err(StoreError::Version {
            path: source.to_path_buf(),
            found: i64::from(state.version),
            expected: i64::from(JSON_VERSION),
        });
    }
    Ok(state)
}

/// `name` with `suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// Imports the JSON state file for `path`, if there is one. The caller
/// holds the store's lock.
///
/// # Errors
///
/// The JSON file is unusable, or the database cannot be written.
pub fn import_if_needed(path: &Path) -> Result<(), StoreError> {
    let Some(source) = pending_import(path)? else {
        return Ok(());
    };
    let state = read(&source)?;
    let written = |e: io::Error| {
        StoreError::Write(private_file::PrivateFileError::Write {
            path: path.to_path_buf(),
            source: e,
        })
    };
    let temp = sibling(path, ".importing");
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(written(e)),
    }
    private_file::create_empty(&temp)?;
    let database = |e| StoreError::Database {
        path: path.to_path_buf(),
        source: e,
    };
    {
        let mut conn = Connection::open(&temp).map_err(database)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(database)?;
        match schema::migrate(&mut conn) {
            Ok(()) => {}
            Err(schema::SchemaProblem::Sqlite(e)) => return Err(database(e)),
            Err(schema::SchemaProblem::Newer(_)) => {
                return Err(database(rusqlite::Error::InvalidQuery));
            }
        }
        fill(&mut conn, &state).map_err(database)?;
    }
    let aside = sibling(&source, ".imported");
    if source == path {
        // Keep the JSON file aside first (a second name for it), so the
        // rename below replaces nothing that is not kept.
        let _ = std::fs::remove_file(&aside);
        std::fs::hard_link(&source, &aside).map_err(written)?;
        std::fs::rename(&temp, path).map_err(written)?;
    } else {
        std::fs::rename(&temp, path).map_err(written)?;
        std::fs::rename(&source, &aside).map_err(written)?;
    }
    tracing::info!(
        event = "oauth_state_imported",
        grants = state.grants.len(),
        clients = state.clients.len()
    );
    Ok(())
}

/// Writes `state` into the fresh database `conn` in one transaction.
fn fill(conn: &mut Connection, state: &State) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    let now = crate::tokens::now_ms();
    for grant in &state.grants {
        insert_grant(&tx, grant)?;
        let newest = grant
            .retired_refresh_sha256
            .iter()
            .rev()
            .take(MAX_RETIRED_PER_GRANT)
            .rev();
        for old in newest {
            retire(&tx, &grant.id, old, grant.refresh_expires_ms, now)?;
        }
    }
    for client in &state.clients {
        let granted = state.grants.iter().any(|g| g.client_id == client.client_id);
        let uris = serde_json::to_string(&client.redirect_uris).unwrap_or_else(|_| "[]".into());
        tx.execute(
            "INSERT OR REPLACE INTO clients (client_id, client_name, redirect_uris_json, \
             created_ms, granted) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![
                client.client_id,
                client.client_name,
                uris,
                super::sql_ms(client.created_ms),
                i64::from(granted)
            ],
        )?;
    }
    for code in &state.approval_codes {
        tx.execute(
            "INSERT OR REPLACE INTO approval_codes (sha256, expires_ms) VALUES (?1, ?2)",
            rusqlite::params![code.sha256, super::sql_ms(code.expires_ms)],
        )?;
    }
    tx.commit()
}
