//! `stat_file`: describe one object without following it.

use crate::timefmt::rfc3339_seconds;
use crate::{EntryKind, FsError, RelPath, Revision, Workdir};

/// What `stat_file` reports. No owner, inode or device numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMetadata {
    /// The object's kind; a final symlink is reported as a symlink.
    pub kind: EntryKind,
    /// Size in bytes, for regular files only.
    pub size: Option<u64>,
    /// Modification time, `YYYY-MM-DDTHH:MM:SSZ`.
    pub modified_at: String,
    /// MIME type guessed from the name, for regular files only.
    pub mime_type: Option<String>,
    /// Revision token of the object itself.
    pub revision: Revision,
}

impl Workdir {
    /// Describes the object at `path`. A symlink in a parent component is
    /// refused; a final symlink is described (its target never revealed).
    ///
    /// # Errors
    ///
    /// `PATH_NOT_FOUND`, `NOT_A_DIRECTORY` (a parent is a file),
    /// `SYMLINK_NOT_ALLOWED` (a parent is a symlink), `ACCESS_DENIED`,
    /// `RESOURCE_EXHAUSTED`.
    pub fn stat(&self, path: &RelPath) -> Result<EntryMetadata, FsError> {
        let stat = self.lstat(path)?;
        let kind = EntryKind::of(&stat);
        let is_file = kind == EntryKind::File;
        Ok(EntryMetadata {
            kind,
            size: is_file.then(|| u64::try_from(stat.st_size).unwrap_or(0)),
            modified_at: rfc3339_seconds(stat.st_mtime),
            mime_type: is_file.then(|| mime_type_of(path.file_name().unwrap_or(""))),
            revision: Revision::from_stat(&stat),
        })
    }
}

/// The MIME type for a file name, by extension; `application/octet-stream`
/// when unknown.
pub fn mime_type_of(name: &str) -> String {
    mime_guess::from_path(name)
        .first_or_octet_stream()
        .essence_str()
        .to_owned()
}
