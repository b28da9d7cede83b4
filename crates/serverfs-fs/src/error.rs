//! The kernel's error type and its mapping to stable wire codes.

use serverfs_protocol::ErrorCode;

/// Why a filesystem operation was refused or failed.
///
/// `Display` is safe to show a client: it never contains a host path, an
/// inode number or file content. OS detail, where there is any, is the
/// `strerror` phrase of an errno.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// The path contains a NUL byte.
    #[error("path contains NUL bytes")]
    NulInPath,
    /// Absolute path, `~` prefix, or `..` climbing above the root.
    #[error("path is outside the workdir")]
    OutsideWorkdir,
    /// A component contains a backslash, which ServerFS refuses as ambiguous.
    #[error("path component contains a backslash; use '/' as the only separator")]
    Backslash,
    /// The path or one of its components is too long.
    #[error("path is too long (at most {max_path} bytes, {max_component} per component)")]
    PathTooLong {
        /// Maximum total length in bytes.
        max_path: usize,
        /// Maximum component length in bytes.
        max_component: usize,
    },
    /// A component is an internal ServerFS name.
    #[error("path is reserved for ServerFS internals")]
    Reserved,
    /// A component starts with `.` and hidden names are not allowed.
    #[error("hidden paths are not allowed in this workdir")]
    Hidden,
    /// A credential rule or a configured deny glob matches.
    #[error("path is denied by policy")]
    Denied,
    /// A symbolic link was met where it may not be followed.
    #[error("symbolic links are not allowed")]
    Symlink,
    /// A FIFO, socket or device where a regular file or directory was needed.
    #[error("not a regular file (FIFO, socket or device)")]
    UnsupportedFileType,
    /// Nothing exists at the path.
    #[error("path not found")]
    NotFound,
    /// A directory where a regular file was needed.
    #[error("not a file")]
    NotAFile,
    /// A non-directory where a directory was needed.
    #[error("not a directory")]
    NotADirectory,
    /// The process has no file descriptors left.
    #[error("too many open files; try again later")]
    ResourceExhausted,
    /// The OS refused access, or failed in a way that has no better code.
    #[error("access denied ({reason})")]
    AccessDenied {
        /// The `strerror` phrase of the OS error.
        reason: String,
    },
    /// A NUL byte in the first 1024 bytes.
    #[error("file appears to be binary")]
    BinaryFile,
    /// The requested bytes are not valid UTF-8.
    #[error("file is not valid UTF-8 text")]
    InvalidUtf8,
    /// One line exceeds the per-page byte budget.
    #[error("line {line} exceeds {limit} bytes")]
    LineTooLarge {
        /// Where the offending line is.
        line: crate::LinePosition,
        /// The byte budget it exceeds.
        limit: u64,
    },
    /// The file's revision changed while it was being read.
    #[error("file changed while it was being read; read it again")]
    ChangedDuringRead,
    /// A cursor that does not belong to the file's current revision.
    #[error(
        "cursor is stale: the file changed since the cursor was issued; restart from start_line"
    )]
    CursorStale,
    /// A cursor that cannot be decoded.
    #[error("cursor is malformed")]
    MalformedCursor,
    /// Something already exists where a create would put its object.
    #[error("path already exists")]
    AlreadyExists,
    /// The parent directory of an object to create is missing.
    #[error("parent directory not found")]
    ParentNotFound,
    /// The object's revision is not the expected one.
    #[error(
        "revision conflict: the object changed since its revision was read; stat or read it again"
    )]
    RevisionConflict,
    /// The file has more than one hard link.
    #[error("file has multiple hard links; editing one name would silently change the others")]
    MultipleHardlinks,
    /// Reading a file with more than one hard link, on a workdir that
    /// refuses them.
    #[error(
        "file has multiple hard links, and this workdir does not read such files: another \
         name, possibly outside the workdir, shares its content"
    )]
    MultiplyLinked,
    /// Content, source file or result exceeds the write limit.
    #[error("{what} exceeds the limit of {limit} bytes")]
    WriteTooLarge {
        /// What was too large.
        what: &'static str,
        /// The limit in bytes.
        limit: u64,
    },
    /// Text input containing NUL.
    #[error("text must not contain NUL characters")]
    BinaryContent,
    /// Too many edits in one call.
    #[error("at most {max} edits per call")]
    TooManyEdits {
        /// The limit.
        max: usize,
    },
    /// An edit did not match as expected.
    #[error("edit {index}: {reason}")]
    EditConflict {
        /// 1-based position of the edit in the list.
        index: usize,
        /// What did not match.
        reason: String,
    },
    /// Owner, mode or extended attributes could not be carried over.
    #[error("{what} could not be preserved")]
    MetadataPreservation {
        /// `ownership`, `mode` or `extended attributes`.
        what: &'static str,
    },
    /// The directory has entries.
    #[error("directory is not empty")]
    DirectoryNotEmpty,
    /// Any other OS failure during a mutation.
    #[error("mutation failed ({reason})")]
    MutationIo {
        /// The OS phrase.
        reason: String,
    },
    /// A glob or regular expression that does not compile.
    #[error("invalid pattern: {reason}")]
    InvalidPattern {
        /// What is wrong with it.
        reason: String,
    },
    /// The caller stopped the operation through its [`Control`](crate::Control).
    #[error("cancelled by the client")]
    Cancelled,
    /// A whole-file binary read over the limit.
    #[error(
        "file is larger than the binary transfer limit of {limit} bytes; read it in ranges with offset and max_bytes"
    )]
    BinaryTooLarge {
        /// The limit in bytes.
        limit: u64,
    },
}

