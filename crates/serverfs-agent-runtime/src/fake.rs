//! The deterministic fake runtime (spec-agent-bridge.md §9.3): a test and
//! demo adapter driven by directives in the prompt. It exercises every
//! path of the core (events, approvals, exact-option approvals, queued
//! approvals, questions, steering, failures, file writes, a real process
//! tree and its termination) without any provider.
//!
//! # Directive grammar
//!
//! Every prompt line whose trimmed text starts with `fake:` is a directive;
//! other lines are ignored. Directives run in order; each may add one line
//! to the final text. A prompt without directives completes with its
//! trimmed text.
//!
//! | Directive | Behaviour | Final-text line |
//! |---|---|---|
//! | `fake: complete <text>` | nothing | `<text>` |
//! | `fake: approval [<summary>]` | one `command` approval, all four decisions | `approved: <summary>` or `denied: <summary>`; `cancel_task` cancels the turn |
//! | `fake: options` | one `other` approval, all four decisions, and three exact options: `opt-allow-once` "Allow once" (`allow_once`), `opt-allow-always` "Always allow" (`allow_always`), `opt-reject` "Reject" (`reject_once`) | `option=<option_id>`; `cancel_task` cancels the turn |
//! | `fake: two-approvals` | two approvals requested concurrently (the host queues them) | `approvals=<d1>,<d2>` |
//! | `fake: question [<text>]` | one question `q1`, options `a`/`A`, `b`/`B`, free text allowed | `answers=<resolution JSON>` |
//! | `fake: wait <ms>` | sleeps; cancel interrupts it | — |
//! | `fake: steer` | waits for a steering message | `steered=<message>` |
//! | `fake: fail <CODE>` | the turn fails with the Bridge error code | — |
//! | `fake: write <name> <content>` | `workspace-write` only: creates or replaces `<name>` in the cwd without following symlinks; a name with `/`, a leading `.`, NUL or `\` is refused | `wrote <name>` |
//! | `fake: child-tree` | spawns `/bin/sh -c 'sleep 300 & sleep 300 & wait'` in its own process group through [`ProviderCommand`], records the group with the host, kept until cancel | `child tree exited` (only if it ends by itself) |
//! | `fake: env` | runs `/bin/sh -c env` through [`ProviderCommand`] with the adapter's proxy policy | `env: NAME=value, …` for every proxy-like (`*PROXY*`) or `SERVERFS_*` variable the child saw, sorted; `env: none` if there is none |
//!
//! An unknown or malformed directive fails the turn with
//! `AGENT_PROVIDER_ERROR` before anything runs.
//!
//! Every turn emits `turn.started {runtime: "fake"}` first, records the
//! native ids (`fake-session-<task>` or the continued session, and
//! `fake-turn-<task>`), emits `approval.observed` after each approval and
//! `agent.message` with the final text before completing.

use std::collections::HashMap;
use std::fs::File;
use std::future::{Future, pending};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustix::fs::{FileType, Mode, OFlags};
use serverfs_protocol::bridge::{
    AgentProfile, ApprovalCategory, ApprovalDecision, ApprovalOption, ApprovalOptionKind,
    ApprovalPayload, ApprovalResolution, BridgeErrorCode, CatalogScope, CatalogStatus,
    EventPayload, InFlightRecovery, ModelCatalog, ModelDiscovery, Question, QuestionOption,
    QuestionPayload, ReconcileStatus,
};
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep, sleep_until};

use crate::{
    Adapter, AgentError, BoxFuture, Capabilities, Host, NativeIds, Probe, ProcessGroupId,
    ProviderCommand, ProviderState, ProxyPolicy, TaskContext, TurnOutcome, TurnStatus,
};

/// The fake runtime's name.
pub const FAKE_RUNTIME: &str = "fake";

/// The version the fake probe reports.
pub const FAKE_VERSION: &str = "phase-a";

/// The fake runtime's capabilities: everything interactive, no recovery.
pub const FAKE_CAPABILITIES: Capabilities = Capabilities {
    persistent_session: true,
    live_steer: true,
    interactive_approval: true,
    interactive_question: true,
    in_flight_recovery: InFlightRecovery::None,
    model_override: false,
    model_discovery: ModelDiscovery::Unsupported,
};

