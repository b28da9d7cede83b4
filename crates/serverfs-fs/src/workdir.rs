//! A workdir: an open root descriptor plus the policy that names what a
//! client may reach beneath it.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, StatxFlags, fstat, openat, statat, statx};
use rustix::io::Errno;

use crate::line_index::LineIndexes;
use crate::sys::linux;
use crate::{FsError, PathPolicy, RelPath, Resolver};

/// One configured workdir, opened once.
///
/// # Security
///
/// The root is the only path ever opened by name (at [`Workdir::open`]);
/// everything else is resolved beneath the root descriptor, refusing
/// symlinks in every component, so renaming or replacing the root's path
/// later cannot redirect requests.
///
/// A hard link is not a path to resolve but a second name of the same
/// file, so confinement by path cannot see one whose other name is outside
/// the root: anyone who may create names in the workdir, and may link the
/// file (Linux's `fs.protected_hardlinks` limits that to files they own or
/// may read and write), can plant one. By default the content of a
/// regular file with more than one link is therefore never read (see
/// [`Workdir::set_read_hardlinked_files`]).
#[derive(Debug)]
pub struct Workdir {
    root: OwnedFd,
    policy: PathPolicy,
    resolver: Resolver,
    /// Whether content reads accept a file with several hard links.
    read_hardlinked_files: bool,
    /// Line indexes of the files read here (see `line_index`).
    pub(crate) lines: LineIndexes,
}

/// What kind of object a directory entry is, as shown to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device (never opened).
    Other,
}

impl EntryKind {
    pub(crate) fn of(stat: &Stat) -> EntryKind {
        // A mode always has a type; one the kernel does not name is other.
        EntryKind::of_type(FileType::from_raw_mode(stat.st_mode)).unwrap_or(EntryKind::Other)
    }

    /// The kind of `file_type`, or `None` for `Unknown`: a directory entry
    /// whose filesystem records no type (`DT_UNKNOWN`) must be stat'ed.
    pub(crate) fn of_type(file_type: FileType) -> Option<EntryKind> {
        match file_type {
            FileType::RegularFile => Some(EntryKind::File),
            FileType::Directory => Some(EntryKind::Directory),
            FileType::Symlink => Some(EntryKind::Symlink),
            FileType::Unknown => None,
            _ => Some(EntryKind::Other),
        }
    }

    /// The wire name: `file`, `directory`, `symlink` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Directory => "directory",
            EntryKind::Symlink => "symlink",
            EntryKind::Other => "other",
        }
    }
}

