//! `list_directory`: one sorted, policy-filtered page of a directory.

use rustix::fd::AsFd;
use rustix::fs::{AtFlags, RawDir, statat};
use rustix::io::Errno;

use crate::timefmt::rfc3339_seconds;
use crate::{EntryKind, FsError, RelPath, Workdir};

/// The `getdents` buffer of a listing: a few hundred names per call.
const DIRENT_BUFFER_BYTES: usize = 32 * 1024;

/// How much a listing says of each entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryDetail {
    /// Name, path and kind. The kind comes from the directory itself
    /// (`d_type`), so an entry is stat'ed only on a filesystem that does
    /// not record kinds there: a listing costs the reading of the
    /// directory, not a syscall per entry.
    Kinds,
    /// Kind, size and modification time from a no-follow stat of every
    /// listed entry.
    Metadata,
}

/// One listed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The entry's name.
    pub name: String,
    /// Workdir-relative path of the entry, normalized.
    pub path: String,
    /// Kind of the entry itself (a symlink is not followed).
    pub kind: EntryKind,
    /// Size in bytes for regular files, with [`EntryDetail::Metadata`].
    pub size: Option<u64>,
    /// Modification time of the entry itself, with
    /// [`EntryDetail::Metadata`].
    pub modified_at: Option<String>,
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
    /// returning `limit` of them starting at `offset`, each with `detail`.
    ///
    /// Hidden, denied and reserved entries are left out as if absent;
    /// names that are not UTF-8 cannot be named by a client and are left
    /// out too. Symlinks and special files are listed, never followed or
    /// opened. An entry stat'ed after reading the directory and gone by then
    /// is skipped; with [`EntryDetail::Kinds`] most entries are not stat'ed,
    /// so the page is the directory as it was read, as `readdir` has it.
    ///
    /// Memory is proportional to the number of names in the directory (to
    /// sort them); only the returned page is stat'ed, and only as `detail`
    /// needs.
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
        detail: EntryDetail,
    ) -> Result<DirectoryPage, FsError> {
        // No directory holds more than `usize::MAX` names: never `None`.
        Ok(self
            .list_directory_within(path, offset, limit, detail, usize::MAX)?
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
        detail: EntryDetail,
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
            names.push((name.to_owned(), entry.file_type()));
        }
        names.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        let total = names.len();
        let mut entries = Vec::new();
        // The parent's path once, not a `RelPath` per entry.
        let prefix = if path.is_root() {
            String::new()
        } else {
            path.as_string() + "/"
        };
        for (name, file_type) in names.into_iter().skip(offset).take(limit) {
            let listed = match (detail, EntryKind::of_type(file_type)) {
                (EntryDetail::Kinds, Some(kind)) => Some((kind, None, None)),
                // Metadata, or a filesystem that records no kind in the
                // directory (`DT_UNKNOWN`).
                _ => stat_entry(&dir_fd, &name, detail)?,
            };
            // Gone since the directory was read.
            let Some((kind, size, modified_at)) = listed else {
                continue;
            };
            let mut entry_path = String::with_capacity(prefix.len() + name.len());
            entry_path.push_str(&prefix);
            entry_path.push_str(&name);
            entries.push(DirEntryInfo {
                path: entry_path,
                name,
                kind,
                size,
                modified_at,
            });
        }
        Ok(Some(DirectoryPage {
            entries,
            total,
            has_more: offset.saturating_add(limit) < total,
        }))
    }
}

/// What a listing says of an entry.
type ListedFacts = (EntryKind, Option<u64>, Option<String>);

/// The kind of the entry `name` of `dir_fd` from a no-follow stat, and, with
/// [`EntryDetail::Metadata`], its size (files only) and modification time;
/// `None` when the entry is gone.
fn stat_entry(
    dir_fd: &impl AsFd,
    name: &str,
    detail: EntryDetail,
) -> Result<Option<ListedFacts>, FsError> {
    let stat = match statat(dir_fd.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(FsError::from_errno(errno)),
    };
    let kind = EntryKind::of(&stat);
    Ok(Some(match detail {
        EntryDetail::Kinds => (kind, None, None),
        EntryDetail::Metadata => (
            kind,
            (kind == EntryKind::File).then(|| u64::try_from(stat.st_size).unwrap_or(0)),
            Some(rfc3339_seconds(stat.st_mtime)),
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{FileType, Mode, OFlags, open};

    /// What a listing falls back to where `d_type` is `DT_UNKNOWN` (no
    /// filesystem here produces it, so the fallback is called directly).
    #[test]
    fn an_entry_without_a_recorded_kind_gets_a_stat_for_the_kind_only() {
        assert_eq!(EntryKind::of_type(FileType::Unknown), None);
        assert_eq!(
            EntryKind::of_type(FileType::Symlink),
            Some(EntryKind::Symlink)
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "12345").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("file", dir.path().join("link")).unwrap();
        let fd = open(
            dir.path(),
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
        )
        .unwrap();
        let facts = |name: &str, detail| stat_entry(&fd, name, detail).unwrap();
        assert_eq!(
            facts("file", EntryDetail::Kinds),
            Some((EntryKind::File, None, None))
        );
        assert_eq!(
            facts("sub", EntryDetail::Kinds),
            Some((EntryKind::Directory, None, None))
        );
        assert_eq!(
            facts("link", EntryDetail::Kinds),
            Some((EntryKind::Symlink, None, None))
        );
        let Some((kind, size, Some(modified))) = facts("file", EntryDetail::Metadata) else {
            panic!("a file's metadata has its time");
        };
        assert_eq!((kind, size, modified.len()), (EntryKind::File, Some(5), 20));
        assert_eq!(facts("gone", EntryDetail::Kinds), None);
    }
}
