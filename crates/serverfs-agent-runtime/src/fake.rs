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
//! | `fake: session` | nothing | `session=<native session id>` (the continued session, or `fake-session-<task>`) |
//! | `fake: approval [<summary>]` | one `command` approval, all four decisions | `approved: <summary>` or `denied: <summary>`; `cancel_task` cancels the turn |
//! | `fake: options` | one `other` approval, all four decisions, and three exact options: `opt-allow-once` "Allow once" (`allow_once`), `opt-allow-always` "Always allow" (`allow_always`), `opt-reject` "Reject" (`reject_once`) | `option=<option_id>`; `cancel_task` cancels the turn |
//! | `fake: withdraw <ms>` | one `command` approval (`echo test`, all four decisions) that the "provider" settles itself `<ms>` after raising it unless answered first: the interaction goes stale | `withdrawn`, or `answered: <decision>`; `cancel_task` cancels the turn |
//! | `fake: two-approvals` | two approvals requested concurrently (the host queues them) | `approvals=<d1>,<d2>` |
//! | `fake: question [<text>]` | one question `q1`, options `a`/`A`, `b`/`B`, free text allowed | `answers=<resolution JSON>` |
//! | `fake: start-after <ms>` | holds the turn `<ms>` before it starts, wherever the directive stands: nothing is reported, recorded or run before (no `turn.started`, no process); a stop meanwhile ends the turn unstarted | — |
//! | `fake: wait <ms>` | sleeps; cancel interrupts it | — |
//! | `fake: steer` | waits for a steering message | `steered=<message>` |
//! | `fake: fail <CODE>` | the turn fails with the Bridge error code | — |
//! | `fake: write <name> <content>` | `workspace-write` only: creates or replaces `<name>` in the cwd (beneath its descriptor) without following symlinks; a name with `/`, a leading `.`, NUL or `\` is refused | `wrote <name>` |
//! | `fake: shell-write <name> <content>` | as `write`, but a `/bin/sh` started in the cwd writes the relative `<name>` (`printf > name`), as a provider's command would | `wrote <name>` |
//! | `fake: child-tree` | spawns `/bin/sh -c 'sleep 300 & sleep 300 & wait'` in its own process group through [`ProviderCommand`], records the group with the host, kept until cancel | `child tree exited` (only if it ends by itself) |
//! | `fake: escape-tree` | as `child-tree`, but the shell starts two `setsid` processes that ignore `SIGTERM` (one stays its child, one is orphaned at once), as Codex starts commands | `child tree exited` (only if it ends by itself) |
//! | `fake: hidden-tree` | as `child-tree`, but the shell starts one process that leaves the group and session (`setsid`), sheds the environment and so the task marker (`env -i`), ignores `SIGTERM`, is orphaned at once and writes its pid to `hidden.pid` in the cwd: out of reach of everything but a cgroup | `child tree exited` (only if it ends by itself) |
//! | `fake: env` | runs `/bin/sh -c env` through [`ProviderCommand`] with the adapter's proxy policy | `env: NAME=value, …` for every proxy-like (`*PROXY*`) or `SERVERFS_*` variable the child saw, sorted; `env: none` if there is none |
//!
//! An unknown or malformed directive fails the turn with
//! `AGENT_PROVIDER_ERROR` before anything runs.
//!
//! Every turn emits `turn.started {runtime: "fake"}` first (after the
//! `start-after` holds, if any), records the
//! native ids (`fake-session-<task>` or the continued session, and
//! `fake-turn-<task>`), emits `approval.observed` after each approval and
//! `agent.message` with the final text before completing.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustix::fs::{FileType, Mode, OFlags};
use serverfs_protocol::bridge::{
    AgentProfile, ApprovalCategory, ApprovalDecision, ApprovalOption, ApprovalOptionKind,
    ApprovalPayload, ApprovalResolution, BridgeErrorCode, EventPayload, InFlightRecovery,
    ModelCatalog, ModelDiscovery, Question, QuestionOption, QuestionPayload, ReconcileStatus,
};
use tokio::sync::mpsc;
use tokio::time::sleep;

