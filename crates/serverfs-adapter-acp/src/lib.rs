//! The generic ACP runtime of the ServerFS Agent Bridge: any agent that
//! speaks the Agent Client Protocol, version 1, over stdio (OpenCode,
//! codex-acp, claude-agent-acp, …), as an operator-configured profile
//! `acp-<id>` (spec-adapters.md §5, seed 002). One adapter serves every
//! profile; nothing in it depends on which agent runs.
//!
//! One agent process per task, started through the kit like every
//! provider (the authorized working directory, a process group of its own
//! recorded in the recovery guard before it acts, a scrubbed environment
//! plus only the profile's variables, the agent proxy policy, bounded
//! stderr). On it: `initialize` (protocol version 1 required; no file
//! system, no terminal offered), `session/new` with no MCP servers (or,
//! for a continuation, `session/resume`, else `session/load` with its
//! replay suppressed), the model when the task names one (`models`),
//! `session/prompt`,
//! and the agent's traffic until the prompt answers: updates become events
//! (`updates`), permission requests approvals with the agent's own options
//! (`interactions`), every other request is refused at once. A cancelled
//! turn answers pending permissions `cancelled`, sends `session/cancel`,
//! waits a bounded grace for the turn to end, and the process group is
//! stopped and proven gone; so it is after a normal end, before a success
//! is reported.
//!
//! What the agent can do (session continuation, a model selector) is
//! measured, never assumed: `list_agent_runtimes` reports the capability
//! snapshot of the last successful handshake with when it was taken
//! (`snapshot`), and starts no process; [`AcpAdapter::measure`] is the
//! separate, bounded probe.
//!
//! # Why the kit's JSON-RPC peer, not the crate's connection
//!
//! The official `agent-client-protocol` crate (pinned exactly) provides the
//! schema: every method name, params and result type here is its v1
//! `schema` type, sent through its `JsonRpcRequest` implementation
//! (`wire`). The wire itself is the kit's [`JsonRpcPeer`] over the kit's
//! line framing, as for Codex, rather than the crate's connection builder:
//! the child is spawned by the kit's helper (the crate's `AcpAgent` has no
//! working directory, environment policy or group record), the line cap
//! and the skipping of stray non-JSON lines are the ones every adapter
//! has, a permission request is served on its own task by construction
//! (the crate's dispatch-loop rule — a callback must hand its responder
//! away and return — cannot be broken), and the conformance matrix tests
//! the same peer the other runtimes use.
//!
//! [`JsonRpcPeer`]: serverfs_agent_runtime::jsonrpc::JsonRpcPeer
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use serverfs_adapter_acp::{AcpAdapter, AcpConfig};
//! use serverfs_agent_runtime::ProxyPolicy;
//!
//! let opencode = AcpAdapter::new(AcpConfig {
//!     runtime: "acp-opencode".to_owned(),
//!     command: "/usr/local/bin/opencode".into(),
//!     args: vec!["acp".to_owned()],
//!     env: vec![("OPENCODE_DISABLE_AUTOUPDATE".to_owned(), "true".to_owned())],
//!     env_passthrough: vec!["OPENAI_API_KEY".to_owned()],
//!     request_timeout: Duration::from_secs(60),
//!     probe_timeout: Duration::from_secs(30),
//!     shutdown_timeout: Duration::from_secs(3),
//!     session_scoped_allow_always: false,
//!     proxy: ProxyPolicy::disabled(),
//!     snapshot_file: None,
//! });
//! # drop(opencode);
//! ```

#![warn(missing_docs)]

mod connect;
mod interactions;
mod models;
mod snapshot;
mod turn;
mod updates;
mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::NewSessionRequest;
use serverfs_agent_runtime::payload::{catalog_unavailable, catalog_unsupported};
use serverfs_agent_runtime::turns::{StopSignal, TurnControl, TurnRegistry};
use serverfs_agent_runtime::{
    Adapter, AgentError, BoxFuture, BridgeErrorCode, Capabilities, Host, NativeIds, Probe,
    ProviderCommand, ProviderState, ProxyPolicy, TaskContext, TurnOutcome, WorkingDir,
};
use serverfs_protocol::bridge::{
    AgentProfile, CapabilityState, InFlightRecovery, ModelCatalog, ModelDiscovery, RuntimeInfo,
};

