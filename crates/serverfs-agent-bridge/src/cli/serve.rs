//! `serverfs-agent-bridge serve`: the daemon's life.
//!
//! Order matters: the shutdown signals are caught first, then the socket
//! is claimed (its lock refuses a second Bridge before it can touch the
//! shared state), then the lock artifacts and the store, then start-up
//! reconciliation, then serving. SIGTERM or SIGINT stops accepting,
//! interrupts running providers within a bound and leaves every task in a
//! terminal, consistent state.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use serverfs_agent_bridge::rpc::{BridgeListener, shutdown_channel};
use serverfs_agent_bridge::service::TaskService;
use serverfs_agent_bridge::store::{StateDir, Store};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tracing_subscriber::EnvFilter;

use super::{ConfigArgs, EXIT_CONFIG, bridge_config, config_error, containment};

/// Runs the daemon; exit 0 after a graceful shutdown, 2 when it cannot
/// start, 1 when serving fails.
pub fn run(args: &ConfigArgs, env: &BTreeMap<String, String>) -> ExitCode {
    let config = match bridge_config::load(args, env) {
        Ok(config) => config,
        Err(error) => return config_error(&error),
    };
    init_logging(config.config.server.log_level.as_str());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(_) => return start_error(&"the async runtime could not be started"),
    };
    runtime.block_on(serve(config))
}

async fn serve(config: bridge_config::BridgeConfig) -> ExitCode {
    // Before the socket is bound: from then on a client can connect, so a
    // supervisor may already take the Bridge for started and stop it. A
    // signal that comes during the rest of start-up is kept, and ends the
    // Bridge gracefully once it serves, instead of killing it with the
    // default action halfway through reconciliation.
    let signals = ShutdownSignals::install();
    let listener = match BridgeListener::bind(config.socket(), config.peer_policy()) {
        Ok(listener) => listener,
        Err(error) => return start_error(&format!("{}: {error}", error.code().as_str())),
    };
    // Before any provider starts.
    if let Err(error) = containment::set_up(&config.config.agent.provider_cgroup) {
        return start_error(&error);
    }
    let reaper = tokio::spawn(serverfs_agent_runtime::reap_adopted_forever());
    let lease_ids = match config.lease_ids() {
        Ok(ids) => ids,
        Err(error) => return config_error(&error),
    };
    if let Err(error) = serverfs_lease::prepare_artifacts(
        &config.config.agent.lock_dir,
        config.artifact_access(),
        &lease_ids,
    ) {
        return start_error(&format!("{}: {error}", error.code().as_str()));
    }
    let policies = match config.policies() {
        Ok(policies) => policies,
        Err(error) => return config_error(&error),
    };
    let store = match StateDir::open(&config.state_dir)
        .and_then(|state| Store::open(state, config.settings.limits.clone()))
    {
        Ok(store) => store,
        Err(error) => return start_error(&format!("{}: {error}", error.code().as_str())),
    };
    let service = match TaskService::start(
        store.clone(),
        policies,
        config.runtimes(),
        config.settings.clone(),
    )
    .await
    {
        Ok(service) => Arc::new(service),
        Err(error) => return start_error(&error),
    };
    let (stop, signal_stop) = shutdown_channel();
    let server = tokio::spawn(listener.serve(Arc::clone(&service) as _, signal_stop));
    tracing::info!(
        runtimes = config.runtimes.join(","),
        workdirs = config.config.workdirs.len(),
        "agent bridge serving"
    );
    signals.arrival().await;
    tracing::info!("shutting down");
    stop.trigger();
    service.shutdown().await;
    let served = server.await;
    reaper.abort();
    if let Err(error) = store.close() {
        tracing::warn!(code = error.code().as_str(), "store did not close cleanly");
    }
    match served {
        Ok(Ok(())) => {
            tracing::info!("agent bridge stopped");
            ExitCode::SUCCESS
        }
        Ok(Err(error)) => {
            tracing::error!(code = error.code().as_str(), "serving failed");
            ExitCode::FAILURE
        }
        Err(_) => {
            tracing::error!("the server task failed");
            ExitCode::FAILURE
        }
    }
}

/// The SIGTERM and SIGINT handlers. One that cannot be installed is
/// logged and the other waited for alone; with neither, the signals keep
/// their default action, which ends the Bridge at once.
struct ShutdownSignals {
    terminate: std::io::Result<Signal>,
    interrupt: std::io::Result<Signal>,
}

impl ShutdownSignals {
    /// Installs both handlers; a signal delivered from now on is kept until
    /// [`ShutdownSignals::arrival`] sees it.
    fn install() -> ShutdownSignals {
        ShutdownSignals {
            terminate: signal(SignalKind::terminate()),
            interrupt: signal(SignalKind::interrupt()),
        }
    }

    /// Resolves on the first SIGTERM or SIGINT since installation.
    async fn arrival(self) {
        match (self.terminate, self.interrupt) {
            (Ok(mut terminate), Ok(mut interrupt)) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = interrupt.recv() => {}
                }
            }
            (Ok(mut only), Err(_)) | (Err(_), Ok(mut only)) => {
                tracing::warn!("only one shutdown signal handler could be installed");
                only.recv().await;
            }
            (Err(_), Err(_)) => {
                tracing::error!("no shutdown signal handler could be installed");
                std::future::pending::<()>().await;
            }
        }
    }
}

fn start_error(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("serverfs-agent-bridge: cannot start: {error}");
    ExitCode::from(EXIT_CONFIG)
}

/// JSON lines on stderr: our events at `level`, dependencies at warn.
fn init_logging(level: &str) {
    let level = match level {
        "warning" => "warn",
        other => other,
    };
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        // The request span (method, request_id) is printed with each event
        // inside it, so every outcome line says which request it was.
        .with_current_span(true)
        .with_span_list(false)
        .with_target(false)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .with_env_filter(EnvFilter::new(format!(
            "warn,serverfs_agent_bridge={level}"
        )))
        .try_init();
}
