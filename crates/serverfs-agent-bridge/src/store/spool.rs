//! Result spool files: `results/<task_id>.txt`, written atomically and
//! privately, read back without following links (spec-agent-bridge.md §6).
//!
//! Writing: a temp file `.<task_id>.<16 hex>.tmp` is created exclusively
//! (`O_CREAT | O_EXCL`, which also refuses a planted symlink) with mode
//! 0600, written in full while the SHA-256 is computed, `fsync`ed, then
//! published with `link(2)` — which, unlike `rename(2)`, refuses to replace
//! an existing final name — and the directory is `fsync`ed. A crash leaves
//! either no final file or a complete one; temp leftovers and final files
//! no result row names are swept when the store opens.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;

use rusqlite::OptionalExtension;
use rustix::fs::{CWD, Mode, OFlags};

use super::connection::Db;
use super::digest::Sha256;
use super::dir::{StateDir, effective_uid};
use super::error::{SpoolProblem, StoreError};
use super::id::{check_task_id, is_task_id, random_hex};

const SUFFIX: &str = ".txt";
const WRITE_PIECE: usize = 64 * 1024;

/// The spool file name of a task.
pub(crate) fn file_name(task_id: &str) -> Result<String, StoreError> {
    check_task_id(task_id)?;
    Ok(format!("{task_id}{SUFFIX}"))
}

/// Whether `name` is a spool file name the store could have written.
fn is_spool_name(name: &str) -> bool {
    name.strip_suffix(SUFFIX).is_some_and(is_task_id)
}

fn path_of(state: &StateDir, name: &str) -> Result<PathBuf, StoreError> {
    if !is_spool_name(name) {
        return Err(StoreError::corrupt("spool file name"));
    }
    Ok(state.results_path().join(name))
}

fn io_failure(source: io::Error) -> StoreError {
    StoreError::spool(SpoolProblem::Io, Some(source))
}

/// Writes `text` as the spool file of `task_id`; returns the file name and
/// the SHA-256 of the bytes written.
pub(crate) fn write(
    state: &StateDir,
    task_id: &str,
    text: &str,
) -> Result<(String, String), StoreError> {
    let name = file_name(task_id)?;
    state.check_results_dir()?;
    let temp = state
        .results_path()
        .join(format!(".{task_id}.{}.tmp", random_hex(8)?));
    let written = write_temp(&temp, text.as_bytes());
    let published =
        written.and_then(
            |digest| match fs::hard_link(&temp, state.results_path().join(&name)) {
                Ok(()) => Ok(digest),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    Err(StoreError::spool(SpoolProblem::AlreadyExists, Some(error)))
                }
                Err(error) => Err(io_failure(error)),
            },
        );
    // The temp name goes either way; after a successful link the final
    // name holds the data.
    let _ = fs::remove_file(&temp);
    let digest = published?;
    File::open(state.results_path())
        .and_then(|dir| dir.sync_all())
        .map_err(io_failure)?;
    Ok((name, digest))
}

fn write_temp(temp: &PathBuf, bytes: &[u8]) -> Result<String, StoreError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(temp)
        .map_err(io_failure)?;
    let mut digest = Sha256::new();
    for piece in bytes.chunks(WRITE_PIECE) {
        file.write_all(piece).map_err(io_failure)?;
        digest.update(piece);
    }
    // The umask can only have removed bits from 0600; make it exact.
    file.set_permissions(fs::Permissions::from_mode(0o600))
        .map_err(io_failure)?;
    file.sync_all().map_err(io_failure)?;
    Ok(digest.finish_hex())
}

/// Opens a spool file for reading: no symlink, a regular file owned by the
/// Bridge user, no group or other bits. A missing file is
/// `AGENT_RESULT_NOT_RETRIEVABLE`.
pub(crate) fn open(state: &StateDir, name: &str) -> Result<(File, u64), StoreError> {
    state.check_results_dir()?;
    let path = path_of(state, name)?;
    let fd = rustix::fs::openat(
        CWD,
        &path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|errno| match errno {
        rustix::io::Errno::NOENT => StoreError::ResultNotRetrievable,
        rustix::io::Errno::LOOP => StoreError::spool(SpoolProblem::UnsafeFile, None),
        other => io_failure(other.into()),
    })?;
    let file = File::from(fd);
    let metadata = file.metadata().map_err(io_failure)?;
    if !metadata.file_type().is_file()
        || metadata.uid() != effective_uid()
        || metadata.mode() & 0o077 != 0
    {
        return Err(StoreError::spool(SpoolProblem::UnsafeFile, None));
    }
    Ok((file, metadata.len()))
}

/// Deletes a spool file; one already gone is fine.
pub(crate) fn remove(state: &StateDir, name: &str) -> Result<(), StoreError> {
    match fs::remove_file(path_of(state, name)?) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(io_failure(error)),
    }
}

/// At open: deletes temp files of interrupted writes, and final files no
/// result row names (a crash between publishing the file and committing
/// its row). Only names the store itself generates are touched.
pub(crate) fn sweep_leftovers(db: &Db) -> Result<(), StoreError> {
    db.state.check_results_dir()?;
    let entries = fs::read_dir(db.state.results_path()).map_err(io_failure)?;
    for entry in entries {
        let entry = entry.map_err(io_failure)?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let leftover = if is_temp_name(&name) {
            true
        } else if is_spool_name(&name) {
            db.conn
                .query_row(
                    "SELECT 1 FROM results WHERE spool_name = ?1",
                    [&name],
                    |_| Ok(()),
                )
                .optional()?
                .is_none()
        } else {
            false
        };
        if leftover {
            fs::remove_file(entry.path()).map_err(io_failure)?;
        }
    }
    Ok(())
}

/// `.<task_id>.<16 hex>.tmp`
fn is_temp_name(name: &str) -> bool {
    let Some(inner) = name
        .strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(".tmp"))
    else {
        return false;
    };
    let Some((task_id, random)) = inner.split_once('.') else {
        return false;
    };
    is_task_id(task_id)
        && random.len() == 16
        && random
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}
