//! Command line: `serverfs serve`, `check-config`, `doctor`, `token` and
//! `install-units`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use rmcp::ServiceExt;
use serverfs_config::{Config, ConfigError, ConfigSource, HttpAuth, HttpSettings, select_source};
use serverfs_fs::Resolver;

use crate::http::HttpError;
use crate::mcp::ServerFs;
use crate::oauth::store::OAuthStore;
use crate::service::{
    AgentService, BridgeLease, FileService, NoLease, RegistryError, WorkdirRegistry, WriterLease,
};
use crate::tokens::{TokenError, TokenStore};

/// Exit status for configuration and start-up errors.
const EXIT_CONFIG: u8 = 2;

/// Why a command cannot get the configuration it needs. Shown to the
/// operator as one `serverfs: configuration error: …` line (exit 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    /// The configuration's own errors (they name their key).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A workdir that validated cannot be opened.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// `SERVERFS_FS_RESOLVER` is neither `auto` nor `walk`.
    #[error("SERVERFS_FS_RESOLVER: expected \"auto\" or \"walk\", got {0:?}")]
    Resolver(String),
    /// No token file is configured and there is no home to default it to.
    #[error(
        "no default token file (neither XDG_CONFIG_HOME nor HOME is an absolute path): \
         pass --token-file FILE or set SERVERFS_TOKEN_FILE"
    )]
    NoTokenFile,
}

