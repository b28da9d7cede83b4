//! The one engine behind both runtimes: a [`StreamJsonAdapter`] runs a
//! [`Flavor`]'s CLI for each turn (spec-adapters.md §3.3): spawn,
//! `initialize`, the user message, then the CLI's messages until its
//! `result`, serving its `can_use_tool` requests concurrently through the
//! host while stdout keeps draining; a stop before the prompt is written
//! never writes it, a stop after it sends `interrupt`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use serverfs_agent_runtime::payload::catalog_unavailable;
use serverfs_agent_runtime::probe::{ProbeCache, version_probe};
use serverfs_agent_runtime::serving::ServingSet;
use serverfs_agent_runtime::turns::{StopSignal, TurnControl, TurnRegistry};
use serverfs_agent_runtime::{
    Adapter, AgentError, BoxFuture, BridgeErrorCode, Capabilities, Host, NativeIds, Probe,
    ProviderCommand, ProviderState, ProxyPolicy, TaskContext, TurnOutcome, WorkingDir,
    scrub_credentials,
};
use serverfs_protocol::bridge::{
    AgentProfile, CatalogStatus, EventPayload, ModelCatalog, ModelInfo,
};

use crate::auth::{AuthSource, PayloadFile, private_dir};
use crate::flavor::{CatalogSource, Flavor, ProxyDelivery, TurnArgs, version_of};
use crate::permission::{self, Ask};
use crate::session::{ControlFailure, Incoming, Session};
use crate::wire::{
    AssistantMessage, CliRequest, ContentBlock, IncomingRequest, Message, ModelEntry, ModelsAnswer,
    ResultMessage, lenient, user_message,
};

/// Most models listed.
const MAX_MODELS: usize = 64;

/// The configuration of one stream-json runtime, resolved at start-up.
#[derive(Debug, Clone)]
pub struct StreamJsonConfig {
    /// Absolute path of the CLI.
    pub bin: PathBuf,
    /// Bound of one control request.
    pub request_timeout: Duration,
    /// Variables of the Bridge's environment handed to the CLI (the
    /// operator's choice, e.g. an API key), except the one `auth` reads.
    pub env_passthrough: Vec<String>,
    /// The runtime's egress proxy policy.
    pub proxy: ProxyPolicy,
    /// What goes into the auth payload file of a flavor that has one
    /// (Qoder); ignored otherwise.
    pub auth: AuthSource,
}

/// A stream-json runtime: Claude Code or Qoder, by its [`Flavor`].
pub struct StreamJsonAdapter {
    flavor: &'static Flavor,
    config: StreamJsonConfig,
    turns: TurnRegistry<()>,
    probes: ProbeCache,
}

impl StreamJsonAdapter {
    /// The runtime `flavor` with `config`.
    pub fn new(flavor: &'static Flavor, config: StreamJsonConfig) -> StreamJsonAdapter {
        StreamJsonAdapter {
            flavor,
            config,
            turns: TurnRegistry::new(flavor.runtime),
            probes: ProbeCache::default(),
        }
    }

    /// The CLI command for `args`, in `cwd`, with the runtime's
    /// environment: the kit's scrubbed base, the flavor's markers, `PWD`,
    /// the operator's passthrough names (but the auth token's, which goes
    /// into the payload file alone), and the proxy when it travels by
    /// environment.
    fn command(&self, cwd: &WorkingDir, args: TurnArgs<'_>) -> ProviderCommand {
        let mut command = ProviderCommand::new(&self.config.bin, cwd);
        command.args((self.flavor.argv)(args));
        for (name, value) in self.flavor.fixed_env {
            command.env(*name, *value);
        }
        // `PWD` names where the directory is now; the CLI itself starts in
        // the opened directory whatever the name says.
        if let Ok(path) = cwd.current_path() {
            command.env("PWD", path.to_string_lossy().into_owned());
        }
        let secret = self.config.auth.secret_variable();
        command.pass_through(
            self.config
                .env_passthrough
                .iter()
                .filter(|name| Some(name.as_str()) != secret)
                .cloned(),
        );
        if self.flavor.proxy == ProxyDelivery::Environment {
            command.proxy(self.config.proxy.clone());
        }
        command
    }

