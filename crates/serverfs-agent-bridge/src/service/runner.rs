//! The background runner of one task (spec-agent-bridge.md §3.10).
//!
//! `queued → starting → running`, then the adapter's turn races the task
//! deadline, the presented interaction's expiry and the stop signal
//! (cancel, shutdown). Whatever ends the task from outside is persisted
//! first (terminal-first); only then is the provider interrupted, within a
//! bound. Finally the guard decision, the lease release and a retention
//! pass. A runner never restarts a turn.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::FutureExt;

use serverfs_lease::ProviderLiveness;
use serverfs_protocol::bridge::{BridgeErrorCode, EpochMillis, EventPayload, TaskStatus};
use tokio::time::Instant;

use super::Core;
use super::error::ServiceResult;
use super::host::Redactors;
use super::interaction::Expiry;
use super::live::{LiveTask, StopReason};
use super::recovery::provider_liveness;
use crate::store::{StoreError, TaskRecord, Transition, now_millis, transition_allowed};
use serverfs_agent_runtime::{Adapter, TaskContext, TurnOutcome, TurnStatus};

/// How long a turn's recorded process groups may take to go after the
/// turn ended, before its guard is judged: `SIGKILL` is sent by then, and
/// a killed process is gone in milliseconds unless the host is loaded.
const GROUP_SETTLE: Duration = Duration::from_secs(2);
/// How often the groups are looked at meanwhile.
const GROUP_SETTLE_POLL: Duration = Duration::from_millis(20);

/// Everything a runner needs besides the live task.
pub(super) struct RunPlan {
    /// The task's runtime.
    pub adapter: Arc<dyn Adapter>,
    /// The turn's context; `deadline` is filled in by the runner.
    pub context: TaskContext,
    /// The runtime name.
    pub runtime: String,
    /// Redact host paths of this task's workdir.
    pub redactors: Redactors,
    /// The task deadline.
    pub deadline_at: EpochMillis,
}

/// How the race around the turn ended.
enum Ending {
    /// The adapter returned.
    Returned(TurnOutcome),
    /// The task was ended from outside (state already persisted) or the
    /// Bridge is shutting down.
    Stopped,
}

/// The `Instant` of an epoch-ms deadline.
fn instant_of(deadline_at: EpochMillis) -> Instant {
    let remaining = u64::try_from(deadline_at.saturating_sub(now_millis())).unwrap_or(0);
    Instant::now() + Duration::from_millis(remaining)
}

impl Core {
    pub(super) fn spawn_runner(self: &Arc<Self>, live: Arc<LiveTask>, plan: RunPlan) {
        let core = Arc::clone(self);
        tokio::spawn(async move {
            let ran = AssertUnwindSafe(core.run(&live, plan)).catch_unwind().await;
            if ran.is_err() {
                // A bug, not a provider failure: the task must still end and
                // the workdir must not stay leased by a dead runner. The
                // provider's state is unknown, so the guard stays.
                tracing::error!(task_id = live.task_id, "a task runner panicked");
                live.end_lease(ProviderLiveness::Unknown);
            }
            // Whatever happened, the task ends here: waiters fail, and a row
            // still unfinished (a path that could not store its state) is
            // interrupted rather than left counting as active forever.
            live.stop(StopReason::Ended);
            core.finish_interrupted(&live.task_id, BridgeErrorCode::AgentProviderError)
                .await;
            core.live_tasks().remove(&live.task_id);
            core.runner_left.notify_waiters();
            core.purge_expired().await;
        });
    }