/// The shell `child-tree` runs (absolute, as [`ProviderCommand`] requires).
const SHELL: &str = "/bin/sh";
/// Two grandchildren in the shell's process group, kept until killed.
const CHILD_TREE_SCRIPT: &str = "sleep 300 & sleep 300 & wait";
/// `SIGTERM` grace before the process helper escalates to `SIGKILL`.
const TERMINATE_GRACE: Duration = Duration::from_secs(2);
/// The `command_display` of an approval without a summary.
const DEFAULT_COMMAND: &str = "echo test";
/// The prompt of a question without text.
const DEFAULT_QUESTION: &str = "Pick one";
/// Mode of files `write` creates (before the umask).
const WRITE_MODE: u32 = 0o644;

/// One parsed directive of a fake prompt (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `complete <text>`.
    Complete(String),
    /// `approval [<summary>]`.
    Approval(String),
    /// `options`.
    Options,
    /// `two-approvals`.
    TwoApprovals,
    /// `question [<text>]`.
    Question(String),
    /// `wait <ms>`.
    Wait(Duration),
    /// `steer`.
    Steer,
    /// `fail <CODE>`.
    Fail(BridgeErrorCode),
    /// `write <name> <content>`.
    Write {
        /// A plain file name inside the cwd.
        name: String,
        /// The file's new content.
        content: String,
    },
    /// `child-tree`.
    ChildTree,
    /// `env`.
    Env,
}

/// Parses a fake prompt into its directives.
///
/// # Errors
///
/// `AGENT_PROVIDER_ERROR` for an unknown or malformed directive.
pub fn parse_script(prompt: &str) -> Result<Vec<Directive>, AgentError> {
    let mut script = Vec::new();
    for line in prompt.lines() {
        let Some(directive) = line.trim().strip_prefix("fake:") else {
            continue;
        };
        let directive = directive.trim();
        let (verb, rest) = directive
            .split_once(char::is_whitespace)
            .map_or((directive, ""), |(verb, rest)| (verb, rest.trim()));
        script.push(parse_directive(verb, rest)?);
    }
    if script.is_empty() {
        script.push(Directive::Complete(prompt.trim().to_owned()));
    }
    Ok(script)
}

fn parse_directive(verb: &str, rest: &str) -> Result<Directive, AgentError> {
    let malformed = || {
        AgentError::new(
            BridgeErrorCode::AgentProviderError,
            "malformed fake directive",
        )
    };
    let or_default = |text: &str, default: &str| {
        if text.is_empty() {
            default.to_owned()
        } else {
            text.to_owned()
        }
    };
    let no_argument = |directive: Directive| {
        if rest.is_empty() {
            Ok(directive)
        } else {
            Err(malformed())
        }
    };
    match verb {
        "complete" => Ok(Directive::Complete(rest.to_owned())),
        "approval" => Ok(Directive::Approval(or_default(rest, DEFAULT_COMMAND))),
        "options" => no_argument(Directive::Options),
        "two-approvals" => no_argument(Directive::TwoApprovals),
        "question" => Ok(Directive::Question(or_default(rest, DEFAULT_QUESTION))),
        "wait" => rest
            .parse::<u64>()
            .map(|ms| Directive::Wait(Duration::from_millis(ms)))
            .map_err(|_| malformed()),
        "steer" => no_argument(Directive::Steer),
        "fail" => {
            serde_json::from_value::<BridgeErrorCode>(serde_json::Value::String(rest.to_owned()))
                .map(Directive::Fail)
                .map_err(|_| malformed())
        }
        "write" => {
            let (name, content) = rest
                .split_once(char::is_whitespace)
                .map_or((rest, ""), |(name, content)| (name, content));
            if name.is_empty() {
                return Err(malformed());
            }
            Ok(Directive::Write {
                name: name.to_owned(),
                content: content.to_owned(),
            })
        }
        "child-tree" => no_argument(Directive::ChildTree),
        "env" => no_argument(Directive::Env),
        _ => Err(AgentError::new(
            BridgeErrorCode::AgentProviderError,
            "unknown fake directive",
        )),
    }
}

/// Why a running turn is being stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// [`Adapter::cancel`].
    Cancelled,
    /// [`Adapter::close`].
    Closed,
}

/// A task the adapter is running.
struct Active {
    stop: watch::Sender<Option<Stop>>,
    messages: mpsc::UnboundedSender<String>,
    /// The `child-tree` process group while it runs.
    group: Mutex<Option<ProcessGroupId>>,
}

