//! The in-memory side of a task that has a runner: its writer lease and
//! recovery guard, the stop signal, the presented interaction's expiry and
//! the waiters of its interactions. Nothing here survives a restart, by
//! design: a restarted Bridge interrupts unfinished tasks (spec §3.13).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serverfs_lease::{
    GuardRecord, GuardRemoval, GuardWrite, HeldLease, LeaseError, ProviderLiveness,
};
use serverfs_protocol::bridge::EpochMillis;
use tokio::sync::{oneshot, watch};

use crate::ProcessGroupId;
use crate::adapter::NativeIds;
use crate::store::{InteractionResolution, now_millis};

/// Why a runner is asked to stop its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// The task reached a terminal state from outside the runner (user
    /// cancel, deadline, interaction expiry): the state is already stored.
    Ended,
    /// The Bridge is shutting down.
    Shutdown,
}

/// A workspace-write task's lease with the guard content last published.
struct Lease {
    held: HeldLease,
    guard: GuardRecord,
}

/// One task with a runner.
pub(crate) struct LiveTask {
    /// The task id.
    pub task_id: String,
    lease: Mutex<Option<Lease>>,
    stop: watch::Sender<Option<StopReason>>,
    /// When the presented interaction lapses; `None` when none is
    /// presented. The runner sleeps on it.
    pub expiry: watch::Sender<Option<EpochMillis>>,
    waiters: Mutex<HashMap<String, oneshot::Sender<InteractionResolution>>>,
    groups: Mutex<Vec<ProcessGroupId>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LiveTask {
    /// A live task; `lease` is the held lease and published guard of a
    /// workspace-write task.
    pub fn new(task_id: String, lease: Option<(HeldLease, GuardRecord)>) -> LiveTask {
        LiveTask {
            task_id,
            lease: Mutex::new(lease.map(|(held, guard)| Lease { held, guard })),
            stop: watch::channel(None).0,
            expiry: watch::channel(None).0,
            waiters: Mutex::new(HashMap::new()),
            groups: Mutex::new(Vec::new()),
        }
    }

    /// Asks the runner to stop; the first reason wins. Every interaction
    /// waiter fails at once (its task is over).
    pub fn stop(&self, reason: StopReason) {
        self.stop.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(reason);
                true
            } else {
                false
            }
        });
        lock(&self.waiters).clear();
    }

    /// A receiver of the stop signal.
    pub fn stop_signal(&self) -> watch::Receiver<Option<StopReason>> {
        self.stop.subscribe()
    }

    /// The stop reason, if stopping.
    pub fn stop_reason(&self) -> Option<StopReason> {
        *self.stop.borrow()
    }

    /// Registers a waiter for `request_id` (before the request is stored,
    /// so that no answer can outrun it). `None` when the task is stopping.
    pub fn add_waiter(&self, request_id: &str) -> Option<oneshot::Receiver<InteractionResolution>> {
        if self.stop_reason().is_some() {
            return None;
        }
        let (sender, receiver) = oneshot::channel();
        lock(&self.waiters).insert(request_id.to_owned(), sender);
        Some(receiver)
    }

    /// Hands `resolution` to the waiter of `request_id`.
    pub fn wake(&self, request_id: &str, resolution: InteractionResolution) {
        if let Some(sender) = lock(&self.waiters).remove(request_id) {
            // The adapter may have given up on the request meanwhile.
            let _ = sender.send(resolution);
        }
    }

    /// Forgets the waiter of `request_id` (withdrawn or failed).
    pub fn forget_waiter(&self, request_id: &str) {
        lock(&self.waiters).remove(request_id);
    }

    /// Remembers a provider process group and writes it into the guard.
    ///
    /// # Errors
    ///
    /// `WORKDIR_RECOVERY_REQUIRED` when the guard cannot be written: the
    /// caller must not let that provider run unrecorded.
    pub fn record_group(&self, group: ProcessGroupId) -> Result<(), LeaseError> {
        lock(&self.groups).push(group);
        self.update_guard(|guard| {
            guard.provider_pgid = Some(group.as_raw());
        })
    }

    /// Writes the native ids into the guard.
    ///
    /// # Errors
    ///
    /// As [`record_group`](Self::record_group).
    pub fn record_native_ids(&self, ids: &NativeIds) -> Result<(), LeaseError> {
        self.update_guard(|guard| {
            if ids.session_id.is_some() {
                guard.native_session_id.clone_from(&ids.session_id);
            }
            if ids.turn_id.is_some() {
                guard.native_turn_id.clone_from(&ids.turn_id);
            }
        })
    }

    fn update_guard(&self, change: impl FnOnce(&mut GuardRecord)) -> Result<(), LeaseError> {
        let mut lease = lock(&self.lease);
        let Some(lease) = lease.as_mut() else {
            return Ok(());
        };
        let mut guard = lease.guard.clone();
        change(&mut guard);
        guard.updated_at = Some(now_millis());
        lease.held.publish_guard(&guard, GuardWrite::Update)?;
        lease.guard = guard;
        Ok(())
    }

    /// The provider process groups recorded during the turn.
    pub fn groups(&self) -> Vec<ProcessGroupId> {
        lock(&self.groups).clone()
    }

    /// Removes the guard if `liveness` proves the provider stopped, then
    /// releases the lease either way. A kept guard blocks the workdir until
    /// reconciliation proves the stop.
    pub fn end_lease(&self, liveness: ProviderLiveness) {
        let Some(lease) = lock(&self.lease).take() else {
            return;
        };
        match lease.held.remove_guard(&self.task_id, liveness) {
            Ok(GuardRemoval::Removed | GuardRemoval::Absent) => {}
            Ok(GuardRemoval::Kept { liveness }) => {
                tracing::warn!(
                    task_id = self.task_id,
                    liveness = ?liveness,
                    "recovery guard kept: the provider is not proven stopped"
                );
            }
            Err(error) => tracing::warn!(
                task_id = self.task_id,
                code = error.code().as_str(),
                "recovery guard could not be removed"
            ),
        }
    }

    /// Releases the lease without touching the guard (shutdown past its
    /// bound: the provider's state is unknown, so the guard stays).
    pub fn release_lease(&self) {
        lock(&self.lease).take();
    }
}
