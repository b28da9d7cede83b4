//! One Codex turn, from opening the thread to `turn/completed`: the
//! loop that reads the App Server's messages, reports events, serves its
//! requests through the host and interrupts the turn when it is stopped.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use serverfs_agent_runtime::bounds::{bounded_json, bounded_text};
use serverfs_agent_runtime::jsonrpc::{Incoming, JsonRpcPeer, RequestId};
use serverfs_agent_runtime::serving::ServingSet;
use serverfs_agent_runtime::turns::{ActiveTurn, StopSignal};
use serverfs_agent_runtime::{
    AgentError, BridgeErrorCode, Host, NativeIds, TaskContext, scrub_credentials,
};
use serverfs_protocol::bridge::EventPayload;
use tokio::sync::{mpsc, watch};

use crate::connect::{CallFailure, call, request_failed};
use crate::interactions::{Ask, REFUSED, approval_response, ask, question_response};
use crate::wire::{
    ErrorParams, Field, Item, ItemStatus, ItemType, MessagePhase, Notification, ServerRequest,
    Tagged, TextInput, ThreadResume, ThreadResumeParams, ThreadStart, ThreadStartParams,
    TurnCompletedParams, TurnInterrupt, TurnRef, TurnStart, TurnStartParams, TurnStatus,
};

/// Codex's JSON-RPC code for a thread it cannot resume (unknown id, no
/// rollout: measured on 0.171.0). Codex uses it for other invalid requests
/// too, but on `thread/resume` with valid params it means the session is
/// gone.
pub(crate) const UNKNOWN_THREAD: i64 = -32600;

/// The running turn as steering and cancellation see it: set once
/// `turn/start` answered, cleared when the turn ends (it holds the
/// connection's peer).
pub(crate) type TurnHandleSlot = watch::Sender<Option<TurnHandle>>;

/// What steering and interrupting need of a started turn.
#[derive(Clone)]
pub(crate) struct TurnHandle {
    pub(crate) peer: Arc<JsonRpcPeer>,
    pub(crate) turn: TurnRef,
}

/// One turn's loop state.
pub(crate) struct Turn<'a> {
    pub(crate) ctx: &'a TaskContext,
    pub(crate) host: &'a Arc<dyn Host>,
    pub(crate) active: &'a ActiveTurn<TurnHandleSlot>,
    pub(crate) stop: StopSignal,
    pub(crate) native: &'a mut NativeIds,
    /// The server requests being served: owned here, so that dropping the
    /// turn (the runner gave up on it) aborts them all.
    pub(crate) serving: ServingSet<RequestId>,
    /// The last agent message of phase `final_answer`.
    pub(crate) final_answer: Option<String>,
    /// The last agent message of any phase.
    pub(crate) last_message: Option<String>,
}

