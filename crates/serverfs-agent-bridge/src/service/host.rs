//! The adapter's side of a running task ([`Host`]): every payload is
//! redacted for host paths, and its hidden characters escaped, before it
//! is sized and stored (approvals and
//! questions as the workdir's `approval_paths` says, everything else
//! strictly); interactions are
//! stored (queued behind a presented one if need be) and awaited in memory;
//! native ids and provider process groups are written through to the
//! recovery guard.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serverfs_protocol::bridge::{
    ApprovalPayload, ApprovalResolution, BridgeErrorCode, EventPayload, QuestionPayload,
    QuestionResolution,
};
use serverfs_protocol::display;

use super::Core;
use super::live::LiveTask;
use crate::redact::Redactor;
use crate::store::{
    InteractionPayload, InteractionResolution, NewInteraction, StoreError, new_request_id,
    now_millis, sha256_hex,
};
use serverfs_agent_runtime::ProcessGroupId;
use serverfs_agent_runtime::bounds::utf8_prefix;
use serverfs_agent_runtime::{AgentError, BoxFuture, Host, NativeIds};
use serverfs_config::ApprovalPaths;

/// The host of one task's turn.
pub(super) struct TaskHost {
    core: Arc<Core>,
    live: Arc<LiveTask>,
    redactors: Redactors,
}

/// How one task's payloads are redacted.
#[derive(Debug, Clone)]
pub(super) struct Redactors {
    /// Events, the final response and provider errors: every path outside
    /// the workdir is `<outside-workdir>`.
    pub events: Redactor,
    /// Approval and question payloads, which a human must judge: as the
    /// workdir's `approval_paths` says (informative by default).
    pub interactions: Redactor,
}

impl Redactors {
    /// The redactors of a workdir known by `roots`, whose interactions
    /// show paths as `approval_paths` says; `others` are the spellings of
    /// every other configured workdir's root, `home` is the Bridge user's.
    pub(super) fn new(
        roots: Vec<std::path::PathBuf>,
        others: Vec<std::path::PathBuf>,
        approval_paths: ApprovalPaths,
        home: Option<std::path::PathBuf>,
    ) -> Redactors {
        let events = Redactor::new(roots).guarding(others, home);
        let interactions = match approval_paths {
            ApprovalPaths::Informative => events.clone().informative(),
            ApprovalPaths::Redacted => events.clone(),
        };
        Redactors {
            events,
            interactions,
        }
    }
}

fn provider_error(message: &str) -> AgentError {
    AgentError::new(BridgeErrorCode::AgentProviderError, message.to_owned())
}

fn from_store(error: StoreError) -> AgentError {
    AgentError::new(error.code(), error.to_string())
}

fn ended() -> AgentError {
    AgentError::new(
        BridgeErrorCode::AgentTaskNotActive,
        "the task ended before the request was answered",
    )
}

impl TaskHost {
    pub(super) fn new(core: Arc<Core>, live: Arc<LiveTask>, redactors: Redactors) -> TaskHost {
        TaskHost {
            core,
            live,
            redactors,
        }
    }

    /// `value` redacted by `redactor` (one of [`TaskHost::redactors`]),
    /// then with every character a terminal or a form could hide or act on
    /// shown escaped (`serverfs_protocol::display`): what the human is
    /// shown is what the provider asked, whatever it embedded (issue 27).
    /// Escaping comes last, so the redactor sees the provider's text.
    fn redacted<T: Serialize + DeserializeOwned>(
        redactor: &Redactor,
        value: &T,
    ) -> Result<T, AgentError> {
        let redacted = redactor
            .redact(value)
            .map_err(|_| provider_error("the provider payload could not be redacted"))?;
        display::escaped(&redacted, display::escape)
            .map_err(|_| provider_error("the provider payload could not be escaped"))
    }

    /// An `agent.message` too large for one event keeps a prefix of its
    /// text plus the full size and digest (spec §5.3); the final result is
    /// never cut by this.
    fn bounded(&self, event: EventPayload) -> EventPayload {
        let cap = self.core.settings.limits.max_event_bytes;
        let EventPayload::AgentMessage { text, phase, .. } = &event else {
            return event;
        };
        if encoded_len(&event) <= cap {
            return event;
        }
        let size_bytes = text.len() as u64;
        let sha256 = sha256_hex(text.as_bytes());
        let mut budget = cap / 2;
        loop {
            let candidate = EventPayload::AgentMessage {
                text: utf8_prefix(text, budget).to_owned(),
                phase: phase.clone(),
                truncated: true,
                size_bytes: Some(size_bytes),
                sha256: Some(sha256.clone()),
            };
            if encoded_len(&candidate) <= cap || budget == 0 {
                return candidate;
            }
            budget /= 2;
        }
    }

