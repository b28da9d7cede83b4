//! Creating and deleting files and directories, and replacing a file's
//! bytes, under revision guards. Serializing mutations is the caller's
//! duty (the service holds a per-workdir lock around each call).

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, Dir, Mode, OFlags, Stat, fstat, mkdirat, statat, unlinkat};
use rustix::io::Errno;

use crate::publish::{TempFile, recheck, sync_dir};
use crate::{FsError, RelPath, Revision, Workdir};

/// What a successful delete removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// Size of the removed file (0 for directories).
    pub bytes: u64,
    /// The verified revision of what was removed.
    pub revision: Revision,
}

/// The outcome of replacing a file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// Revision before the replacement (the verified expected one).
    pub revision_before: Revision,
    /// Revision of the new content.
    pub revision: Revision,
}

impl Workdir {
    /// Creates a new regular file holding exactly `content`. Never
    /// overwrites anything (a dangling symlink included).
    ///
    /// # Errors
    ///
    /// `PARENT_NOT_FOUND`, `NOT_A_DIRECTORY`, `SYMLINK_NOT_ALLOWED` (parent),
    /// `PATH_ALREADY_EXISTS`, `ACCESS_DENIED`, `MUTATION_IO_ERROR`.
    pub fn create_file(&self, path: &RelPath, content: &[u8]) -> Result<Revision, FsError> {
        let (dir, name) = self.open_parent_for_mutation(path, FsError::ParentNotFound)?;
        // Refuse early when the name is taken, so a doomed create does not
        // write its payload; publication re-checks atomically anyway.
        match statat(dir.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => return Err(FsError::AlreadyExists),
            Err(Errno::NOENT) => {}
            Err(errno) => return Err(FsError::from_mutation_errno(errno)),
        }
        let mut temp = TempFile::create(dir.as_fd(), 0o666)?;
        temp.write_all(content)?;
        temp.publish_new(name)
    }

