//! One ACP turn on an initialized connection: the session (new, resumed or
//! loaded with its replay suppressed), the optional model, the prompt, and
//! the agent's traffic until the prompt answers — updates reported as
//! events, permission requests served concurrently through the host,
//! anything else answered at once — and, when the turn is stopped, the
//! cancellation of seed 002 §14 on the agent's side.

use std::collections::HashSet;
use std::future::{Future, poll_fn};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, LoadSessionRequest, NewSessionRequest, PromptRequest,
    RequestPermissionRequest, ResumeSessionRequest, SessionId, StopReason, TextContent,
};
use serde_json::Value;
use serverfs_agent_runtime::jsonrpc::{Incoming, JsonRpcPeer, RequestId, RpcFailure};
use serverfs_agent_runtime::serving::ServingSet;
use serverfs_agent_runtime::turns::{ActiveTurn, Stop, StopSignal};
use serverfs_agent_runtime::{AgentError, BridgeErrorCode, Host, NativeIds, TaskContext};
use serverfs_protocol::bridge::{ApprovalDecision, EventPayload};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use crate::connect::{Handshake, request_failed};
use crate::interactions;
use crate::models::{ModelChange, ModelSelector};
use crate::snapshot::Snapshot;
use crate::updates::Transcript;
use crate::wire::{
    AUTH_REQUIRED, AgentNotification, AgentRequest, CallFailure, INVALID_PARAMS, METHOD_NOT_FOUND,
    REQUEST_CANCELLED, call, call_keeping_raw, notify,
};

/// What one turn needs of its profile.
pub(crate) struct TurnSettings<'a> {
    /// The runtime name, in messages.
    pub runtime: &'a str,
    /// Bound of the session and model requests.
    pub request_timeout: Duration,
    /// How long a cancelled agent gets to end its prompt turn.
    pub shutdown_timeout: Duration,
    /// Whether `allow_always` may be offered as `approve_session`.
    pub session_scoped_allow_always: bool,
    /// Where the model selector's presence is recorded.
    pub snapshot: &'a Snapshot,
}

/// The agent's permission requests not yet answered: whoever takes an id
/// from here answers it, so none is answered twice and none is forgotten
/// when the turn is cancelled.
#[derive(Default)]
struct Unanswered(Mutex<HashSet<RequestId>>);

impl Unanswered {
    /// `false` when `id` already waits for its answer.
    fn insert(&self, id: RequestId) -> bool {
        self.lock().insert(id)
    }

    fn take(&self, id: &RequestId) -> bool {
        self.lock().remove(id)
    }

    /// Sends `answer` if `id` still waits for one, and marks it answered.
    /// Under the lock, like [`answer_all_then`](Self::answer_all_then), so
    /// that a handler's answer cannot slip behind a cancellation's
    /// `session/cancel` between its check and its send.
    fn answer_once(&self, id: &RequestId, answer: impl FnOnce()) {
        let mut waiting = self.lock();
        if waiting.remove(id) {
            answer();
        }
    }

    /// Answers every waiting request with `answer`, then runs `after`, all
    /// under the lock: ACP wants the pending permissions answered
    /// `cancelled` before `session/cancel`.
    fn answer_all_then(&self, mut answer: impl FnMut(&RequestId), after: impl FnOnce()) {
        let mut waiting = self.lock();
        for id in waiting.drain() {
            answer(&id);
        }
        after();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Answers a permission request with `response`.
fn respond(peer: &JsonRpcPeer, id: &RequestId, response: &impl serde::Serialize) {
    match serde_json::to_value(response) {
        Ok(result) => peer.respond(id, result),
        // Never reached for the schema's own types; the agent must still
        // get an answer.
        Err(_) => peer.respond_error(id, INVALID_PARAMS, "the answer could not be encoded"),
    }
}

/// One turn's loop state.
pub(crate) struct Turn<'a> {
    pub(crate) settings: TurnSettings<'a>,
    pub(crate) ctx: &'a TaskContext,
    pub(crate) host: &'a Arc<dyn Host>,
    pub(crate) active: &'a Arc<ActiveTurn<()>>,
    pub(crate) stop: StopSignal,
    pub(crate) native: &'a mut NativeIds,
    pub(crate) peer: Arc<JsonRpcPeer>,
    pub(crate) incoming: &'a mut mpsc::UnboundedReceiver<Incoming>,
    pub(crate) handshake: &'a Handshake,
    /// The permission requests being served: owned here, so that the end
    /// of the turn aborts every handler still waiting for the human.
    pub(crate) serving: ServingSet<RequestId>,
    unanswered: Arc<Unanswered>,
    transcript: Transcript,
}

/// How the agent's traffic is treated while the Bridge waits for a
/// session request: updates are a `session/load` replay (or metadata)
/// and never events; permission requests cannot be for this turn yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Setting the session up: nothing is reported.
    Setup,
    /// The prompt runs: everything is reported and served.
    Prompt,
    /// The prompt is being cancelled: permission requests are answered
    /// `cancelled` at once.
    Cancelling,
}