    /// Starts a CLI session in `cwd`: the auth payload file when the
    /// flavor needs one (kept in `auth` for the session's life), the spawn,
    /// `initialize` and, for Qoder, `set_proxy`. Returns the session and
    /// the `initialize` answer.
    async fn open(
        &self,
        cwd: &WorkingDir,
        args: TurnArgs<'_>,
        host: Option<&dyn Host>,
        auth: &mut Option<PayloadFile>,
    ) -> Result<(Session, Value), AgentError> {
        let mut command = self.command(cwd, args);
        if let Some(payload) = &self.flavor.auth_payload {
            let file = PayloadFile::write(payload, &self.config.auth, self.flavor.display)?;
            command.env(payload.variable, file.path().to_string_lossy().into_owned());
            *auth = Some(file);
        }
        let session = Session::spawn(
            &command,
            host,
            self.flavor.runtime,
            self.config.request_timeout,
        )
        .await?;
        let handshake = async {
            let answer = session
                .request((self.flavor.initialize)(self.config.request_timeout))
                .await
                .map_err(|failure| self.control_failed("initialize", &failure))?;
            if self.flavor.proxy == ProxyDelivery::ControlRequest {
                let proxy = &self.config.proxy;
                let url = proxy
                    .enabled_for_runtime
                    .then(|| proxy.proxy_url.clone())
                    .flatten();
                if proxy.enabled_for_runtime && url.is_none() {
                    return Err(AgentError::new(
                        BridgeErrorCode::AgentRuntimeNotReady,
                        "the runtime requires the agent egress proxy, but no proxy endpoint \
                         is configured",
                    ));
                }
                session
                    .request(json!({ "subtype": "set_proxy", "proxy": url }))
                    .await
                    .map_err(|failure| self.control_failed("set_proxy", &failure))?;
            }
            Ok(answer)
        };
        match handshake.await {
            Ok(answer) => Ok((session, answer)),
            Err(error) => {
                session.shutdown(self.flavor.runtime).await;
                Err(error)
            }
        }
    }

    /// The error of a failed control request of ours. The CLI's own text
    /// is not passed on: it may name host paths.
    fn control_failed(&self, what: &str, failure: &ControlFailure) -> AgentError {
        let display = self.flavor.display;
        match failure {
            ControlFailure::Refused(_) => {
                AgentError::provider(format!("{display} refused the {what} request"))
            }
            ControlFailure::Timeout => AgentError::new(
                BridgeErrorCode::AgentProviderDisconnected,
                format!("{display} did not answer the {what} request in time"),
            ),
            ControlFailure::Closed => AgentError::new(
                BridgeErrorCode::AgentProviderDisconnected,
                format!("{display} exited during the {what} request"),
            ),
        }
    }

    async fn run_turn(&self, ctx: TaskContext, host: Arc<dyn Host>) -> TurnOutcome {
        if ctx.profile != AgentProfile::WorkspaceWrite {
            return TurnOutcome::failed(
                AgentError::new(
                    BridgeErrorCode::AgentProfileNotAllowed,
                    format!(
                        "{} currently requires the workspace-write profile",
                        self.flavor.runtime
                    ),
                ),
                NativeIds::default(),
            );
        }
        let registration = match self.turns.register(&ctx.task_id, ()) {
            Ok(registration) => registration,
            Err(error) => return TurnOutcome::failed(error, NativeIds::default()),
        };
        let mut stop = registration.stop_signal();
        let mut native = NativeIds {
            session_id: ctx.continue_native_session_id.clone(),
            turn_id: None,
        };
        let result = self.drive(&ctx, &host, &mut stop, &mut native).await;
        registration.outcome(result, native)
    }