    /// Creates one directory level (mode `0777 & ~umask`).
    ///
    /// # Errors
    ///
    /// `PARENT_NOT_FOUND`, `NOT_A_DIRECTORY`, `SYMLINK_NOT_ALLOWED` (parent),
    /// `PATH_ALREADY_EXISTS`, `ACCESS_DENIED`, `MUTATION_IO_ERROR`.
    pub fn create_directory(&self, path: &RelPath) -> Result<Revision, FsError> {
        let (dir, name) = self.open_parent_for_mutation(path, FsError::ParentNotFound)?;
        mkdirat(dir.as_fd(), name, Mode::from_raw_mode(0o777))
            .map_err(FsError::from_mutation_errno)?;
        sync_dir(dir.as_fd());
        let stat = statat(dir.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(FsError::from_mutation_errno)?;
        Ok(Revision::from_stat(&stat))
    }

    /// Deletes a regular file whose revision is `expected`. The type is
    /// checked before the revision; the revision is checked on the open
    /// descriptor and again by name just before unlinking.
    ///
    /// # Errors
    ///
    /// `PATH_NOT_FOUND`, `NOT_A_FILE`, `SYMLINK_NOT_ALLOWED`,
    /// `UNSUPPORTED_FILE_TYPE`, `ACCESS_DENIED` (unreadable file),
    /// `REVISION_CONFLICT`, `MUTATION_IO_ERROR`.
    pub fn delete_file(&self, path: &RelPath, expected: &str) -> Result<Deleted, FsError> {
        let (dir, name) = self.open_parent_for_mutation(path, FsError::NotFound)?;
        // Opening for reading is deliberate: write permission on the
        // directory alone must not let a caller delete a file the server
        // cannot read.
        let (_fd, stat) = self.open_file_in(dir.as_fd(), name)?;
        let revision = Revision::from_stat(&stat);
        if revision.as_str() != expected {
            return Err(FsError::RevisionConflict);
        }
        recheck(dir.as_fd(), name, expected)?;
        unlinkat(dir.as_fd(), name, AtFlags::empty()).map_err(FsError::from_mutation_errno)?;
        sync_dir(dir.as_fd());
        Ok(Deleted {
            bytes: u64::try_from(stat.st_size).unwrap_or(0),
            revision,
        })
    }

    /// Deletes an empty directory whose revision is `expected`. Emptiness
    /// is physical: hidden, denied and temporary entries count.
    ///
    /// # Errors
    ///
    /// `PATH_NOT_FOUND`, `NOT_A_DIRECTORY`, `SYMLINK_NOT_ALLOWED`,
    /// `REVISION_CONFLICT`, `DIRECTORY_NOT_EMPTY`, `MUTATION_IO_ERROR`.
    pub fn delete_directory(&self, path: &RelPath, expected: &str) -> Result<Deleted, FsError> {
        let (dir, name) = self.open_parent_for_mutation(path, FsError::NotFound)?;
        let target = crate::sys::linux::open_dir_component(dir.as_fd(), name, OFlags::RDONLY)?;
        let stat = fstat(&target).map_err(FsError::from_mutation_errno)?;
        let revision = Revision::from_stat(&stat);
        if revision.as_str() != expected {
            return Err(FsError::RevisionConflict);
        }
        let mut entries = Dir::read_from(target.as_fd()).map_err(FsError::from_mutation_errno)?;
        while let Some(entry) = entries.read() {
            let entry = entry.map_err(FsError::from_mutation_errno)?;
            let entry_name = entry.file_name().to_bytes();
            if entry_name != b"." && entry_name != b".." {
                return Err(FsError::DirectoryNotEmpty);
            }
        }
        recheck(dir.as_fd(), name, expected)?;
        unlinkat(dir.as_fd(), name, AtFlags::REMOVEDIR).map_err(FsError::from_mutation_errno)?;
        sync_dir(dir.as_fd());
        Ok(Deleted { bytes: 0, revision })
    }

    /// Replaces the content of the regular file at `path`, whose revision
    /// must be `expected`, with `content`, keeping its owner, mode and
    /// extended attributes.
    ///
    /// # Errors
    ///
    /// The type codes, `REVISION_CONFLICT`, `MULTIPLE_HARDLINKS_NOT_SUPPORTED`,
    /// `METADATA_PRESERVATION_FAILED`, `MUTATION_IO_ERROR`.
    pub fn replace_file(
        &self,
        path: &RelPath,
        expected: &str,
        content: &[u8],
    ) -> Result<Replaced, FsError> {
        let target = self.open_for_replace(path, expected)?;
        let revision = target.publish(content)?;
        Ok(Replaced {
            revision_before: target.revision_before,
            revision,
        })
    }

    /// The first half of every replace: open the target (type errors
    /// first), then check its revision and link count.
    pub(crate) fn open_for_replace<'p>(
        &self,
        path: &'p RelPath,
        expected: &str,
    ) -> Result<ReplaceTarget<'p>, FsError> {
        let (dir, name) = self.open_parent_for_mutation(path, FsError::NotFound)?;
        let (fd, stat) = self.open_file_in(dir.as_fd(), name)?;
        let revision_before = Revision::from_stat(&stat);
        if revision_before.as_str() != expected {
            return Err(FsError::RevisionConflict);
        }
        if stat.st_nlink > 1 {
            return Err(FsError::MultipleHardlinks);
        }
        Ok(ReplaceTarget {
            dir,
            name,
            fd,
            stat,
            revision_before,
        })
    }
}

/// An opened, revision-verified file about to be replaced.
pub(crate) struct ReplaceTarget<'p> {
    dir: OwnedFd,
    name: &'p str,
    /// The open original.
    pub(crate) fd: OwnedFd,
    /// Its stat at open.
    pub(crate) stat: Stat,
    /// Its verified revision.
    pub(crate) revision_before: Revision,
}

impl ReplaceTarget<'_> {
    /// Writes `content` to a temporary file beside the target, copies the
    /// target's metadata onto it, re-checks the target's revision by name
    /// and renames over it.
    pub(crate) fn publish(&self, content: &[u8]) -> Result<Revision, FsError> {
        let mut temp = TempFile::create(self.dir.as_fd(), 0o600)?;
        temp.write_all(content)?;
        temp.copy_metadata_from(&self.fd, &self.stat)?;
        temp.publish_over(self.name, || {
            recheck(self.dir.as_fd(), self.name, self.revision_before.as_str())
        })
    }
}
