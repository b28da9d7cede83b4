//! Private files: the bearer token file and the OAuth state file. Each is
//! a regular file of mode 0600 (its hashes are a target for offline
//! guessing, and a writable one would let others add their own), written
//! atomically (temporary file + rename) in a directory created 0700.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Why a private file is unusable. Messages name the file (an operator's
/// own path, shown on the operator's terminal, never to a client).
#[derive(Debug, Error)]
pub enum PrivateFileError {
    /// It cannot be written (or its directory created, or locked).
    #[error("writing {}: {source}", .path.display())]
    Write {
        /// What was being written.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Why a file's type or mode makes it unusable as a private file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeProblem {
    /// Something else than a regular file is at the path.
    NotRegular,
    /// Group or others may read or write it (its permission bits).
    NotPrivate(u32),
}

/// What is wrong with `meta` for a private file, if anything.
pub fn mode_problem(meta: &std::fs::Metadata) -> Option<ModeProblem> {
    use std::os::unix::fs::PermissionsExt;
    if !meta.file_type().is_file() {
        return Some(ModeProblem::NotRegular);
    }
    let mode = meta.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(ModeProblem::NotPrivate(mode))
}

/// What tells that a file changed: mtime and ctime (s, ns) and size (the
/// ctime catches a chmod, which must fail closed at once too).
pub type FileStamp = (i64, i64, i64, i64, u64);

/// The file's stamp; `None` when it is missing or unreadable.
pub fn stamp(path: &Path) -> Option<FileStamp> {
    std::fs::symlink_metadata(path).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        (
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
            m.size(),
        )
    })
}

/// Writes `text` and a newline to `path` atomically with mode 0600,
/// creating its directory (0700) when missing.
///
/// # Errors
///
/// [`PrivateFileError::Write`].
pub fn write(path: &Path, text: &str) -> Result<(), PrivateFileError> {
    use std::io::Write;
    ensure_dir(path)?;
    let written = |source| PrivateFileError::Write {
        path: path.to_path_buf(),
        source,
    };
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut file = create_private(&temp).map_err(written)?;
    let outcome = file
        .write_all(text.as_bytes())
        .and_then(|()| file.write_all(b"\n"))
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = outcome {
        let _ = std::fs::remove_file(&temp);
        return Err(written(e));
    }
    Ok(())
}

/// Holds an exclusive lock on `<path>.lock` (mode 0600) until dropped, so
/// that two processes (the server and `serverfs oauth revoke`) never
/// read-modify-write the file at the same time and lose a change.
///
/// # Errors
///
/// [`PrivateFileError::Write`] when the lock file cannot be opened.
pub fn lock(path: &Path) -> Result<OwnedFd, PrivateFileError> {
    use std::os::unix::fs::OpenOptionsExt;
    ensure_dir(path)?;
    let lock_path = path.with_extension("lock");
    let failed = |source| PrivateFileError::Write {
        path: lock_path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .map_err(failed)?;
    let fd = OwnedFd::from(file);
    rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| failed(io::Error::from(e)))?;
    Ok(fd)
}

/// Creates `path` empty with mode 0600 (its directory 0700) unless it
/// exists, so that a file another program fills in (SQLite) is private
/// from its first byte.
///
/// # Errors
///
/// [`PrivateFileError::Write`].
pub fn create_empty(path: &Path) -> Result<(), PrivateFileError> {
    ensure_dir(path)?;
    match create_private(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(PrivateFileError::Write {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A new file at `path` (never an existing one) of mode 0600, for writing.
fn create_private(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Creates `path`'s directory (0700) when missing.
fn ensure_dir(path: &Path) -> Result<(), PrivateFileError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| PrivateFileError::Write {
            path: dir.to_path_buf(),
            source,
        })
}
