//! `task.cancel` (spec-agent-bridge.md §3.11), terminal-first: the
//! `cancelled` state (with `task.cancelled`, and every pending request made
//! stale) is persisted before the reply and before the provider is
//! touched; the runner then interrupts the provider within a bound,
//! decides the recovery guard and releases the lease. Repeat-safe.

use serverfs_protocol::bridge::{EventPayload, TaskCancelResult, TaskStatus};

use super::Core;
use super::error::ServiceResult;
use super::live::StopReason;
use crate::store::{Transition, now_millis};

impl Core {
    pub(super) async fn cancel(&self, task_id: String) -> ServiceResult<TaskCancelResult> {
        let serial = self.cancel_lock.lock().await;
        let id = task_id.clone();
        let (task, cancelled_now) = self
            .store
            .call(move |db| {
                let task = db.get_task(&id)?;
                if task.status.is_terminal() {
                    return Ok((task, false));
                }
                let transition = Transition::new(task.status, TaskStatus::Cancelled)
                    .with_event(EventPayload::TaskCancelled {});
                Ok((db.transition(&id, transition, now_millis())?.task, true))
            })
            .await?;
        if cancelled_now && let Some(live) = self.live_task(&task_id) {
            live.stop(StopReason::Ended);
        }
        drop(serial);
        self.purge_expired().await;
        Ok(TaskCancelResult {
            task_id,
            status: task.status,
            correlation_id: task.correlation_id,
        })
    }
}
