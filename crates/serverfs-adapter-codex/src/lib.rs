//! The OpenAI Codex runtime: the official App Server JSON-RPC protocol
//! (spec-adapters.md §2), in native mode — the Bridge sends no sandbox,
//! approval-policy or configuration override, so the user's own Codex
//! configuration decides what Codex may do and when it asks.
//!
//! One turn per task: `thread/start` (or `thread/resume` for a
//! continuation), `turn/start`, then the turn's messages until
//! `turn/completed`. Server requests (approvals, questions) are served
//! concurrently, each through the host, which queues them and presents one
//! at a time; any request kind the Bridge does not serve is refused at once
//! so the turn never hangs. Steering is `turn/steer`, cancellation
//! `turn/interrupt`: the turn loop interrupts as soon as it is told to
//! stop, and a stop that comes before the turn id exists ends the turn
//! before `turn/start` is sent.
//!
//! Modules: `connect` (transports and the handshake), `websocket` (the
//! managed daemon's framing), `wire` (the typed protocol subset), `turn`
//! (the turn loop), `interactions` (server requests ↔ neutral
//! interactions), `models` (the catalog).

#![warn(missing_docs)]

mod connect;
mod interactions;
mod models;
mod turn;
mod websocket;
mod wire;

use std::path::Path;
use std::sync::Arc;

use serverfs_agent_runtime::payload::catalog_unavailable;
use serverfs_agent_runtime::probe::{ProbeCache, version_probe};
use serverfs_agent_runtime::serving::ServingSet;
use serverfs_agent_runtime::turns::{ActiveTurn, TurnControl, TurnRegistry};
use serverfs_agent_runtime::{
    Adapter, AgentError, BoxFuture, BridgeErrorCode, Capabilities, Host, NativeIds, Probe,
    ProviderState, StartDir, TaskContext, TurnOutcome,
};
use serverfs_protocol::bridge::{
    AgentProfile, CatalogScope, CatalogStatus, InFlightRecovery, ModelCatalog, ModelDiscovery,
    ReconcileStatus,
};
use tokio::sync::watch;

pub use connect::{CodexConfig, CodexTransport};

use self::connect::{Connection, call, request_failed};
use self::turn::{Turn, TurnHandleSlot};
use self::wire::{
    ModelList, ModelListParams, Tagged, TextInput, ThreadRead, ThreadReadParams, ThreadStatus,
    TurnSteer, TurnSteerParams,
};

/// The runtime's name.
pub const CODEX_RUNTIME: &str = "codex";

/// What Codex can do through the App Server.
pub const CODEX_CAPABILITIES: Capabilities = Capabilities {
    persistent_session: true,
    live_steer: true,
    interactive_approval: true,
    interactive_question: true,
    in_flight_recovery: InFlightRecovery::SessionResume,
    model_override: true,
    model_discovery: ModelDiscovery::RuntimeCatalog,
};

/// Most models listed.
const MAX_MODELS: usize = 64;

/// Where the catalog comes from, as `list_agent_models` reports it.
const CATALOG_SOURCE: &str = "codex_app_server";

/// The Codex adapter.
pub struct CodexAdapter {
    config: CodexConfig,
    turns: TurnRegistry<TurnHandleSlot>,
    probes: ProbeCache,
}

impl CodexAdapter {
    /// A Codex adapter with `config`.
    pub fn new(config: CodexConfig) -> CodexAdapter {
        CodexAdapter {
            config,
            turns: TurnRegistry::new(CODEX_RUNTIME),
            probes: ProbeCache::default(),
        }
    }

    /// Looks at the runtime without starting anything: `codex --version`
    /// (stdio), or a handshake with the daemon (never starting it).
    async fn probe_now(&self) -> Probe {
        match self.config.transport {
            CodexTransport::Stdio => self.version_probe().await,
            CodexTransport::Daemon { autostart } => match self.side_connection().await {
                Ok(connection) => {
                    let version = connection.user_agent.as_deref().and_then(version_of);
                    connection.close().await;
                    Probe {
                        available: true,
                        version,
                    }
                }
                // A daemon that a task may start is available when the
                // CLI that starts it runs; otherwise submit would refuse
                // every task and autostart never run.
                Err(_) if autostart => self.version_probe().await,
                Err(_) => Probe {
                    available: false,
                    version: None,
                },
            },
        }
    }