    /// Runs the turn; `Ok(final text)` when it completed.
    async fn drive(
        &self,
        ctx: &TaskContext,
        host: &Arc<dyn Host>,
        stop: &mut StopSignal,
        native: &mut NativeIds,
    ) -> Result<String, AgentError> {
        let args = TurnArgs {
            model: ctx.model.as_deref(),
            resume: ctx.continue_native_session_id.as_deref(),
            discovery: false,
        };
        let mut auth = None;
        let (mut session, _answer) = stop
            .unless_stopped(self.open(&ctx.cwd, args, Some(host.as_ref()), &mut auth))
            .await?;
        let followed = if stop.reason().is_some() {
            // Stopped before the prompt: the CLI never gets it.
            Err(AgentError::provider(
                "the turn was stopped before it started",
            ))
        } else {
            session.send(&user_message(&ctx.prompt, self.flavor.priority));
            host.report(EventPayload::TurnStarted {
                runtime: Some(self.flavor.runtime.to_owned()),
            })
            .await;
            let mut turn = Turn {
                flavor: self.flavor,
                host,
                native,
                serving: ServingSet::default(),
                latest_text: None,
            };
            turn.follow(&mut session, stop).await
        };
        session.shutdown(self.flavor.runtime).await;
        drop(auth);
        followed
    }

    /// The catalog from a short session that starts no turn: in an empty
    /// private directory (a CLI started in a big home directory scans it
    /// first), the user's settings only.
    async fn catalog(&self) -> Result<Vec<ModelInfo>, AgentError> {
        let scratch = private_dir("serverfs-models")
            .map_err(|_| AgentError::provider("no private directory for model discovery"))?;
        let args = TurnArgs {
            model: None,
            resume: None,
            discovery: true,
        };
        let dir = WorkingDir::open_trusted(scratch.path())
            .map_err(|_| AgentError::provider("no private directory for model discovery"))?;
        let mut auth = None;
        let (session, answer) = self.open(&dir, args, None, &mut auth).await?;
        let listed = match self.flavor.catalog {
            CatalogSource::InitializeAnswer => Ok(answer),
            CatalogSource::GetModels => session
                .request(json!({ "subtype": "get_models" }))
                .await
                .map_err(|failure| self.control_failed("get_models", &failure)),
        };
        session.shutdown(self.flavor.runtime).await;
        let models = usable_models(&listed?);
        if models.is_empty() {
            // A CLI that is logged in always has a model to offer: an
            // empty or unreadable list is its failure, not a catalog.
            return Err(AgentError::provider(format!(
                "{} listed no usable model",
                self.flavor.display
            )));
        }
        Ok(models)
    }
}

/// The entries of a models answer that can be read (at most
/// [`MAX_MODELS`]); an answer without a `models` list has none.
fn usable_models(answer: &Value) -> Vec<ModelInfo> {
    lenient::<ModelsAnswer>(answer)
        .unwrap_or_default()
        .models
        .iter()
        .filter_map(lenient::<ModelEntry>)
        .take(MAX_MODELS)
        .map(model_info)
        .collect()
}

fn model_info(entry: ModelEntry) -> ModelInfo {
    ModelInfo {
        display_name: entry.display_name.unwrap_or_else(|| entry.value.clone()),
        id: entry.value,
        enabled: entry.is_enabled,
        is_default: None,
        hidden: None,
        description: entry.description.map(|d| d.chars().take(2048).collect()),
        input_modalities: None,
        reasoning: None,
        context: None,
        service_tiers: None,
        is_free: entry.is_free,
        price_factor: entry.price_factor,
        is_new: entry.is_new,
    }
}

/// One turn's loop state.
struct Turn<'a> {
    flavor: &'static Flavor,
    host: &'a Arc<dyn Host>,
    native: &'a mut NativeIds,
    /// The CLI's requests being served: owned here, so that the end of the
    /// turn aborts them all.
    serving: ServingSet<String>,
    /// The latest text block, the final response when the result has none.
    latest_text: Option<String>,
}

