//! Atomic publication: a new file or new content becomes visible all at
//! once, or not at all.
//!
//! Both paths write the payload to a temporary file in the target's own
//! directory (same filesystem, so the final step is a rename), give it its
//! final metadata, fsync it, and only then make it visible:
//!
//! - create: `renameat2(RENAME_NOREPLACE)` — fails if *anything* exists at
//!   the name (a dangling symlink included), so a create never overwrites;
//!   filesystems without the flag get `linkat` (which has the same
//!   guarantee) and an unlink of the temporary name;
//! - replace: owner, mode and extended attributes are copied onto the
//!   temporary inode first, then `renameat` swaps it over the target.
//!
//! Then the directory is fsynced so the new name survives a crash. A
//! failure before the rename leaves the old state and removes the
//! temporary file; a crash leaves at most a temporary file, whose reserved
//! name (`.serverfs-tmp-…`) no tool shows. Each temporary file is `flock`ed
//! by its writer for its whole life, so start-up cleanup removes exactly
//! the ones nobody holds — whatever process ids a restart reuses.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::fs::{
    AtFlags, Mode, OFlags, RenameFlags, Stat, fchmod, fchown, fstat, fsync, linkat, openat,
    renameat, renameat_with, statat, unlinkat,
};
use rustix::io::Errno;

use crate::{FsError, RESERVED_TEMP_PREFIX, Revision};

/// A temporary file being filled, removed on drop unless published.
pub(crate) struct TempFile<'a> {
    dir: BorrowedFd<'a>,
    name: String,
    file: std::fs::File,
    published: bool,
}

impl<'a> TempFile<'a> {
    /// Creates an empty temporary file in `dir` (a readable directory
    /// descriptor) with `mode` (less the umask) and locks it. New files use
    /// `0o666` (never executable); replacements use `0o600`, so the new
    /// content of a private file is never readable by others before the
    /// original's mode is copied on.
    pub(crate) fn create(dir: BorrowedFd<'a>, mode: u32) -> Result<TempFile<'a>, FsError> {
        // O_EXCL | O_NOFOLLOW: a name someone planted (even a symlink) is
        // never reused; we just try another.
        for _ in 0..16 {
            let name = temp_name();
            let flags =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match openat(dir, name.as_str(), flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => {
                    // Nobody else can hold it yet; the lock marks the file
                    // as in use until this descriptor closes.
                    rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                        .map_err(FsError::from_mutation_errno)?;
                    return Ok(TempFile {
                        dir,
                        name,
                        file: std::fs::File::from(fd),
                        published: false,
                    });
                }
                Err(Errno::EXIST) => continue,
                Err(errno) => return Err(FsError::from_mutation_errno(errno)),
            }
        }
        Err(FsError::MutationIo {
            reason: "could not create a temporary file".to_owned(),
        })
    }

    /// Writes the whole payload (made durable at publication).
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), FsError> {
        self.file.write_all(bytes).map_err(io_to_fs)
    }

    /// Copies ownership, mode (with setuid/setgid/sticky) and extended
    /// attributes of `original` onto this file. Ownership goes first
    /// because `chown` clears setuid/setgid.
    pub(crate) fn copy_metadata_from(
        &self,
        original: &OwnedFd,
        stat: &Stat,
    ) -> Result<(), FsError> {
        let mine = fstat(&self.file).map_err(FsError::from_mutation_errno)?;
        if (mine.st_uid, mine.st_gid) != (stat.st_uid, stat.st_gid) {
            let uid = rustix::fs::Uid::from_raw(stat.st_uid);
            let gid = rustix::fs::Gid::from_raw(stat.st_gid);
            fchown(&self.file, Some(uid), Some(gid))
                .map_err(|_| FsError::MetadataPreservation { what: "ownership" })?;
        }
        fchmod(&self.file, Mode::from_raw_mode(stat.st_mode & 0o7777))
            .map_err(|_| FsError::MetadataPreservation { what: "mode" })?;
        copy_xattrs(original, &self.file)
    }

    /// The temporary file's own stat (its revision after publication).
    pub(crate) fn stat(&self) -> Result<Stat, FsError> {
        fstat(&self.file).map_err(FsError::from_mutation_errno)
    }