    /// A short-lived connection for probes, model lists and
    /// reconciliation; a Bridge-owned child runs in Codex's home. Never
    /// starts the managed daemon: only a task may (autostart), not a probe,
    /// a model list or a reconciliation.
    async fn side_connection(&self) -> Result<Connection, AgentError> {
        let home = self.config.home.clone();
        let cwd = StartDir::Trusted(if home.is_dir() {
            home
        } else {
            Path::new("/").to_path_buf()
        });
        let mut config = self.config.clone();
        if let CodexTransport::Daemon { autostart } = &mut config.transport {
            *autostart = false;
        }
        Connection::open(&config, cwd, None).await
    }

    /// `codex --version`, bounded.
    async fn version_probe(&self) -> Probe {
        let mut command = self.config.command(Path::new("/"));
        command.args(["--version"]);
        version_probe(&command, version_of).await
    }

    async fn run_turn(&self, ctx: TaskContext, host: Arc<dyn Host>) -> TurnOutcome {
        if ctx.profile != AgentProfile::WorkspaceWrite {
            return TurnOutcome::failed(
                AgentError::new(
                    BridgeErrorCode::AgentProfileNotAllowed,
                    "codex currently requires the workspace-write profile",
                ),
                NativeIds::default(),
            );
        }
        let registration = match self.turns.register(&ctx.task_id, watch::channel(None).0) {
            Ok(registration) => registration,
            Err(error) => return TurnOutcome::failed(error, NativeIds::default()),
        };
        let active = Arc::clone(registration.turn());
        let _clear = ClearHandle(Arc::clone(&active));
        let mut stop = registration.stop_signal();
        let mut native = NativeIds {
            session_id: ctx.continue_native_session_id.clone(),
            turn_id: None,
        };
        let opened = stop
            .unless_stopped(Connection::open(
                &self.config,
                StartDir::from(&ctx.cwd),
                Some(host.as_ref()),
            ))
            .await;
        let result = match opened {
            Ok(mut connection) => {
                let mut turn = Turn {
                    ctx: &ctx,
                    host: &host,
                    active: &active,
                    stop,
                    native: &mut native,
                    serving: ServingSet::default(),
                    final_answer: None,
                    last_message: None,
                };
                let peer = Arc::clone(&connection.peer);
                let result = turn.follow(&peer, &mut connection.incoming).await;
                // Aborts every server request still being served.
                drop(turn);
                active.state().send_replace(None);
                drop(peer);
                connection.close().await;
                result
            }
            Err(error) => Err(error),
        };
        registration.outcome(result, native)
    }
}

/// Clears a turn's handle however its run ends — returned, or dropped by
/// the runner once its bounded wait is over: the handle holds the
/// connection's peer, which must not outlive the turn.
struct ClearHandle(Arc<ActiveTurn<TurnHandleSlot>>);

impl Drop for ClearHandle {
    fn drop(&mut self) {
        self.0.state().send_replace(None);
    }
}

/// The version in a `codex --version` line (`codex-cli 0.171.0`) or a
/// `userAgent` (`codex_app_server/0.171.0 (…)`).
fn version_of(text: &str) -> Option<String> {
    let text = text.trim();
    let version = text
        .strip_prefix("codex-cli ")
        .or_else(|| text.split_once('/').map(|(_, rest)| rest))?;
    let version = version.split_whitespace().next()?;
    (!version.is_empty()).then(|| version.to_owned())
}

impl Adapter for CodexAdapter {
    fn name(&self) -> &str {
        CODEX_RUNTIME
    }

    fn capabilities(&self) -> Capabilities {
        CODEX_CAPABILITIES
    }

    fn turns(&self) -> &dyn TurnControl {
        &self.turns
    }

