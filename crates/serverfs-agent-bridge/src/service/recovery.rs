//! Recovery after a restart and before a new writer (spec-agent-bridge.md
//! §8.5): unfinished tasks are interrupted — never re-run — and a recovery
//! guard is removed only when the provider is proven stopped, through the
//! lease crate's single removal rule.
//!
//! Evidence of liveness comes from two sources and is combined by
//! [`provider_liveness`]: the adapter's reconciliation answer and the
//! kernel's view of every provider process group recorded for the task.

use std::collections::HashMap;

use serverfs_lease::{
    GuardRecord, GuardRemoval, HeldLease, LeaseId, ProviderLiveness, Reconciliation,
    probe_process_group,
};
use serverfs_protocol::bridge::{BridgeErrorCode, EventPayload, ReconcileStatus, TaskStatus};

use super::Core;
use super::error::{ServiceResult, lease_error};
use crate::store::{TaskRecord, now_millis};
use serverfs_agent_runtime::AgentError;
use serverfs_agent_runtime::{NativeIds, ProviderState};
use serverfs_agent_runtime::{ProcessGroupId, is_group_alive, is_task_alive};

/// Combines the adapter's answer with the kernel's: any live recorded
/// process group, or any live process carrying the task's marker, means
/// running; a proven stop needs the adapter's proof and all of those gone.
///
/// `kill(-pgid, 0)` also counts zombies: members that exited but that
/// their parent has not reaped — init, for a provider's orphaned
/// grandchildren, which a lazy init leaves for seconds. A zombie runs
/// nothing, so a group whose members are all zombies is gone
/// ([`is_group_alive`]); otherwise a stopped tree would keep its guard.
pub(super) fn provider_liveness(
    adapter_says: ProviderLiveness,
    task_id: &str,
    groups: impl IntoIterator<Item = i32>,
) -> ProviderLiveness {
    // A descendant that left every recorded group (a command started with
    // `setsid`) still carries the task's marker.
    if is_task_alive(task_id) {
        return ProviderLiveness::Running;
    }
    let mut combined = adapter_says;
    for group in groups {
        match probe_process_group(group) {
            ProviderLiveness::Running => {
                if ProcessGroupId::from_raw(group).is_none_or(is_group_alive) {
                    return ProviderLiveness::Running;
                }
            }
            ProviderLiveness::Unknown if combined == ProviderLiveness::ProvenStopped => {
                combined = ProviderLiveness::Unknown;
            }
            ProviderLiveness::Unknown | ProviderLiveness::ProvenStopped => {}
        }
    }
    combined
}

/// The wire form of a liveness: `provider_active` true, false or null.
fn provider_active(liveness: ProviderLiveness) -> Option<bool> {
    match liveness {
        ProviderLiveness::ProvenStopped => Some(false),
        ProviderLiveness::Running => Some(true),
        ProviderLiveness::Unknown => None,
    }
}

fn recovery_required(message: &str) -> AgentError {
    AgentError::new(BridgeErrorCode::WorkdirRecoveryRequired, message.to_owned())
}

impl Core {
    /// Start-up: every unfinished task is interrupted (`BRIDGE_RESTARTED`,
    /// or `AGENT_TASK_TIMED_OUT` past its deadline) with `task.reconciled`;
    /// then every recovery guard is reconciled.
    pub(super) async fn reconcile_at_start(&self) -> ServiceResult<()> {
        let unfinished = self.store.call(|db| db.list_active_tasks()).await?;
        // The process groups each guard recorded, by task: the event below
        // reports the effective liveness, not the adapter's alone.
        let recorded: HashMap<String, Option<i32>> =
            serverfs_lease::list_guards(&self.settings.lock_dir)
                .map(|guards| {
                    guards
                        .into_iter()
                        .map(|(_, record)| (record.task_id, record.provider_pgid))
                        .collect()
                })
                .unwrap_or_default();
        let mut known = HashMap::new();
        for task in unfinished {
            let state = self.reconcile_provider(&task).await;
            let group = recorded.get(&task.task_id).copied().flatten();
            let effective = provider_liveness(
                ProviderLiveness::from_provider_active(state.provider_active),
                &task.task_id,
                group,
            );
            let code = if task.deadline_at <= now_millis() {
                BridgeErrorCode::AgentTaskTimedOut
            } else {
                BridgeErrorCode::BridgeRestarted
            };
            self.finish(
                &task.task_id,
                TaskStatus::Interrupted,
                Some(code),
                "the Agent Bridge restarted; the task was not resumed",
            )
            .await;
            self.record_event(
                &task.task_id,
                EventPayload::TaskReconciled {
                    status: state.status,
                    provider_active: provider_active(effective),
                    error_code: Some(code),
                },
            )
            .await;
            known.insert(task.task_id.clone(), state);
        }
        self.reconcile_guards(&known).await;
        Ok(())
    }