use crate::payload;
use crate::spawn::{STOP_GRACE, spawn_provider};
use crate::turns::{ActiveTurn, Stop, StopSignal, TurnControl, TurnRegistry, expired, timed_out};
use crate::{
    Adapter, AgentError, BoxFuture, Capabilities, Host, NativeIds, Probe, ProcessGroupId,
    ProviderCommand, ProviderState, ProxyPolicy, TaskContext, TurnOutcome, WorkingDir,
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
/// What `escape-tree` runs: two processes that leave the group and session
/// (`setsid`) and ignore `SIGTERM`, one still the shell's child, one whose
/// parent exits at once (re-parented to the subreaper, or to init).
/// (An ignored `SIGTERM` survives `exec`, so each is one `sleep` with no
/// child of its own.) Public for the testkit's scripted agents, whose
/// escaping descendants are the same.
pub const ESCAPE_TREE_SCRIPT: &str = "setsid /bin/sh -c 'trap \"\" TERM; exec sleep 3600' & \
     (setsid /bin/sh -c 'trap \"\" TERM; exec sleep 3600' &) ; wait";
/// What `hidden-tree` runs: a process that nothing but its cgroup ties to
/// the provider any more (see the module documentation).
/// (An ignored `SIGTERM` survives `exec`, so the hidden process is one
/// `sleep` with no child of its own.)
const HIDDEN_TREE_SCRIPT: &str = "(setsid env -i /bin/sh -c 'echo $$ > hidden.pid; trap \"\" TERM; \
     exec sleep 3600' &) ; sleep 300 & wait";
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
    /// `session`.
    Session,
    /// `approval [<summary>]`.
    Approval(String),
    /// `options`.
    Options,
    /// `withdraw <ms>`.
    Withdraw(Duration),
    /// `two-approvals`.
    TwoApprovals,
    /// `question [<text>]`.
    Question(String),
    /// `start-after <ms>`.
    StartAfter(Duration),
    /// `wait <ms>`.
    Wait(Duration),
    /// `steer`.
    Steer,
    /// `fail <CODE>`.
    Fail(BridgeErrorCode),
    /// `write <name> <content>` or `shell-write <name> <content>`.
    Write {
        /// A plain file name inside the cwd.
        name: String,
        /// The file's new content.
        content: String,
        /// Written by a child shell started in the cwd (`shell-write`), as
        /// a provider's command would, rather than by the adapter.
        by_shell: bool,
    },
    /// `child-tree`.
    ChildTree,
    /// `escape-tree`.
    EscapeTree,
    /// `hidden-tree`.
    HiddenTree,
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
        "session" => no_argument(Directive::Session),
        "approval" => Ok(Directive::Approval(or_default(rest, DEFAULT_COMMAND))),
        "options" => no_argument(Directive::Options),
        "withdraw" => rest
            .parse::<u64>()
            .map(|ms| Directive::Withdraw(Duration::from_millis(ms)))
            .map_err(|_| malformed()),
        "two-approvals" => no_argument(Directive::TwoApprovals),
        "question" => Ok(Directive::Question(or_default(rest, DEFAULT_QUESTION))),
        "start-after" => rest
            .parse::<u64>()
            .map(|ms| Directive::StartAfter(Duration::from_millis(ms)))
            .map_err(|_| malformed()),
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
        "write" | "shell-write" => {
            let (name, content) = rest
                .split_once(char::is_whitespace)
                .map_or((rest, ""), |(name, content)| (name, content));
            if name.is_empty() {
                return Err(malformed());
            }
            Ok(Directive::Write {
                name: name.to_owned(),
                content: content.to_owned(),
                by_shell: verb == "shell-write",
            })
        }
        "child-tree" => no_argument(Directive::ChildTree),
        "escape-tree" => no_argument(Directive::EscapeTree),
        "hidden-tree" => no_argument(Directive::HiddenTree),
        "env" => no_argument(Directive::Env),
        _ => Err(AgentError::new(
            BridgeErrorCode::AgentProviderError,
            "unknown fake directive",
        )),
    }
}

