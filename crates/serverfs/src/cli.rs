//! Command line: `serverfs serve` and `serverfs check-config`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use rmcp::ServiceExt;
use serverfs_config::{Config, select_source};
use serverfs_fs::Resolver;

use crate::mcp::ServerFs;
use crate::service::{FileService, NoLease, WorkdirRegistry};

/// Exit status for configuration and start-up errors.
const EXIT_CONFIG: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "serverfs",
    version,
    about = "A secure remote-workdir MCP server: structured, confined file tools over \
             operator-chosen directories. No shell, ever.",
    after_help = "Quick start: serverfs serve --workdir demo=./examples/demo\n\
                  Configuration reference: docs/configuration.md"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over stdio (stdout carries only protocol frames; logs go
    /// to stderr as JSON lines).
    Serve(ConfigArgs),
    /// Validate the configuration and print every workdir's effective
    /// policy, then exit (0 when valid, 2 otherwise).
    CheckConfig(ConfigArgs),
}

#[derive(Debug, Args)]
struct ConfigArgs {
    /// Configuration file (serverfs.toml). Without it, --workdir specs or
    /// the WORKDIR_NN_* environment variables configure the workdirs.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A workdir as ALIAS=PATH, read-only unless suffixed with :rw
    /// (repeatable).
    #[arg(long = "workdir", value_name = "ALIAS=PATH[:rw]")]
    workdirs: Vec<String>,
}

/// Runs the command line and returns the process exit status.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let (args, serve) = match cli.command {
        Command::Serve(args) => (args, true),
        Command::CheckConfig(args) => (args, false),
    };
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let loaded = load(&args, &env);
    let (config, registry) = match loaded {
        Ok(loaded) => loaded,
        Err(reason) => {
            // One line, no backtrace: operators grep for it.
            eprintln!("serverfs: configuration error: {reason}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if !serve {
        print!("{}", config.policy_report());
        return ExitCode::SUCCESS;
    }
    crate::logging::init(config.server.log_level.as_str());
    log_startup(&config);
    // The Bridge's writer-lease reader arrives with the agent tools; until
    // then no agent can hold a lease, so mutations need none.
    let files = FileService::new(registry, config.server.clone(), Arc::new(NoLease));
    match serve_stdio(files, config.server.max_walk_entries) {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            tracing::error!(event = "serve_failed", reason = %reason);
            ExitCode::FAILURE
        }
    }
}

fn load(
    args: &ConfigArgs,
    env: &BTreeMap<String, String>,
) -> Result<(Config, WorkdirRegistry), String> {
    let source =
        select_source(args.config.clone(), &args.workdirs, env).map_err(|e| e.to_string())?;
    let extra = if args.config.is_some() {
        args.workdirs.as_slice()
    } else {
        &[]
    };
    let config = Config::load(&source, extra, env).map_err(|e| e.to_string())?;
    let resolver = resolver_from_env(env)?;
    let registry = WorkdirRegistry::open(&config, resolver)?;
    Ok((config, registry))
}

/// `SERVERFS_FS_RESOLVER=walk` forces the `O_NOFOLLOW` walker instead of
/// `openat2` (a diagnostic switch; `auto` is the default).
fn resolver_from_env(env: &BTreeMap<String, String>) -> Result<Resolver, String> {
    match env.get("SERVERFS_FS_RESOLVER").map(|s| s.trim()) {
        None | Some("") | Some("auto") => Ok(Resolver::Auto),
        Some("walk") => Ok(Resolver::Walk),
        Some(other) => Err(format!(
            "SERVERFS_FS_RESOLVER: expected \"auto\" or \"walk\", got {other:?}"
        )),
    }
}

fn log_startup(config: &Config) {
    let read_write = config.workdirs.iter().filter(|w| !w.read_only).count();
    tracing::info!(
        event = "startup",
        version = env!("CARGO_PKG_VERSION"),
        transport = "stdio",
        workdirs = config.workdirs.len(),
        read_write_workdirs = read_write,
        openat2 = serverfs_fs::openat2_available(),
    );
}

fn serve_stdio(files: FileService, cleanup_budget: u64) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        files.spawn_stale_temp_cleanup(cleanup_budget);
        let service = ServerFs::new(files)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("MCP initialization failed: {e}"))?;
        service
            .waiting()
            .await
            .map_err(|e| format!("MCP service stopped: {e}"))?;
        tracing::info!(event = "shutdown", reason = "client closed the connection");
        Ok(())
    })
}