impl<'a> Turn<'a> {
    #[expect(
        clippy::too_many_arguments,
        reason = "one turn's borrowed context, built once by the adapter"
    )]
    pub(crate) fn new(
        settings: TurnSettings<'a>,
        ctx: &'a TaskContext,
        host: &'a Arc<dyn Host>,
        active: &'a Arc<ActiveTurn<()>>,
        stop: StopSignal,
        native: &'a mut NativeIds,
        peer: Arc<JsonRpcPeer>,
        incoming: &'a mut mpsc::UnboundedReceiver<Incoming>,
        handshake: &'a Handshake,
    ) -> Turn<'a> {
        Turn {
            settings,
            ctx,
            host,
            active,
            stop,
            native,
            peer,
            incoming,
            handshake,
            serving: ServingSet::default(),
            unanswered: Arc::default(),
            transcript: Transcript::default(),
        }
    }

    /// Opens the session, sets the model, prompts and follows the turn to
    /// its end; `Ok(final text)` when it completed.
    pub(crate) async fn follow(&mut self) -> Result<String, AgentError> {
        let (session, selector) = self.open_session().await?;
        self.settings
            .snapshot
            .record_model_selector(selector.is_some());
        if let Some(model) = self.ctx.model.clone() {
            self.select_model(&session, selector.as_ref(), &model)
                .await?;
        }
        // Anything the agent sent while the session was set up (a replay,
        // commands, modes) is not this turn's output.
        self.drain_setup();
        if self.stop.reason().is_some() {
            // Stopped before the prompt: the agent never gets it.
            return Err(AgentError::provider(
                "the turn was stopped before the prompt was sent",
            ));
        }
        self.host
            .report(EventPayload::TurnStarted {
                runtime: Some(self.settings.runtime.to_owned()),
            })
            .await;
        self.prompt(&session).await
    }

    /// A new session, or the continued one: `session/resume` when the
    /// agent advertises it, else `session/load` (its replay suppressed),
    /// else `AGENT_SESSION_NOT_RESUMABLE`. The session id is recorded as
    /// soon as it is known. With it, the session's model selector.
    async fn open_session(&mut self) -> Result<(SessionId, Option<ModelSelector>), AgentError> {
        let runtime = self.settings.runtime;
        let timeout = self.settings.request_timeout;
        // ACP takes a path: the directory's name now, so that a renamed
        // parent leads to where the directory went, not to what was
        // swapped into its old place (the agent itself runs in the opened
        // directory).
        let cwd = self.ctx.cwd.current_path().map_err(|_| {
            AgentError::new(
                BridgeErrorCode::WorkdirPathNotFound,
                "the working directory is gone",
            )
        })?;
        let peer = Arc::clone(&self.peer);
        let (session, selector) = match self.ctx.continue_native_session_id.clone() {
            None => {
                let request = NewSessionRequest::new(cwd);
                let (answer, raw) = self
                    .during_setup(call_keeping_raw(&peer, &request, timeout))
                    .await?
                    .map_err(|failure| match failure {
                        CallFailure::Rpc(RpcFailure::Error {
                            code: AUTH_REQUIRED,
                            ..
                        }) => AgentError::new(
                            BridgeErrorCode::AgentRuntimeNotReady,
                            format!(
                                "{runtime} requires authentication: log the agent in as the \
                                 Bridge's user with its own tools, or hand it a key through the \
                                 profile's env_passthrough"
                            ),
                        ),
                        other => request_failed(runtime, "session/new", &other),
                    })?;
                let selector = ModelSelector::of(answer.config_options.as_deref(), &raw);
                (answer.session_id, selector)
            }
            Some(id) => {
                let session = SessionId::new(id);
                let selector = if self.handshake.resume_session {
                    let request = ResumeSessionRequest::new(session.clone(), cwd);
                    let (answer, raw) = self
                        .during_setup(call_keeping_raw(&peer, &request, timeout))
                        .await?
                        .map_err(|failure| not_resumed(runtime, "session/resume", &failure))?;
                    ModelSelector::of(answer.config_options.as_deref(), &raw)
                } else if self.handshake.load_session {
                    let request = LoadSessionRequest::new(session.clone(), cwd);
                    let (answer, raw) = self
                        .during_setup(call_keeping_raw(&peer, &request, timeout))
                        .await?
                        .map_err(|failure| not_resumed(runtime, "session/load", &failure))?;
                    ModelSelector::of(answer.config_options.as_deref(), &raw)
                } else {
                    return Err(AgentError::new(
                        BridgeErrorCode::AgentSessionNotResumable,
                        format!("{runtime} can neither resume nor load a session"),
                    ));
                };
                (session, selector)
            }
        };
        let id = session.0.to_string();
        self.native.session_id = Some(id.clone());
        self.host
            .record_native_ids(NativeIds {
                session_id: Some(id),
                turn_id: None,
            })
            .await?;
        Ok((session, selector))
    }

    /// Sets the request-scoped model through the session's model selector:
    /// a config option is checked in the agent's answer to hold the model
    /// now; a `models` list entry is set with `session/set_model`, whose
    /// answer holds nothing to check (the model was checked to be listed).
    async fn select_model(
        &mut self,
        session: &SessionId,
        selector: Option<&ModelSelector>,
        model: &str,
    ) -> Result<(), AgentError> {
        let runtime = self.settings.runtime;
        let selector = selector.ok_or_else(|| {
            AgentError::provider(format!(
                "{runtime} offers no model selection; submit the task without a model"
            ))
        })?;
        let change = selector.change(session, model).ok_or_else(|| {
            AgentError::provider(format!(
                "{runtime} does not offer the model; list_agent_models shows the models it does"
            ))
        })?;
        let peer = Arc::clone(&self.peer);
        let timeout = self.settings.request_timeout;
        let failed = |failure: CallFailure| request_failed(runtime, "the model", &failure);
        match change {
            ModelChange::ConfigOption(request) => {
                let answer = self
                    .during_setup(call(&peer, &request, timeout))
                    .await?
                    .map_err(failed)?;
                let applied = ModelSelector::of_options(Some(&answer.config_options))
                    .is_some_and(|now| now.holds(model));
                if !applied {
                    return Err(AgentError::provider(format!(
                        "{runtime} did not select the requested model"
                    )));
                }
            }
            ModelChange::ModelList(request) => {
                self.during_setup(call(&peer, &request, timeout))
                    .await?
                    .map_err(failed)?;
            }
        }
        Ok(())
    }

    /// Runs a setup request unless the turn is stopped, answering what the
    /// agent sends meanwhile (an agent that asked something before it
    /// answers must not stall its own setup).
    async fn during_setup<T>(&mut self, request: impl Future<Output = T>) -> Result<T, AgentError> {
        let mut request = std::pin::pin!(request);
        loop {
            tokio::select! {
                biased;
                _ = self.stop.stopped() => {
                    return Err(AgentError::provider("the turn was stopped"));
                }
                message = self.incoming.recv() => match message {
                    Some(message) => self.handle(message, Phase::Setup).await,
                    // The request itself reports the lost connection.
                    None => return Ok(request.await),
                },
                answer = &mut request => return Ok(answer),
            }
        }
    }

    /// Handles what is already queued before the prompt: a replay or
    /// metadata, nothing of which is reported; requests are answered.
    fn drain_setup(&mut self) {
        while let Ok(message) = self.incoming.try_recv() {
            self.answer_unreported(message);
        }
    }

    /// The prompt, then the agent's traffic until it answers.
    async fn prompt(&mut self, session: &SessionId) -> Result<String, AgentError> {
        let runtime = self.settings.runtime;
        let request = PromptRequest::new(
            session.clone(),
            vec![ContentBlock::Text(TextContent::new(
                self.ctx.prompt.clone(),
            ))],
        );
        // The answer comes when the turn ends: bounded by the task's
        // deadline (the runner enforces it too), not a request timeout.
        let bound = self.ctx.deadline.map_or(Duration::MAX, |deadline| {
            deadline.saturating_duration_since(Instant::now())
        });
        let peer = Arc::clone(&self.peer);
        let mut prompt = std::pin::pin!(call(&peer, &request, bound));
        // Polled once at once, so that the prompt is written now: a stop
        // seen from here on always finds it sent, and cancels it, rather
        // than cancelling nothing and writing the prompt afterwards.
        if let Poll::Ready(answer) = poll_fn(|cx| Poll::Ready(prompt.as_mut().poll(cx))).await {
            return self.ended(answer, Phase::Prompt).await;
        }
        let mut phase = Phase::Prompt;
        let mut grace: Option<Instant> = None;
        loop {
            // Biased: the stop is seen even while the agent floods us, and
            // every message queued before the prompt's answer is handled
            // before the answer (the reader queued them first).
            let answer = tokio::select! {
                biased;
                _ = self.stop.stopped(), if phase == Phase::Prompt => {
                    phase = Phase::Cancelling;
                    self.cancel(session);
                    grace = Some(Instant::now() + self.settings.shutdown_timeout);
                    continue;
                }
                () = sleep_until(grace.unwrap_or_else(Instant::now)), if grace.is_some() => {
                    // The agent ignored session/cancel: its group is killed
                    // when the connection closes.
                    return Err(AgentError::provider(format!(
                        "{runtime} did not end its turn after session/cancel"
                    )));
                }
                message = self.incoming.recv() => {
                    match message {
                        Some(message) => self.handle(message, phase).await,
                        None => {
                            return Err(AgentError::new(
                                BridgeErrorCode::AgentProviderDisconnected,
                                format!("{runtime} exited or closed its output during the turn"),
                            ));
                        }
                    }
                    continue;
                }
                answer = &mut prompt => answer,
            };
            return self.ended(answer, phase).await;
        }
    }

    /// The end of the prompt: the final text when the turn ended normally.
    async fn ended(
        &mut self,
        answer: Result<agent_client_protocol::v1::schema::PromptResponse, CallFailure>,
        phase: Phase,
    ) -> Result<String, AgentError> {
        let runtime = self.settings.runtime;
        let (last, text) = self.transcript.finish();
        if let Some(last) = last {
            self.host.report(last).await;
        }
        let answer =
            answer.map_err(|failure| request_failed(runtime, "session/prompt", &failure))?;
        match answer.stop_reason {
            StopReason::EndTurn => Ok(text),
            StopReason::Cancelled if phase == Phase::Cancelling => {
                Err(AgentError::provider("the turn was cancelled"))
            }
            StopReason::Cancelled => Err(AgentError::provider(format!(
                "{runtime} cancelled the turn outside a ServerFS cancellation"
            ))),
            StopReason::MaxTokens => Err(AgentError::provider(format!(
                "{runtime} stopped: the model's token limit was reached"
            ))),
            StopReason::MaxTurnRequests => Err(AgentError::provider(format!(
                "{runtime} stopped: its limit of model requests in one turn was reached"
            ))),
            StopReason::Refusal => Err(AgentError::provider(format!(
                "{runtime} refused to continue"
            ))),
            // The schema enum is non-exhaustive: an ending added later is
            // not a success the Bridge can vouch for.
            _ => Err(AgentError::provider(format!(
                "{runtime} ended the turn for a reason the Bridge does not know"
            ))),
        }
    }

    /// The agent side of a cancellation (the task is already terminal):
    /// every pending permission request answered `cancelled`, then
    /// `session/cancel`; the caller waits a bounded grace for the prompt
    /// to end with `stopReason: cancelled`.
    fn cancel(&mut self, session: &SessionId) {
        let peer = &self.peer;
        self.unanswered.answer_all_then(
            |id| respond(peer, id, &interactions::cancelled()),
            || notify(peer, &CancelNotification::new(session.clone())),
        );
    }

    /// Handles one message of the agent during `phase`.
    async fn handle(&mut self, message: Incoming, phase: Phase) {
        match (message, phase) {
            (Incoming::Request { id, method, params }, Phase::Prompt) => {
                match AgentRequest::decode(&method, &params) {
                    AgentRequest::Permission(request) => self.serve(id, *request),
                    other => self.refuse(&id, &other),
                }
            }
            (Incoming::Notification { method, params }, Phase::Prompt | Phase::Cancelling) => {
                self.notified(&method, &params).await;
            }
            (message, Phase::Setup | Phase::Cancelling) => self.answer_unreported(message),
        }
    }

    /// Answers a request that is not served now, and drops what else the
    /// agent sent (a replay, metadata) without reporting it.
    fn answer_unreported(&mut self, message: Incoming) {
        match message {
            Incoming::Request { id, method, params } => {
                match AgentRequest::decode(&method, &params) {
                    // Before the prompt nothing can be permitted; while
                    // cancelling, ACP requires `cancelled`.
                    AgentRequest::Permission(_) => {
                        respond(&self.peer, &id, &interactions::cancelled())
                    }
                    other => self.refuse(&id, &other),
                }
            }
            Incoming::Notification { method, params } => {
                if let AgentNotification::CancelRequest(id) =
                    AgentNotification::decode(&method, &params)
                {
                    self.withdraw(&id);
                }
            }
        }
    }

    /// Refuses a request the Bridge does not serve: the agent never hangs.
    fn refuse(&self, id: &RequestId, request: &AgentRequest) {
        match request {
            AgentRequest::Malformed => {
                self.peer
                    .respond_error(id, INVALID_PARAMS, "malformed permission request");
            }
            AgentRequest::Unsupported | AgentRequest::Permission(_) => {
                self.peer
                    .respond_error(id, METHOD_NOT_FOUND, "Method not found");
            }
        }
    }

    /// A notification during the prompt.
    async fn notified(&mut self, method: &str, params: &Value) {
        match AgentNotification::decode(method, params) {
            AgentNotification::Update(notification) => {
                for event in self.transcript.update(notification.update) {
                    self.host.report(event).await;
                }
            }
            AgentNotification::CancelRequest(id) => self.withdraw(&id),
            AgentNotification::Other => {}
        }
    }

    /// The agent withdrew request `id` (`$/cancel_request`): stop waiting
    /// for the human (the interaction goes stale) and answer it as ACP's
    /// cancellation asks, once.
    fn withdraw(&mut self, id: &RequestId) {
        self.serving.withdraw(id);
        self.unanswered.answer_once(id, || {
            self.peer
                .respond_error(id, REQUEST_CANCELLED, "the request was cancelled");
        });
    }

    /// Serves a permission request on its own task, so that the agent's
    /// updates keep flowing while the human decides; the host queues
    /// concurrent requests and presents one at a time.
    fn serve(&mut self, id: RequestId, request: RequestPermissionRequest) {
        let peer = Arc::clone(&self.peer);
        let host = Arc::clone(self.host);
        let active = Arc::clone(self.active);
        let unanswered = Arc::clone(&self.unanswered);
        let runtime = self.settings.runtime.to_owned();
        let scoped = self.settings.session_scoped_allow_always;
        if !unanswered.insert(id.clone()) {
            // The id of a request still waiting: the agent repeated it,
            // and the first one gets the answer.
            return;
        }
        let key = id.clone();
        let served = self.serving.serve(key.clone(), async move {
            let payload = interactions::approval(&request, &runtime, scoped);
            let response = match host.request_approval(payload).await {
                Ok(resolution) => {
                    if resolution.decision == ApprovalDecision::CancelTask {
                        // The core cancels the task; the turn's own cancel
                        // sequence starts at once rather than when the
                        // runner gets to it.
                        active.stop(Stop::Cancelled);
                    }
                    interactions::answer(&request, &resolution, scoped)
                }
                // Expired, or the task ended: no choice was made.
                Err(_) => interactions::cancelled(),
            };
            unanswered.answer_once(&id, || respond(&peer, &id, &response));
        });
        if !served {
            // An id answered before: the handler was dropped unrun, and
            // the repeated request is not served twice.
            self.unanswered.take(&key);
        }
    }
}

/// A failed `session/resume` or `session/load`: the agent refused it (it
/// does not know the session any more), or the exchange failed.
fn not_resumed(runtime: &str, what: &str, failure: &CallFailure) -> AgentError {
    match failure {
        CallFailure::Rpc(RpcFailure::Error { code, .. }) => AgentError::new(
            BridgeErrorCode::AgentSessionNotResumable,
            format!("{runtime} could not continue the session ({what}: JSON-RPC error {code})"),
        ),
        other => request_failed(runtime, what, other),
    }
}