/// The fake's state of one running turn, as steering and
/// [`FakeAdapter::process_group`] see it.
struct FakeTurn {
    /// Steering messages for the `steer` directive.
    messages: mpsc::UnboundedSender<String>,
    /// The `child-tree` process group while it runs.
    group: Mutex<Option<ProcessGroupId>>,
}

/// The fake adapter. See the module documentation for its prompt grammar.
pub struct FakeAdapter {
    turns: TurnRegistry<FakeTurn>,
    /// Numbers the tool-use ids of `write` events.
    writes: AtomicU64,
    /// The egress proxy policy of the processes it spawns.
    proxy: ProxyPolicy,
}

impl Default for FakeAdapter {
    fn default() -> Self {
        Self::with_proxy(ProxyPolicy::disabled())
    }
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
            turns: TurnRegistry::new(FAKE_RUNTIME),
            writes: AtomicU64::new(0),
            proxy,
        }
    }

    /// Whether `task_id` is running here (registered before `run`'s first
    /// await).
    pub fn is_active(&self, task_id: &str) -> bool {
        self.turns.active(task_id).is_ok()
    }

    /// The process group of `task_id`'s `child-tree`, while it runs.
    pub fn process_group(&self, task_id: &str) -> Option<ProcessGroupId> {
        let turn = self.turns.active(task_id).ok()?;
        *lock(&turn.state().group)
    }

    async fn run_turn(&self, ctx: TaskContext, host: Arc<dyn Host>) -> TurnOutcome {
        let native = NativeIds {
            session_id: Some(session_of(&ctx)),
            turn_id: Some(format!("fake-turn-{}", ctx.task_id)),
        };
        let (messages, inbox) = mpsc::unbounded_channel();
        let state = FakeTurn {
            messages,
            group: Mutex::new(None),
        };
        let registration = match self.turns.register(&ctx.task_id, state) {
            Ok(registration) => registration,
            Err(error) => return TurnOutcome::failed(error, NativeIds::default()),
        };
        let mut turn = Turn {
            stop: registration.stop_signal(),
            inbox,
            active: Arc::clone(registration.turn()),
        };
        let ended = match parse_script(&ctx.prompt) {
            Ok(script) => {
                turn.play(self, &ctx, host.as_ref(), script, native.clone())
                    .await
            }
            Err(error) => Err(error),
        };
        registration.outcome(ended, native)
    }
}