    /// Stores an interaction and waits for its answer. Dropping the future
    /// (the provider gave up) withdraws the request.
    async fn interact(
        &self,
        payload: InteractionPayload,
    ) -> Result<InteractionResolution, AgentError> {
        let request_id = new_request_id().map_err(from_store)?;
        let answer = self.live.add_waiter(&request_id)?;
        let mut pending = PendingRequest {
            core: Arc::clone(&self.core),
            live: Arc::clone(&self.live),
            request_id: request_id.clone(),
            armed: true,
        };
        let new = NewInteraction {
            request_id,
            task_id: self.live.task_id.clone(),
            payload,
            timeout: self.core.settings.interaction_timeout,
        };
        let added = self
            .core
            .store
            .call(move |db| db.add_interaction(&new, now_millis()))
            .await
            .map_err(from_store)?;
        if added.presented {
            self.live.expiry.send_replace(added.record.expires_at);
        }
        let resolution = answer.await.map_err(|_| ended())?;
        pending.armed = false;
        Ok(resolution)
    }
}

/// Withdraws an interaction whose waiter is dropped before an answer came.
struct PendingRequest {
    core: Arc<Core>,
    live: Arc<LiveTask>,
    request_id: String,
    armed: bool,
}

impl Drop for PendingRequest {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.live.forget_waiter(&self.request_id);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let core = Arc::clone(&self.core);
        let live = Arc::clone(&self.live);
        let request_id = self.request_id.clone();
        runtime.spawn(async move {
            let task_id = live.task_id.clone();
            let withdrawn = core
                .store
                .call(move |db| db.withdraw_interaction(&task_id, &request_id, now_millis()))
                .await;
            // A request already resolved or made stale (the task ended)
            // needs nothing more.
            if let Ok(withdrawn) = withdrawn
                && withdrawn.was_presented
            {
                live.expiry
                    .send_replace(withdrawn.next.and_then(|next| next.expires_at));
            }
        });
    }
}

impl Host for TaskHost {
    fn emit(&self, event: EventPayload) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async move {
            let event = self.bounded(Self::redacted(&self.redactors.events, &event)?);
            let task_id = self.live.task_id.clone();
            self.core
                .store
                .call(move |db| {
                    // A provider still winding down after its task ended
                    // (cancel, deadline) adds nothing to the record: the
                    // terminal event stays the last word. Checked in the
                    // same store job as the append, so it cannot race the
                    // terminal transition.
                    if db.get_task(&task_id)?.status.is_terminal() {
                        return Ok(());
                    }
                    db.append_event(&task_id, &event, now_millis()).map(|_| ())
                })
                .await
                .map_err(from_store)
        })
    }

    fn request_approval(
        &self,
        payload: ApprovalPayload,
    ) -> BoxFuture<'_, Result<ApprovalResolution, AgentError>> {
        Box::pin(async move {
            let payload = Self::redacted(&self.redactors.interactions, &payload)?;
            match self
                .interact(InteractionPayload::Approval(Box::new(payload)))
                .await?
            {
                InteractionResolution::Approval(resolution) => Ok(resolution),
                InteractionResolution::Question(_) => {
                    Err(provider_error("an approval was answered as a question"))
                }
            }
        })
    }

    fn ask_question(
        &self,
        payload: QuestionPayload,
    ) -> BoxFuture<'_, Result<QuestionResolution, AgentError>> {
        Box::pin(async move {
            let payload = Self::redacted(&self.redactors.interactions, &payload)?;
            match self.interact(InteractionPayload::Question(payload)).await? {
                InteractionResolution::Question(resolution) => Ok(resolution),
                InteractionResolution::Approval(_) => {
                    Err(provider_error("a question was answered as an approval"))
                }
            }
        })
    }

    fn abandon_interaction(&self) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async move {
            let task_id = self.live.task_id.clone();
            let withdrawn = self
                .core
                .store
                .call(move |db| {
                    let task = db.get_task(&task_id)?;
                    match task.pending_request_id {
                        Some(request_id) => db
                            .withdraw_interaction(&task_id, &request_id, now_millis())
                            .map(|withdrawn| Some((request_id, withdrawn))),
                        None => Ok(None),
                    }
                })
                .await
                .map_err(from_store)?;
            if let Some((request_id, withdrawn)) = withdrawn {
                self.live.forget_waiter(&request_id);
                self.live
                    .expiry
                    .send_replace(withdrawn.next.and_then(|next| next.expires_at));
            }
            Ok(())
        })
    }

    fn record_native_ids(&self, ids: NativeIds) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async move {
            self.live.record_native_ids(&ids)?;
            let task_id = self.live.task_id.clone();
            self.core
                .store
                .call(move |db| {
                    db.set_native_ids(
                        &task_id,
                        ids.session_id.as_deref(),
                        ids.turn_id.as_deref(),
                        now_millis(),
                    )
                })
                .await
                .map_err(from_store)
        })
    }

    fn record_process_group(&self, group: ProcessGroupId) -> BoxFuture<'_, Result<(), AgentError>> {
        let recorded = self.live.record_group(group);
        Box::pin(async move { recorded })
    }
}

fn encoded_len(event: &EventPayload) -> usize {
    serde_json::to_vec(event).map_or(usize::MAX, |bytes| bytes.len())
}
