//! A bounded capture of a provider's standard error.
//!
//! Providers log freely on stderr (Codex prints its listener address there,
//! npm wrappers print stack traces). The pipe must be drained continuously
//! or the provider blocks once the kernel buffer (64 KiB on Linux) is full,
//! and memory must stay bounded whatever it writes: the capture keeps only
//! the last `capacity` bytes.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

/// The default bound of a provider's stderr capture: 64 KiB.
pub const DEFAULT_STDERR_CAPACITY: usize = 64 * 1024;

/// Read size of the draining task; independent of the capacity.
const READ_CHUNK: usize = 8 * 1024;

/// A handle on the tail of a provider's stderr, filled by a background task.
///
/// # Security
///
/// Provider diagnostics may contain host paths, prompts or credentials: the
/// tail is for operator diagnostics only and is never copied into task
/// events, results or client-visible errors. `Debug` prints sizes, not
/// content.
#[derive(Clone)]
pub struct StderrCapture {
    ring: Arc<Mutex<Ring>>,
    eof: watch::Receiver<bool>,
}

/// A copy of the captured tail at one moment.
#[derive(Clone, PartialEq, Eq)]
pub struct StderrTail {
    /// The last bytes written, at most the capture's capacity. Not
    /// necessarily valid UTF-8, and may start in the middle of a character.
    pub bytes: Vec<u8>,
    /// Every byte the provider wrote to stderr so far, kept or not.
    pub total_bytes: u64,
}

impl StderrTail {
    /// Whether older output was discarded to respect the bound.
    pub fn truncated(&self) -> bool {
        self.total_bytes > self.bytes.len() as u64
    }
}

impl fmt::Debug for StderrTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StderrTail")
            .field("kept_bytes", &self.bytes.len())
            .field("total_bytes", &self.total_bytes)
            .finish()
    }
}

impl StderrCapture {
    /// Starts draining `stderr` into a capture of `capacity` bytes, on the
    /// current tokio runtime.
    pub(crate) fn start<R>(stderr: R, capacity: usize) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let ring = Arc::new(Mutex::new(Ring::new(capacity)));
        let (eof_tx, eof) = watch::channel(false);
        let writer = Arc::clone(&ring);
        tokio::spawn(async move {
            let mut stderr = stderr;
            let mut chunk = vec![0_u8; READ_CHUNK];
            // EOF arrives once every holder of the write end is gone, which
            // includes grandchildren that inherited it; a read error ends
            // the capture the same way (nothing useful to retry).
            while let Ok(read @ 1..) = stderr.read(&mut chunk).await {
                writer
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(&chunk[..read]);
            }
            // No receiver left only means nobody waits for EOF.
            let _ = eof_tx.send(true);
        });
        Self { ring, eof }
    }

    /// The captured tail now.
    pub fn snapshot(&self) -> StderrTail {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        StderrTail {
            bytes: ring.bytes.iter().copied().collect(),
            total_bytes: ring.total,
        }
    }

    /// Resolves once the provider's stderr reached end of file: every
    /// process holding it exited or closed it. After that the snapshot is
    /// final.
    pub async fn closed(&self) {
        let mut eof = self.eof.clone();
        // An error means the draining task is gone, which it only is after
        // it sent `true`; either way the capture is final.
        let _ = eof.wait_for(|eof| *eof).await;
    }
}

impl fmt::Debug for StderrCapture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("StderrCapture")
            .field("capacity", &ring.capacity)
            .field("kept_bytes", &ring.bytes.len())
            .field("total_bytes", &ring.total)
            .finish()
    }
}

/// The last `capacity` bytes written, plus a running total.
struct Ring {
    bytes: VecDeque<u8>,
    capacity: usize,
    total: u64,
}

impl Ring {
    fn new(capacity: usize) -> Self {
        // Grows on demand: most providers write little, and a full buffer
        // per task up front would be wasted.
        Self {
            bytes: VecDeque::new(),
            capacity,
            total: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.total = self.total.saturating_add(data.len() as u64);
        let data = &data[data.len().saturating_sub(self.capacity)..];
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(data);
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;

    fn contents(ring: &Ring) -> Vec<u8> {
        ring.bytes.iter().copied().collect()
    }

    #[test]
    fn keeps_the_last_capacity_bytes() {
        let mut ring = Ring::new(5);
        ring.push(b"abc");
        assert_eq!(contents(&ring), b"abc");
        ring.push(b"def");
        assert_eq!(contents(&ring), b"bcdef");
        ring.push(b"0123456789");
        assert_eq!(contents(&ring), b"56789");
        ring.push(b"");
        assert_eq!(contents(&ring), b"56789");
        ring.push(b"x");
        assert_eq!(contents(&ring), b"6789x");
        assert_eq!(ring.total, 17);
    }

    #[test]
    fn zero_capacity_keeps_nothing_but_counts() {
        let mut ring = Ring::new(0);
        ring.push(b"abc");
        assert!(ring.bytes.is_empty());
        assert_eq!(ring.total, 3);
    }
}