impl Turn<'_> {
    /// Reads the CLI's messages until its `result`; a stop sends
    /// `interrupt` once and keeps reading for the result it causes.
    async fn follow(
        &mut self,
        session: &mut Session,
        stop: &mut StopSignal,
    ) -> Result<String, AgentError> {
        let display = self.flavor.display;
        let mut interrupted = false;
        loop {
            let incoming = tokio::select! {
                incoming = session.incoming.recv() => incoming,
                _ = stop.stopped(), if !interrupted => {
                    interrupted = true;
                    // Best effort: the CLI may be ending the turn anyway;
                    // the runner bounds the wait for its result.
                    let _refused = session.request(json!({ "subtype": "interrupt" })).await;
                    continue;
                }
            };
            match incoming {
                None => {
                    return Err(AgentError::provider(format!(
                        "{display} ended without a result"
                    )));
                }
                Some(Incoming::Oversized) => {
                    return Err(AgentError::provider(format!(
                        "{display} sent a message over the line limit"
                    )));
                }
                Some(Incoming::Message(message)) => {
                    if let Some(done) = self.handle(session, message).await {
                        return done;
                    }
                }
            }
        }
    }

    /// Handles one message; `Some` ends the turn.
    async fn handle(
        &mut self,
        session: &Session,
        message: Message,
    ) -> Option<Result<String, AgentError>> {
        match message {
            Message::System(system) => {
                if system.subtype.as_deref() == Some("init") {
                    self.record_session(system.session_id).await;
                }
            }
            Message::Assistant(assistant) => self.report(assistant).await,
            Message::Result(result) => return Some(self.finish(result).await),
            Message::ControlRequest(request) => self.serve(session, request),
            Message::ControlCancel(cancel) => {
                // The CLI gave up its request: stop waiting for the human
                // (dropping the wait withdraws the interaction) and answer
                // nothing.
                self.serving.withdraw(&cancel.request_id);
            }
            Message::ControlResponse(_) | Message::Other => {}
        }
        None
    }

    /// Records the native session as soon as the CLI names it.
    async fn record_session(&mut self, session_id: Option<String>) {
        let Some(session_id) = session_id else {
            return;
        };
        if self.native.session_id.as_deref() == Some(session_id.as_str()) {
            return;
        }
        self.native.session_id = Some(session_id.clone());
        if self
            .host
            .record_native_ids(NativeIds {
                session_id: Some(session_id),
                turn_id: None,
            })
            .await
            .is_err()
        {
            tracing::debug!("the native session id was not recorded");
        }
    }

    /// Reports an assistant message's blocks as events.
    async fn report(&mut self, assistant: AssistantMessage) {
        self.record_session(assistant.session_id).await;
        for block in assistant.message.content {
            let event = match block {
                ContentBlock::Text { text } => {
                    self.latest_text = Some(text.clone());
                    EventPayload::AgentMessage {
                        text,
                        phase: None,
                        truncated: false,
                        size_bytes: None,
                        sha256: None,
                    }
                }
                ContentBlock::ToolUse { id, name, input } => tool_event(id, name, input),
                ContentBlock::Other => continue,
            };
            self.host.report(event).await;
        }
    }

    /// The end of the turn.
    async fn finish(&mut self, result: ResultMessage) -> Result<String, AgentError> {
        if let Some(session_id) = result.session_id.clone() {
            self.native.session_id = Some(session_id);
        }
        self.native.turn_id = result.uuid.clone();
        let recorded = self
            .host
            .record_native_ids(NativeIds {
                session_id: result.session_id.clone(),
                turn_id: result.uuid.clone(),
            })
            .await;
        if recorded.is_err() {
            tracing::debug!("the native ids of the result were not recorded");
        }
        if result.failed() {
            let detail = scrub_credentials(&result.failure_detail());
            if detail.contains("Not logged in") || detail.contains("Please run /login") {
                return Err(AgentError::new(
                    BridgeErrorCode::AgentRuntimeNotReady,
                    format!(
                        "{} is not logged in on this host: {}",
                        self.flavor.display, self.flavor.login_hint
                    ),
                ));
            }
            return Err(AgentError::provider(format!(
                "{} failed: {detail}",
                self.flavor.display
            )));
        }
        Ok(result
            .result
            .or_else(|| self.latest_text.take())
            .unwrap_or_default())
    }

    /// Serves one CLI request on its own task, so that stdout keeps
    /// draining while the human decides; each request id is served once.
    fn serve(&mut self, session: &Session, request: IncomingRequest) {
        let answers = session.answers();
        let host = Arc::clone(self.host);
        let display = self.flavor.display;
        let id = request.request_id.clone();
        self.serving.serve(request.request_id, async move {
            let can_use_tool = match CliRequest::decode(request.request) {
                Ok(CliRequest::CanUseTool(can_use_tool)) => *can_use_tool,
                Ok(CliRequest::Unsupported) => {
                    return answers.refuse(&id, "unsupported request");
                }
                Err(_) => return answers.refuse(&id, "malformed request"),
            };
            let response = match permission::ask(can_use_tool, display) {
                Ask::Deny(message) => {
                    json!({ "behavior": "deny", "message": message, "interrupt": false })
                }
                Ask::Approval {
                    payload,
                    input,
                    session_updates,
                } => match host.request_approval(*payload).await {
                    Ok(resolution) => {
                        permission::approval_response(&resolution, &input, &session_updates)
                    }
                    Err(_) => permission::unanswered(),
                },
                Ask::Question { payload, input } => {
                    match host.ask_question(payload.clone()).await {
                        Ok(resolution) => {
                            permission::question_response(&payload, &resolution, &input)
                        }
                        Err(_) => permission::unanswered(),
                    }
                }
            };
            answers.respond(&id, response);
        });
    }
}

