//! Command line of `serverfs-agent-bridge`: `serve`, `check-config`,
//! `inspect`, `probe` and `doctor`, all reading the operator's one source of truth (the same
//! `serverfs.toml` or `.env`-style variables `serverfs` reads).

mod bridge_config;
mod containment;
mod doctor;
mod inspect;
mod proxy_env;
mod serve;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// Exit status for configuration and start-up errors.
const EXIT_CONFIG: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "serverfs-agent-bridge",
    version,
    about = "The ServerFS Agent Bridge: runs operator-configured coding agents for tasks \
             the ServerFS MCP server submits over a private Unix socket.",
    after_help = "Configuration: the [agent] section and per-workdir agent_mode / \
                  agent_runtimes of serverfs.toml (or the SERVERFS_* / WORKDIR_NN_* \
                  variables). Reference: docs/agent-bridge.md"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the Bridge until SIGTERM or SIGINT. Logs go to stderr as JSON
    /// lines.
    Serve(ConfigArgs),
    /// Validate the configuration and print the Bridge's effective
    /// settings, then exit (0 when valid, 2 otherwise).
    CheckConfig(ConfigArgs),
    /// Print a summary of tasks, pending requests and recovery guards
    /// (no prompts, answers, responses or host paths), then exit.
    Inspect(InspectArgs),
    /// Measure the capabilities of every allowed ACP runtime: start each
    /// agent, `initialize`, stop it (no session, no inference), record and
    /// print what it advertised (one JSON descriptor per line); exit 1 if
    /// any probe failed.
    Probe(ConfigArgs),
    /// Check that this Bridge will work before a task fails: its
    /// directories and lock artifacts, each runtime (executable, version,
    /// authentication, Codex daemon), the environment each runtime
    /// receives (names only), the egress proxy and systemd linger. One
    /// OK/WARN/FAIL line per check with its fix; exit 0 (no FAIL), 1 (a
    /// FAIL) or 2 (configuration error). Never prints a credential.
    Doctor(ConfigArgs),
}

#[derive(Debug, Args)]
struct ConfigArgs {
    /// The serverfs.toml to read. Default: $SERVERFS_CONFIG, else the
    /// WORKDIR_NN_* / SERVERFS_* environment.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The .env of a Compose deployment whose container this Bridge serves
    /// (deploy/docker/.env): read on the host side, each slot at its
    /// WORKDIR_NN_PATH, the socket and locks in the directories the agent
    /// overlay mounts (docs/configuration.md §3.4).
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    env_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct InspectArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Most recent tasks to list.
    #[arg(long, value_name = "N", default_value_t = 20)]
    limit: u32,
}

/// Parses the command line and runs the command.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    match cli.command {
        Command::Serve(args) => serve::run(&args, &env),
        Command::CheckConfig(args) => match bridge_config::load(&args, &env) {
            Ok(config) => {
                print!("{}", config.report());
                ExitCode::SUCCESS
            }
            Err(error) => config_error(&error),
        },
        Command::Inspect(args) => inspect::run(&args.config, &env, args.limit),
        Command::Doctor(args) => doctor::run(&args, &env),
        Command::Probe(args) => match bridge_config::load(&args, &env) {
            Ok(config) => probe(&config),
            Err(error) => config_error(&error),
        },
    }
}

/// Runs `probe` on a runtime of its own (the commands besides `serve` are
/// synchronous).
fn probe(config: &bridge_config::BridgeConfig) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("serverfs-agent-bridge: no async runtime for the probe: {error}");
            return ExitCode::FAILURE;
        }
    };
    if runtime.block_on(config.probe()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Prints a configuration error in the one-line form and returns exit 2:
/// the one place the command line's typed errors become text.
fn config_error(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("serverfs-agent-bridge: configuration error: {error}");
    ExitCode::from(EXIT_CONFIG)
}