    /// Asks the task's adapter what it knows, with the reconcile events; an
    /// unknown runtime or a slow adapter knows nothing.
    async fn reconcile_provider(&self, task: &TaskRecord) -> ProviderState {
        let Ok(adapter) = self.runtimes.get(&task.runtime) else {
            return ProviderState::UNKNOWN;
        };
        self.record_event(
            &task.task_id,
            EventPayload::RuntimeReconcileStarted {
                runtime: task.runtime.clone(),
            },
        )
        .await;
        let native = NativeIds {
            session_id: task.native_session_id.clone(),
            turn_id: task.native_turn_id.clone(),
        };
        let state = tokio::time::timeout(
            self.settings.interrupt_bound,
            adapter.reconcile(&task.task_id, &native),
        )
        .await
        .unwrap_or(ProviderState::UNKNOWN);
        self.record_event(
            &task.task_id,
            EventPayload::RuntimeReconcileFinished {
                runtime: task.runtime.clone(),
                status: state.status,
                provider_active: state.provider_active,
            },
        )
        .await;
        state
    }

    /// The adapter's liveness answer for the task a guard names; `Unknown`
    /// when the task row is gone.
    async fn adapter_liveness(
        &self,
        record: &GuardRecord,
        known: &HashMap<String, ProviderState>,
    ) -> (Option<TaskRecord>, ProviderLiveness) {
        let task_id = record.task_id.clone();
        let task = self.store.call(move |db| db.get_task(&task_id)).await.ok();
        let state = match (known.get(&record.task_id), &task) {
            (Some(state), _) => *state,
            (None, Some(task)) => self.reconcile_provider(task).await,
            (None, None) => ProviderState::UNKNOWN,
        };
        (
            task,
            ProviderLiveness::from_provider_active(state.provider_active),
        )
    }

    /// Reconciles every guard in the lock directory; a guard whose lease is
    /// held (a live task) or that cannot be read stays, logged.
    async fn reconcile_guards(&self, known: &HashMap<String, ProviderState>) {
        let guards = match serverfs_lease::list_guards(&self.settings.lock_dir) {
            Ok(guards) => guards,
            Err(error) => {
                tracing::warn!(code = error.code().as_str(), "recovery guards unreadable");
                return;
            }
        };
        for (lease, record) in guards {
            let (_, adapter_says) = self.adapter_liveness(&record, known).await;
            let outcome = serverfs_lease::reconcile(&self.settings.lock_dir, &lease, |found| {
                provider_liveness(adapter_says, &found.task_id, found.provider_pgid)
            });
            log_reconciliation(&lease, outcome);
        }
    }

    /// Before a new workspace-write task takes `held`: a guard left by an
    /// earlier task is removed if its provider is proven stopped (its task,
    /// if still unfinished, is interrupted with `AGENT_PROVIDER_INACTIVE`);
    /// otherwise the workdir stays blocked.
    ///
    /// # Errors
    ///
    /// `WORKDIR_RECOVERY_REQUIRED` while the guard must stay, or when it is
    /// unreadable or names no known task.
    pub(super) async fn reconcile_guard_lazily(&self, held: &HeldLease) -> ServiceResult<()> {
        let Some(record) = held.read_guard().map_err(lease_error)? else {
            return Ok(());
        };
        if self.live_task(&record.task_id).is_some() {
            // Its runner is still finishing (it released the lease and is
            // storing the outcome): that task, not this submission, settles
            // its guard.
            return Err(AgentError::new(
                BridgeErrorCode::WorkdirBusy,
                "an Agent task on this workdir is still finishing",
            ));
        }
        let (task, adapter_says) = self.adapter_liveness(&record, &HashMap::new()).await;
        let Some(task) = task else {
            return Err(recovery_required(
                "the workdir has recovery state of an unknown Agent task",
            ));
        };
        let liveness = provider_liveness(adapter_says, &record.task_id, record.provider_pgid);
        self.record_event(
            &task.task_id,
            EventPayload::TaskReconciled {
                status: ReconcileStatus::Unknown,
                provider_active: provider_active(liveness),
                error_code: None,
            },
        )
        .await;
        match held
            .remove_guard(&record.task_id, liveness)
            .map_err(lease_error)?
        {
            GuardRemoval::Removed | GuardRemoval::Absent => {
                if !task.status.is_terminal() {
                    self.finish(
                        &task.task_id,
                        TaskStatus::Interrupted,
                        Some(BridgeErrorCode::AgentProviderInactive),
                        "the provider is no longer running",
                    )
                    .await;
                }
                Ok(())
            }
            GuardRemoval::Kept { .. } => Err(recovery_required(
                "the workdir still has unresolved Agent provider state",
            )),
        }
    }
}

fn log_reconciliation(
    lease: &LeaseId,
    outcome: Result<Reconciliation, serverfs_lease::LeaseError>,
) {
    match outcome {
        Ok(Reconciliation::NoGuard) => {}
        Ok(Reconciliation::Removed { record }) => {
            tracing::info!(
                lease = lease.as_str(),
                task_id = record.task_id,
                "recovery guard removed"
            );
        }
        Ok(Reconciliation::Kept { record, liveness }) => tracing::warn!(
            lease = lease.as_str(),
            task_id = record.task_id,
            liveness = ?liveness,
            "recovery guard kept: the provider is not proven stopped"
        ),
        Err(error) => tracing::warn!(
            lease = lease.as_str(),
            code = error.code().as_str(),
            "recovery guard not reconciled"
        ),
    }
}