impl Turn<'_> {
    /// Opens the thread, starts the turn and follows it to its end;
    /// `Ok(final text)` when it completed.
    pub(crate) async fn follow(
        &mut self,
        peer: &Arc<JsonRpcPeer>,
        incoming: &mut mpsc::UnboundedReceiver<Incoming>,
    ) -> Result<String, AgentError> {
        // Codex's protocol takes a path: the directory's name now, so that a
        // renamed parent leads to where the directory went, not to what
        // was swapped into its old place.
        let cwd = self
            .ctx
            .cwd
            .current_path()
            .map_err(|_| {
                AgentError::new(
                    BridgeErrorCode::WorkdirPathNotFound,
                    "the working directory is gone",
                )
            })?
            .to_string_lossy()
            .into_owned();
        let model = self.ctx.model.clone();
        let thread_id = match self.ctx.continue_native_session_id.clone() {
            Some(thread_id) => {
                let params = ThreadResumeParams {
                    thread_id: thread_id.clone(),
                    cwd: cwd.clone(),
                    model,
                };
                let resumed = async {
                    call::<ThreadResume>(peer, &params)
                        .await
                        .map_err(|failure| resume_failed(&failure))
                };
                let result = self.stop.unless_stopped(resumed).await?;
                if result.thread.id != thread_id {
                    return Err(AgentError::new(
                        BridgeErrorCode::AgentSessionNotResumable,
                        "Codex resumed a different thread",
                    ));
                }
                thread_id
            }
            None => {
                let params = ThreadStartParams {
                    cwd: cwd.clone(),
                    model,
                };
                let started = async {
                    call::<ThreadStart>(peer, &params)
                        .await
                        .map_err(|failure| match failure {
                            CallFailure::Unreadable => {
                                AgentError::provider("Codex returned no thread id")
                            }
                            other => request_failed("thread/start", &other),
                        })
                };
                self.stop.unless_stopped(started).await?.thread.id
            }
        };
        self.native.session_id = Some(thread_id.clone());
        self.host
            .record_native_ids(NativeIds {
                session_id: Some(thread_id.clone()),
                turn_id: None,
            })
            .await?;
        if self.stop.reason().is_some() {
            return Err(AgentError::provider(
                "the turn was cancelled before it started",
            ));
        }
        // Not raced against a stop: once sent, the turn may run in Codex
        // (the managed daemon outlives this connection), and only its id,
        // in this answer, lets us interrupt it. The runner bounds the wait.
        let params = TurnStartParams {
            thread_id: thread_id.clone(),
            input: vec![TextInput {
                text: self.ctx.prompt.clone(),
            }],
            cwd,
        };
        let turn_id = call::<TurnStart>(peer, &params)
            .await
            .map_err(|failure| match failure {
                CallFailure::Unreadable => AgentError::provider("Codex returned no turn id"),
                other => request_failed("turn/start", &other),
            })?
            .turn
            .id;
        self.native.turn_id = Some(turn_id.clone());
        let handle = TurnHandle {
            peer: Arc::clone(peer),
            turn: TurnRef {
                thread_id: thread_id.clone(),
                turn_id: turn_id.clone(),
            },
        };
        let recorded = self
            .host
            .record_native_ids(NativeIds {
                session_id: None,
                turn_id: Some(turn_id.clone()),
            })
            .await;
        if let Err(error) = recorded {
            // The turn already runs in Codex: stop it rather than leave it
            // working unobserved (on the daemon it would outlive us).
            interrupt(&handle).await;
            return Err(error);
        }
        self.active.state().send_replace(Some(handle.clone()));
        // A stop that arrived before the turn id existed interrupts now.
        let mut interrupted = false;
        if self.stop.reason().is_some() {
            interrupt(&handle).await;
            interrupted = true;
        }
        loop {
            let message = tokio::select! {
                message = incoming.recv() => message,
                _ = self.stop.stopped(), if !interrupted => {
                    interrupt(&handle).await;
                    interrupted = true;
                    continue;
                }
            };
            let Some(message) = message else {
                return Err(AgentError::new(
                    BridgeErrorCode::AgentProviderDisconnected,
                    "Codex App Server connection was lost",
                ));
            };
            if let Some(done) = self.handle(peer, &handle.turn, message).await {
                return done;
            }
        }
    }

    /// Handles one message; `Some` ends the turn.
    async fn handle(
        &mut self,
        peer: &Arc<JsonRpcPeer>,
        ours: &TurnRef,
        message: Incoming,
    ) -> Option<Result<String, AgentError>> {
        let (method, params, request_id) = match message {
            Incoming::Request { id, method, params } => (method, params, Some(id)),
            Incoming::Notification { method, params } => (method, params, None),
        };
        if crate::wire::Scope::of(&params).is_foreign(&ours.thread_id, &ours.turn_id) {
            // Another thread's or turn's traffic on a shared daemon; a
            // request must still be answered so that it never hangs.
            if let Some(id) = request_id {
                peer.respond_error(&id, REFUSED, "not this turn's request");
            }
            return None;
        }
        if let Some(id) = request_id {
            self.serve(peer, id, ServerRequest::decode(method, params));
            return None;
        }
        match Notification::decode(method, params) {
            Notification::ServerRequestResolved(resolved) => {
                // Codex resolved a request itself: stop waiting for the
                // human (dropping the wait withdraws the interaction).
                self.serving.withdraw(&resolved.request_id);
            }
            Notification::TurnStarted(_) => {
                self.host
                    .report(EventPayload::TurnStarted { runtime: None })
                    .await;
            }
            Notification::ItemStarted(started) => {
                let summary = item_summary(&started.item);
                self.host.report(EventPayload::ItemStarted(summary)).await;
            }
            Notification::ItemCompleted(completed) => {
                let item = &completed.item;
                if item.item_type() == Some(&ItemType::AgentMessage) {
                    let text = item.message_text().to_owned();
                    if item.is_final_answer() {
                        self.final_answer = Some(text.clone());
                    }
                    self.last_message = Some(text);
                }
                let summary = item_summary(item);
                self.host.report(EventPayload::ItemCompleted(summary)).await;
            }
            Notification::Error(error) => self.report_error(&error).await,
            Notification::TurnCompleted(completed) => return Some(self.ending(completed)),
            Notification::Other => {}
        }
        None
    }

    async fn report_error(&self, error: &ErrorParams) {
        let message = error
            .message()
            .map_or_else(|| "Codex reported an error".to_owned(), scrub_credentials);
        self.host
            .report(EventPayload::ProviderError {
                message,
                will_retry: error.will_retry == Some(true),
            })
            .await;
    }

    fn ending(&self, completed: TurnCompletedParams) -> Result<String, AgentError> {
        let turn = completed.turn;
        let status = turn
            .as_ref()
            .and_then(|turn| turn.status.as_ref())
            .and_then(Tagged::value);
        match status {
            Some(TurnStatus::Completed) => Ok(self.final_text()),
            Some(TurnStatus::Interrupted) => {
                Err(AgentError::provider("the Codex turn was interrupted"))
            }
            Some(TurnStatus::Failed | TurnStatus::InProgress | TurnStatus::Unknown(_)) | None => {
                let detail = turn
                    .as_ref()
                    .and_then(|turn| turn.error.as_ref())
                    .and_then(|error| error.message.clone())
                    .unwrap_or_else(|| {
                        let named = status.map_or("", TurnStatus::as_str);
                        format!("Codex turn ended with status {named}")
                    });
                Err(AgentError::provider(scrub_credentials(&detail)))
            }
        }
    }

    /// Serves a server request on its own task, so that several can wait
    /// for the human at once (the host queues them).
    fn serve(
        &mut self,
        peer: &Arc<JsonRpcPeer>,
        id: RequestId,
        request: Result<ServerRequest, crate::wire::Malformed>,
    ) {
        let peer = Arc::clone(peer);
        let host = Arc::clone(self.host);
        let key = id.clone();
        self.serving.serve(key, async move {
            match ask(request) {
                Ask::Refuse { code, message } => peer.respond_error(&id, code, message),
                Ask::Answer(result) => peer.respond(&id, result),
                Ask::Approval(payload, kind) => match host.request_approval(*payload).await {
                    Ok(resolution) => peer.respond(&id, approval_response(&kind, &resolution)),
                    Err(_) => peer.respond_error(&id, REFUSED, "the request was not answered"),
                },
                Ask::Question(payload) => match host.ask_question(payload.clone()).await {
                    Ok(resolution) => peer.respond(&id, question_response(&payload, &resolution)),
                    Err(_) => peer.respond_error(&id, REFUSED, "the question was not answered"),
                },
            }
        });
    }

    /// The last `final_answer` message, else the last message, else "".
    fn final_text(&self) -> String {
        self.final_answer
            .clone()
            .or_else(|| self.last_message.clone())
            .unwrap_or_default()
    }
}

