//! The provider requests an adapter is serving, one task each.
//!
//! A provider may raise several requests at once (approvals, questions),
//! each waiting for the human through the host's queue while the turn
//! keeps reading the provider's output. Each is served on its own task,
//! keyed by its request id so that an id is served once, and aborted when
//! the provider withdraws the request (it resolved it itself) — dropping
//! the host's wait withdraws the interaction, which then goes stale.
//! Dropping the set aborts every handler still running: a turn that ends
//! leaves no request half-served.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;

use tokio::task::{AbortHandle, JoinSet};

/// The handlers of one turn's provider requests, keyed by request id `K`.
pub struct ServingSet<K> {
    handlers: JoinSet<()>,
    /// Every request id seen, with its handler: never removed when a
    /// handler finishes, so a repeated id is not served twice.
    by_id: HashMap<K, AbortHandle>,
}

impl<K> Default for ServingSet<K> {
    fn default() -> Self {
        ServingSet {
            handlers: JoinSet::new(),
            by_id: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash> ServingSet<K> {
    /// Serves request `id` with `handler` on a task of its own; `false`
    /// (and `handler` dropped unrun) when `id` was served before.
    pub fn serve<F>(&mut self, id: K, handler: F) -> bool
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if self.by_id.contains_key(&id) {
            return false;
        }
        // Reap finished handlers first, so the set stays small in a long
        // turn.
        while self.handlers.try_join_next().is_some() {}
        let handle = self.handlers.spawn(handler);
        self.by_id.insert(id, handle);
        true
    }

    /// The provider withdrew request `id`: abort its handler. `false` when
    /// no such request was served.
    pub fn withdraw(&mut self, id: &K) -> bool {
        match self.by_id.remove(id) {
            Some(handle) => {
                handle.abort();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::sync::oneshot;

    use super::*;

    #[tokio::test]
    async fn an_id_is_served_once_and_a_withdrawn_handler_is_aborted() {
        let mut serving = ServingSet::default();
        let (held, dropped) = oneshot::channel::<()>();
        assert!(serving.serve(7, async move {
            let _held = held;
            std::future::pending::<()>().await;
        }));
        assert!(!serving.serve(7, async {}), "served once");
        assert!(serving.withdraw(&7));
        // The aborted handler drops what it held.
        let closed = tokio::time::timeout(Duration::from_secs(5), dropped).await;
        assert!(matches!(closed, Ok(Err(_))), "{closed:?}");
        assert!(!serving.withdraw(&7));
    }

    #[tokio::test]
    async fn dropping_the_set_aborts_every_handler() {
        let mut serving = ServingSet::default();
        let (held, dropped) = oneshot::channel::<()>();
        serving.serve("a", async move {
            let _held = held;
            std::future::pending::<()>().await;
        });
        drop(serving);
        let closed = tokio::time::timeout(Duration::from_secs(5), dropped).await;
        assert!(matches!(closed, Ok(Err(_))), "{closed:?}");
    }
}
