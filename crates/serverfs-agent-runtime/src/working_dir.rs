//! A task's working directory as an open descriptor.
//!
//! The Bridge checks a task's cwd when the task is submitted, but the task
//! may run minutes later, and a client with write access to the workdir
//! can swap a parent directory for a symlink in between. A path string
//! would then lead outside the workdir. So the core opens the directory
//! once, through the confined file kernel, and everything that starts a
//! provider in it uses the descriptor: a child's cwd is set to
//! `/proc/self/fd/<n>`, which the kernel resolves to the very directory
//! the descriptor holds (the child has the descriptor too between fork and
//! exec), never to whatever the path names by then.

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

/// The environment variable naming the task a provider process works for,
/// in every process started in a task's [`WorkingDir`]. Inherited by what
/// the provider starts, it lets the Bridge find a descendant that left the
/// provider's process group and session, even after a Bridge restart.
pub const TASK_MARKER_VAR: &str = "AGENT_BRIDGE_TASK_ID";

/// An opened working directory, and the task it belongs to (if any).
///
/// Cloning shares the descriptor; it closes when the last clone is
/// dropped.
///
/// # Security
///
/// `Debug` shows the descriptor number only, never the host path
/// (invariant 9).
#[derive(Clone)]
pub struct WorkingDir {
    dir: Arc<OwnedFd>,
    task_id: Option<Arc<str>>,
}

impl WorkingDir {
    /// Wraps a directory descriptor the caller opened safely (the core:
    /// beneath the workdir root, refusing symlinks in every component).
    /// Name its task with [`with_task`](Self::with_task).
    pub fn from_descriptor(dir: OwnedFd) -> WorkingDir {
        WorkingDir {
            dir: Arc::new(dir),
            task_id: None,
        }
    }

    /// Opens the directory at `path` by name.
    ///
    /// Only for directories no client can change (the Bridge's own home,
    /// `/`, a test's temporary directory); a task's directory comes from
    /// [`from_descriptor`](Self::from_descriptor).
    ///
    /// # Errors
    ///
    /// The OS error of `open(2)`; `NotADirectory` for anything but a
    /// directory.
    pub fn open_trusted(path: &Path) -> io::Result<WorkingDir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = rustix::fs::open(path, flags, Mode::empty())?;
        Ok(WorkingDir::from_descriptor(dir))
    }

    /// The same directory as task `task_id`'s: processes started in it
    /// carry [`TASK_MARKER_VAR`]`=<task_id>`.
    #[must_use]
    pub fn with_task(mut self, task_id: &str) -> WorkingDir {
        self.task_id = Some(Arc::from(task_id));
        self
    }

    /// The task marker entry (`NAME=value`) of processes started here.
    pub(crate) fn task_marker(&self) -> Option<(String, String)> {
        self.task_id
            .as_ref()
            .map(|task| (TASK_MARKER_VAR.to_owned(), task.to_string()))
    }

    /// The path a child process is given as its cwd: the descriptor's
    /// `/proc/self/fd` entry, meaningful only while this value lives.
    pub(crate) fn spawn_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd()))
    }

    /// Where the directory is now, for provider protocols that want a
    /// path string (a Codex thread's cwd): the kernel's own name for the
    /// descriptor, so a renamed parent leads to the directory's new place,
    /// not to what was swapped into the old one. Ask again each time: the
    /// answer is only as old as the call.
    ///
    /// # Errors
    ///
    /// `NotFound` once the directory was removed; the OS error if `/proc`
    /// cannot be read.
    pub fn current_path(&self) -> io::Result<PathBuf> {
        // A removed directory has no links left; its `/proc` name would be
        // the old path with " (deleted)" appended.
        if rustix::fs::fstat(&*self.dir)?.st_nlink == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "the working directory was removed",
            ));
        }
        std::fs::read_link(self.spawn_path())
    }
}

impl AsFd for WorkingDir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }
}

impl fmt::Debug for WorkingDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkingDir")
            .field("fd", &self.dir.as_raw_fd())
            .field("task_id", &self.task_id)
            .finish()
    }
}