/// The event form of an item: its type and id plus the fields a client can
/// act on (host paths are redacted by the core), bounded so that it fits an
/// event: a long string field is cut (on a character boundary), large
/// `changes` become `{"count", "truncated"}`, and either adds
/// `"truncated": true`. A status is shown by its name; a field of a shape
/// the adapter does not read is passed on as sent.
pub(crate) fn item_summary(item: &Item) -> Map<String, Value> {
    let kind = item.item_type();
    let mut summary = Summary::default();
    summary
        .fields
        .insert("type".to_owned(), json!(kind.map_or("", ItemType::as_str)));
    summary.string("id", item.id.as_ref());
    match kind {
        Some(ItemType::AgentMessage) => {
            summary.string("text", item.text.as_ref());
            summary.tagged("phase", item.phase.as_ref(), MessagePhase::as_str);
        }
        Some(ItemType::CommandExecution) => {
            summary.string("command", item.command.as_ref());
            summary.string("cwd", item.cwd.as_ref());
            summary.tagged("status", item.status.as_ref(), ItemStatus::as_str);
            summary.number("exitCode", item.exit_code.as_ref());
        }
        Some(ItemType::FileChange) => {
            summary.tagged("status", item.status.as_ref(), ItemStatus::as_str);
            if let Some(changes) = &item.changes {
                summary.changes(changes);
            }
        }
        Some(ItemType::Unknown(_)) | None => {
            summary.tagged("status", item.status.as_ref(), ItemStatus::as_str);
        }
    }
    if summary.truncated {
        summary.fields.insert("truncated".to_owned(), json!(true));
    }
    summary.fields
}

