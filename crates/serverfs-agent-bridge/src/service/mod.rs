//! The task service: the ten Bridge methods over the durable store, the
//! runtime adapters and the writer leases (spec-agent-bridge.md §2.6–§9),
//! and the diagnostic `bridge.peer`.
//!
//! # Shape
//!
//! * [`TaskService`] is the [`BridgeService`] the RPC server dispatches to.
//!   It is a cheap handle to one `Core` shared with every background
//!   runner.
//! * `submit` authorizes, takes the writer lease and publishes the
//!   recovery guard of a workspace-write task, inserts the `queued` row and
//!   spawns the task's runner — then returns at once.
//! * `runner` drives one task: `queued → starting → running`, the
//!   adapter's turn under the task deadline and interaction expiry, the
//!   terminal state, then the guard decision and the lease release.
//! * `host` is the adapter's side of a running task ([`Host`]): redacted,
//!   bounded events, queued interactions with in-memory waiters, native ids
//!   and process groups written through to the guard.
//! * `interaction` resolves approvals and questions (checks in the spec's
//!   order, then one compare-and-set in the store).
//! * `cancel` is terminal-first: the `cancelled` state is persisted before
//!   the provider is interrupted.
//! * `recovery` runs at start-up and lazily at submit: unfinished tasks are
//!   interrupted (never re-run), guards removed only when the provider is
//!   proven stopped.
//!
//! The store runs jobs one at a time on its own thread, so a closure that
//! reads a task and then changes it is atomic with respect to every other
//! store job; the service relies on that for "transition from whatever the
//! status is now".
//!
//! [`Host`]: serverfs_agent_runtime::Host

mod cancel;
mod error;
mod host;
mod interaction;
mod live;
mod manifest;
mod policy;
mod recovery;
mod runner;
mod runtimes;
mod settings;
mod submit;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serverfs_agent_runtime::AgentError;
use serverfs_protocol::bridge::{
    BridgeErrorCode, BridgePeerResult, BridgeRequest, CatalogScope, CatalogStatus, ModelCatalog,
    Request, Response, RuntimeListResult, RuntimeModelsParams, TaskEventsParams, TaskEventsResult,
    TaskMessageSendParams, TaskMessageSendResult, TaskResultChunk, TaskResultReadParams,
    TaskStatus, TaskView,
};
use tokio::sync::Notify;

pub use error::ServiceResult;
pub use policy::{Authorized, Policies, PolicyError, WorkdirPolicy};
pub use runtimes::Runtimes;
use settings::MAX_MESSAGE_BYTES;
pub use settings::ServiceSettings;

use self::live::LiveTask;
use crate::rpc::{BridgeService, PeerInfo, ServiceFuture};
use crate::store::{Purged, Store, now_millis};

/// How long a graceful shutdown waits for runners to finish after their
/// providers were asked to stop: a runner may take the provider interrupt,
/// the turn's end and the reconciliation, each bounded by the 10 s
/// interrupt bound, plus margin (the systemd unit allows 45 s).
const SHUTDOWN_RUNNER_BOUND: Duration = Duration::from_secs(35);

/// The Bridge's task service. Clone-free: share it as `Arc<TaskService>`.
pub struct TaskService {
    core: Arc<Core>,
}

/// Everything the service and its runners share.
pub(crate) struct Core {
    store: Store,
    policies: Policies,
    runtimes: Runtimes,
    settings: ServiceSettings,
    /// Tasks with a runner (or about to get one), by id.
    live: Mutex<HashMap<String, Arc<LiveTask>>>,
    /// Wakes `shutdown` whenever a runner leaves `live`.
    runner_left: Notify,
    /// Serializes the lease-taking part of submissions (idempotency
    /// re-check, lazy reconciliation, lease, insert, guard).
    submit_lock: tokio::sync::Mutex<()>,
    /// Serializes cancellations (spec §3.11).
    cancel_lock: tokio::sync::Mutex<()>,
    /// Set once shutdown starts: new submissions are refused.
    closing: AtomicBool,
}

impl TaskService {
    /// Starts the service: retention purge, then start-up reconciliation
    /// (every unfinished task is interrupted, never re-run; guards are
    /// removed only when their provider is proven stopped).
    ///
    /// # Errors
    ///
    /// Store failures while reconciling.
    pub async fn start(
        store: Store,
        policies: Policies,
        runtimes: Runtimes,
        settings: ServiceSettings,
    ) -> ServiceResult<TaskService> {
        let core = Arc::new(Core {
            store,
            policies,
            runtimes,
            settings,
            live: Mutex::new(HashMap::new()),
            runner_left: Notify::new(),
            submit_lock: tokio::sync::Mutex::new(()),
            cancel_lock: tokio::sync::Mutex::new(()),
            closing: AtomicBool::new(false),
        });
        core.purge_expired().await;
        core.reconcile_at_start().await?;
        Ok(TaskService { core })
    }

