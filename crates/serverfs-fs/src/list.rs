//! `list_directory`: one sorted, policy-filtered page of a directory.

use rustix::fd::AsFd;
use rustix::fs::{AtFlags, RawDir, statat};
use rustix::io::Errno;

use crate::timefmt::rfc3339_seconds;
use crate::{EntryKind, FsError, RelPath, Workdir};

/// The `getdents` buffer of a listing: a few hundred names per call.
const DIRENT_BUFFER_BYTES: usize = 32 * 1024;

/// One listed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The entry's name.
    pub name: String,
    /// Workdir-relative path of the entry, normalized.
    pub path: String,
    /// Kind, from a no-follow stat.
    pub kind: EntryKind,
    /// Size in bytes for regular files.
    pub size: Option<u64>,
    /// Modification time of the entry itself.
    pub modified_at: String,
}

/// A page of a directory listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectoryPage {
    /// Entries in byte order of their names.
    pub entries: Vec<DirEntryInfo>,
    /// Number of visible entries in the whole directory.
    pub total: usize,
    /// True when entries remain after this page.
    pub has_more: bool,
}

impl Workdir {
    /// Lists the visible entries of the directory at `path`, sorted by name,
    /// returning `limit` of them starting at `offset`.
    ///
    /// Hidden, denied and reserved entries are left out as if absent;
    /// names that are not UTF-8 cannot be named by a client and are left
    /// out too. Symlinks and special files are listed, never followed or
    /// opened. Entries that vanish between reading the directory and
    /// stat'ing them are skipped.
    ///
    /// Memory is proportional to the number of names in the directory (to
    /// sort them); only the returned page is stat'ed.
    ///
    /// # Errors
    ///
    /// `PATH_NOT_FOUND`, `NOT_A_DIRECTORY`, `SYMLINK_NOT_ALLOWED`,
    /// `ACCESS_DENIED`, `RESOURCE_EXHAUSTED`.
    pub fn list_directory(
        &self,
        path: &RelPath,
        offset: usize,
        limit: usize,
    ) -> Result<DirectoryPage, FsError> {
        // No directory holds more than `usize::MAX` names: never `None`.
        Ok(self
            .list_directory_within(path, offset, limit, usize::MAX)?
            .unwrap_or_default())
    }

    /// [`Workdir::list_directory`], giving up (`None`) as soon as the
    /// directory has more than `max_names` entries: for a caller that lists
    /// a small directory where it stands and a big one elsewhere.
    ///
    /// # Errors
    ///
    /// As [`Workdir::list_directory`].
    pub fn list_directory_within(
        &self,
        path: &RelPath,
        offset: usize,
        limit: usize,
        max_names: usize,
    ) -> Result<Option<DirectoryPage>, FsError> {
        let dir_fd = self.open_directory(path)?;
        // Read straight from the new descriptor into one buffer: rustix's
        // `Dir` would first duplicate the descriptor (two more syscalls) and
        // start from a 768-byte buffer (three `getdents` for 50 entries).
        let mut buffer = Vec::with_capacity(DIRENT_BUFFER_BYTES);
        let mut dir = RawDir::new(dir_fd.as_fd(), buffer.spare_capacity_mut());
        let mut names = Vec::new();
        while let Some(entry) = dir.next() {
            let entry = match entry {
                Ok(entry) => entry,
                // Removed while being read: what was read is the listing,
                // as `readdir` has it.
                Err(Errno::NOENT) => break,
                Err(errno) => return Err(FsError::from_errno(errno)),
            };
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if name == "." || name == ".." || !self.policy().is_visible(path, name) {
                continue;
            }
            if names.len() == max_names {
                return Ok(None);
            }
            names.push(name.to_owned());
        }
        names.sort_unstable();
        let total = names.len();
        let mut entries = Vec::new();
        // The parent's path once, not a `RelPath` per entry.
        let prefix = if path.is_root() {
            String::new()
        } else {
            path.as_string() + "/"
        };
        for name in names.into_iter().skip(offset).take(limit) {
            let stat = match statat(dir_fd.as_fd(), name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(rustix::io::Errno::NOENT) => continue,
                Err(errno) => return Err(FsError::from_errno(errno)),
            };
            let kind = EntryKind::of(&stat);
            entries.push(DirEntryInfo {
                path: format!("{prefix}{name}"),
                name,
                kind,
                size: (kind == EntryKind::File).then(|| u64::try_from(stat.st_size).unwrap_or(0)),
                modified_at: rfc3339_seconds(stat.st_mtime),
            });
        }
        Ok(Some(DirectoryPage {
            entries,
            total,
            has_more: offset.saturating_add(limit) < total,
        }))
    }
}
