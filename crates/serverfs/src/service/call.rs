//! What a tool call hears from its client and tells it back: a
//! cancellation (`notifications/cancelled`) and progress
//! (`notifications/progress`, only when the request carried a
//! `progressToken`), and whether the client can reach its human (for the
//! agent tools' approvals, [`HumanReach`]).
//!
//! The services know nothing of MCP: the MCP layer builds a [`CallControl`]
//! from the request and hands it to the few calls that can take long —
//! `search_text`, `find_files`, downloads and uploads, and the agent
//! long-polls. [`CallControl::watch`] runs such a call's work and, beside
//! it, samples how far the work has got every [`PROGRESS_INTERVAL`],
//! reporting only what changed: at most four notifications a second, none
//! for a call that is over before the first tick, and none at all without
//! a token.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use serverfs_fs::Control;
use serverfs_protocol::ErrorCode;
use tokio_util::sync::CancellationToken;

use super::approvals::HumanReach;
use crate::mcp::error::ToolError;

/// How often a watched call's progress is sampled (and so the most often
/// it is reported).
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// One progress report: a count that only grows, and what it counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Work done so far.
    pub done: u64,
    /// The whole, when known.
    pub total: Option<u64>,
    /// What `done` counts, for a person watching.
    pub message: String,
}

/// Sends one progress report to the client.
pub type ProgressSink =
    Arc<dyn Fn(Progress) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The client's hold on one tool call.
#[derive(Clone, Default)]
pub struct CallControl {
    cancelled: CancellationToken,
    progress: Option<ProgressSink>,
    reach: HumanReach,
}

impl std::fmt::Debug for CallControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallControl")
            .field("cancelled", &self.cancelled.is_cancelled())
            .field("progress", &self.progress.is_some())
            .field("reach", &self.reach)
            .finish()
    }
}

/// What a watched call does when its client cancels it.
#[derive(Debug, Clone, Copy)]
pub enum OnCancel<'a> {
    /// Tell the kernel operation behind it to stop, and wait for it to end
    /// (promptly, with `REQUEST_CANCELLED`): its thread and descriptors
    /// are then free when the call returns.
    Stop(&'a Control),
    /// Drop the work at once (async work that holds nothing, such as a
    /// long-poll) and end with `REQUEST_CANCELLED`.
    Abandon,
    /// Finish anyway: the work is a write, which is never left half-done
    /// (its publication is atomic), so a late cancel changes nothing and
    /// the outcome is reported as it is.
    Finish,
}

impl CallControl {
    /// A call that `cancelled` cancels and, if given, whose progress goes
    /// to `progress`.
    pub fn new(cancelled: CancellationToken, progress: Option<ProgressSink>) -> CallControl {
        CallControl {
            cancelled,
            progress,
            reach: HumanReach::default(),
        }
    }

    /// This call from a client that can reach its human as `reach` says.
    #[must_use]
    pub fn with_reach(self, reach: HumanReach) -> CallControl {
        CallControl { reach, ..self }
    }

    /// How the calling client can reach its human.
    pub fn reach(&self) -> HumanReach {
        self.reach
    }

    /// Runs `work` to its end, doing `on_cancel` if the client cancels,
    /// and reporting `sample()` every [`PROGRESS_INTERVAL`] whenever its
    /// count moved (and the client asked for progress).
    pub async fn watch<T>(
        &self,
        work: impl Future<Output = Result<T, ToolError>>,
        on_cancel: OnCancel<'_>,
        mut sample: impl FnMut() -> Progress,
    ) -> Result<T, ToolError> {
        let mut work = pin!(work);
        let mut ticks = tokio::time::interval_at(
            tokio::time::Instant::now() + PROGRESS_INTERVAL,
            PROGRESS_INTERVAL,
        );
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut reported = None;
        // Set once the cancel has been acted on (it fires only once).
        let mut stopping = false;
        loop {
            tokio::select! {
                outcome = &mut work => return outcome,
                () = self.cancelled.cancelled(), if !stopping => match on_cancel {
                    OnCancel::Stop(control) => {
                        control.cancel();
                        stopping = true;
                    }
                    OnCancel::Abandon => return Err(cancelled()),
                    OnCancel::Finish => stopping = true,
                },
                _ = ticks.tick(), if self.progress.is_some() => {
                    let now = sample();
                    if now.done > 0 && reported != Some(now.done)
                        && let Some(send) = &self.progress
                    {
                        reported = Some(now.done);
                        send(now).await;
                    }
                }
            }
        }
    }
}

/// The error of a call its client cancelled (which the client ignores:
/// it mostly reaches the audit log).
pub fn cancelled() -> ToolError {
    ToolError {
        code: ErrorCode::RequestCancelled.into(),
        message: "the client cancelled the call".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn recording() -> (ProgressSink, Arc<Mutex<Vec<u64>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        let sink: ProgressSink = Arc::new(move |p: Progress| {
            sink_seen.lock().unwrap().push(p.done);
            Box::pin(async {})
        });
        (sink, seen)
    }

    #[tokio::test(start_paused = true)]
    async fn reports_only_changes_at_the_interval() {
        let (sink, seen) = recording();
        let call = CallControl::new(CancellationToken::new(), Some(sink));
        let counter = Arc::new(AtomicU64::new(0));
        let work_counter = counter.clone();
        let work = async move {
            for step in [5, 5, 9] {
                tokio::time::sleep(PROGRESS_INTERVAL).await;
                work_counter.store(step, Ordering::Relaxed);
            }
            tokio::time::sleep(PROGRESS_INTERVAL * 3).await;
            Ok(())
        };
        let sampled = counter.clone();
        call.watch(work, OnCancel::Abandon, || Progress {
            done: sampled.load(Ordering::Relaxed),
            total: None,
            message: String::new(),
        })
        .await
        .unwrap();
        assert_eq!(*seen.lock().unwrap(), [5, 9]);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_token_nothing_is_sampled() {
        let call = CallControl::default();
        call.watch(
            async {
                tokio::time::sleep(PROGRESS_INTERVAL * 4).await;
                Ok(())
            },
            OnCancel::Abandon,
            || panic!("sampled without a progress token"),
        )
        .await
        .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancel_stops_the_kernel_and_waits_or_abandons() {
        let token = CancellationToken::new();
        let call = CallControl::new(token.clone(), None);
        let control = Arc::new(Control::new());
        let seen_by_work = control.clone();
        token.cancel();
        // The work ends once the kernel sees the flag; its own outcome is
        // what the call returns.
        let outcome = call
            .watch(
                async move {
                    while !seen_by_work.is_cancelled() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    Ok("stopped")
                },
                OnCancel::Stop(&control),
                || unreachable!(),
            )
            .await;
        assert_eq!(outcome.unwrap(), "stopped");
        let abandoned = call
            .watch(
                std::future::pending::<Result<(), ToolError>>(),
                OnCancel::Abandon,
                || unreachable!(),
            )
            .await;
        assert_eq!(abandoned.unwrap_err().code, ErrorCode::RequestCancelled);
    }
}