    async fn run(self: &Arc<Self>, live: &Arc<LiveTask>, mut plan: RunPlan) {
        let task_id = live.task_id.clone();
        if self.is_closing() {
            // Shut down before the turn began: nothing ran, nothing to stop.
            self.finish_interrupted(&task_id, BridgeErrorCode::BridgeShutdown)
                .await;
            live.end_lease(ProviderLiveness::ProvenStopped);
            return;
        }
        if let Err(error) = self.start_task(&task_id, &plan.runtime).await {
            // Cancelled while queued, or the store failed: no provider ran.
            if !matches!(error, StoreError::StatusChanged { .. }) {
                self.finish(
                    &task_id,
                    TaskStatus::Interrupted,
                    Some(error.code()),
                    "the task could not be started",
                )
                .await;
            }
            live.end_lease(ProviderLiveness::ProvenStopped);
            return;
        }
        let deadline = instant_of(plan.deadline_at);
        plan.context.deadline = Some(deadline);
        let host = Arc::new(super::host::TaskHost::new(
            Arc::clone(self),
            Arc::clone(live),
            plan.redactors.clone(),
        ));
        let adapter = Arc::clone(&plan.adapter);
        // Whether the turn was ever polled: an adapter future does nothing
        // until then, so a stop that wins before it means no provider ran.
        let polled = AtomicBool::new(false);
        let mut turn = Box::pin(async {
            polled.store(true, Ordering::SeqCst);
            adapter.run(plan.context.clone(), host).await
        });
        // Biased: a stop already requested wins before the turn is ever
        // polled, so a cancelled task never starts its provider.
        let ending = tokio::select! {
            biased;
            () = stopped(live) => Ending::Stopped,
            () = self.watch_interaction_expiry(live) => Ending::Stopped,
            () = tokio::time::sleep_until(deadline) => {
                self.finish(&task_id, TaskStatus::Interrupted, Some(BridgeErrorCode::AgentTaskTimedOut), "the task deadline passed")
                    .await;
                Ending::Stopped
            }
            outcome = &mut turn => Ending::Returned(outcome),
        };
        match ending {
            Ending::Returned(outcome) => {
                drop(turn);
                // Free the workdir before publishing the final state, so a
                // client that sees the task finished can write (or continue
                // the task) at once; a crash in between leaves a `running`
                // row that restart interrupts. Only a completed turn proves
                // its provider done; after a failure (e.g. a lost
                // connection to a daemon that may still run the turn) the
                // adapter is asked (spec §8.4).
                let completed = outcome.status == TurnStatus::Completed;
                let liveness = self.liveness_after_turn(live, &plan, completed).await;
                end_lease(live, liveness).await;
                self.settle(&task_id, &plan, outcome).await;
            }
            Ending::Stopped => {
                if live.stop_reason() == Some(StopReason::Shutdown) {
                    self.finish(
                        &task_id,
                        TaskStatus::Interrupted,
                        Some(BridgeErrorCode::BridgeShutdown),
                        "the Agent Bridge is shutting down",
                    )
                    .await;
                }
                live.stop(StopReason::Ended);
                if !polled.load(Ordering::SeqCst) {
                    // Stopped before the provider was ever started: there
                    // is nothing to interrupt, and polling the turn now
                    // would start it.
                    drop(turn);
                    live.end_lease(ProviderLiveness::ProvenStopped);
                    return;
                }
                let bound = self.settings.interrupt_bound;
                if tokio::time::timeout(bound, adapter.cancel(&task_id))
                    .await
                    .is_err()
                {
                    tracing::warn!(task_id, "provider interrupt exceeded its bound");
                }
                if tokio::time::timeout(bound, &mut turn).await.is_err() {
                    tracing::warn!(task_id, "provider turn did not end within its bound");
                }
                drop(turn);
                // Terminal-first: the state was stored before the provider
                // was stopped; the lease is held until it is.
                let liveness = self.liveness_after_turn(live, &plan, false).await;
                end_lease(live, liveness).await;
            }
        }
    }

    /// `queued → starting` (with `task.started`) then `starting → running`.
    async fn start_task(&self, task_id: &str, runtime: &str) -> Result<(), StoreError> {
        let id = task_id.to_owned();
        let event = EventPayload::TaskStarted {
            runtime: runtime.to_owned(),
        };
        self.store
            .call(move |db| {
                let now = now_millis();
                db.transition(
                    &id,
                    Transition::new(TaskStatus::Queued, TaskStatus::Starting).with_event(event),
                    now,
                )?;
                db.transition(
                    &id,
                    Transition::new(TaskStatus::Starting, TaskStatus::Running),
                    now,
                )
            })
            .await
            .map(|_| ())
    }