impl Active {
    fn stop(&self, why: Stop) {
        self.stop.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(why);
                true
            } else {
                false
            }
        });
    }
}

#[derive(Default)]
struct State {
    closed: bool,
    tasks: HashMap<String, Arc<Active>>,
}

/// The fake adapter. See the module documentation for its prompt grammar.
#[derive(Default)]
pub struct FakeAdapter {
    state: Mutex<State>,
    /// Numbers the tool-use ids of `write` events.
    writes: AtomicU64,
    /// The egress proxy policy of the processes it spawns.
    proxy: ProxyPolicy,
}

impl FakeAdapter {
    /// A fake adapter with no active task whose processes get no proxy.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fake adapter whose processes (`child-tree`, `env`) are spawned
    /// with `proxy`, as a real runtime's provider would be.
    pub fn with_proxy(proxy: ProxyPolicy) -> Self {
        Self {
            proxy,
            ..Self::default()
        }
    }

    /// Whether `task_id` is running here (registered before `run`'s first
    /// await).
    pub fn is_active(&self, task_id: &str) -> bool {
        self.lock().tasks.contains_key(task_id)
    }

    /// The process group of `task_id`'s `child-tree`, while it runs.
    pub fn process_group(&self, task_id: &str) -> Option<ProcessGroupId> {
        let active = self.lock().tasks.get(task_id).cloned()?;
        *lock(&active.group)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn active(&self, task_id: &str) -> Option<Arc<Active>> {
        self.lock().tasks.get(task_id).cloned()
    }

    /// Registers `task_id` as active; the guard deregisters it.
    fn register(&self, task_id: &str) -> Result<(Registration<'_>, Turn), AgentError> {
        let mut state = self.lock();
        if state.closed {
            return Err(AgentError::new(
                BridgeErrorCode::AgentRuntimeUnavailable,
                "the fake runtime is closed",
            ));
        }
        if state.tasks.contains_key(task_id) {
            return Err(AgentError::new(
                BridgeErrorCode::AgentProviderError,
                "the task is already running",
            ));
        }
        let (stop, stop_rx) = watch::channel(None);
        let (messages, messages_rx) = mpsc::unbounded_channel();
        let active = Arc::new(Active {
            stop,
            messages,
            group: Mutex::new(None),
        });
        state.tasks.insert(task_id.to_owned(), Arc::clone(&active));
        let registration = Registration {
            adapter: self,
            task_id: task_id.to_owned(),
            active: Arc::clone(&active),
        };
        let turn = Turn {
            stop: stop_rx,
            messages: messages_rx,
            active,
        };
        Ok((registration, turn))
    }

    async fn run_turn(&self, ctx: TaskContext, host: Arc<dyn Host>) -> TurnOutcome {
        let native = NativeIds {
            session_id: Some(
                ctx.continue_native_session_id
                    .clone()
                    .unwrap_or_else(|| format!("fake-session-{}", ctx.task_id)),
            ),
            turn_id: Some(format!("fake-turn-{}", ctx.task_id)),
        };
        let (registration, mut turn) = match self.register(&ctx.task_id) {
            Ok(registered) => registered,
            Err(error) => return TurnOutcome::failed(error, NativeIds::default()),
        };
        let ended = match parse_script(&ctx.prompt) {
            Ok(script) => {
                turn.play(self, &ctx, host.as_ref(), script, native.clone())
                    .await
            }
            Err(error) => Err(End::Failed(error)),
        };
        drop(registration);
        match ended {
            Ok(text) => TurnOutcome::completed(text, native),
            Err(End::Failed(error)) => TurnOutcome::failed(error, native),
            Err(End::Stopped(Stop::Cancelled)) => TurnOutcome {
                status: TurnStatus::Cancelled,
                final_text: "the turn was cancelled".to_owned(),
                native,
            },
            Err(End::Stopped(Stop::Closed)) => TurnOutcome {
                status: TurnStatus::Interrupted,
                final_text: "the fake runtime was closed".to_owned(),
                native,
            },
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes a task from the active map when its run ends (or is dropped).
struct Registration<'a> {
    adapter: &'a FakeAdapter,
    task_id: String,
    active: Arc<Active>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut state = self.adapter.lock();
        if state
            .tasks
            .get(&self.task_id)
            .is_some_and(|active| Arc::ptr_eq(active, &self.active))
        {
            state.tasks.remove(&self.task_id);
        }
    }
}

/// Why a turn ended early.
enum End {
    Failed(AgentError),
    Stopped(Stop),
}

impl From<AgentError> for End {
    fn from(error: AgentError) -> Self {
        End::Failed(error)
    }
}

/// The receiving side of one running task.
struct Turn {
    stop: watch::Receiver<Option<Stop>>,
    messages: mpsc::UnboundedReceiver<String>,
    active: Arc<Active>,
}

impl Turn {
    async fn play(
        &mut self,
        adapter: &FakeAdapter,
        ctx: &TaskContext,
        host: &dyn Host,
        script: Vec<Directive>,
        native: NativeIds,
    ) -> Result<String, End> {
        let deadline = ctx.deadline;
        guard(self.stop.clone(), deadline, async {
            host.emit(EventPayload::TurnStarted {
                runtime: Some(FAKE_RUNTIME.to_owned()),
            })
            .await?;
            host.record_native_ids(native).await?;
            Ok(())
        })
        .await?;
        let mut lines = Vec::new();
        for directive in script {
            if let Some(line) = self.step(adapter, ctx, host, directive).await? {
                lines.push(line);
            }
        }
        let text = if lines.is_empty() {
            "fake turn completed".to_owned()
        } else {
            lines.join("\n")
        };
        guard(
            self.stop.clone(),
            deadline,
            host.emit(EventPayload::AgentMessage {
                text: text.clone(),
                phase: None,
                truncated: false,
                size_bytes: None,
                sha256: None,
            }),
        )
        .await?;
        Ok(text)
    }

    async fn step(
        &mut self,
        adapter: &FakeAdapter,
        ctx: &TaskContext,
        host: &dyn Host,
        directive: Directive,
    ) -> Result<Option<String>, End> {
        let deadline = ctx.deadline;
        match directive {
            Directive::Complete(text) => Ok(Some(text)),
            Directive::Approval(summary) => {
                let resolution = guard(
                    self.stop.clone(),
                    deadline,
                    host.request_approval(approval_payload(&summary)),
                )
                .await?;
                let decision = observe(host, resolution).await?;
                Ok(Some(match decision {
                    ApprovalDecision::ApproveOnce | ApprovalDecision::ApproveSession => {
                        format!("approved: {summary}")
                    }
                    ApprovalDecision::Deny => format!("denied: {summary}"),
                    ApprovalDecision::CancelTask => return Err(End::Stopped(Stop::Cancelled)),
                }))
            }
            Directive::Options => {
                let resolution = guard(
                    self.stop.clone(),
                    deadline,
                    host.request_approval(options_payload()),
                )
                .await?;
                let option_id = resolution.option_id.clone();
                if observe(host, resolution).await? == ApprovalDecision::CancelTask {
                    return Err(End::Stopped(Stop::Cancelled));
                }
                // An ACP-like provider cannot act on a bare decision: it
                // needs the id of one of its own options.
                let option_id = option_id.ok_or_else(|| {
                    AgentError::new(
                        BridgeErrorCode::AgentProviderError,
                        "the approval named none of the offered options",
                    )
                })?;
                Ok(Some(format!("option={option_id}")))
            }
            Directive::TwoApprovals => {
                let (first, second) = guard(self.stop.clone(), deadline, async {
                    // Both requests are in flight at once: the host queues
                    // the second behind the first.
                    let (first, second) = tokio::join!(
                        host.request_approval(approval_payload("echo first")),
                        host.request_approval(approval_payload("echo second")),
                    );
                    Ok((first?, second?))
                })
                .await?;
                let first = observe(host, first).await?;
                let second = observe(host, second).await?;
                if first == ApprovalDecision::CancelTask || second == ApprovalDecision::CancelTask {
                    return Err(End::Stopped(Stop::Cancelled));
                }
                Ok(Some(format!(
                    "approvals={},{}",
                    first.as_str(),
                    second.as_str()
                )))
            }
            Directive::Question(text) => {
                let resolution = guard(
                    self.stop.clone(),
                    deadline,
                    host.ask_question(question_payload(&text)),
                )
                .await?;
                let json = serde_json::to_string(&resolution).map_err(|_| {
                    AgentError::new(
                        BridgeErrorCode::AgentProviderError,
                        "the answer could not be encoded",
                    )
                })?;
                Ok(Some(format!("answers={json}")))
            }
            Directive::Wait(duration) => {
                guard(self.stop.clone(), deadline, async {
                    sleep(duration).await;
                    Ok(())
                })
                .await?;
                Ok(None)
            }
            Directive::Steer => {
                let messages = &mut self.messages;
                let message = guard(self.stop.clone(), deadline, async {
                    messages.recv().await.ok_or_else(|| {
                        AgentError::new(
                            BridgeErrorCode::AgentTaskNotActive,
                            "the steering channel closed",
                        )
                    })
                })
                .await?;
                Ok(Some(format!("steered={message}")))
            }
            Directive::Fail(code) => Err(End::Failed(AgentError::new(
                code,
                "the fake runtime failed as scripted",
            ))),
            Directive::Write { name, content } => {
                if ctx.profile != AgentProfile::WorkspaceWrite {
                    return Err(End::Failed(AgentError::new(
                        BridgeErrorCode::AgentProfileNotAllowed,
                        "writing needs the workspace-write profile",
                    )));
                }
                if !is_plain_name(&name) {
                    return Err(End::Failed(AgentError::new(
                        BridgeErrorCode::InvalidWorkdirPath,
                        "the fake write target is not a plain file name",
                    )));
                }
                let number = adapter.writes.fetch_add(1, Ordering::Relaxed);
                guard(
                    self.stop.clone(),
                    deadline,
                    host.emit(EventPayload::FileChangeStarted {
                        tool: "write".to_owned(),
                        tool_use_id: format!("fake-write-{number}"),
                        input: Some(serde_json::json!({ "path": name })),
                    }),
                )
                .await?;
                write_beneath(&ctx.cwd, &name, content.as_bytes())?;
                Ok(Some(format!("wrote {name}")))
            }
            Directive::ChildTree => self.child_tree(adapter, ctx, host).await,
            Directive::Env => guard(self.stop.clone(), deadline, child_environment(adapter, ctx))
                .await
                .map(Some),
        }
    }

    /// Spawns the process tree and keeps it until the turn is stopped (or
    /// the shell ends by itself); then stops the whole group and proves it
    /// gone.
    async fn child_tree(
        &mut self,
        adapter: &FakeAdapter,
        ctx: &TaskContext,
        host: &dyn Host,
    ) -> Result<Option<String>, End> {
        let mut child = ProviderCommand::new(SHELL, &ctx.cwd)
            .args(["-c", CHILD_TREE_SCRIPT])
            .proxy(adapter.proxy.clone())
            .spawn()
            .map_err(|error| {
                AgentError::new(error.code(), "the fake child tree could not be started")
            })?;
        *lock(&self.active.group) = Some(child.process_group());
        if let Err(error) = host.record_process_group(child.process_group()).await {
            let _stopped = child.terminate(TERMINATE_GRACE).await;
            *lock(&self.active.group) = None;
            return Err(End::Failed(error));
        }
        let mut stop = self.stop.clone();
        let ended = tokio::select! {
            why = stopped(&mut stop) => Some(End::Stopped(why)),
            () = expired(ctx.deadline) => Some(End::Failed(timed_out())),
            _ = child.wait() => None,
        };
        let termination = child.terminate(TERMINATE_GRACE).await;
        *lock(&self.active.group) = None;
        if !termination.group_gone {
            return Err(End::Failed(AgentError::new(
                BridgeErrorCode::AgentProviderError,
                "the fake child tree could not be proven stopped",
            )));
        }
        match ended {
            Some(end) => Err(end),
            None => Ok(Some("child tree exited".to_owned())),
        }
    }
}

/// Runs `env` in the cwd with the adapter's proxy policy and reports the
/// variables a provider's egress depends on.
async fn child_environment(adapter: &FakeAdapter, ctx: &TaskContext) -> Result<String, AgentError> {
    let failed = |what: &str| {
        AgentError::new(
            BridgeErrorCode::AgentProviderError,
            format!("the fake env child {what}"),
        )
    };
    let mut child = ProviderCommand::new(SHELL, &ctx.cwd)
        .args(["-c", "env"])
        .proxy(adapter.proxy.clone())
        .spawn()
        .map_err(|error| {
            AgentError::new(error.code(), "the fake env child could not be started")
        })?;
    let mut stdout = child.take_stdout().ok_or_else(|| failed("has no output"))?;
    let mut output = Vec::new();
    let read = tokio::io::AsyncReadExt::read_to_end(&mut stdout, &mut output).await;
    let _stopped = child.terminate(TERMINATE_GRACE).await;
    read.map_err(|_| failed("output could not be read"))?;
    let text = String::from_utf8_lossy(&output);
    let mut seen: Vec<String> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(name, _)| {
            name.to_ascii_uppercase().contains("PROXY") || name.starts_with("SERVERFS_")
        })
        .map(|(name, value)| describe_variable(adapter, name, value))
        .collect();
    seen.sort_unstable();
    Ok(if seen.is_empty() {
        "env: none".to_owned()
    } else {
        format!("env: {}", seen.join(", "))
    })
}

/// One line of the `env` report. The proxy endpoint is a deployment secret
/// (invariant 9) and the final text reaches the client, so `HTTPS_PROXY` is
/// only compared with the configured endpoint; `NO_PROXY` (host names) is
/// shown; any other value is hidden.
fn describe_variable(adapter: &FakeAdapter, name: &str, value: &str) -> String {
    match name {
        "HTTPS_PROXY" if adapter.proxy.proxy_url.as_deref() == Some(value) => {
            format!("{name}=<configured>")
        }
        "HTTPS_PROXY" => format!("{name}=<unexpected>"),
        "NO_PROXY" => format!("{name}={value}"),
        _ => format!("{name}=<set>"),
    }
}

/// Emits `approval.observed` and hands back the decision.
async fn observe(host: &dyn Host, resolution: ApprovalResolution) -> Result<ApprovalDecision, End> {
    let decision = resolution.decision;
    host.emit(EventPayload::ApprovalObserved(resolution))
        .await?;
    Ok(decision)
}

/// Runs `work` unless the turn is stopped or its deadline passes first.
async fn guard<T, F>(
    mut stop: watch::Receiver<Option<Stop>>,
    deadline: Option<Instant>,
    work: F,
) -> Result<T, End>
where
    F: Future<Output = Result<T, AgentError>>,
{
    tokio::select! {
        biased;
        why = stopped(&mut stop) => Err(End::Stopped(why)),
        () = expired(deadline) => Err(End::Failed(timed_out())),
        result = work => result.map_err(End::Failed),
    }
}

/// Resolves once the turn is told to stop.
async fn stopped(stop: &mut watch::Receiver<Option<Stop>>) -> Stop {
    let why = stop
        .wait_for(Option::is_some)
        .await
        .map(|why| (*why).unwrap_or(Stop::Cancelled));
    match why {
        Ok(why) => why,
        // The sender lives as long as the task is registered.
        Err(_) => pending().await,
    }
}

/// Resolves when `deadline` passes; never without one.
async fn expired(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => pending().await,
    }
}