    /// Publishes under `name` without ever replacing an existing object.
    pub(crate) fn publish_new(mut self, name: &str) -> Result<Revision, FsError> {
        fsync(&self.file).map_err(FsError::from_mutation_errno)?;
        match renameat_with(
            self.dir,
            self.name.as_str(),
            self.dir,
            name,
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {}
            // Filesystems without RENAME_NOREPLACE: linkat never replaces
            // either; the temporary name is removed on drop.
            Err(Errno::INVAL) | Err(Errno::NOSYS) => {
                linkat(
                    self.dir,
                    self.name.as_str(),
                    self.dir,
                    name,
                    AtFlags::empty(),
                )
                .map_err(FsError::from_mutation_errno)?;
                let _ = unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
            }
            Err(errno) => return Err(FsError::from_mutation_errno(errno)),
        }
        self.published = true;
        let revision = Revision::from_stat(&self.stat()?);
        sync_dir(self.dir);
        Ok(revision)
    }

    /// Replaces `name` atomically. `check` runs immediately before the
    /// rename (the last-moment revision check).
    pub(crate) fn publish_over(
        mut self,
        name: &str,
        check: impl FnOnce() -> Result<(), FsError>,
    ) -> Result<Revision, FsError> {
        // Content, owner, mode and attributes are durable before the rename.
        fsync(&self.file).map_err(FsError::from_mutation_errno)?;
        check()?;
        renameat(self.dir, self.name.as_str(), self.dir, name)
            .map_err(FsError::from_mutation_errno)?;
        self.published = true;
        let revision = Revision::from_stat(&self.stat()?);
        sync_dir(self.dir);
        Ok(revision)
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.published {
            let _ = unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

/// Fsyncs a directory so that a new or removed name survives a crash. A
/// failure does not fail the call: the change is already visible and
/// cannot be undone. It is logged (without the path) so that an operator
/// learns that durability is not what it should be on this file system.
pub(crate) fn sync_dir(dir: BorrowedFd<'_>) {
    if let Err(errno) = fsync(dir) {
        tracing::warn!(
            errno = errno.raw_os_error(),
            "directory fsync failed: a change is visible but may not survive a power loss"
        );
    }
}

/// Re-stats `name` in `dir` without following it and compares revisions.
pub(crate) fn recheck(dir: BorrowedFd<'_>, name: &str, expected: &str) -> Result<(), FsError> {
    let stat =
        statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(FsError::from_mutation_errno)?;
    if Revision::from_stat(&stat).as_str() != expected {
        return Err(FsError::RevisionConflict);
    }
    Ok(())
}

/// A name unique across processes (process id, counter, time); `O_EXCL`
/// retries cover the rest.
fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{RESERVED_TEMP_PREFIX}{pid}-{count:x}{nanos:08x}")
}

fn copy_xattrs(from: &OwnedFd, to: &std::fs::File) -> Result<(), FsError> {
    let failed = || FsError::MetadataPreservation {
        what: "extended attributes",
    };
    let mut names = vec![0u8; 4096];
    let len = loop {
        match rustix::fs::flistxattr(from, &mut names[..]) {
            Ok(len) => break len,
            Err(Errno::RANGE) if names.len() < 1 << 20 => names.resize(names.len() * 4, 0),
            // The filesystem has no extended attributes at all.
            Err(Errno::NOTSUP) => return Ok(()),
            Err(_) => return Err(failed()),
        }
    };
    let mut value = vec![0u8; 4096];
    for name in names[..len].split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = std::ffi::CString::new(name).map_err(|_| failed())?;
        let size = loop {
            match rustix::fs::fgetxattr(from, name.as_c_str(), &mut value[..]) {
                Ok(size) => break Some(size),
                Err(Errno::RANGE) if value.len() < 1 << 20 => value.resize(value.len() * 4, 0),
                // Removed since it was listed.
                Err(Errno::NODATA) => break None,
                Err(_) => return Err(failed()),
            }
        };
        if let Some(size) = size {
            rustix::fs::fsetxattr(
                to,
                name.as_c_str(),
                &value[..size],
                rustix::fs::XattrFlags::empty(),
            )
            .map_err(|_| failed())?;
        }
    }
    Ok(())
}

fn io_to_fs(error: std::io::Error) -> FsError {
    match error.raw_os_error() {
        Some(raw) => FsError::from_mutation_errno(Errno::from_raw_os_error(raw)),
        None => FsError::MutationIo {
            reason: error.kind().to_string(),
        },
    }
}

/// Opens a readable (fsync-able) descriptor of the directory `dir` (which
/// may be an `O_PATH` descriptor).
pub(crate) fn reopen_dir(dir: BorrowedFd<'_>) -> Result<OwnedFd, FsError> {
    openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(FsError::from_errno)
}

#[cfg(test)]
mod tests {
    #[test]
    fn temp_names_are_reserved_and_distinct() {
        let (a, b) = (super::temp_name(), super::temp_name());
        assert_ne!(a, b);
        assert!(crate::is_reserved(&a) && crate::is_reserved(&b));
    }
}
