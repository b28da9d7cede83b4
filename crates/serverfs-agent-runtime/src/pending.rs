//! Requests of ours awaiting the provider's response, matched by id: the
//! bookkeeping behind every request/response protocol an adapter speaks
//! (JSON-RPC's `id`, the stream-json control protocol's `request_id`).
//!
//! The reader side resolves an entry when a response arrives
//! ([`PendingRequests::resolve`]) and fails every entry when the
//! connection goes ([`PendingRequests::close_all`]); the caller waits with
//! a bound ([`Waiter::wait`]) and its entry is removed if the bound passes,
//! so a provider that never answers cannot grow the table. A request
//! opened after the connection went fails at once: nobody is left to
//! answer it or to close it later.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

/// Why a request got no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unanswered {
    /// No response within the request's bound.
    Timeout,
    /// The connection ended first.
    Closed,
}

/// The open entries, and whether the connection has gone.
struct Table<K, R> {
    open: HashMap<K, oneshot::Sender<R>>,
    closed: bool,
}

/// The open requests of one connection, keyed by request id `K`, each
/// awaiting a response `R`. Cheap to clone: clones share the table.
pub struct PendingRequests<K, R> {
    table: Arc<Mutex<Table<K, R>>>,
}

impl<K, R> Clone for PendingRequests<K, R> {
    fn clone(&self) -> Self {
        PendingRequests {
            table: Arc::clone(&self.table),
        }
    }
}

impl<K: Eq + Hash + Clone, R> Default for PendingRequests<K, R> {
    fn default() -> Self {
        PendingRequests {
            table: Arc::new(Mutex::new(Table {
                open: HashMap::new(),
                closed: false,
            })),
        }
    }
}

impl<K: Eq + Hash + Clone, R> PendingRequests<K, R> {
    fn lock(&self) -> MutexGuard<'_, Table<K, R>> {
        // Every update is a single insert or remove: a panic elsewhere
        // cannot leave the table half-changed.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens an entry for `id` (register before sending the request, so a
    /// fast response finds it). After [`close_all`](Self::close_all) the
    /// entry is not kept and its waiter fails with `Closed` at once.
    pub fn register(&self, id: K) -> Waiter<K, R> {
        let (answer, response) = oneshot::channel();
        let mut table = self.lock();
        if !table.closed {
            table.open.insert(id.clone(), answer);
        }
        drop(table);
        Waiter {
            pending: self.clone(),
            id,
            response,
        }
    }

    /// Delivers the response to `id`; `false` when nobody waits for it (a
    /// stray or late response, which the caller drops).
    pub fn resolve(&self, id: &K, response: R) -> bool {
        match self.lock().open.remove(id) {
            Some(waiter) => waiter.send(response).is_ok(),
            None => false,
        }
    }

    /// Fails every open request, and every later one: the connection is
    /// gone.
    pub fn close_all(&self) {
        let mut table = self.lock();
        table.closed = true;
        // Dropping a sender wakes its waiter with `Closed`.
        table.open.clear();
    }

    fn forget(&self, id: &K) {
        self.lock().open.remove(id);
    }
}

/// One open request, awaiting its response.
pub struct Waiter<K: Eq + Hash + Clone, R> {
    pending: PendingRequests<K, R>,
    id: K,
    response: oneshot::Receiver<R>,
}

impl<K: Eq + Hash + Clone, R> Waiter<K, R> {
    /// Waits up to `timeout` for the response.
    ///
    /// # Errors
    ///
    /// [`Unanswered::Timeout`] (the entry is removed: a late response is
    /// dropped) or [`Unanswered::Closed`].
    pub async fn wait(self, timeout: Duration) -> Result<R, Unanswered> {
        match tokio::time::timeout(timeout, self.response).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(Unanswered::Closed),
            Err(_) => {
                self.pending.forget(&self.id);
                Err(Unanswered::Timeout)
            }
        }
    }

    /// Withdraws the request: the message could not be sent.
    pub fn cancel(self) {
        self.pending.forget(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn responses_meet_their_waiters_and_timeouts_leave_nothing() {
        let pending = PendingRequests::<i64, &str>::default();
        let first = pending.register(1);
        assert!(pending.resolve(&1, "one"));
        assert_eq!(first.wait(Duration::from_secs(1)).await, Ok("one"));
        assert!(!pending.resolve(&1, "again"), "answered once");

        let slow = pending.register(2);
        assert_eq!(
            slow.wait(Duration::from_millis(1)).await,
            Err(Unanswered::Timeout)
        );
        assert!(!pending.resolve(&2, "late"), "a timed-out entry is gone");

        let orphan = pending.register(3);
        pending.close_all();
        assert_eq!(
            orphan.wait(Duration::from_secs(1)).await,
            Err(Unanswered::Closed)
        );

        // A request sent after the provider went (a stop's interrupt to a
        // CLI that had just ended its turn and exited) is not kept waiting
        // for its whole bound.
        let late = pending.register(4);
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(5), late.wait(Duration::from_secs(30)))
                .await
                .expect("fails at once, not after its bound"),
            Err(Unanswered::Closed)
        );
        assert!(!pending.resolve(&4, "never"), "nothing kept after close");
    }
}
