//! The private state directory: `state.sqlite3` (+ `-wal`, `-shm`) and
//! `results/` (spec-agent-bridge.md §7.1).
//!
//! Every part is created private *at creation* — directories through
//! `mkdir(2)` with mode 0700, the database file through
//! `open(O_CREAT | O_EXCL)` with mode 0600 — so there is no window in which
//! a freshly created part is readable by others (a later `chmod` would
//! leave one). Existing parts are checked and refused, never repaired,
//! when they are symbolic links, of the wrong type, owned by another user,
//! or accessible to group or other users.
//!
//! The `-wal` and `-shm` files are created by SQLite itself. Its Unix VFS
//! gives them the permission bits of the database file (it `fchmod`s a new
//! journal, WAL or SHM file to the main file's mode, whatever the umask),
//! so a 0600 database yields 0600 companions; the integration tests pin
//! this, and [`StateDir::check_database_files`] re-checks them.
//!
//! # Security
//!
//! The checks assume the *parent* of the state directory is not writable by
//! another user (the default `~/.local/state` is the Bridge user's own); a
//! hostile parent could swap the directory after it was checked.

use std::fs::{self, DirBuilder, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::error::{StatePart, StoreError, UnsafeReason};

/// Name of the SQLite database inside the state directory.
pub const DATABASE_FILE: &str = "state.sqlite3";
/// Name of the result spool directory inside the state directory.
pub const RESULTS_DIR: &str = "results";

/// Bits the state directory must not have: it is private to its owner.
pub const STATE_DIR_FORBIDDEN_BITS: u32 = 0o077;

/// A checked private state directory.
///
/// Holding one means: the directory, the database file and the result spool
/// directory exist, are owned by the effective uid, are not symbolic links,
/// and grant nothing to group or other users.
#[derive(Debug, Clone)]
pub struct StateDir {
    root: PathBuf,
    database: PathBuf,
    results: PathBuf,
}

impl StateDir {
    /// Opens (creating if absent) the state directory at `path`, then its
    /// database file and result spool directory.
    ///
    /// Missing parents of `path` are created with mode 0700 as well.
    ///
    /// # Errors
    ///
    /// `PRIVATE_STATE_UNSAFE` ([`StoreError::UnsafeState`]) when a part is a
    /// symlink, has the wrong type, is owned by another user, or has group
    /// or other permission bits; `DATA_HOME_UNAVAILABLE`
    /// ([`StoreError::StateUnavailable`]) when it cannot be created or
    /// inspected.
    pub fn open(path: impl AsRef<Path>) -> Result<StateDir, StoreError> {
        let root = path.as_ref().to_path_buf();
        // `recursive` so a first start can create `~/.local/state/…`; every
        // directory it creates gets 0700 from mkdir(2) itself. An existing
        // final component (even a symlink to a directory) is accepted here
        // and judged by `check` below, without following it.
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(|source| StoreError::StateUnavailable {
                part: StatePart::StateDirectory,
                source,
            })?;
        check(&root, StatePart::StateDirectory)?;

        let results = root.join(RESULTS_DIR);
        match DirBuilder::new().mode(0o700).create(&results) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(StoreError::StateUnavailable {
                    part: StatePart::ResultSpoolDirectory,
                    source,
                });
            }
        }
        check(&results, StatePart::ResultSpoolDirectory)?;

        let database = root.join(DATABASE_FILE);
        // Create the file ourselves, exclusively and 0600, before SQLite
        // sees the path: SQLite would create it with 0644 & ~umask.
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&database)
        {
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(StoreError::StateUnavailable {
                    part: StatePart::Database,
                    source,
                });
            }
        }
        let state = StateDir {
            root,
            database,
            results,
        };
        state.check_database_files()?;
        Ok(state)
    }

    /// The state directory (a host path: never put it in a message).
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The SQLite database file.
    pub fn database_path(&self) -> &Path {
        &self.database
    }

    /// The result spool directory.
    pub fn results_path(&self) -> &Path {
        &self.results
    }

    /// Re-checks the database file and, when present, its `-wal` and `-shm`
    /// companions: regular files, owned by the effective uid, no group or
    /// other bits.
    ///
    /// # Errors
    ///
    /// As [`StateDir::open`].
    pub fn check_database_files(&self) -> Result<(), StoreError> {
        check(&self.database, StatePart::Database)?;
        for (suffix, part) in [
            ("-wal", StatePart::WriteAheadLog),
            ("-shm", StatePart::SharedMemoryIndex),
        ] {
            let mut name = self.database.clone().into_os_string();
            name.push(suffix);
            match fs::symlink_metadata(&name) {
                Ok(metadata) => judge(&metadata, part)?,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(StoreError::StateUnavailable { part, source }),
            }
        }
        Ok(())
    }

    /// Re-checks the spool directory before each spool operation: it may
    /// have been replaced since start-up.
    pub(crate) fn check_results_dir(&self) -> Result<(), StoreError> {
        check(&self.results, StatePart::ResultSpoolDirectory)
    }
}

/// Inspects `path` without following a final symlink and judges it.
fn check(path: &Path, part: StatePart) -> Result<(), StoreError> {
    let metadata = fs::symlink_metadata(path)
        .map_err(|source| StoreError::StateUnavailable { part, source })?;
    judge(&metadata, part)
}

fn judge(metadata: &Metadata, part: StatePart) -> Result<(), StoreError> {
    let refuse = |reason| Err(StoreError::UnsafeState { part, reason });
    let file_type = metadata.file_type();
    if file_type.is_symlink() {
        return refuse(UnsafeReason::Symlink);
    }
    let right_type = match part {
        StatePart::StateDirectory | StatePart::ResultSpoolDirectory => file_type.is_dir(),
        StatePart::Database | StatePart::WriteAheadLog | StatePart::SharedMemoryIndex => {
            file_type.is_file()
        }
    };
    if !right_type {
        return refuse(UnsafeReason::WrongType);
    }
    if metadata.uid() != effective_uid() {
        return refuse(UnsafeReason::NotOwned);
    }
    if metadata.mode() & STATE_DIR_FORBIDDEN_BITS != 0 {
        return refuse(UnsafeReason::GroupOrWorldAccess);
    }
    Ok(())
}

pub(crate) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}