fn timed_out() -> AgentError {
    AgentError::new(
        BridgeErrorCode::AgentTaskTimedOut,
        "the task deadline passed",
    )
}

fn approval_payload(command: &str) -> ApprovalPayload {
    ApprovalPayload {
        category: ApprovalCategory::Command,
        title: Some("Fake command approval".to_owned()),
        reason: None,
        command_display: Some(command.to_owned()),
        relative_cwd: Some(".".to_owned()),
        additional_permissions: None,
        network_approval_context: None,
        file_changes: None,
        requested_permissions: None,
        tool: None,
        tool_input: None,
        blocked_path: None,
        available_decisions: ApprovalDecision::ALL.to_vec(),
        options: None,
        approval_advice: None,
    }
}

/// The `options` approval: exact options as an ACP agent offers them.
fn options_payload() -> ApprovalPayload {
    let option = |id: &str, label: &str, kind| ApprovalOption {
        option_id: id.to_owned(),
        label: label.to_owned(),
        kind,
    };
    ApprovalPayload {
        category: ApprovalCategory::Other,
        title: Some("Fake exact-option approval".to_owned()),
        reason: None,
        command_display: None,
        relative_cwd: None,
        additional_permissions: None,
        network_approval_context: None,
        file_changes: None,
        requested_permissions: None,
        tool: None,
        tool_input: None,
        blocked_path: None,
        available_decisions: ApprovalDecision::ALL.to_vec(),
        options: Some(vec![
            option(
                "opt-allow-once",
                "Allow once",
                ApprovalOptionKind::AllowOnce,
            ),
            option(
                "opt-allow-always",
                "Always allow",
                ApprovalOptionKind::AllowAlways,
            ),
            option("opt-reject", "Reject", ApprovalOptionKind::RejectOnce),
        ]),
        approval_advice: None,
    }
}