use self::connect::{Connection, request_failed};
use self::models::{ModelSelector, NO_CATALOG_SOURCE};
use self::snapshot::{Measured, Snapshot, fingerprint};
use self::turn::{Turn, TurnSettings};
use self::wire::call_keeping_raw;

/// One ACP profile as the Bridge runs it, resolved at start-up from the
/// operator's `[[agent.acp_profiles]]`.
///
/// # Security
///
/// Nothing here comes from a task: the command is absolute, the arguments
/// fixed, the environment the kit's scrubbed base plus `env` and the
/// variables named in `env_passthrough`.
#[derive(Debug, Clone)]
pub struct AcpConfig {
    /// The runtime name, `acp-<id>`.
    pub runtime: String,
    /// The agent's absolute executable.
    pub command: PathBuf,
    /// Its fixed arguments.
    pub args: Vec<String>,
    /// Fixed, non-secret environment pairs.
    pub env: Vec<(String, String)>,
    /// Variables of the Bridge's environment handed to the agent.
    pub env_passthrough: Vec<String>,
    /// Bound of `initialize` and of the session and model requests.
    pub request_timeout: Duration,
    /// Bound of [`AcpAdapter::measure`].
    pub probe_timeout: Duration,
    /// The grace of a cancelled turn after `session/cancel`, and of an
    /// agent's own exit once its stdin closes.
    pub shutdown_timeout: Duration,
    /// Whether the agent's `allow_always` may be offered as
    /// `approve_session`.
    pub session_scoped_allow_always: bool,
    /// The runtime's egress proxy policy.
    pub proxy: ProxyPolicy,
    /// Where the capability snapshot is kept across restarts (a private
    /// file in the Bridge's state directory); `None`: in memory only.
    pub snapshot_file: Option<PathBuf>,
}

impl AcpConfig {
    /// The agent's command in the opened `cwd`: the profile's arguments
    /// and pairs, `PWD`, the passthrough names and the proxy policy.
    fn command(&self, cwd: &WorkingDir) -> ProviderCommand {
        let mut command = ProviderCommand::new(&self.command, cwd);
        command.args(&self.args);
        for (name, value) in &self.env {
            command.env(name.clone(), value.clone());
        }
        // `PWD` names where the directory is now; the agent itself starts
        // in the opened directory whatever the name says.
        if let Ok(path) = cwd.current_path() {
            command.env("PWD", path.to_string_lossy().into_owned());
        }
        command
            .pass_through(self.env_passthrough.iter().cloned())
            .proxy(self.proxy.clone());
        command
    }

    /// What identifies this launch configuration: a changed command,
    /// argument or environment may be another agent, whose capabilities
    /// are measured anew.
    fn fingerprint(&self) -> String {
        let command = self.command.to_string_lossy();
        let mut parts: Vec<&str> = vec!["acp-profile-v1", &self.runtime, &command, "args"];
        parts.extend(self.args.iter().map(String::as_str));
        parts.push("env");
        for (name, value) in &self.env {
            parts.extend([name.as_str(), value.as_str()]);
        }
        parts.push("passthrough");
        parts.extend(self.env_passthrough.iter().map(String::as_str));
        fingerprint(parts)
    }
}

/// An ACP runtime: one operator profile.
pub struct AcpAdapter {
    config: AcpConfig,
    turns: TurnRegistry<()>,
    snapshot: Snapshot,
}