/// The event of a `tool_use` block: a shell command, a file change, or
/// another tool; inputs bounded to fit an event.
fn tool_event(id: String, name: String, input: Value) -> EventPayload {
    let (bounded, _) = serverfs_agent_runtime::bounds::bounded_json(&input);
    match name.as_str() {
        "Bash" => match input.get("command").and_then(Value::as_str) {
            Some(command) => EventPayload::CommandStarted {
                command: serverfs_agent_runtime::bounds::bounded_text(command)
                    .0
                    .to_owned(),
                tool_use_id: id,
            },
            None => EventPayload::ToolStarted {
                tool: name,
                tool_use_id: id,
                input: Some(bounded),
            },
        },
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => EventPayload::FileChangeStarted {
            tool: name,
            tool_use_id: id,
            input: Some(bounded),
        },
        _ => EventPayload::ToolStarted {
            tool: name,
            tool_use_id: id,
            input: Some(bounded),
        },
    }
}

impl Adapter for StreamJsonAdapter {
    fn name(&self) -> &str {
        self.flavor.runtime
    }

    fn capabilities(&self) -> Capabilities {
        self.flavor.capabilities
    }

    // No live steering: the default `send_message` refuses it; `cancel`
    // and `close` are the kit's defaults too.
    fn turns(&self) -> &dyn TurnControl {
        &self.turns
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        Box::pin(self.probes.probe(async {
            let mut command = ProviderCommand::new(&self.config.bin, "/");
            command.args(["--version"]);
            version_probe(&command, version_of).await
        }))
    }

    fn models(&self) -> BoxFuture<'_, ModelCatalog> {
        Box::pin(async move {
            let source = self.flavor.catalog_source;
            match self.catalog().await {
                Ok(models) => ModelCatalog {
                    runtime: self.flavor.runtime.to_owned(),
                    status: CatalogStatus::Ok,
                    scope: self.flavor.catalog_scope,
                    source: source.to_owned(),
                    models,
                    detail: None,
                    model_advice: None,
                },
                Err(error) => {
                    tracing::debug!(
                        runtime = self.flavor.runtime,
                        error.code = error.code.as_str(),
                        "model discovery failed"
                    );
                    catalog_unavailable(self.flavor.runtime, source, "model discovery failed")
                }
            }
        })
    }

    fn run(&self, ctx: TaskContext, host: Arc<dyn Host>) -> BoxFuture<'_, TurnOutcome> {
        Box::pin(self.run_turn(ctx, host))
    }

    fn reconcile<'a>(
        &'a self,
        _task_id: &'a str,
        native: &'a NativeIds,
    ) -> BoxFuture<'a, ProviderState> {
        // A recorded session can be resumed.
        let state = ProviderState::bridge_owned(native.session_id.is_some());
        Box::pin(async move { state })
    }
}
