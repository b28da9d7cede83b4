//! The in-memory side of a task that has a runner: its writer lease and
//! recovery guard, the stop signal, the presented interaction's expiry and
//! the waiters of its interactions. Nothing here survives a restart, by
//! design: a restarted Bridge interrupts unfinished tasks (spec §3.13).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serverfs_lease::{GuardRecord, GuardRemoval, GuardWrite, HeldLease, LeaseId, ProviderLiveness};
use serverfs_protocol::bridge::{BridgeErrorCode, EpochMillis};
use tokio::sync::{oneshot, watch};

use crate::store::{InteractionResolution, now_millis};
use serverfs_agent_runtime::ProcessGroupId;
use serverfs_agent_runtime::{AgentError, NativeIds};

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

/// Most interactions one task may have open (presented plus queued): a
/// provider flooding requests must not grow memory without bound.
const MAX_OPEN_INTERACTIONS: usize = 64;

/// One task with a runner.
pub(crate) struct LiveTask {
    /// The task id.
    pub task_id: String,
    lease: Mutex<Option<Lease>>,
    /// The id of the writer lease the task was given, kept after the lease
    /// is taken out to be ended: until `lease_freed`, the lock is still
    /// held, and a submission must know by whom. With `lease` empty, it
    /// says the lease is gone: the guard can no longer be updated, so
    /// recording a provider must fail.
    writer_lease: Option<LeaseId>,
    /// Set once the lease's lock is let go, after the guard decision: a
    /// submission waiting for this workdir is woken by it.
    lease_freed: watch::Sender<bool>,
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
            writer_lease: lease.as_ref().map(|(held, _)| held.id().clone()),
            lease: Mutex::new(lease.map(|(held, guard)| Lease { held, guard })),
            lease_freed: watch::channel(false).0,
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
    /// so that no answer can outrun it).
    ///
    /// # Errors
    ///
    /// `AGENT_TASK_NOT_ACTIVE` when the task is stopping;
    /// `AGENT_PROVIDER_ERROR` when it has [`MAX_OPEN_INTERACTIONS`] open
    /// already.
    pub fn add_waiter(
        &self,
        request_id: &str,
    ) -> Result<oneshot::Receiver<InteractionResolution>, AgentError> {
        if self.stop_reason().is_some() {
            return Err(AgentError::new(
                BridgeErrorCode::AgentTaskNotActive,
                "the task ended before the request was answered",
            ));
        }
        let mut waiters = lock(&self.waiters);
        if waiters.len() >= MAX_OPEN_INTERACTIONS {
            return Err(AgentError::new(
                BridgeErrorCode::AgentProviderError,
                format!("the provider has {MAX_OPEN_INTERACTIONS} requests open already"),
            ));
        }
        let (sender, receiver) = oneshot::channel();
        waiters.insert(request_id.to_owned(), sender);
        Ok(receiver)
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
    pub fn record_group(&self, group: ProcessGroupId) -> Result<(), AgentError> {
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
    pub fn record_native_ids(&self, ids: &NativeIds) -> Result<(), AgentError> {
        self.update_guard(|guard| {
            if ids.session_id.is_some() {
                guard.native_session_id.clone_from(&ids.session_id);
            }
            if ids.turn_id.is_some() {
                guard.native_turn_id.clone_from(&ids.turn_id);
            }
        })
    }

    fn update_guard(&self, change: impl FnOnce(&mut GuardRecord)) -> Result<(), AgentError> {
        let mut lease = lock(&self.lease);
        let Some(lease) = lease.as_mut() else {
            if self.writer_lease.is_some() {
                return Err(AgentError::new(
                    BridgeErrorCode::WorkdirRecoveryRequired,
                    "the task's writer lease is already released: a provider can no longer be recorded",
                ));
            }
            return Ok(());
        };
        let mut guard = lease.guard.clone();
        change(&mut guard);
        guard.updated_at = Some(now_millis());
        lease
            .held
            .publish_guard(&guard, GuardWrite::Update)
            .map_err(|error| {
                AgentError::new(BridgeErrorCode::WorkdirRecoveryRequired, error.to_string())
            })?;
        lease.guard = guard;
        Ok(())
    }

    /// The provider process groups recorded during the turn.
    pub fn groups(&self) -> Vec<ProcessGroupId> {
        lock(&self.groups).clone()
    }

    /// Whether this task still holds the writer lease `id` and was asked to
    /// stop: its state is already stored (terminal-first) but its provider
    /// may still be stopping, so the lease goes within the runner's bounds.
    /// True until the lock is let go, including while the lease is being
    /// ended (the guard decided, its file removed).
    pub fn is_stopping_writer_of(&self, id: &LeaseId) -> bool {
        self.stop_reason().is_some()
            && self.writer_lease.as_ref() == Some(id)
            && !*self.lease_freed.borrow()
    }

    /// Resolves once the task's writer lease is let go (at once for a task
    /// that never held one or has let it go already).
    pub async fn lease_freed(&self) {
        if self.writer_lease.is_none() {
            return;
        }
        let mut freed = self.lease_freed.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = freed.wait_for(|freed| *freed).await;
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
        drop(lease);
        self.lease_freed.send_replace(true);
    }

    /// Releases the lease without touching the guard (shutdown past its
    /// bound: the provider's state is unknown, so the guard stays).
    pub fn release_lease(&self) {
        let taken = lock(&self.lease).take();
        if let Some(lease) = taken {
            drop(lease);
            self.lease_freed.send_replace(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serverfs_lease::{ArtifactAccess, LeaseErrorCode};

    use super::*;

    fn busy(dir: &std::path::Path, id: &LeaseId) -> bool {
        serverfs_lease::hold(dir, id).err().map(|e| e.code()) == Some(LeaseErrorCode::WorkdirBusy)
    }

    /// A submission right after a cancel must learn that the lease is held
    /// by a stopping task for as long as the lock is held, including while
    /// `end_lease` has taken the lease out to decide on its guard.
    #[tokio::test]
    async fn a_stopping_writer_is_known_until_its_lock_is_let_go() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("locks");
        let id = LeaseId::alias("demo").unwrap();
        serverfs_lease::prepare_artifacts(&dir, ArtifactAccess::Private, std::slice::from_ref(&id))
            .unwrap();
        let held = serverfs_lease::hold(&dir, &id).unwrap();
        let guard = GuardRecord::new("t1", "fake", 0);
        let live = LiveTask::new("t1".to_owned(), Some((held, guard)));
        assert!(!live.is_stopping_writer_of(&id), "running, not stopping");
        live.stop(StopReason::Ended);
        assert!(live.is_stopping_writer_of(&id));
        assert!(!live.is_stopping_writer_of(&LeaseId::alias("other").unwrap()));

        // The window inside `end_lease`: the lease is out, the lock held.
        let taken = lock(&live.lease).take();
        assert!(busy(&dir, &id));
        assert!(live.is_stopping_writer_of(&id));
        *lock(&live.lease) = taken;

        live.end_lease(ProviderLiveness::ProvenStopped);
        assert!(!live.is_stopping_writer_of(&id));
        // With the lease gone, a provider can no longer be recorded.
        let recorded = live.record_group(ProcessGroupId::from_raw(4242).unwrap());
        assert_eq!(
            recorded.unwrap_err().code,
            BridgeErrorCode::WorkdirRecoveryRequired
        );
        tokio::time::timeout(Duration::from_secs(1), live.lease_freed())
            .await
            .expect("freed at once once let go");
        assert!(!busy(&dir, &id));
    }

    #[tokio::test]
    async fn a_task_without_a_lease_is_never_waited_for() {
        let live = LiveTask::new("t2".to_owned(), None);
        // Nothing to guard: recording a provider is not an error.
        assert!(
            live.record_group(ProcessGroupId::from_raw(4242).unwrap())
                .is_ok()
        );
        live.stop(StopReason::Ended);
        assert!(!live.is_stopping_writer_of(&LeaseId::alias("demo").unwrap()));
        tokio::time::timeout(Duration::from_secs(1), live.lease_freed())
            .await
            .expect("no lease, no wait");
    }
}