/// The capabilities of an agent measured as `measured` (`None`: not yet):
/// conservative until measured, then what the agent advertised.
fn capabilities_of(measured: Option<&Measured>) -> Capabilities {
    let persistent = measured.is_some_and(Measured::continues_sessions);
    let models = measured.and_then(|measured| measured.model_selector) == Some(true);
    Capabilities {
        persistent_session: persistent,
        // ACP v1 has no way to add to a running prompt turn.
        live_steer: false,
        // Every `session/request_permission` is brokered; ACP has no flag
        // by which an agent would advertise that it asks.
        interactive_approval: true,
        // ACP v1 has no question request, and no elicitation is offered.
        interactive_question: false,
        // A new agent process continues the recorded session; the old one
        // is never reattached.
        in_flight_recovery: if persistent {
            InFlightRecovery::SessionResume
        } else {
            InFlightRecovery::None
        },
        model_override: models,
        model_discovery: if models {
            ModelDiscovery::RuntimeCatalog
        } else {
            ModelDiscovery::Unsupported
        },
    }
}

/// Whether `path` is a regular file someone may execute (the local
/// launch prerequisite a probe may check without starting anything).
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

impl AcpAdapter {
    /// The runtime of `config`, with the capability snapshot found in its
    /// file (if it matches this configuration).
    pub fn new(config: AcpConfig) -> AcpAdapter {
        let snapshot = Snapshot::load(config.snapshot_file.clone(), config.fingerprint());
        AcpAdapter {
            turns: TurnRegistry::new(config.runtime.clone()),
            snapshot,
            config,
        }
    }

    /// Measures the agent's capabilities now: a bounded spawn,
    /// `initialize` and shutdown, with no session (so no inference). The
    /// snapshot then reports what the agent advertised.
    ///
    /// `probe_timeout` bounds the whole probe; `initialize` within it is
    /// one request, bounded by `request_timeout` as every request. An agent
    /// still running when the probe's bound passes is killed with its
    /// process group (it ran in a private scratch directory, on no task).
    ///
    /// # Errors
    ///
    /// The spawn's or handshake's error, or `AGENT_PROVIDER_DISCONNECTED`
    /// when the whole probe outlasts `probe_timeout`.
    pub async fn measure(&self) -> Result<(), AgentError> {
        let runtime = &self.config.runtime;
        let (_scratch, cwd) = scratch_dir()?;
        let measured = tokio::time::timeout(self.config.probe_timeout, async {
            let command = self.config.command(&cwd);
            let connection = Connection::open(
                &command,
                None,
                runtime,
                self.config.request_timeout,
                self.config.shutdown_timeout,
            )
            .await?;
            self.snapshot.record_handshake(&connection.handshake);
            connection.close(self.config.shutdown_timeout).await;
            Ok(())
        })
        .await;
        measured.unwrap_or_else(|_| {
            Err(AgentError::new(
                BridgeErrorCode::AgentProviderDisconnected,
                format!("{runtime} did not finish its probe in time"),
            ))
        })
    }

    async fn run_turn(&self, ctx: TaskContext, host: Arc<dyn Host>) -> TurnOutcome {
        if ctx.profile != AgentProfile::WorkspaceWrite {
            // No read-only mode of an ACP agent is enforceable: every task
            // holds the writer lease (seed 002 §5.4).
            return TurnOutcome::failed(
                AgentError::new(
                    BridgeErrorCode::AgentProfileNotAllowed,
                    format!(
                        "{} requires the workspace-write profile",
                        self.config.runtime
                    ),
                ),
                NativeIds::default(),
            );
        }
        let registration = match self.turns.register(&ctx.task_id, ()) {
            Ok(registration) => registration,
            Err(error) => return TurnOutcome::failed(error, NativeIds::default()),
        };
        let active = Arc::clone(registration.turn());
        let mut native = NativeIds {
            session_id: ctx.continue_native_session_id.clone(),
            turn_id: None,
        };
        let result = self
            .drive(
                &ctx,
                &host,
                &active,
                registration.stop_signal(),
                &mut native,
            )
            .await;
        registration.outcome(result, native)
    }

