//! The one list of file-surface error codes.

use serde::{Deserialize, Serialize};

macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident => $wire:literal, )+) => {
        /// A stable error code of the MCP file surface.
        ///
        /// Serializes to its `SCREAMING_SNAKE` wire string.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum ErrorCode {
            $( $(#[$doc])* #[serde(rename = $wire)] $variant, )+
        }

        impl ErrorCode {
            /// Every code, in documentation order.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )+ ];

            /// The wire string, e.g. `"PATH_NOT_FOUND"`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( ErrorCode::$variant => $wire, )+
                }
            }
        }
    };
}

error_codes! {
    /// The `workdir` alias is not configured.
    WorkdirNotFound => "WORKDIR_NOT_FOUND",
    /// The path is absolute, starts with `~`, or `..` climbs above the root.
    PathOutsideWorkdir => "PATH_OUTSIDE_WORKDIR",
    /// The path contains NUL, or the OS refused access.
    AccessDenied => "ACCESS_DENIED",
    /// The path or one of its components is longer than the limits allow.
    PathTooLong => "PATH_TOO_LONG",
    /// A component contains a backslash (ambiguous as a separator).
    InvalidName => "INVALID_NAME",
    /// A component names an internal file of ServerFS (temporary files, sentinels).
    ReservedPath => "RESERVED_PATH",
    /// A component starts with `.` and the workdir does not allow hidden names.
    HiddenPathNotAllowed => "HIDDEN_PATH_NOT_ALLOWED",
    /// A credential rule or an operator `deny` glob matches the path.
    DeniedPath => "DENIED_PATH",
    /// A component of the path is a symbolic link.
    SymlinkNotAllowed => "SYMLINK_NOT_ALLOWED",
    /// The target is a FIFO, socket or device; its content is never opened.
    UnsupportedFileType => "UNSUPPORTED_FILE_TYPE",
    /// Reading a file that has several hard links, on a workdir that does
    /// not read such files.
    MultipleHardlinksNotAllowed => "MULTIPLE_HARDLINKS_NOT_ALLOWED",
    /// Nothing exists at the path.
    PathNotFound => "PATH_NOT_FOUND",
    /// A regular file was required.
    NotAFile => "NOT_A_FILE",
    /// A directory was required.
    NotADirectory => "NOT_A_DIRECTORY",
    /// The process ran out of file descriptors.
    ResourceExhausted => "RESOURCE_EXHAUSTED",
    /// The file looks binary (NUL byte in its first 1024 bytes).
    BinaryFile => "BINARY_FILE",
    /// The requested bytes are not valid UTF-8.
    UnsupportedTextEncoding => "UNSUPPORTED_TEXT_ENCODING",
    /// One line is longer than the per-page byte budget.
    LineTooLarge => "LINE_TOO_LARGE",
    /// The file changed while it was being read.
    FileChangedDuringRead => "FILE_CHANGED_DURING_READ",
    /// A paging cursor is malformed or belongs to another revision, path or page size.
    CursorStale => "CURSOR_STALE",
    /// An argument is outside its documented range or shape.
    InvalidArgument => "INVALID_ARGUMENT",
    /// A resource read would be truncated; use `read_text_file` to page it.
    ResourceTooLarge => "RESOURCE_TOO_LARGE",
    /// A resource URI does not have the form `serverfs://{workdir}/{path}`.
    InvalidResourceUri => "INVALID_RESOURCE_URI",
    /// An internal failure that is not the caller's fault.
    InternalError => "INTERNAL_ERROR",
    /// The client cancelled the call (`notifications/cancelled`) before it finished.
    RequestCancelled => "REQUEST_CANCELLED",
    /// A mutation on a workdir configured read-only.
    WorkdirReadOnly => "WORKDIR_READ_ONLY",
    /// A mutation whose path is the workdir root.
    RootMutationNotAllowed => "ROOT_MUTATION_NOT_ALLOWED",
    /// Something already exists at the path a create names.
    PathAlreadyExists => "PATH_ALREADY_EXISTS",
    /// The parent directory of a path to create does not exist.
    ParentNotFound => "PARENT_NOT_FOUND",
    /// `expected_revision` does not match the object's current revision.
    RevisionConflict => "REVISION_CONFLICT",
    /// An edit's occurrence count does not match, or its `old_text` is empty.
    EditConflict => "EDIT_CONFLICT",
    /// More edits in one call than the server allows.
    TooManyEdits => "TOO_MANY_EDITS",
    /// Content, file or result larger than the workdir's write limit.
    WriteTooLarge => "WRITE_TOO_LARGE",
    /// Text arguments containing NUL.
    BinaryContentNotAllowed => "BINARY_CONTENT_NOT_ALLOWED",
    /// Editing or replacing a file that has several hard links.
    MultipleHardlinksNotSupported => "MULTIPLE_HARDLINKS_NOT_SUPPORTED",
    /// Owner, mode or extended attributes could not be carried over.
    MetadataPreservationFailed => "METADATA_PRESERVATION_FAILED",
    /// Deleting a directory that still has entries.
    DirectoryNotEmpty => "DIRECTORY_NOT_EMPTY",
    /// Any other OS error during a mutation.
    MutationIoError => "MUTATION_IO_ERROR",
    /// A binary tool on a workdir without binary transfer.
    BinaryTransferDisabled => "BINARY_TRANSFER_DISABLED",
    /// A whole-file download larger than the workdir's binary limit.
    BinaryFileTooLarge => "BINARY_FILE_TOO_LARGE",
    /// An upload payload larger than the workdir's binary limit.
    BinaryPayloadTooLarge => "BINARY_PAYLOAD_TOO_LARGE",
    /// Upload data that is not strict RFC 4648 standard base64.
    InvalidBase64 => "INVALID_BASE64",
    /// `overwrite: true` without `expected_revision`.
    ExpectedRevisionRequired => "EXPECTED_REVISION_REQUIRED",
    /// `expected_revision` given without `overwrite: true`.
    ExpectedRevisionNotAllowed => "EXPECTED_REVISION_NOT_ALLOWED",
    /// A glob or regular expression that does not compile (or is too large).
    InvalidPattern => "INVALID_PATTERN",
    /// An Agent task holds the workdir's writer lease.
    WorkdirBusy => "WORKDIR_BUSY",
    /// The lease is free but an Agent recovery guard is present.
    WorkdirRecoveryRequired => "WORKDIR_RECOVERY_REQUIRED",
    /// The writer-lease artifact is missing, unsafe or cannot be opened.
    AgentLockUnavailable => "AGENT_LOCK_UNAVAILABLE",
    /// The model answered an agent's approval or question on a workdir
    /// whose operator wants the client's human to answer (`approvals`).
    ApprovalRequiresHuman => "APPROVAL_REQUIRES_HUMAN",
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn wire_strings_are_pinned() {
        let wire: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            wire,
            [
                "WORKDIR_NOT_FOUND",
                "PATH_OUTSIDE_WORKDIR",
                "ACCESS_DENIED",
                "PATH_TOO_LONG",
                "INVALID_NAME",
                "RESERVED_PATH",
                "HIDDEN_PATH_NOT_ALLOWED",
                "DENIED_PATH",
                "SYMLINK_NOT_ALLOWED",
                "UNSUPPORTED_FILE_TYPE",
                "MULTIPLE_HARDLINKS_NOT_ALLOWED",
                "PATH_NOT_FOUND",
                "NOT_A_FILE",
                "NOT_A_DIRECTORY",
                "RESOURCE_EXHAUSTED",
                "BINARY_FILE",
                "UNSUPPORTED_TEXT_ENCODING",
                "LINE_TOO_LARGE",
                "FILE_CHANGED_DURING_READ",
                "CURSOR_STALE",
                "INVALID_ARGUMENT",
                "RESOURCE_TOO_LARGE",
                "INVALID_RESOURCE_URI",
                "INTERNAL_ERROR",
                "REQUEST_CANCELLED",
                "WORKDIR_READ_ONLY",
                "ROOT_MUTATION_NOT_ALLOWED",
                "PATH_ALREADY_EXISTS",
                "PARENT_NOT_FOUND",
                "REVISION_CONFLICT",
                "EDIT_CONFLICT",
                "TOO_MANY_EDITS",
                "WRITE_TOO_LARGE",
                "BINARY_CONTENT_NOT_ALLOWED",
                "MULTIPLE_HARDLINKS_NOT_SUPPORTED",
                "METADATA_PRESERVATION_FAILED",
                "DIRECTORY_NOT_EMPTY",
                "MUTATION_IO_ERROR",
                "BINARY_TRANSFER_DISABLED",
                "BINARY_FILE_TOO_LARGE",
                "BINARY_PAYLOAD_TOO_LARGE",
                "INVALID_BASE64",
                "EXPECTED_REVISION_REQUIRED",
                "EXPECTED_REVISION_NOT_ALLOWED",
                "INVALID_PATTERN",
                "WORKDIR_BUSY",
                "WORKDIR_RECOVERY_REQUIRED",
                "AGENT_LOCK_UNAVAILABLE",
                "APPROVAL_REQUIRES_HUMAN",
            ]
        );
    }

    #[test]
    fn serde_uses_the_wire_string() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            let back: ErrorCode = serde_json::from_str(&json).unwrap();
            assert_eq!(back, *code);
        }
    }

    #[test]
    fn wire_strings_are_screaming_snake() {
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(s.len() >= 3, "{s}");
            assert!(s.starts_with(|c: char| c.is_ascii_uppercase()), "{s}");
            assert!(
                s.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
                "{s}"
            );
        }
    }

    #[test]
    fn every_code_is_documented() {
        let doc = include_str!("../../../docs/error-codes.md");
        for code in ErrorCode::ALL {
            assert!(
                doc.contains(&format!("`{}`", code.as_str())),
                "{} is missing from docs/error-codes.md",
                code.as_str()
            );
        }
    }
}