    /// Graceful shutdown: refuses new submissions, asks every running
    /// provider to stop, waits a bounded time for the runners, marks any
    /// task still unfinished `interrupted` (`BRIDGE_SHUTDOWN`), releases
    /// every lease and closes the adapters. Guards stay where the provider
    /// is not proven stopped.
    pub async fn shutdown(&self) {
        self.core.shutdown().await;
    }
}

impl BridgeService for TaskService {
    fn handle(&self, peer: PeerInfo, request: Request) -> ServiceFuture<'_> {
        let core = Arc::clone(&self.core);
        Box::pin(async move {
            let Request { request_id, call } = request;
            match core.dispatch(peer, call).await {
                Ok(result) => Response::Success { request_id, result },
                Err(error) => error::error_response(error, request_id),
            }
        })
    }
}

/// A method's typed result as the JSON object the response carries
/// (encoded once, moved into the response).
fn answer<T: serde::Serialize>(
    result: T,
) -> ServiceResult<serde_json::Map<String, serde_json::Value>> {
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(result)) => Ok(result),
        // Every result type is a struct; anything else is a bug.
        Ok(_) | Err(_) => Err(AgentError::new(
            BridgeErrorCode::BridgeProtocolError,
            "the result could not be encoded",
        )),
    }
}

impl Core {
    async fn dispatch(
        self: &Arc<Self>,
        peer: PeerInfo,
        call: BridgeRequest,
    ) -> ServiceResult<serde_json::Map<String, serde_json::Value>> {
        match call {
            BridgeRequest::RuntimeList(_) => answer(self.runtime_list().await),
            BridgeRequest::RuntimeModels(params) => answer(self.runtime_models(params).await?),
            BridgeRequest::TaskSubmit(params) => answer(self.submit(params).await?),
            BridgeRequest::TaskGet(params) => answer(self.task_get(params.task_id).await?),
            BridgeRequest::TaskEvents(params) => answer(self.task_events(params).await?),
            BridgeRequest::TaskResultRead(params) => answer(self.result_read(params).await?),
            BridgeRequest::TaskApprovalRespond(params) => {
                answer(self.respond_approval(params).await?)
            }
            BridgeRequest::TaskQuestionAnswer(params) => {
                answer(self.answer_question(params).await?)
            }
            BridgeRequest::TaskMessageSend(params) => answer(self.send_message(params).await?),
            BridgeRequest::TaskCancel(params) => answer(self.cancel(params.task_id).await?),
            // What the transport measured before it read this request;
            // answered while shutting down too, as it changes nothing.
            BridgeRequest::BridgePeer(_) => answer(BridgePeerResult {
                uid: peer.uid,
                gid: peer.gid,
            }),
        }
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    fn refuse_if_closing(&self) -> ServiceResult<()> {
        if self.is_closing() {
            return Err(AgentError::new(
                BridgeErrorCode::BridgeClosed,
                "the Agent Bridge is shutting down",
            ));
        }
        Ok(())
    }

    fn live_tasks(&self) -> MutexGuard<'_, HashMap<String, Arc<LiveTask>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn live_task(&self, task_id: &str) -> Option<Arc<LiveTask>> {
        self.live_tasks().get(task_id).cloned()
    }

    async fn runtime_list(&self) -> RuntimeListResult {
        let mut runtimes = Vec::new();
        for adapter in self.runtimes.iter() {
            let probe = adapter.probe().await;
            runtimes.push(adapter.runtime_info(&probe));
        }
        runtimes.sort_by(|a, b| a.name.cmp(&b.name));
        RuntimeListResult { runtimes }
    }

    async fn runtime_models(&self, params: RuntimeModelsParams) -> ServiceResult<ModelCatalog> {
        self.refuse_if_closing()?;
        let adapter = self.runtimes.get(&params.runtime)?;
        if !adapter.probe().await.available {
            return Ok(ModelCatalog {
                runtime: params.runtime.clone(),
                status: CatalogStatus::Unavailable,
                scope: CatalogScope::None,
                source: params.runtime,
                models: Vec::new(),
                detail: Some("runtime is unavailable".to_owned()),
                model_advice: None,
            });
        }
        Ok(adapter.models().await)
    }

    async fn task_get(&self, task_id: String) -> ServiceResult<TaskView> {
        Ok(self.store.call(move |db| db.task_view(&task_id)).await?)
    }

    async fn task_events(&self, params: TaskEventsParams) -> ServiceResult<TaskEventsResult> {
        let after = params.after_event_id.unwrap_or(0);
        let limit = params.limit.unwrap_or(TaskEventsParams::DEFAULT_LIMIT);
        Ok(self
            .store
            .call(move |db| db.read_events(&params.task_id, after, limit))
            .await?)
    }