    /// Spawns the agent, runs the turn and stops the agent; `Ok(final
    /// text)` only when the turn completed and the agent's process group
    /// is proven gone.
    async fn drive(
        &self,
        ctx: &TaskContext,
        host: &Arc<dyn Host>,
        active: &Arc<serverfs_agent_runtime::turns::ActiveTurn<()>>,
        mut stop: StopSignal,
        native: &mut NativeIds,
    ) -> Result<String, AgentError> {
        let config = &self.config;
        let command = config.command(&ctx.cwd);
        let mut connection = stop
            .unless_stopped(Connection::open(
                &command,
                Some(host.as_ref()),
                &config.runtime,
                config.request_timeout,
                config.shutdown_timeout,
            ))
            .await?;
        self.snapshot.record_handshake(&connection.handshake);
        let handshake = connection.handshake.clone();
        let result = {
            let mut turn = Turn::new(
                TurnSettings {
                    runtime: &config.runtime,
                    request_timeout: config.request_timeout,
                    shutdown_timeout: config.shutdown_timeout,
                    session_scoped_allow_always: config.session_scoped_allow_always,
                    snapshot: &self.snapshot,
                },
                ctx,
                host,
                active,
                stop,
                native,
                Arc::clone(&connection.peer),
                &mut connection.incoming,
                &handshake,
            );
            turn.follow().await
            // The turn goes here: every permission handler still waiting
            // is aborted, and its hold on the connection with it.
        };
        let stopped = connection.close(config.shutdown_timeout).await;
        match result {
            // A final answer alone is no proof that the agent stopped
            // working in the workdir (seed 002 §7.3).
            Ok(_) if !stopped => Err(AgentError::provider(format!(
                "{} finished its turn, but its processes could not be proven stopped",
                config.runtime
            ))),
            other => other,
        }
    }

    /// The catalog from a short session that runs no prompt, in an empty
    /// private directory.
    async fn catalog(&self) -> Result<ModelCatalog, AgentError> {
        let config = &self.config;
        let runtime = &config.runtime;
        let (scratch, cwd) = scratch_dir()?;
        let command = config.command(&cwd);
        let connection = Connection::open(
            &command,
            None,
            runtime,
            config.request_timeout,
            config.shutdown_timeout,
        )
        .await?;
        self.snapshot.record_handshake(&connection.handshake);
        let request = NewSessionRequest::new(scratch.path());
        let answer = call_keeping_raw(&connection.peer, &request, config.request_timeout).await;
        connection.close(config.shutdown_timeout).await;
        let (answer, raw) =
            answer.map_err(|failure| request_failed(runtime, "session/new", &failure))?;
        let selector = ModelSelector::of(answer.config_options.as_deref(), &raw);
        self.snapshot.record_model_selector(selector.is_some());
        Ok(selector.map_or_else(
            || catalog_unsupported(runtime, NO_CATALOG_SOURCE),
            |selector| selector.catalog(runtime),
        ))
    }
}

/// A fresh private directory for an agent that runs no task (a probe, a
/// model list), and the same directory opened: an agent started in a large
/// directory may scan it first, and must not write into a workdir. The
/// directory is removed when the first value is dropped.
fn scratch_dir() -> Result<(tempfile::TempDir, WorkingDir), AgentError> {
    let unavailable = || {
        AgentError::new(
            BridgeErrorCode::AgentRuntimeNotReady,
            "no private directory for the agent",
        )
    };
    let scratch = tempfile::Builder::new()
        .prefix("serverfs-acp")
        .tempdir()
        .map_err(|_| unavailable())?;
    // The Bridge made it, privately: no client can have swapped it.
    let cwd = WorkingDir::open_trusted(scratch.path()).map_err(|_| unavailable())?;
    Ok((scratch, cwd))
}

impl Adapter for AcpAdapter {
    fn name(&self) -> &str {
        &self.config.runtime
    }

    fn capabilities(&self) -> Capabilities {
        capabilities_of(self.snapshot.get().as_ref())
    }