    /// Stores the outcome of a turn that returned by itself.
    async fn settle(&self, task_id: &str, plan: &RunPlan, outcome: TurnOutcome) {
        let native = outcome.native.clone();
        if native.session_id.is_some() || native.turn_id.is_some() {
            let id = task_id.to_owned();
            let stored = self
                .store
                .call(move |db| {
                    db.set_native_ids(
                        &id,
                        native.session_id.as_deref(),
                        native.turn_id.as_deref(),
                        now_millis(),
                    )
                })
                .await;
            if let Err(error) = stored {
                tracing::warn!(
                    task_id,
                    code = error.code().as_str(),
                    "native ids not recorded"
                );
            }
        }
        // Redacted, then its hidden characters escaped, as every event is
        // (`host::TaskHost`): the response is shown to a model or a human.
        let text =
            serverfs_protocol::display::escape(&plan.redactors.events.text(&outcome.final_text))
                .into_owned();
        match outcome.status {
            TurnStatus::Completed => self.store_result(task_id, text).await,
            TurnStatus::Failed { code } => {
                self.finish(task_id, TaskStatus::Failed, Some(code), &text)
                    .await;
            }
            TurnStatus::Cancelled => {
                self.finish(task_id, TaskStatus::Cancelled, None, &text)
                    .await;
            }
            TurnStatus::Interrupted => {
                let code = if self.is_closing() {
                    BridgeErrorCode::BridgeShutdown
                } else {
                    BridgeErrorCode::AgentProviderDisconnected
                };
                self.finish(task_id, TaskStatus::Interrupted, Some(code), &text)
                    .await;
            }
        }
    }

    /// Stores the final response (`running → succeeded`); a response over
    /// the spool cap fails the task instead.
    async fn store_result(&self, task_id: &str, text: String) {
        let id = task_id.to_owned();
        let stored = self
            .store
            .call(move |db| {
                let now = now_millis();
                let task = db.get_task(&id)?;
                if matches!(
                    task.status,
                    TaskStatus::WaitingForApproval | TaskStatus::WaitingForQuestion
                ) {
                    // The provider finished without the answer it asked for
                    // (it withdrew the request): nobody waits for it any
                    // more, so every open request goes stale and the task
                    // completes.
                    for request_id in db.stale_interactions(&id, now)? {
                        // Lifecycle events never block the state change.
                        let _ = db.append_event(
                            &id,
                            &EventPayload::InteractionStale { request_id },
                            now,
                        );
                    }
                    db.transition(&id, Transition::new(task.status, TaskStatus::Running), now)?;
                }
                db.store_result(&id, &text, now)
            })
            .await;
        match stored {
            Ok(_) => {}
            // Cancelled (or otherwise ended) while the provider finished.
            Err(StoreError::StatusChanged { .. } | StoreError::InvalidTransition { .. }) => {}
            Err(error) => {
                let code = error.code();
                self.finish(task_id, TaskStatus::Failed, Some(code), &error.to_string())
                    .await;
            }
        }
    }

    /// Moves a task to `target` from whatever non-terminal status it has
    /// now, with the matching lifecycle event. A terminal task is left as
    /// it is. `failed` is not reachable from a waiting or queued state, so
    /// those become `interrupted` (spec §3.10 step 5).
    pub(super) async fn finish(
        &self,
        task_id: &str,
        target: TaskStatus,
        code: Option<BridgeErrorCode>,
        message: &str,
    ) -> Option<TaskRecord> {
        let id = task_id.to_owned();
        let message = message.to_owned();
        let result: ServiceResult<Option<TaskRecord>> = self
            .store
            .call(move |db| {
                let task = db.get_task(&id)?;
                if task.status.is_terminal() {
                    return Ok(None);
                }
                let to = if target == TaskStatus::Failed
                    && !transition_allowed(task.status, TaskStatus::Failed)
                {
                    TaskStatus::Interrupted
                } else {
                    target
                };
                let mut transition = Transition::new(task.status, to);
                let event_code = code.unwrap_or(BridgeErrorCode::AgentProviderError);
                transition = match to {
                    TaskStatus::Failed => transition.with_event(EventPayload::TaskFailed {
                        error_code: event_code,
                    }),
                    TaskStatus::Interrupted => {
                        transition.with_event(EventPayload::TaskInterrupted {
                            error_code: event_code,
                        })
                    }
                    TaskStatus::Cancelled => transition.with_event(EventPayload::TaskCancelled {}),
                    _ => transition,
                };
                if matches!(to, TaskStatus::Failed | TaskStatus::Interrupted) {
                    transition = transition.with_error(event_code, message);
                }
                Ok(Some(db.transition(&id, transition, now_millis())?.task))
            })
            .await
            .map_err(Into::into);
        match result {
            Ok(task) => task,
            Err(error) => {
                tracing::warn!(
                    task_id,
                    code = error.code.as_str(),
                    "task state not recorded"
                );
                None
            }
        }
    }

