//! The platform seam: portable types and functions over the operating
//! system's lease primitives. Only Linux is implemented ([`linux`]); a
//! Windows (`LockFileEx` on the same artifact names) or macOS twin adds a
//! sibling module exporting the same functions, and nothing above this
//! module changes.

mod linux;

pub(crate) use linux::*;

/// How a directory is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirAccess {
    /// Name lookups only (`O_PATH` on Linux): no read permission needed.
    Lookup,
    /// Readable: listing and `fsync`.
    Read,
}

/// How an existing file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileAccess {
    /// Read-only (the MCP reader, which never modifies artifacts).
    Read,
    /// Read-write (the Bridge, which owns them).
    ReadWrite,
}

/// A file's type, as far as lease artifacts care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Regular,
    Directory,
    Symlink,
    /// FIFO, socket, device or anything else.
    Other,
}

/// The metadata lease checks need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) kind: Kind,
    /// Permission bits only (`mode & 0o7777`).
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// The outcome of a non-blocking exclusive lock attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockAttempt {
    Acquired,
    /// Another open file description holds the lock.
    WouldBlock,
}

/// What an OS error from an open means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenFailure {
    Missing,
    Symlink,
    /// A directory where a file was expected (`EISDIR`).
    IsDirectory,
    /// A non-directory where a directory was expected (`ENOTDIR`; also how
    /// Linux reports a symlink opened with `O_DIRECTORY | O_NOFOLLOW`).
    NotDirectory,
    Other,
}

/// What probing a process group found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessGroup {
    /// At least one member exists (or is unreaped, or the id was reused).
    Exists,
    /// The kernel says no such group exists.
    Gone,
    /// The probe could not decide.
    Unknown,
}