impl FsError {
    /// The stable wire code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            FsError::NulInPath => ErrorCode::AccessDenied,
            FsError::OutsideWorkdir => ErrorCode::PathOutsideWorkdir,
            FsError::Backslash => ErrorCode::InvalidName,
            FsError::PathTooLong { .. } => ErrorCode::PathTooLong,
            FsError::Reserved => ErrorCode::ReservedPath,
            FsError::Hidden => ErrorCode::HiddenPathNotAllowed,
            FsError::Denied => ErrorCode::DeniedPath,
            FsError::Symlink => ErrorCode::SymlinkNotAllowed,
            FsError::UnsupportedFileType => ErrorCode::UnsupportedFileType,
            FsError::NotFound => ErrorCode::PathNotFound,
            FsError::NotAFile => ErrorCode::NotAFile,
            FsError::NotADirectory => ErrorCode::NotADirectory,
            FsError::ResourceExhausted => ErrorCode::ResourceExhausted,
            FsError::AccessDenied { .. } => ErrorCode::AccessDenied,
            FsError::BinaryFile => ErrorCode::BinaryFile,
            FsError::InvalidUtf8 => ErrorCode::UnsupportedTextEncoding,
            FsError::LineTooLarge { .. } => ErrorCode::LineTooLarge,
            FsError::ChangedDuringRead => ErrorCode::FileChangedDuringRead,
            FsError::CursorStale => ErrorCode::CursorStale,
            FsError::MalformedCursor => ErrorCode::InvalidArgument,
            FsError::AlreadyExists => ErrorCode::PathAlreadyExists,
            FsError::ParentNotFound => ErrorCode::ParentNotFound,
            FsError::RevisionConflict => ErrorCode::RevisionConflict,
            FsError::MultipleHardlinks => ErrorCode::MultipleHardlinksNotSupported,
            FsError::MultiplyLinked => ErrorCode::MultipleHardlinksNotAllowed,
            FsError::WriteTooLarge { .. } => ErrorCode::WriteTooLarge,
            FsError::BinaryContent => ErrorCode::BinaryContentNotAllowed,
            FsError::TooManyEdits { .. } => ErrorCode::TooManyEdits,
            FsError::EditConflict { .. } => ErrorCode::EditConflict,
            FsError::MetadataPreservation { .. } => ErrorCode::MetadataPreservationFailed,
            FsError::DirectoryNotEmpty => ErrorCode::DirectoryNotEmpty,
            FsError::MutationIo { .. } => ErrorCode::MutationIoError,
            FsError::BinaryTooLarge { .. } => ErrorCode::BinaryFileTooLarge,
            FsError::InvalidPattern { .. } => ErrorCode::InvalidPattern,
            FsError::Cancelled => ErrorCode::RequestCancelled,
        }
    }

    /// The one place where an errno from resolving or opening becomes a
    /// coded error. `ELOOP` means a symlink was refused by `O_NOFOLLOW` or
    /// `RESOLVE_NO_SYMLINKS`; `EXDEV` means `RESOLVE_BENEATH` caught an
    /// escape. Callers that can tell more (an `ENOTDIR` that is really a
    /// symlink) classify before calling this.
    #[cold]
    pub(crate) fn from_errno(errno: rustix::io::Errno) -> FsError {
        use rustix::io::Errno;
        match errno {
            Errno::NOENT => FsError::NotFound,
            Errno::LOOP => FsError::Symlink,
            Errno::XDEV => FsError::outside_workdir(),
            Errno::NOTDIR => FsError::NotADirectory,
            Errno::ISDIR => FsError::NotAFile,
            Errno::NXIO => FsError::UnsupportedFileType,
            Errno::MFILE | Errno::NFILE => FsError::ResourceExhausted,
            Errno::NAMETOOLONG => FsError::PathTooLong {
                max_path: crate::relpath::MAX_PATH_BYTES,
                max_component: crate::relpath::MAX_COMPONENT_BYTES,
            },
            Errno::ACCESS | Errno::PERM => FsError::AccessDenied {
                reason: "permission denied".to_owned(),
            },
            other => FsError::AccessDenied {
                reason: os_phrase(other),
            },
        }
    }

    /// Maps an errno met while changing the filesystem: the read-side
    /// classification for "not found", type and permission errors, and
    /// `MUTATION_IO_ERROR` (with the OS phrase) for everything else.
    #[cold]
    pub(crate) fn from_mutation_errno(errno: rustix::io::Errno) -> FsError {
        use rustix::io::Errno;
        match errno {
            Errno::NOENT
            | Errno::LOOP
            | Errno::NOTDIR
            | Errno::ISDIR
            | Errno::NXIO
            | Errno::MFILE
            | Errno::NFILE
            | Errno::NAMETOOLONG
            | Errno::ACCESS
            | Errno::PERM => FsError::from_errno(errno),
            Errno::EXIST => FsError::AlreadyExists,
            Errno::NOTEMPTY => FsError::DirectoryNotEmpty,
            other => FsError::MutationIo {
                reason: os_phrase(other),
            },
        }
    }

    /// An attempt to leave the workdir root. One constructor so that every
    /// escape is easy to find (and to break on in a debugger).
    #[cold]
    pub(crate) fn outside_workdir() -> FsError {
        FsError::OutsideWorkdir
    }
}