/// An item summary being built: the fields so far, and whether any was
/// cut. A field the item does not have is left out; one it has as `null`
/// is shown as `null`.
#[derive(Default)]
struct Summary {
    fields: Map<String, Value>,
    truncated: bool,
}

impl Summary {
    /// `text`, cut to the item bound.
    fn text(&mut self, key: &str, text: &str) {
        let (kept, cut) = bounded_text(text);
        self.truncated |= cut;
        self.fields.insert(key.to_owned(), json!(kept));
    }

    /// A value of a shape the adapter does not read: a string is cut to the
    /// bound, anything else passed on whole.
    fn sent(&mut self, key: &str, value: &Value) {
        match value {
            Value::String(text) => self.text(key, text),
            other => {
                self.fields.insert(key.to_owned(), other.clone());
            }
        }
    }

    fn string(&mut self, key: &str, field: Option<&Field<String>>) {
        match field {
            Some(Field::Read(text)) => self.text(key, text),
            Some(Field::Sent(value)) => self.sent(key, value),
            None => {}
        }
    }

    fn number(&mut self, key: &str, field: Option<&Field<i64>>) {
        match field {
            Some(Field::Read(number)) => {
                self.fields.insert(key.to_owned(), json!(number));
            }
            Some(Field::Sent(value)) => self.sent(key, value),
            None => {}
        }
    }

    /// An enum value by its name, in whichever shape it came.
    fn tagged<T>(&mut self, key: &str, tagged: Option<&Tagged<T>>, name: fn(&T) -> &str) {
        match tagged {
            Some(Tagged::Name(value) | Tagged::Object { kind: value }) => {
                self.text(key, name(value));
            }
            Some(Tagged::Other(value)) => self.sent(key, value),
            None => {}
        }
    }

    /// File changes: within the bound as sent, else their count.
    fn changes(&mut self, changes: &Value) {
        match changes {
            Value::String(text) => self.text("changes", text),
            other => {
                let (kept, cut) = bounded_json(other);
                self.truncated |= cut;
                self.fields.insert("changes".to_owned(), kept);
            }
        }
    }
}

/// A failed `thread/resume`: the session is gone only when Codex says it
/// has no such thread ([`UNKNOWN_THREAD`]); anything else (a timeout, a
/// lost connection, another refusal) is not the session's fault.
pub(crate) fn resume_failed(failure: &CallFailure) -> AgentError {
    match failure {
        CallFailure::Rpc(serverfs_agent_runtime::jsonrpc::RpcFailure::Error {
            code: UNKNOWN_THREAD,
            ..
        }) => AgentError::new(
            BridgeErrorCode::AgentSessionNotResumable,
            "Codex could not resume the session",
        ),
        CallFailure::Unreadable => AgentError::new(
            BridgeErrorCode::AgentSessionNotResumable,
            "Codex did not say which thread it resumed",
        ),
        other => request_failed("thread/resume", other),
    }
}

/// `turn/interrupt`, best-effort: the turn may have ended meanwhile, and
/// the runner bounds the wait for the turn to end either way.
pub(crate) async fn interrupt(handle: &TurnHandle) {
    let _ended_meanwhile = call::<TurnInterrupt>(&handle.peer, &handle.turn).await;
}