/// The native session of a turn: the continued one, or a new one named
/// after the task.
fn session_of(ctx: &TaskContext) -> String {
    ctx.continue_native_session_id
        .clone()
        .unwrap_or_else(|| format!("fake-session-{}", ctx.task_id))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The receiving side of one running task.
struct Turn {
    stop: StopSignal,
    inbox: mpsc::UnboundedReceiver<String>,
    active: Arc<ActiveTurn<FakeTurn>>,
}

impl Turn {
    async fn play(
        &mut self,
        adapter: &FakeAdapter,
        ctx: &TaskContext,
        host: &dyn Host,
        script: Vec<Directive>,
        native: NativeIds,
    ) -> Result<String, AgentError> {
        let deadline = ctx.deadline;
        let hold: Duration = script
            .iter()
            .filter_map(|directive| match directive {
                Directive::StartAfter(hold) => Some(*hold),
                _ => None,
            })
            .sum();
        if !hold.is_zero() {
            self.stop
                .within(deadline, async {
                    sleep(hold).await;
                    Ok(())
                })
                .await?;
        }
        // The ids are recorded before the turn is reported started, so a
        // client that waits for `turn.started` sees no later task change
        // from this step (a long poll would end on it).
        self.stop
            .within(deadline, async {
                host.record_native_ids(native).await?;
                host.report(EventPayload::TurnStarted {
                    runtime: Some(FAKE_RUNTIME.to_owned()),
                })
                .await;
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
        self.stop
            .within(deadline, async {
                host.report(EventPayload::AgentMessage {
                    text: text.clone(),
                    phase: None,
                    truncated: false,
                    size_bytes: None,
                    sha256: None,
                })
                .await;
                Ok(())
            })
            .await?;
        Ok(text)
    }

    /// A `cancel_task` decision: the turn cancels itself, as a provider
    /// told to abort would.
    fn cancelled_by_decision(&self) -> AgentError {
        self.active.stop(Stop::Cancelled);
        AgentError::provider("the approval decision cancelled the task")
    }

    async fn step(
        &mut self,
        adapter: &FakeAdapter,
        ctx: &TaskContext,
        host: &dyn Host,
        directive: Directive,
    ) -> Result<Option<String>, AgentError> {
        let deadline = ctx.deadline;
        match directive {
            Directive::Complete(text) => Ok(Some(text)),
            Directive::Session => Ok(Some(format!("session={}", session_of(ctx)))),
            Directive::Approval(summary) => {
                let resolution = self
                    .stop
                    .within(deadline, host.request_approval(approval_payload(&summary)))
                    .await?;
                let decision = observe(host, resolution).await;
                Ok(Some(match decision {
                    ApprovalDecision::ApproveOnce | ApprovalDecision::ApproveSession => {
                        format!("approved: {summary}")
                    }
                    ApprovalDecision::Deny => format!("denied: {summary}"),
                    ApprovalDecision::CancelTask => return Err(self.cancelled_by_decision()),
                }))
            }
            Directive::Withdraw(after) => {
                // The provider settles its own request `after` it raised
                // it, unless the human answered first; dropping the wait
                // withdraws the interaction, which goes stale.
                let asked = host.request_approval(approval_payload(DEFAULT_COMMAND));
                let answered = self
                    .stop
                    .within(deadline, async {
                        tokio::select! {
                            resolution = asked => resolution.map(Some),
                            () = sleep(after) => Ok(None),
                        }
                    })
                    .await?;
                match answered {
                    Some(resolution) => {
                        let decision = observe(host, resolution).await;
                        if decision == ApprovalDecision::CancelTask {
                            return Err(self.cancelled_by_decision());
                        }
                        Ok(Some(format!("answered: {}", decision.as_str())))
                    }
                    None => Ok(Some("withdrawn".to_owned())),
                }
            }
            Directive::Options => {
                let resolution = self
                    .stop
                    .within(deadline, host.request_approval(options_payload()))
                    .await?;
                let option_id = resolution.option_id.clone();
                if observe(host, resolution).await == ApprovalDecision::CancelTask {
                    return Err(self.cancelled_by_decision());
                }
                // An ACP-like provider cannot act on a bare decision: it
                // needs the id of one of its own options.
                let option_id = option_id.ok_or_else(|| {
                    AgentError::provider("the approval named none of the offered options")
                })?;
                Ok(Some(format!("option={option_id}")))
            }
            Directive::TwoApprovals => {
                let (first, second) = self
                    .stop
                    .within(deadline, async {
                        // Both requests are in flight at once: the host
                        // queues the second behind the first.
                        let (first, second) = tokio::join!(
                            host.request_approval(approval_payload("echo first")),
                            host.request_approval(approval_payload("echo second")),
                        );
                        Ok((first?, second?))
                    })
                    .await?;
                let first = observe(host, first).await;
                let second = observe(host, second).await;
                if first == ApprovalDecision::CancelTask || second == ApprovalDecision::CancelTask {
                    return Err(self.cancelled_by_decision());
                }
                Ok(Some(format!(
                    "approvals={},{}",
                    first.as_str(),
                    second.as_str()
                )))
            }
            Directive::Question(text) => {
                let resolution = self
                    .stop
                    .within(deadline, host.ask_question(question_payload(&text)))
                    .await?;
                let json = serde_json::to_string(&resolution)
                    .map_err(|_| AgentError::provider("the answer could not be encoded"))?;
                Ok(Some(format!("answers={json}")))
            }
            // Held before the turn started (`play`).
            Directive::StartAfter(_) => Ok(None),
            Directive::Wait(duration) => {
                self.stop
                    .within(deadline, async {
                        sleep(duration).await;
                        Ok(())
                    })
                    .await?;
                Ok(None)
            }
            Directive::Steer => {
                let inbox = &mut self.inbox;
                let message = self
                    .stop
                    .within(deadline, async {
                        inbox.recv().await.ok_or_else(|| {
                            AgentError::new(
                                BridgeErrorCode::AgentTaskNotActive,
                                "the steering channel closed",
                            )
                        })
                    })
                    .await?;
                Ok(Some(format!("steered={message}")))
            }
            Directive::Fail(code) => {
                Err(AgentError::new(code, "the fake runtime failed as scripted"))
            }
            Directive::Write {
                name,
                content,
                by_shell,
            } => {
                if ctx.profile != AgentProfile::WorkspaceWrite {
                    return Err(AgentError::new(
                        BridgeErrorCode::AgentProfileNotAllowed,
                        "writing needs the workspace-write profile",
                    ));
                }
                if !is_plain_name(&name) {
                    return Err(AgentError::new(
                        BridgeErrorCode::InvalidWorkdirPath,
                        "the fake write target is not a plain file name",
                    ));
                }
                let number = adapter.writes.fetch_add(1, Ordering::Relaxed);
                self.stop
                    .within(deadline, async {
                        host.report(EventPayload::FileChangeStarted {
                            tool: "write".to_owned(),
                            tool_use_id: format!("fake-write-{number}"),
                            input: Some(serde_json::json!({ "path": name })),
                        })
                        .await;
                        Ok(())
                    })
                    .await?;
                if by_shell {
                    self.stop
                        .within(deadline, shell_write(adapter, ctx, host, &name, &content))
                        .await?;
                } else {
                    write_beneath(&ctx.cwd, &name, content.as_bytes())?;
                }
                Ok(Some(format!("wrote {name}")))
            }
            Directive::ChildTree => self.child_tree(adapter, ctx, host, CHILD_TREE_SCRIPT).await,
            Directive::EscapeTree => {
                self.child_tree(adapter, ctx, host, ESCAPE_TREE_SCRIPT)
                    .await
            }
            Directive::HiddenTree => {
                self.child_tree(adapter, ctx, host, HIDDEN_TREE_SCRIPT)
                    .await
            }
            Directive::Env => self
                .stop
                .within(deadline, child_environment(adapter, ctx))
                .await
                .map(Some),
        }
    }

    /// Spawns the process tree `script` and keeps it until the turn is
    /// stopped (or the shell ends by itself); then stops the whole tree and
    /// proves it gone.
    async fn child_tree(
        &mut self,
        adapter: &FakeAdapter,
        ctx: &TaskContext,
        host: &dyn Host,
        script: &str,
    ) -> Result<Option<String>, AgentError> {
        let mut command = ProviderCommand::new(SHELL, &ctx.cwd);
        command.args(["-c", script]).proxy(adapter.proxy.clone());
        let mut child = spawn_provider(&command, Some(host), "the fake child tree").await?;
        let group = &self.active.state().group;
        *lock(group) = Some(child.process_group());
        let ended = tokio::select! {
            _ = self.stop.stopped() => Some(AgentError::provider("the turn was stopped")),
            () = expired(ctx.deadline) => Some(timed_out()),
            _ = child.wait() => None,
        };
        let termination = child.terminate(STOP_GRACE).await;
        *lock(group) = None;
        if !termination.tree_gone {
            return Err(AgentError::provider(
                "the fake child tree could not be proven stopped",
            ));
        }
        match ended {
            Some(end) => Err(end),
            None => Ok(Some("child tree exited".to_owned())),
        }
    }
}

/// Has `/bin/sh`, started in the cwd, write `content` to the relative
/// `name`: the file lands wherever the child's cwd is.
async fn shell_write(
    adapter: &FakeAdapter,
    ctx: &TaskContext,
    host: &dyn Host,
    name: &str,
    content: &str,
) -> Result<(), AgentError> {
    let failed = || AgentError::new(BridgeErrorCode::AgentProviderError, "the fake write failed");
    let mut command = ProviderCommand::new(SHELL, &ctx.cwd);
    command
        .args(["-c", "printf '%s' \"$2\" > \"$1\"", "sh", name, content])
        .proxy(adapter.proxy.clone());
    // Recorded like any provider: it writes in the workdir.
    let mut child = spawn_provider(&command, Some(host), "the fake shell").await?;
    let status = child.wait().await.map_err(|_| failed())?;
    let _stopped = child.terminate(STOP_GRACE).await;
    if status.success() {
        Ok(())
    } else {
        Err(failed())
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
    let _stopped = child.terminate(STOP_GRACE).await;
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

/// Reports `approval.observed` and hands back the decision.
async fn observe(host: &dyn Host, resolution: ApprovalResolution) -> ApprovalDecision {
    let decision = resolution.decision;
    host.report(EventPayload::ApprovalObserved(resolution))
        .await;
    decision
}

fn approval_payload(command: &str) -> ApprovalPayload {
    let mut payload = payload::approval(
        ApprovalCategory::Command,
        "Fake command approval",
        ApprovalDecision::ALL.to_vec(),
    );
    payload.command_display = Some(command.to_owned());
    payload.relative_cwd = Some(".".to_owned());
    payload
}

/// The `options` approval: exact options as an ACP agent offers them.
fn options_payload() -> ApprovalPayload {
    let option = |id: &str, label: &str, kind| ApprovalOption {
        option_id: id.to_owned(),
        label: label.to_owned(),
        kind,
    };
    let mut payload = payload::approval(
        ApprovalCategory::Other,
        "Fake exact-option approval",
        ApprovalDecision::ALL.to_vec(),
    );
    payload.options = Some(vec![
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
    ]);
    payload
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
/// beneath the directory descriptor the core opened (never by the cwd's
/// path) without following a symlink; a non-regular file there (FIFO,
/// device, directory) is refused.
fn write_beneath(cwd: &WorkingDir, name: &str, content: &[u8]) -> Result<(), AgentError> {
    let failed = |_| AgentError::new(BridgeErrorCode::AgentProviderError, "the fake write failed");
    // NONBLOCK: a FIFO planted under the name must not hang the turn.
    let file = rustix::fs::openat(
        cwd,
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

    fn turns(&self) -> &dyn TurnControl {
        &self.turns
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        let available = !self.turns.is_closed();
        Box::pin(async move {
            Probe {
                available,
                version: Some(FAKE_VERSION.to_owned()),
            }
        })
    }

    fn models(&self) -> BoxFuture<'_, ModelCatalog> {
        Box::pin(async { payload::catalog_unsupported(FAKE_RUNTIME, FAKE_RUNTIME) })
    }

    fn run(&self, ctx: TaskContext, host: Arc<dyn Host>) -> BoxFuture<'_, TurnOutcome> {
        Box::pin(self.run_turn(ctx, host))
    }

    fn send_message<'a>(
        &'a self,
        task_id: &'a str,
        text: String,
    ) -> BoxFuture<'a, Result<(), AgentError>> {
        let sent = self.turns.active(task_id).and_then(|turn| {
            turn.state().messages.send(text).map_err(|_| {
                AgentError::new(
                    BridgeErrorCode::AgentTaskNotActive,
                    "the task is not running in the fake runtime",
                )
            })
        });
        Box::pin(async move { sent })
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
}