fn question_payload(prompt: &str) -> QuestionPayload {
    let option = |id: &str, label: &str| QuestionOption {
        option_id: id.to_owned(),
        label: label.to_owned(),
        description: None,
        preview: None,
    };
    QuestionPayload {
        questions: vec![Question {
            question_id: "q1".to_owned(),
            prompt: prompt.to_owned(),
            options: vec![option("a", "A"), option("b", "B")],
            multi_select: false,
            allow_free_text: true,
        }],
    }
}

/// A single path component that names no special entry: no separator, no
/// leading dot (`.`, `..`, dot files such as `.env`), no NUL, no backslash.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0'])
}

/// Creates or replaces the regular file `name` directly in `cwd`, opened
/// beneath the directory descriptor without following a symlink; a
/// non-regular file there (FIFO, device, directory) is refused.
fn write_beneath(cwd: &Path, name: &str, content: &[u8]) -> Result<(), AgentError> {
    let failed = |_| AgentError::new(BridgeErrorCode::AgentProviderError, "the fake write failed");
    let dir = rustix::fs::open(
        cwd,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(failed)?;
    // NONBLOCK: a FIFO planted under the name must not hang the turn.
    let file = rustix::fs::openat(
        &dir,
        name,
        OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC
            | OFlags::NOCTTY
            | OFlags::NONBLOCK,
        Mode::from_raw_mode(WRITE_MODE),
    )
    .map_err(failed)?;
    let stat = rustix::fs::fstat(&file).map_err(failed)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(AgentError::new(
            BridgeErrorCode::AgentProviderError,
            "the fake write target is not a regular file",
        ));
    }
    rustix::fs::ftruncate(&file, 0).map_err(failed)?;
    File::from(file)
        .write_all(content)
        .map_err(|_| failed(rustix::io::Errno::IO))
}