    async fn result_read(&self, params: TaskResultReadParams) -> ServiceResult<TaskResultChunk> {
        let offset = params
            .offset_bytes
            .unwrap_or(TaskResultReadParams::DEFAULT_OFFSET_BYTES);
        let max = params
            .max_bytes
            .unwrap_or(TaskResultReadParams::MAX_CHUNK_BYTES);
        Ok(self
            .store
            .call(move |db| db.read_result(&params.task_id, offset, max))
            .await?)
    }

    /// Steering (spec §3.12), checks in the spec's order.
    async fn send_message(
        &self,
        params: TaskMessageSendParams,
    ) -> ServiceResult<TaskMessageSendResult> {
        if params.message.len() > MAX_MESSAGE_BYTES {
            return Err(AgentError::new(
                BridgeErrorCode::AgentMessageTooLarge,
                format!("the message exceeds {MAX_MESSAGE_BYTES} bytes"),
            ));
        }
        let task_id = params.task_id.clone();
        let task = self.store.call(move |db| db.get_task(&task_id)).await?;
        if task.status.is_terminal() {
            return Err(AgentError::new(
                BridgeErrorCode::AgentTaskTerminal,
                "the task has finished",
            ));
        }
        if task.status == TaskStatus::Queued {
            return Err(AgentError::new(
                BridgeErrorCode::AgentTaskNotActive,
                "the task has not started yet",
            ));
        }
        let adapter = self.runtimes.get(&task.runtime)?;
        let bytes = params.message.len() as u64;
        adapter.send_message(&task.task_id, params.message).await?;
        let event = serverfs_protocol::bridge::EventPayload::UserMessage { bytes };
        self.record_event(&task.task_id, event).await;
        Ok(TaskMessageSendResult {
            task_id: task.task_id,
            accepted: serverfs_protocol::bridge::LiteralTrue,
            correlation_id: task.correlation_id,
        })
    }

    /// Appends a core lifecycle event; a full or refused event log never
    /// breaks the state machine (spec §5.3), so failures are only logged.
    async fn record_event(&self, task_id: &str, event: serverfs_protocol::bridge::EventPayload) {
        let id = task_id.to_owned();
        let kind = event.event_type();
        if let Err(error) = self
            .store
            .call(move |db| db.append_event(&id, &event, now_millis()))
            .await
        {
            tracing::debug!(
                event = kind,
                code = error.code().as_str(),
                "event not recorded"
            );
        }
    }

    /// Retention (spec §3.9): deletes terminal tasks older than the
    /// retention period, except those a recovery guard still names.
    async fn purge_expired(&self) {
        let retention_ms = i64::try_from(self.settings.retention.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now_millis().saturating_sub(retention_ms);
        // Reading the guard directory is file I/O: off the async workers.
        let lock_dir = self.settings.lock_dir.clone();
        let keep = tokio::task::spawn_blocking(move || guarded_task_ids(&lock_dir))
            .await
            .unwrap_or_default();
        match self
            .store
            .call(move |db| db.purge_terminal_before(cutoff, &keep))
            .await
        {
            Ok(Purged { purged, skipped }) => {
                if !purged.is_empty() || !skipped.is_empty() {
                    tracing::info!(
                        purged = purged.len(),
                        skipped = skipped.len(),
                        "retention purge"
                    );
                }
            }
            Err(error) => tracing::warn!(code = error.code().as_str(), "retention purge failed"),
        }
    }

    async fn shutdown(&self) {
        self.closing.store(true, Ordering::SeqCst);
        // Wait out a submission that passed its `closing` check: its task
        // is then registered and stopped below.
        drop(self.submit_lock.lock().await);
        let live: Vec<Arc<LiveTask>> = self.live_tasks().values().cloned().collect();
        for task in &live {
            task.stop(live::StopReason::Shutdown);
        }
        let wait_for_runners = async {
            loop {
                let notified = self.runner_left.notified();
                if self.live_tasks().is_empty() {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(SHUTDOWN_RUNNER_BOUND, wait_for_runners)
            .await
            .is_err()
        {
            tracing::warn!("runners still busy at shutdown; interrupting their tasks");
            let left: Vec<Arc<LiveTask>> = self.live_tasks().values().cloned().collect();
            for task in left {
                self.finish_interrupted(&task.task_id, BridgeErrorCode::BridgeShutdown)
                    .await;
                task.release_lease();
            }
        }
        for adapter in self.runtimes.iter() {
            adapter.close().await;
        }
    }
}

/// Task ids named by a recovery guard in `lock_dir`; unreadable guards are
/// logged and protect nothing here (they block their workdir until fixed
/// anyway).
fn guarded_task_ids(lock_dir: &std::path::Path) -> Vec<String> {
    match serverfs_lease::list_guards(lock_dir) {
        Ok(guards) => guards
            .into_iter()
            .map(|(_, record)| record.task_id)
            .collect(),
        Err(error) => {
            tracing::warn!(code = error.code().as_str(), "recovery guards unreadable");
            Vec::new()
        }
    }
}