    fn probe(&self) -> BoxFuture<'_, Probe> {
        Box::pin(self.probes.probe(self.probe_now()))
    }

    fn models(&self) -> BoxFuture<'_, ModelCatalog> {
        Box::pin(async move {
            let Ok(connection) = self.side_connection().await else {
                return catalog_unavailable(
                    CODEX_RUNTIME,
                    CATALOG_SOURCE,
                    "runtime is unavailable",
                );
            };
            let mut models = Vec::new();
            let mut cursor: Option<String> = None;
            let mut failed = false;
            loop {
                let params = ModelListParams {
                    limit: MAX_MODELS,
                    include_hidden: true,
                    cursor: cursor.clone(),
                };
                let Ok(page) = call::<ModelList>(&connection.peer, &params).await else {
                    failed = true;
                    break;
                };
                models.extend(models::models_of(&page.data));
                let next = page.next_cursor.filter(|next| !next.is_empty());
                if models.len() >= MAX_MODELS || next.is_none() || next == cursor {
                    break;
                }
                cursor = next;
            }
            connection.close().await;
            if failed {
                return catalog_unavailable(
                    CODEX_RUNTIME,
                    CATALOG_SOURCE,
                    "model discovery failed",
                );
            }
            models.truncate(MAX_MODELS);
            ModelCatalog {
                runtime: CODEX_RUNTIME.to_owned(),
                status: CatalogStatus::Ok,
                scope: CatalogScope::RuntimeCatalog,
                source: CATALOG_SOURCE.to_owned(),
                models,
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
        Box::pin(async move {
            let active = self.turns.active(task_id)?;
            let mut slot = active.state().subscribe();
            let handle = match tokio::time::timeout(
                self.config.request_timeout,
                slot.wait_for(Option::is_some),
            )
            .await
            {
                Ok(Ok(handle)) => handle.clone(),
                _ => None,
            }
            .ok_or_else(|| {
                AgentError::new(
                    BridgeErrorCode::AgentTaskNotActive,
                    "Codex turn is no longer steerable",
                )
            })?;
            let params = TurnSteerParams {
                thread_id: handle.turn.thread_id.clone(),
                input: vec![TextInput { text }],
                expected_turn_id: handle.turn.turn_id.clone(),
            };
            call::<TurnSteer>(&handle.peer, &params)
                .await
                .map(|_| ())
                .map_err(|failure| request_failed("turn/steer", &failure))
        })
    }

    fn reconcile<'a>(
        &'a self,
        _task_id: &'a str,
        native: &'a NativeIds,
    ) -> BoxFuture<'a, ProviderState> {
        Box::pin(async move {
            let Some(thread_id) = &native.session_id else {
                // No thread: no turn ever ran; a Bridge-owned child, if it
                // was spawned, is judged by its recorded process group.
                return ProviderState {
                    status: ReconcileStatus::NotRecoverable,
                    provider_active: Some(false),
                };
            };
            let Ok(connection) = self.side_connection().await else {
                return ProviderState::UNKNOWN;
            };
            let params = ThreadReadParams {
                thread_id: thread_id.clone(),
                include_turns: true,
            };
            let read = call::<ThreadRead>(&connection.peer, &params).await;
            connection.close().await;
            let Ok(result) = read else {
                return ProviderState::UNKNOWN;
            };
            if &result.thread.id != thread_id {
                return ProviderState::UNKNOWN;
            }
            let status = result.thread.status.as_ref().and_then(Tagged::value);
            match status {
                Some(ThreadStatus::Active) => ProviderState {
                    status: ReconcileStatus::Unknown,
                    provider_active: Some(true),
                },
                // Not running a turn (`notLoaded` is on disk, measured on
                // 0.171.0); a status of a later Codex, or none, is judged
                // the same: the thread is there to resume.
                Some(
                    ThreadStatus::Idle
                    | ThreadStatus::NotLoaded
                    | ThreadStatus::SystemError
                    | ThreadStatus::Unknown,
                )
                | None => ProviderState {
                    status: ReconcileStatus::SessionResumable,
                    provider_active: Some(false),
                },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_both_spellings() {
        assert_eq!(
            version_of("codex-cli 0.171.0\n").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(
            version_of("codex_app_server/0.171.0 (Linux; x86_64)").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(version_of("nonsense"), None);
    }
}

#[cfg(test)]
#[path = "turn_tests.rs"]
mod turn_tests;
