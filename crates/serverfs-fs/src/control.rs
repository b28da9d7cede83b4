//! A caller's hold on a long kernel operation.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Lets the caller of a long operation — a `find_files` or `search_text`
/// walk, a range read — stop it and watch how far it has got, from another
/// thread while the operation runs on its own.
///
/// Stopping is cooperative and prompt: a walk looks at the flag before each
/// directory entry and while it collects a file's matches, a read between
/// chunks of [`READ_CHUNK_BYTES`](crate::READ_CHUNK_BYTES); the operation
/// then ends with [`FsError::Cancelled`](crate::FsError::Cancelled) and has
/// closed every descriptor it opened. The progress counter is plain data
/// for the caller to sample at whatever rate it wants to report at: it is
/// never a callback, so a slow reporter cannot slow the operation.
///
/// One `Control` serves one operation: its counter starts at zero and
/// counts that operation's work only.
///
/// ```
/// use serverfs_fs::Control;
///
/// let control = Control::new();
/// assert!(!control.is_cancelled());
/// control.cancel();
/// assert!(control.is_cancelled());
/// assert_eq!(control.done(), 0);
/// ```
#[derive(Debug, Default)]
pub struct Control {
    cancelled: AtomicBool,
    done: AtomicU64,
}

impl Control {
    /// A control for an operation that has not started.
    pub fn new() -> Control {
        Control::default()
    }

    /// Asks the operation to stop as soon as it next looks.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether [`cancel`](Control::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Work done so far: directory entries visited by a walk, bytes read
    /// by a range read. Only ever grows.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Counts `amount` more units of work; the count before it.
    pub(crate) fn advance(&self, amount: u64) -> u64 {
        self.done.fetch_add(amount, Ordering::Relaxed)
    }
}