/// Why serving stopped with an error; logged as the `serve_failed` reason.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    /// The HTTP transport failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The stdio client's MCP handshake failed. (Boxed: rmcp's error is
    /// large, and an error path need not be fast.)
    #[error("MCP initialization failed: {0}")]
    Initialize(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The stdio MCP service ended abnormally.
    #[error("MCP service stopped: {0}")]
    Stopped(#[source] tokio::task::JoinError),
}

/// Why a `token` command failed; shown as one `serverfs: …` line (exit 1).
#[derive(Debug, thiserror::Error)]
enum TokenCommandError {
    /// The token file could not be read or written.
    #[error(transparent)]
    Store(#[from] TokenError),
    /// The OAuth state file (for `token list`) could not be read.
    #[error(transparent)]
    OAuth(#[from] crate::oauth::admin::AdminError),
    /// `revoke` named no token.
    #[error("no token named {0:?}")]
    NoSuchToken(String),
}

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
    /// Serve MCP over stdio (default; stdout carries only protocol frames)
    /// or, with --http, over Streamable HTTP at /mcp. Logs go to stderr as
    /// JSON lines.
    Serve(ServeArgs),
    /// Validate the configuration and print every workdir's effective
    /// policy, then exit (0 when valid, 2 otherwise).
    CheckConfig(ConfigArgs),
    /// Read-only health checks with OK/WARN/FAIL lines (exit 0 clean, 1 on
    /// any FAIL, 2 when the configuration cannot be parsed).
    Doctor(DoctorArgs),
    /// Manage the bearer tokens of the HTTP transport.
    Token(TokenArgs),
    /// Manage OAuth grants and clients (http.auth = "oauth"), and print
    /// one-time approval codes for the consent page.
    Oauth(OAuthArgs),
    /// Write the systemd user units of serverfs and the Agent Bridge with
    /// this machine's binary and configuration paths, and print the
    /// `systemctl --user` commands (exit 0; 1 when nothing was written).
    InstallUnits(crate::install_units::InstallUnitsArgs),
}

#[derive(Debug, Args)]
struct OAuthArgs {
    #[command(subcommand)]
    action: OAuthAction,
    /// The OAuth state file. Default: $SERVERFS_HTTP_OAUTH_STATE_FILE,
    /// else the [http.oauth] state_file of the configuration given by
    /// --config / --workdir (or SERVERFS_CONFIG, WORKDIR_NN_*), else
    /// oauth.sqlite3 beside the default token file.
    #[arg(long, value_name = "FILE", global = true)]
    state_file: Option<PathBuf>,
    /// Configuration file whose [http.oauth] state_file to use.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Workdir specs, when the configuration comes from --workdir.
    #[arg(long = "workdir", value_name = "ALIAS=PATH[:rw]", global = true)]
    workdirs: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum OAuthAction {
    /// List grants (id, client, scopes, how ownership was proved, times)
    /// and self-registered clients; never a token or hash.
    List,
    /// Revoke a grant by its id, or every grant of a client_id together
    /// with its registration. Takes effect at the server's next request.
    Revoke {
        /// A grant id or a client_id (see `serverfs oauth list`).
        target: String,
    },
    /// Print a one-time code that approves one consent page (for an
    /// owner without a bearer token at hand). Only its hash is stored.
    ApproveCode {
        /// Minutes the code stays valid (1-60).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=60))]
        minutes: u64,
    },
}

#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:8765)
    /// instead of stdio; overrides [http] bind.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// With --http: once listening, create a bearer token with this name
    /// (replacing one of the same name), print it once with the URL on
    /// stdout (never in the logs on stderr), then serve. Meant for a quick
    /// start at a terminal; use `serverfs token create` otherwise.
    #[arg(long, value_name = "NAME", requires = "http")]
    new_token: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    /// Check this HTTP bind address instead of [http] bind.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<SocketAddr>,
}

#[derive(Debug, Args)]
struct TokenArgs {
    #[command(subcommand)]
    action: TokenAction,
    /// The token file. Default: $SERVERFS_TOKEN_FILE, else the [http]
    /// token_file of the configuration given by --config / --workdir (or
    /// SERVERFS_CONFIG, WORKDIR_NN_*), else
    /// $XDG_CONFIG_HOME/serverfs/tokens.json or
    /// ~/.config/serverfs/tokens.json, the default of `serve`.
    #[arg(long, value_name = "FILE", global = true)]
    token_file: Option<PathBuf>,
    /// Configuration file whose [http] token_file to use.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Workdir specs, when the configuration comes from --workdir.
    #[arg(long = "workdir", value_name = "ALIAS=PATH[:rw]", global = true)]
    workdirs: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum TokenAction {
    /// Create a token and print it once (only its hash is stored).
    Create {
        /// A name for the token (shown in the audit log).
        name: String,
    },
    /// List token names and creation times (never the tokens).
    List,
    /// Revoke the token with this name.
    Revoke {
        /// The token's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// Configuration file (serverfs.toml). Without it, --workdir specs or
    /// the WORKDIR_NN_* environment variables configure the workdirs.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// A workdir as ALIAS=PATH, read-only unless suffixed with :rw
    /// (repeatable).
    #[arg(long = "workdir", value_name = "ALIAS=PATH[:rw]")]
    pub(crate) workdirs: Vec<String>,
}

/// Runs the command line and returns the process exit status.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    match cli.command {
        Command::Serve(args) => serve(&args, &env),
        Command::CheckConfig(args) => match load(&args, &env) {
            Ok((config, _)) => {
                print!("{}", config.policy_report());
                ExitCode::SUCCESS
            }
            Err(reason) => config_error(&reason.to_string()),
        },
        Command::Doctor(args) => crate::doctor::run(&args, &env),
        Command::Token(args) => token(&args, &env),
        Command::Oauth(args) => oauth(&args, &env),
        Command::InstallUnits(args) => match crate::install_units::run(&args, &env) {
            Ok(summary) => {
                print!("{summary}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("serverfs: install-units: {error}");
                ExitCode::FAILURE
            }
        },
    }
}

/// One line, no backtrace: operators grep for it.
fn config_error(reason: &str) -> ExitCode {
    eprintln!("serverfs: configuration error: {reason}");
    ExitCode::from(EXIT_CONFIG)
}

fn serve(args: &ServeArgs, env: &BTreeMap<String, String>) -> ExitCode {
    let (config, registry) = match load(&args.config, env) {
        Ok(loaded) => loaded,
        Err(reason) => return config_error(&reason.to_string()),
    };
    let http = match args.http.or(config.http.bind) {
        Some(bind) => match config.http.effective(Some(bind)) {
            Ok(http) => Some(http),
            Err(e) => return config_error(&e.to_string()),
        },
        None => None,
    };
    if let Some(http) = http.as_ref().filter(|h| h.auth != HttpAuth::None) {
        // Fail closed at start-up (exit 2) rather than at the first
        // request: an unreadable, malformed or shared token file.
        if let Err(reason) = TokenStore::new(http.token_file.clone()).entries() {
            return config_error(&reason.to_string());
        }
    }
    // The token itself is created only once the address is bound (so a
    // failed start leaves the token file alone); a bad name is refused
    // here, with the other configuration errors.
    let quick_start = match (&http, args.new_token.as_deref()) {
        (Some(_), Some(name)) => match crate::tokens::check_name(name) {
            Ok(()) => Some(name),
            Err(reason) => return config_error(&reason.to_string()),
        },
        (None, _) | (_, None) => None,
    };
    crate::logging::init(config.server.log_level.as_str());
    log_startup(&config, if http.is_some() { "http" } else { "stdio" });
    registry.watch_mounts();
    crate::rlimit::raise_open_files();
    // With the Agent Bridge enabled every mutation takes the workdir's
    // cross-process writer lease; otherwise no lock file is ever touched.
    let lease: Arc<dyn WriterLease> = if config.agent.bridge_enabled {
        Arc::new(BridgeLease::new(config.agent.lock_dir.clone()))
    } else {
        Arc::new(NoLease)
    };
    // The agent tools exist only with the Bridge enabled and some workdir
    // allowing agents; they are a client of the Bridge, never a runner.
    let agent = config
        .agent_tools_enabled()
        .then(|| AgentService::new(registry.clone(), &config.agent));
    let files = FileService::new(registry, config.server.clone(), lease);
    let largest_binary_cap = config
        .workdirs
        .iter()
        .filter(|w| w.binary_transfer)
        .map(|w| w.max_binary_transfer_bytes)
        .max();
    let max_message_bytes = crate::jsonrpc::max_message_bytes(largest_binary_cap);
    // One client over stdio sends one request at a time, mostly: a single
    // async thread saves the hand-offs between workers that a multi-thread
    // runtime makes on every call (kernel work that may block still goes to
    // the blocking pool: service::placement). HTTP serves many clients and
    // keeps the worker pool.
    let mut builder = match http {
        Some(_) => tokio::runtime::Builder::new_multi_thread(),
        None => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(event = "serve_failed", reason = %e);
            return ExitCode::FAILURE;
        }
    };
    let cleanup_budget = config.server.max_walk_entries;
    let text_content = config.server.text_content;
    let outcome = runtime.block_on(async move {
        files.spawn_stale_temp_cleanup(cleanup_budget);
        let server = ServerFs::new(files, agent, text_content);
        match http {
            Some(http) => crate::http::serve(server, http, max_message_bytes, quick_start)
                .await
                .map_err(ServeError::from),
            None => serve_stdio(server, max_message_bytes).await,
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            tracing::error!(event = "serve_failed", reason = %reason);
            ExitCode::FAILURE
        }
    }
}

fn token(args: &TokenArgs, env: &BTreeMap<String, String>) -> ExitCode {
    let path = match token_file(args, env) {
        Ok(path) => path,
        Err(reason) => return config_error(&reason.to_string()),
    };
    let store = TokenStore::new(path);
    let outcome: Result<(), TokenCommandError> = match &args.action {
        TokenAction::Create { name } => {
            store
                .create(name)
                .map_err(TokenCommandError::from)
                .map(|token| {
                    println!("{token}");
                    eprintln!(
                        "serverfs: token {name:?} created in {}; it is shown only now",
                        store.path().display()
                    );
                })
        }
        TokenAction::List => store
            .entries()
            .map_err(TokenCommandError::from)
            .and_then(|entries| {
                for entry in entries {
                    println!("{}\tcreated {}", entry.name, timestamp(entry.created_ms));
                }
                // OAuth grants are credentials too: list them here, as
                // `oauth:<id>` (a token name never holds a ':').
                let state = OAuthStore::new(token_list_state_file(args, env, store.path()));
                let state = crate::oauth::admin::list(&state)?;
                for grant in &state.grants {
                    println!(
                        "oauth:{}\tcreated {}\tclient {:?}\tscopes {}",
                        grant.id,
                        timestamp(grant.created_ms),
                        grant.client_name,
                        grant.scopes
                    );
                }
                Ok(())
            }),
        TokenAction::Revoke { name } => match store.revoke(name) {
            Ok(true) => {
                eprintln!("serverfs: token {name:?} revoked");
                Ok(())
            }
            Ok(false) => Err(TokenCommandError::NoSuchToken(name.clone())),
            Err(e) => Err(e.into()),
        },
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            eprintln!("serverfs: {reason}");
            ExitCode::FAILURE
        }
    }
}

fn oauth(args: &OAuthArgs, env: &BTreeMap<String, String>) -> ExitCode {
    let path = match &args.state_file {
        Some(path) => path.clone(),
        None => {
            let config = ConfigArgs {
                config: args.config.clone(),
                workdirs: args.workdirs.clone(),
            };
            match configured_state_file(&config, env) {
                Ok(path) => path,
                Err(reason) => return config_error(&reason.to_string()),
            }
        }
    };
    let store = OAuthStore::new(path);
    let outcome = match &args.action {
        OAuthAction::List => crate::oauth::admin::list(&store).map(|state| {
            for grant in &state.grants {
                println!(
                    "{}\tclient {:?} ({})\tscopes {}\tapproved by {}\tcreated {}\texpires {}",
                    grant.id,
                    grant.client_name,
                    grant.client_id,
                    grant.scopes,
                    grant.approved_by,
                    timestamp(grant.created_ms),
                    timestamp(grant.refresh_expires_ms)
                );
            }
            for client in &state.clients {
                // A client that never completed a grant goes at its expiry.
                let expires = client
                    .expires_ms
                    .map(|at| format!("\texpires {} unless approved", timestamp(at)))
                    .unwrap_or_default();
                println!(
                    "client {}\t{:?}\tregistered {}{expires}\tredirects {}",
                    client.client_id,
                    client.client_name,
                    timestamp(client.created_ms),
                    client.redirect_uris.join(" ")
                );
            }
        }),
        OAuthAction::Revoke { target } => {
            crate::oauth::admin::revoke(&store, target).map(|grants| {
                eprintln!("serverfs: revoked {target:?} ({grants} grant(s))");
            })
        }
        OAuthAction::ApproveCode { minutes } => {
            crate::oauth::admin::approval_code(&store, *minutes).map(|code| {
                println!("{code}");
                eprintln!(
                    "serverfs: one-time approval code, valid {minutes} minute(s): type it on the \
                     consent page"
                );
            })
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            eprintln!("serverfs: {reason}");
            ExitCode::FAILURE
        }
    }
}

/// The state file of `token list`'s OAuth lines: beside an explicit
/// `--token-file`, else as for `serverfs oauth`.
fn token_list_state_file(
    args: &TokenArgs,
    env: &BTreeMap<String, String>,
    token_file: &std::path::Path,
) -> PathBuf {
    let beside = token_file.with_file_name(serverfs_config::DEFAULT_OAUTH_STATE_FILE);
    if args.token_file.is_some() {
        return beside;
    }
    let config = ConfigArgs {
        config: args.config.clone(),
        workdirs: args.workdirs.clone(),
    };
    configured_state_file(&config, env).unwrap_or(beside)
}

/// The OAuth state file of the configuration (or variable) given, first
/// match wins: `SERVERFS_HTTP_OAUTH_STATE_FILE`, the configuration's
/// `[http.oauth] state_file`, else `oauth.sqlite3` beside the default
/// token file.
fn configured_state_file(
    config: &ConfigArgs,
    env: &BTreeMap<String, String>,
) -> Result<PathBuf, LoadError> {
    if let Some(path) = env
        .get("SERVERFS_HTTP_OAUTH_STATE_FILE")
        .filter(|p| !p.is_empty())
    {
        return Ok(PathBuf::from(path));
    }
    match select_source(config.config.clone(), &config.workdirs, env) {
        Ok(source) => Ok(load_config(&source, config, env)?.http.oauth.state_file),
        Err(ConfigError::NoSource) => {
            let path = HttpSettings::default_token_file(env);
            if path.is_absolute() {
                Ok(path.with_file_name(serverfs_config::DEFAULT_OAUTH_STATE_FILE))
            } else {
                Err(LoadError::NoTokenFile)
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// An epoch-milliseconds time as RFC 3339 seconds.
fn timestamp(ms: u64) -> String {
    serverfs_fs::rfc3339_seconds(i64::try_from(ms / 1000).unwrap_or(i64::MAX))
}

/// The token file the token commands manage, first match wins:
/// `--token-file`, `SERVERFS_TOKEN_FILE`, the `[http] token_file` of the
/// configuration given (`--config`, `--workdir`, `SERVERFS_CONFIG`,
/// `WORKDIR_NN_*`), else the default every native configuration uses, so
/// `serverfs token create NAME` works before any workdir is configured.
fn token_file(args: &TokenArgs, env: &BTreeMap<String, String>) -> Result<PathBuf, LoadError> {
    if let Some(path) = &args.token_file {
        return Ok(path.clone());
    }
    if let Some(path) = env.get("SERVERFS_TOKEN_FILE").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let config = ConfigArgs {
        config: args.config.clone(),
        workdirs: args.workdirs.clone(),
    };
    match select_source(config.config.clone(), &config.workdirs, env) {
        Ok(source) => Ok(load_config(&source, &config, env)?.http.token_file),
        Err(ConfigError::NoSource) => {
            let path = HttpSettings::default_token_file(env);
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(LoadError::NoTokenFile)
            }
        }
        Err(e) => Err(e.into()),
    }
}

fn load(
    args: &ConfigArgs,
    env: &BTreeMap<String, String>,
) -> Result<(Config, WorkdirRegistry), LoadError> {
    let source = select_source(args.config.clone(), &args.workdirs, env)?;
    let config = load_config(&source, args, env)?;
    let resolver = resolver_from_env(env)?;
    let registry = WorkdirRegistry::open(&config, resolver)?;
    Ok((config, registry))
}

/// The configuration of `source`; `--workdir` specs given beside
/// `--config` add to the file's workdirs.
fn load_config(
    source: &ConfigSource,
    args: &ConfigArgs,
    env: &BTreeMap<String, String>,
) -> Result<Config, ConfigError> {
    let extra = if args.config.is_some() {
        args.workdirs.as_slice()
    } else {
        &[]
    };
    Config::load(source, extra, env)
}

/// `SERVERFS_FS_RESOLVER=walk` forces the `O_NOFOLLOW` walker instead of
/// `openat2` (a diagnostic switch; `auto` is the default).
pub(crate) fn resolver_from_env(env: &BTreeMap<String, String>) -> Result<Resolver, LoadError> {
    match env.get("SERVERFS_FS_RESOLVER").map(|s| s.trim()) {
        None | Some("") | Some("auto") => Ok(Resolver::Auto),
        Some("walk") => Ok(Resolver::Walk),
        Some(other) => Err(LoadError::Resolver(other.to_owned())),
    }
}

fn log_startup(config: &Config, transport: &'static str) {
    let read_write = config.workdirs.iter().filter(|w| !w.read_only).count();
    tracing::info!(
        event = "startup",
        version = env!("CARGO_PKG_VERSION"),
        transport,
        workdirs = config.workdirs.len(),
        read_write_workdirs = read_write,
        openat2 = serverfs_fs::openat2_available(),
    );
}

async fn serve_stdio(server: ServerFs, max_message_bytes: usize) -> Result<(), ServeError> {
    let (input, output) = crate::stdio::streams();
    let service = server
        .serve(crate::stdio::LineTransport::new(
            input,
            output,
            max_message_bytes,
        ))
        .await
        .map_err(|error| ServeError::Initialize(Box::new(error)))?;
    service.waiting().await.map_err(ServeError::Stopped)?;
    tracing::info!(event = "shutdown", reason = "client closed the connection");
    Ok(())
}