    /// Interrupts a task for `code` unless it already ended.
    pub(super) async fn finish_interrupted(&self, task_id: &str, code: BridgeErrorCode) {
        self.finish(
            task_id,
            TaskStatus::Interrupted,
            Some(code),
            "the task was interrupted",
        )
        .await;
    }

    /// Sleeps until the presented interaction lapses, then interrupts the
    /// task (`AGENT_INTERACTION_TIMED_OUT`). Never returns otherwise. The
    /// watch only wakes it; after each wake-up the store says what is
    /// presented now and when it lapses, so an out-of-order update of the
    /// watch cannot park it.
    async fn watch_interaction_expiry(&self, live: &LiveTask) {
        let mut expiry = live.expiry.subscribe();
        let mut at = *expiry.borrow_and_update();
        loop {
            let Some(due) = at else {
                if expiry.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
                at = *expiry.borrow_and_update();
                continue;
            };
            let wait = u64::try_from(due.saturating_sub(now_millis())).unwrap_or(0);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(wait)) => {
                    match self.expire_if_due(&live.task_id).await {
                        Expiry::Expired => return,
                        Expiry::NotDue(next) => at = next,
                    }
                }
                changed = expiry.changed() => {
                    if changed.is_err() {
                        std::future::pending::<()>().await;
                    }
                    at = *expiry.borrow_and_update();
                }
            }
        }
    }

    /// The provider's liveness once its turn is over: a turn that returned
    /// by itself stopped its provider; otherwise the adapter is asked. Any
    /// recorded process group still alive, or any process still carrying
    /// the task's marker, keeps the provider "running".
    async fn liveness_after_turn(
        &self,
        live: &LiveTask,
        plan: &RunPlan,
        returned: bool,
    ) -> ProviderLiveness {
        let adapter_says = if returned {
            ProviderLiveness::ProvenStopped
        } else {
            self.turn_adapter_liveness(live, plan).await
        };
        // A provider an adapter dropped rather than stopped (a turn
        // cancelled while its connection opened, a run the runner gave up
        // on) was sent SIGKILL a moment ago and may not be dead yet: give
        // its recorded groups a short, bounded while to go before the
        // guard is judged, or the workdir would stay blocked until the next
        // reconciliation for a provider that was in fact stopped.
        let deadline = Instant::now() + GROUP_SETTLE;
        loop {
            let groups = live.groups().into_iter().map(|group| group.as_raw());
            let liveness = provider_liveness(adapter_says, &live.task_id, groups);
            if liveness != ProviderLiveness::Running || Instant::now() >= deadline {
                return liveness;
            }
            tokio::time::sleep(GROUP_SETTLE_POLL).await;
        }
    }

    /// What the adapter knows of the provider of a turn that did not
    /// return by itself.
    async fn turn_adapter_liveness(&self, live: &LiveTask, plan: &RunPlan) -> ProviderLiveness {
        let task_id = live.task_id.clone();
        let record = self.store.call(move |db| db.get_task(&task_id)).await;
        let native = match record {
            Ok(task) => serverfs_agent_runtime::NativeIds {
                session_id: task.native_session_id,
                turn_id: task.native_turn_id,
            },
            Err(_) => serverfs_agent_runtime::NativeIds::default(),
        };
        let state = tokio::time::timeout(
            self.settings.interrupt_bound,
            plan.adapter.reconcile(&live.task_id, &native),
        )
        .await;
        match state {
            Ok(state) => ProviderLiveness::from_provider_active(state.provider_active),
            Err(_) => ProviderLiveness::Unknown,
        }
    }
}

/// [`LiveTask::end_lease`] (guard removal with its fsyncs) on the blocking
/// pool, off the async workers.
async fn end_lease(live: &Arc<LiveTask>, liveness: ProviderLiveness) {
    let live = Arc::clone(live);
    let ended = tokio::task::spawn_blocking(move || live.end_lease(liveness)).await;
    if ended.is_err() {
        tracing::error!("ending a writer lease failed");
    }
}

/// Resolves once the live task is asked to stop.
async fn stopped(live: &LiveTask) {
    let mut signal = live.stop_signal();
    if signal.wait_for(Option::is_some).await.is_err() {
        std::future::pending::<()>().await;
    }
}