impl Workdir {
    /// Opens the root directory `path`.
    ///
    /// # Errors
    ///
    /// `SYMLINK_NOT_ALLOWED` if `path` itself is a symlink,
    /// `NOT_A_DIRECTORY`, `PATH_NOT_FOUND`, `ACCESS_DENIED`.
    pub fn open(path: &Path, policy: PathPolicy, resolver: Resolver) -> Result<Workdir, FsError> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let root = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOTDIR) => {
                return Err(match rustix::fs::lstat(path) {
                    Ok(st) if EntryKind::of(&st) == EntryKind::Symlink => FsError::Symlink,
                    _ => FsError::NotADirectory,
                });
            }
            Err(errno) => return Err(FsError::from_errno(errno)),
        };
        Ok(Workdir {
            root,
            policy,
            resolver,
            read_hardlinked_files: false,
            lines: LineIndexes::default(),
        })
    }

    /// Whether reads of content — [`Workdir::read_text`],
    /// [`Workdir::read_bytes`] and [`Workdir::search_text`] — accept a
    /// regular file with more than one hard link. Default: false, they
    /// refuse it with `MULTIPLE_HARDLINKS_NOT_ALLOWED` (a search skips and
    /// counts it), since nothing tells whether another name is outside the
    /// workdir. Metadata (stat, listings, find) and mutations are not
    /// concerned: no mutation ever replaces such a file
    /// (`MULTIPLE_HARDLINKS_NOT_SUPPORTED`).
    ///
    /// # Security
    ///
    /// The check reads the link count the file has while it is opened, so
    /// it refuses every link that exists when a read happens. It is not a
    /// defence against someone removing a planted name *while* a read opens
    /// it: Linux lowers the count before the name disappears, so a name in
    /// the middle of its removal shows a count of 1, and no look at names
    /// or counts can tell it from a file's only name (issue 14, item 11).
    /// `fs.protected_hardlinks = 1` is that defence: nobody can link a file
    /// they could not read and write themselves.
    pub fn set_read_hardlinked_files(&mut self, read: bool) {
        self.read_hardlinked_files = read;
    }

    /// Whether content reads accept a file with several hard links.
    pub(crate) fn reads_hardlinked_files(&self) -> bool {
        self.read_hardlinked_files
    }

    /// The naming policy of this workdir.
    pub fn policy(&self) -> &PathPolicy {
        &self.policy
    }

    /// Parses a caller's path and applies the naming policy.
    ///
    /// # Errors
    ///
    /// The codes of [`RelPath::parse`] and [`PathPolicy::check`].
    pub fn parse_path(&self, input: &str) -> Result<RelPath, FsError> {
        let path = RelPath::parse(input)?;
        self.policy.check(&path)?;
        Ok(path)
    }

    /// Where the open root is now, as this process's mount table names
    /// paths: the kernel's name for its descriptor under `/proc/self/fd`.
    /// `None` when the kernel does not say (no `/proc`, or the root has
    /// been deleted).
    pub fn root_location(&self) -> Option<PathBuf> {
        let link = format!("/proc/self/fd/{}", self.root.as_raw_fd());
        let target = PathBuf::from(OsString::from_vec(
            rustix::fs::readlink(link, Vec::new()).ok()?.into_bytes(),
        ));
        let deleted = target.as_os_str().as_bytes().ends_with(b" (deleted)");
        (target.is_absolute() && !deleted).then_some(target)
    }

    /// The ID of the mount the open root is on (as the mount table's first
    /// field names it); `None` on kernels before 5.8, which do not say.
    pub fn root_mount_id(&self) -> Option<u64> {
        let stat = statx(self.root_fd(), "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID).ok()?;
        StatxFlags::from_bits_retain(stat.stx_mask)
            .contains(StatxFlags::MNT_ID)
            .then_some(stat.stx_mnt_id)
    }

    pub(crate) fn root_fd(&self) -> BorrowedFd<'_> {
        self.root.as_fd()
    }

    /// The directory holding `path`'s final component (the root for the
    /// root itself): the root's own descriptor when that is it, else one
    /// opened beneath it (`O_PATH`).
    pub(crate) fn open_parent(&self, path: &RelPath) -> Result<ParentDir<'_>, FsError> {
        match path.split_last() {
            Some((parent, _)) if !parent.is_empty() => self
                .resolver
                .open_dir(self.root_fd(), parent)
                .map(ParentDir::Opened),
            _ => Ok(ParentDir::Root(self.root_fd())),
        }
    }

    /// Opens the directory at `path` (`O_RDONLY | O_DIRECTORY`), resolved
    /// beneath the root with no symlink in any component: for reading its
    /// entries, or as a process's working directory that later renames
    /// and symlink swaps cannot redirect.
    ///
    /// # Errors
    ///
    /// `PATH_NOT_FOUND`, `NOT_A_DIRECTORY`, `SYMLINK_NOT_ALLOWED`,
    /// `ACCESS_DENIED` and the other resolution codes. The naming policy is
    /// not applied here: check it with [`Workdir::parse_path`] or
    /// [`PathPolicy::check`] first.
    pub fn open_directory(&self, path: &RelPath) -> Result<OwnedFd, FsError> {
        let parent = self.open_parent(path)?;
        let name = path.file_name().unwrap_or(".");
        let fd = linux::open_dir_component(parent.as_fd(), name, OFlags::RDONLY)?;
        linux::debug_assert_beneath(self.root_fd(), &fd);
        Ok(fd)
    }

    /// Opens the regular file at `path` to give its content to a client,
    /// returning the descriptor and its `fstat`: [`Workdir::open_file_in`],
    /// and a file with several hard links is refused unless this workdir
    /// reads them. Both link counts at hand are checked, the name's before
    /// the open and the descriptor's after it, at no extra cost.
    pub(crate) fn open_for_reading(&self, path: &RelPath) -> Result<(OwnedFd, Stat), FsError> {
        let Some(name) = path.file_name() else {
            return Err(FsError::NotAFile);
        };
        let parent = self.open_parent(path)?;
        let (fd, named, opened) = self.open_regular(parent.as_fd(), name)?;
        if !self.read_hardlinked_files && (named.st_nlink > 1 || opened.st_nlink > 1) {
            return Err(FsError::MultiplyLinked);
        }
        Ok((fd, opened))
    }

    /// Opens the regular file `name` of an already open directory,
    /// returning the descriptor and its `fstat`; for mutations, which have
    /// their own rule for hard links.
    pub(crate) fn open_file_in(
        &self,
        parent: BorrowedFd<'_>,
        name: &str,
    ) -> Result<(OwnedFd, Stat), FsError> {
        let (fd, _, opened) = self.open_regular(parent, name)?;
        Ok((fd, opened))
    }

    /// Opens a regular file for reading and returns the descriptor, the
    /// no-follow stat of `name` taken before the open, and the
    /// descriptor's `fstat` (the same file).
    ///
    /// The type is checked by the stat *before* opening, so a FIFO or
    /// device is never opened at all; the open itself uses `O_NOFOLLOW |
    /// O_NONBLOCK` so that an object swapped in between cannot follow a
    /// link or block, and the descriptor's own stat must show the same
    /// regular file.
    fn open_regular(
        &self,
        parent: BorrowedFd<'_>,
        name: &str,
    ) -> Result<(OwnedFd, Stat, Stat), FsError> {
        let before =
            statat(parent, name, AtFlags::SYMLINK_NOFOLLOW).map_err(FsError::from_errno)?;
        require_regular(&before)?;
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = openat(parent, name, flags, Mode::empty()).map_err(FsError::from_errno)?;
        let stat = fstat(&fd).map_err(FsError::from_errno)?;
        require_regular(&stat)?;
        if (stat.st_dev, stat.st_ino) != (before.st_dev, before.st_ino) {
            return Err(FsError::ChangedDuringRead);
        }
        linux::debug_assert_beneath(self.root_fd(), &fd);
        Ok((fd, before, stat))
    }

    /// For a mutation of `path`: a readable descriptor of its parent
    /// directory (to create temporary files in and to fsync) and the final
    /// name. A missing parent is reported as `missing_parent`
    /// (`PARENT_NOT_FOUND` for creates, `PATH_NOT_FOUND` otherwise).
    pub(crate) fn open_parent_for_mutation<'p>(
        &self,
        path: &'p RelPath,
        missing_parent: FsError,
    ) -> Result<(OwnedFd, &'p str), FsError> {
        let Some(name) = path.file_name() else {
            return Err(FsError::NotAFile);
        };
        let parent = match self.open_parent(path) {
            Ok(fd) => fd,
            Err(FsError::NotFound) => return Err(missing_parent),
            Err(other) => return Err(other),
        };
        Ok((crate::publish::reopen_dir(parent.as_fd())?, name))
    }

    /// The no-follow stat of `path` itself (a final symlink is described,
    /// not followed).
    pub(crate) fn lstat(&self, path: &RelPath) -> Result<Stat, FsError> {
        match path.file_name() {
            None => fstat(self.root_fd()).map_err(FsError::from_errno),
            Some(name) => {
                let parent = self.open_parent(path)?;
                statat(parent.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW).map_err(FsError::from_errno)
            }
        }
    }
}

/// A path's parent directory. The root is borrowed, not reopened: a
/// top-level path costs no open and close of its own.
pub(crate) enum ParentDir<'w> {
    Root(BorrowedFd<'w>),
    Opened(OwnedFd),
}

impl AsFd for ParentDir<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            ParentDir::Root(root) => *root,
            ParentDir::Opened(fd) => fd.as_fd(),
        }
    }
}

fn require_regular(stat: &Stat) -> Result<(), FsError> {
    match EntryKind::of(stat) {
        EntryKind::File => Ok(()),
        EntryKind::Directory => Err(FsError::NotAFile),
        EntryKind::Symlink => Err(FsError::Symlink),
        EntryKind::Other => Err(FsError::UnsupportedFileType),
    }
}