/// The `strerror` phrase of an errno ("No space left on device"), without
/// the "(os error N)" suffix the standard library appends.
pub(crate) fn os_phrase(errno: rustix::io::Errno) -> String {
    let text = std::io::Error::from_raw_os_error(errno.raw_os_error()).to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::FsError;
    use rustix::io::Errno;
    use serverfs_protocol::ErrorCode;

    #[test]
    fn errno_mapping() {
        let cases = [
            (Errno::NOENT, ErrorCode::PathNotFound),
            (Errno::LOOP, ErrorCode::SymlinkNotAllowed),
            (Errno::XDEV, ErrorCode::PathOutsideWorkdir),
            (Errno::NOTDIR, ErrorCode::NotADirectory),
            (Errno::ISDIR, ErrorCode::NotAFile),
            (Errno::NXIO, ErrorCode::UnsupportedFileType),
            (Errno::MFILE, ErrorCode::ResourceExhausted),
            (Errno::NFILE, ErrorCode::ResourceExhausted),
            (Errno::NAMETOOLONG, ErrorCode::PathTooLong),
            (Errno::ACCESS, ErrorCode::AccessDenied),
            (Errno::PERM, ErrorCode::AccessDenied),
            (Errno::IO, ErrorCode::AccessDenied),
        ];
        for (errno, code) in cases {
            assert_eq!(FsError::from_errno(errno).code(), code, "{errno:?}");
        }
    }
}