impl Adapter for FakeAdapter {
    fn name(&self) -> &str {
        FAKE_RUNTIME
    }

    fn capabilities(&self) -> Capabilities {
        FAKE_CAPABILITIES
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        let available = !self.lock().closed;
        Box::pin(async move {
            Probe {
                available,
                version: Some(FAKE_VERSION.to_owned()),
            }
        })
    }

    fn models(&self) -> BoxFuture<'_, ModelCatalog> {
        Box::pin(async {
            ModelCatalog {
                runtime: FAKE_RUNTIME.to_owned(),
                status: CatalogStatus::Unsupported,
                scope: CatalogScope::None,
                source: FAKE_RUNTIME.to_owned(),
                models: Vec::new(),
                detail: None,
                model_advice: None,
            }
        })
    }

    fn run(&self, ctx: TaskContext, host: Arc<dyn Host>) -> BoxFuture<'_, TurnOutcome> {
        Box::pin(self.run_turn(ctx, host))
    }

    fn send_message<'a>(
        &'a self,
        task_id: &'a str,
        text: String,
    ) -> BoxFuture<'a, Result<(), AgentError>> {
        let sent = match self.active(task_id) {
            Some(active) => active.messages.send(text).map_err(|_| not_active()),
            None => Err(not_active()),
        };
        Box::pin(async move { sent })
    }

    fn cancel<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, ()> {
        if let Some(active) = self.active(task_id) {
            active.stop(Stop::Cancelled);
        }
        Box::pin(async {})
    }

    fn reconcile<'a>(
        &'a self,
        _task_id: &'a str,
        _native: &'a NativeIds,
    ) -> BoxFuture<'a, ProviderState> {
        Box::pin(async {
            ProviderState {
                status: ReconcileStatus::NotRecoverable,
                provider_active: Some(false),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        let mut state = self.lock();
        state.closed = true;
        for active in state.tasks.values() {
            active.stop(Stop::Closed);
        }
        drop(state);
        Box::pin(async {})
    }
}

fn not_active() -> AgentError {
    AgentError::new(
        BridgeErrorCode::AgentTaskNotActive,
        "the task is not running in the fake runtime",
    )
}
