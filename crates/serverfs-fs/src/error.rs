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
        /// 1-based number of the offending line.
        line: u64,
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
                reason: std::io::Error::from(other).kind().to_string(),
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