    // ACP v1 has no way to add to a running prompt turn: the default
    // `send_message` refuses steering. On the default `cancel` the turn
    // loop does the agent's side: pending permissions answered
    // `cancelled`, `session/cancel`, a bounded grace, the group stopped.
    fn turns(&self) -> &dyn TurnControl {
        &self.turns
    }

    fn runtime_info(&self, probe: &Probe) -> RuntimeInfo {
        let measured = self.snapshot.get();
        let mut info = capabilities_of(measured.as_ref()).runtime_info(self.name(), probe);
        info.capability_state = Some(if measured.is_some() {
            CapabilityState::Measured
        } else {
            CapabilityState::Unmeasured
        });
        info.capabilities_measured_at = measured.map(|measured| measured.measured_at);
        info
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        // Never a process start (seed 002 §8.1): only what the file system
        // says of the command, and the version last measured.
        let available = !self.turns.is_closed() && is_executable(&self.config.command);
        let version = self
            .snapshot
            .get()
            .and_then(|measured| measured.agent_version);
        Box::pin(async move { Probe { available, version } })
    }

    fn models(&self) -> BoxFuture<'_, ModelCatalog> {
        Box::pin(async move {
            match self.catalog().await {
                Ok(catalog) => catalog,
                Err(_) => catalog_unavailable(
                    &self.config.runtime,
                    NO_CATALOG_SOURCE,
                    "model discovery failed",
                ),
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
        // A recorded session is resumable when the agent can continue
        // sessions at all (as last measured).
        let continues = self
            .snapshot
            .get()
            .is_some_and(|measured| measured.continues_sessions());
        let state = ProviderState::bridge_owned(native.session_id.is_some() && continues);
        Box::pin(async move { state })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(load: bool, resume: bool, models: Option<bool>) -> Measured {
        Measured {
            measured_at: 1,
            agent_name: None,
            agent_version: None,
            load_session: load,
            resume_session: resume,
            model_selector: models,
        }
    }

    #[test]
    fn capabilities_are_conservative_until_measured() {
        let unmeasured = capabilities_of(None);
        assert_eq!(
            unmeasured,
            Capabilities {
                persistent_session: false,
                live_steer: false,
                interactive_approval: true,
                interactive_question: false,
                in_flight_recovery: InFlightRecovery::None,
                model_override: false,
                model_discovery: ModelDiscovery::Unsupported,
            }
        );
        let resumable = capabilities_of(Some(&measured(false, true, Some(true))));
        assert!(resumable.persistent_session && resumable.model_override);
        assert_eq!(
            resumable.in_flight_recovery,
            InFlightRecovery::SessionResume
        );
        assert_eq!(resumable.model_discovery, ModelDiscovery::RuntimeCatalog);
        let loadable = capabilities_of(Some(&measured(true, false, None)));
        assert!(loadable.persistent_session && !loadable.model_override);
        assert!(!capabilities_of(Some(&measured(false, false, Some(false)))).persistent_session);
    }

    #[test]
    fn the_fingerprint_follows_the_launch_configuration() {
        let config = AcpConfig {
            runtime: "acp-a".to_owned(),
            command: "/bin/a".into(),
            args: vec!["x".to_owned()],
            env: Vec::new(),
            env_passthrough: Vec::new(),
            request_timeout: Duration::from_secs(1),
            probe_timeout: Duration::from_secs(1),
            shutdown_timeout: Duration::from_secs(1),
            session_scoped_allow_always: false,
            proxy: ProxyPolicy::disabled(),
            snapshot_file: None,
        };
        let same = AcpConfig {
            request_timeout: Duration::from_secs(9),
            ..config.clone()
        };
        assert_eq!(
            config.fingerprint(),
            same.fingerprint(),
            "timeouts change no agent"
        );
        let other_args = AcpConfig {
            args: vec!["y".to_owned()],
            ..config.clone()
        };
        assert_ne!(config.fingerprint(), other_args.fingerprint());
        let other_env = AcpConfig {
            env: vec![("X".to_owned(), "1".to_owned())],
            ..config.clone()
        };
        assert_ne!(config.fingerprint(), other_env.fingerprint());
    }
}
