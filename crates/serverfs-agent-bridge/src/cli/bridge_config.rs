//! The Bridge's view of the shared configuration: which runtimes to start,
//! where its socket, state and locks live, who may connect, and the
//! limits of the task core.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serverfs_adapter_acp::{AcpAdapter, AcpConfig};
use serverfs_adapter_codex::{CodexAdapter, CodexConfig, CodexTransport};
use serverfs_adapter_stream_json::{
    AuthSource, CLAUDE, QODER, StreamJsonAdapter, StreamJsonConfig,
};
use serverfs_agent_bridge::rpc::PeerPolicy;
use serverfs_agent_bridge::service::{Policies, PolicyError, Runtimes, ServiceSettings};
use serverfs_agent_runtime::fake::FakeAdapter;
use serverfs_agent_runtime::{Adapter, Probe, ProxyPolicy};
use serverfs_config::{
    AgentRuntime, CodexSettings, Config, ConfigError, ConfigSource, QODER_TOKEN_VARIABLE,
    QoderAuth, read_env_file, select_source,
};
use serverfs_lease::{ArtifactAccess, LeaseError, LeaseId};

use super::ConfigArgs;
use super::proxy_env::{self, ProxyEndpoint, ProxyEnvError};

/// Everything `serve` needs, validated.
#[derive(Debug)]
pub struct BridgeConfig {
    pub config: Config,
    pub settings: ServiceSettings,
    pub state_dir: PathBuf,
    /// Runtime names any agent-enabled workdir allows, sorted.
    pub runtimes: Vec<String>,
    /// Each of those runtimes, resolved, in the same order.
    setups: Vec<RuntimeSetup>,
    /// The agent egress proxy endpoint (its `Debug` redacts the URL).
    pub proxy: ProxyEndpoint,
}

/// One runtime this Bridge runs, with everything resolved at start-up
/// (executables, homes, proxy policy).
#[derive(Debug)]
pub enum RuntimeSetup {
    Fake(ProxyPolicy),
    Codex(CodexConfig),
    Claude(StreamJsonConfig),
    Qoder(StreamJsonConfig),
    Acp(AcpConfig),
}

/// Why the configuration cannot run the Bridge. Each message names the
/// key to fix; the command line shows it as one
/// `serverfs-agent-bridge: configuration error: …` line (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum BridgeConfigError {
    /// The shared configuration's own errors (they name their key).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `[agent] enabled` is off.
    #[error(
        "agent.enabled: the Agent Bridge is disabled; set [agent] enabled = true \
         (or SERVERFS_AGENT_BRIDGE_ENABLED=true)"
    )]
    Disabled,
    /// No absolute state directory.
    #[error("agent.state_dir: must be absolute (no XDG_STATE_HOME or HOME to derive it from)")]
    RelativeStateDir,
    /// The agent proxy endpoint in the environment is unusable.
    #[error(transparent)]
    Proxy(#[from] ProxyEnvError),
    /// A runtime must use the agent proxy, and none is set.
    #[error(
        "agent.proxy_runtimes: {0} must use the agent proxy, but \
         SERVERFS_AGENT_PROXY_URL is not set"
    )]
    ProxyUnset(AgentRuntime),
    /// A workdir allows an ACP runtime without a profile.
    #[error("agent_runtimes: {0} is not a configured ACP profile")]
    UnknownAcpProfile(AgentRuntime),
    /// An ACP profile's command cannot be run.
    #[error(
        "agent.acp_profiles[{index}].command: {} is not an executable file; \
         install the agent or correct the path",
        command.display()
    )]
    AcpCommandNotExecutable {
        /// The profile's position.
        index: usize,
        /// Its command.
        command: PathBuf,
    },
    /// A `*_bin` given by name is on no `PATH` entry.
    #[error(
        "{key}: {bin} was not found on PATH; install {product} or set {} to its absolute path",
        key.trim_start_matches("agent.")
    )]
    BinNotFound {
        /// The setting (`agent.codex_bin`).
        key: &'static str,
        /// The name it gives.
        bin: String,
        /// What to install.
        product: &'static str,
    },
    /// A `*_bin` names something that is not an executable file.
    #[error("{key}: not an executable file")]
    BinNotExecutable {
        /// The setting.
        key: &'static str,
    },
    /// Codex's home cannot be found.
    #[error("agent.codex_home: not set, and neither CODEX_HOME nor HOME is an absolute path")]
    NoCodexHome,
    /// The Compose container would run as another identity than the one
    /// the Bridge serves.
    #[error(
        "{variable}: the agent overlay runs the container as {variable}={written:?}, but the \
         Bridge serves {served} ({peer_variable}, default the Bridge's own id): set \
         {variable}={served} in the .env (the host user's `id -u`/`id -g`), or \
         {peer_variable} to the container's measured id"
    )]
    ContainerIdentity {
        /// `SERVERFS_UID` or `SERVERFS_GID`.
        variable: &'static str,
        /// Its value in the file.
        written: String,
        /// The id the Bridge serves.
        served: u32,
        /// The setting that decides `served`.
        peer_variable: &'static str,
    },
    /// A writable workdir has no lease identity.
    #[error("workdir {alias}: {source}")]
    Lease {
        /// The workdir.
        alias: String,
        /// Why.
        source: LeaseError,
    },
}

/// The identity the Compose overlay runs the container as (`user:`).
const CONTAINER_UID_VAR: &str = "SERVERFS_UID";
const CONTAINER_GID_VAR: &str = "SERVERFS_GID";

/// Where the capability snapshots of ACP profiles live: a private
/// directory of the Bridge's state (created 0700 beside the database).
const ACP_SNAPSHOT_DIR: &str = "acp-capabilities";

/// Loads the operator's configuration for the Bridge.
///
/// # Errors
///
/// [`BridgeConfigError`]: the configuration's own errors, the Bridge
/// disabled, a relative state directory, a runtime this build cannot run,
/// or a proxied runtime without an endpoint.
pub fn load(
    args: &ConfigArgs,
    process_env: &BTreeMap<String, String>,
) -> Result<BridgeConfig, BridgeConfigError> {
    let loaded = load_tolerant(args, process_env)?;
    match loaded.unusable.into_iter().next() {
        Some((_, error)) => Err(error),
        None => Ok(loaded.config),
    }
}

/// What `doctor` inspects: the configuration with every runtime that could
/// be set up, the runtimes that could not (each with the error `serve`
/// would stop at), and the environment the Bridge reads (its own plus the
/// `--env-file`). Not `Debug`: the environment holds secrets.
pub struct LoadedConfig {
    pub config: BridgeConfig,
    pub unusable: Vec<(AgentRuntime, BridgeConfigError)>,
    pub env: BTreeMap<String, String>,
}

/// As [`load`], except that a runtime that cannot be set up is returned in
/// [`LoadedConfig::unusable`] instead of failing the whole load.
///
/// # Errors
///
/// As [`load`], but for the runtimes' own errors.
pub fn load_tolerant(
    args: &ConfigArgs,
    process_env: &BTreeMap<String, String>,
) -> Result<LoadedConfig, BridgeConfigError> {
    let (source, env) = match &args.env_file {
        // The file's values win: it is the deployment's one source, and
        // the service environment only adds HOME, PATH and the like.
        Some(file) => {
            let mut env = process_env.clone();
            env.extend(read_env_file(file)?);
            (ConfigSource::ComposeHost, env)
        }
        None => (
            select_source(args.config.clone(), &[], process_env)?,
            process_env.clone(),
        ),
    };
    let env = &env;
    let config = Config::load(&source, &[], env)?;
    let agent = &config.agent;
    if !agent.bridge_enabled {
        return Err(BridgeConfigError::Disabled);
    }
    if source == ConfigSource::ComposeHost {
        check_container_identity(&config, env)?;
    }
    if !agent.state_dir.is_absolute() {
        return Err(BridgeConfigError::RelativeStateDir);
    }
    let mut enabled: Vec<&AgentRuntime> = config
        .workdirs
        .iter()
        .filter(|workdir| workdir.agent_mode.is_enabled())
        .flat_map(|workdir| workdir.agent_runtimes.iter())
        .collect();
    enabled.sort_unstable_by(|a, b| a.as_str().cmp(b.as_str()));
    enabled.dedup();
    let proxy = proxy_env::read(env)?;
    if proxy.url.is_none()
        && let Some(runtime) = agent.proxy_runtimes.first()
    {
        return Err(BridgeConfigError::ProxyUnset(runtime.clone()));
    }
    let mut runtimes = Vec::new();
    let mut setups = Vec::new();
    let mut unusable = Vec::new();
    for runtime in enabled {
        match setup(runtime, &config, &proxy, env) {
            Ok(resolved) => {
                runtimes.push(runtime.as_str().to_owned());
                setups.push(resolved);
            }
            Err(error) => unusable.push((runtime.clone(), error)),
        }
    }
    let settings = ServiceSettings {
        home: env
            .get("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute()),
        ..ServiceSettings::from_agent(agent)
    };
    let config = BridgeConfig {
        settings,
        state_dir: agent.state_dir.clone(),
        runtimes,
        setups,
        proxy,
        config,
    };
    Ok(LoadedConfig {
        config,
        unusable,
        env: env.clone(),
    })
}

/// The Compose agent overlay runs the container as
/// `SERVERFS_UID:SERVERFS_GID`; the Bridge serves `peer_uid` (default its
/// own uid) and, when set, `peer_gid`. If they differ, every agent call
/// and every mutation of the container would fail, so the Bridge refuses
/// to start and says which value to change. (A uid mapping between the two
/// cannot be seen here; `serverfs doctor` in the container measures it.)
fn check_container_identity(
    config: &Config,
    env: &BTreeMap<String, String>,
) -> Result<(), BridgeConfigError> {
    let served_uid = config
        .agent
        .peer_uid
        .unwrap_or_else(|| rustix::process::geteuid().as_raw());
    let served = [
        (
            CONTAINER_UID_VAR,
            Some(served_uid),
            "SERVERFS_AGENT_PEER_UID",
        ),
        (
            CONTAINER_GID_VAR,
            config.agent.peer_gid,
            "SERVERFS_AGENT_PEER_GID",
        ),
    ];
    for (variable, served, peer_variable) in served {
        let Some(served) = served else { continue };
        let written = env.get(variable).map(|value| value.trim()).unwrap_or("");
        if written.parse::<u32>() != Ok(served) {
            return Err(BridgeConfigError::ContainerIdentity {
                variable,
                written: written.to_owned(),
                served,
                peer_variable,
            });
        }
    }
    Ok(())
}

/// Resolves `runtime`. Every runtime the configuration can name is a case
/// here, so a new one does not compile until it is wired or refused.
fn setup(
    runtime: &AgentRuntime,
    config: &Config,
    proxy: &ProxyEndpoint,
    env: &BTreeMap<String, String>,
) -> Result<RuntimeSetup, BridgeConfigError> {
    let policy = proxy_policy(config, proxy, runtime);
    match runtime {
        AgentRuntime::Fake => Ok(RuntimeSetup::Fake(policy)),
        AgentRuntime::Codex => {
            let codex = &config.agent.codex;
            let bin = resolve_bin("agent.codex_bin", &codex.bin, "Codex", env)?;
            let home = codex_home(codex, env)?;
            Ok(RuntimeSetup::Codex(CodexConfig {
                bin,
                home,
                transport: match codex.transport {
                    serverfs_config::CodexTransport::Stdio => CodexTransport::Stdio,
                    serverfs_config::CodexTransport::Daemon => CodexTransport::Daemon {
                        autostart: codex.autostart,
                    },
                },
                request_timeout: std::time::Duration::from_millis(codex.request_timeout_ms),
                proxy: policy,
                env_passthrough: codex.env_passthrough.clone(),
            }))
        }
        AgentRuntime::Claude => {
            let claude = &config.agent.claude;
            Ok(RuntimeSetup::Claude(StreamJsonConfig {
                bin: resolve_bin("agent.claude_bin", &claude.bin, "Claude Code", env)?,
                request_timeout: std::time::Duration::from_millis(claude.request_timeout_ms),
                env_passthrough: claude.env_passthrough.clone(),
                proxy: policy,
                auth: AuthSource::LocalLogin,
            }))
        }
        AgentRuntime::Qoder => {
            let qoder = &config.agent.qoder;
            Ok(RuntimeSetup::Qoder(StreamJsonConfig {
                bin: resolve_bin("agent.qoder_bin", &qoder.cli.bin, "Qoder", env)?,
                request_timeout: std::time::Duration::from_millis(qoder.cli.request_timeout_ms),
                env_passthrough: qoder.cli.env_passthrough.clone(),
                proxy: policy,
                auth: match qoder.auth {
                    QoderAuth::Login => AuthSource::LocalLogin,
                    QoderAuth::PersonalAccessToken => AuthSource::AccessToken {
                        variable: QODER_TOKEN_VARIABLE.to_owned(),
                    },
                },
            }))
        }
        AgentRuntime::Acp(name) => {
            let agent = &config.agent;
            // Validation allows only configured profiles; a missing one is
            // refused all the same rather than assumed.
            let (index, profile) = agent
                .acp_profiles
                .iter()
                .enumerate()
                .find(|(_, profile)| &profile.runtime == name)
                .ok_or_else(|| BridgeConfigError::UnknownAcpProfile(runtime.clone()))?;
            if !is_executable(&profile.command) {
                return Err(BridgeConfigError::AcpCommandNotExecutable {
                    index,
                    command: profile.command.clone(),
                });
            }
            Ok(RuntimeSetup::Acp(AcpConfig {
                runtime: name.as_str().to_owned(),
                command: profile.command.clone(),
                args: profile.args.clone(),
                env: profile.env.clone(),
                env_passthrough: profile.env_passthrough.clone(),
                request_timeout: std::time::Duration::from_millis(profile.request_timeout_ms),
                probe_timeout: std::time::Duration::from_millis(profile.probe_timeout_ms),
                shutdown_timeout: std::time::Duration::from_millis(profile.shutdown_timeout_ms),
                session_scoped_allow_always: profile.session_scoped_allow_always,
                proxy: policy,
                snapshot_file: Some(
                    agent
                        .state_dir
                        .join(ACP_SNAPSHOT_DIR)
                        .join(format!("{}.json", name.as_str())),
                ),
            }))
        }
    }
}

/// The egress proxy policy of `runtime`'s providers.
fn proxy_policy(config: &Config, proxy: &ProxyEndpoint, runtime: &AgentRuntime) -> ProxyPolicy {
    ProxyPolicy {
        proxy_url: proxy.url.clone(),
        no_proxy: proxy.no_proxy.clone(),
        enabled_for_runtime: config.agent.proxy_runtimes.contains(runtime),
    }
}

/// The executable a `*_bin` setting names, resolved once at start-up: the
/// configured absolute path, or the first executable match of a bare name
/// on `PATH`. `key` and `product` name it in the error.
fn resolve_bin(
    key: &'static str,
    bin: &str,
    product: &'static str,
    env: &BTreeMap<String, String>,
) -> Result<PathBuf, BridgeConfigError> {
    let resolved = if Path::new(bin).is_absolute() {
        PathBuf::from(bin)
    } else {
        env.get("PATH")
            .into_iter()
            .flat_map(|path| path.split(':'))
            .filter(|dir| Path::new(dir).is_absolute())
            .map(|dir| Path::new(dir).join(bin))
            .find(|candidate| is_executable(candidate))
            .ok_or_else(|| BridgeConfigError::BinNotFound {
                key,
                bin: bin.to_owned(),
                product,
            })?
    };
    if !is_executable(&resolved) {
        return Err(BridgeConfigError::BinNotExecutable { key });
    }
    Ok(resolved)
}

/// Codex's home: the configured one, else `$CODEX_HOME`, else `~/.codex`
/// (Codex's own default).
fn codex_home(
    codex: &CodexSettings,
    env: &BTreeMap<String, String>,
) -> Result<PathBuf, BridgeConfigError> {
    codex
        .home
        .clone()
        .or_else(|| {
            env.get("CODEX_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        })
        .or_else(|| {
            env.get("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|home| home.join(".codex"))
        })
        .ok_or(BridgeConfigError::NoCodexHome)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

impl BridgeConfig {
    /// The Bridge's socket.
    pub fn socket(&self) -> &PathBuf {
        &self.config.agent.bridge_socket
    }

    /// Who may connect: the configured uid (default ours) and gid.
    pub fn peer_policy(&self) -> PeerPolicy {
        let agent = &self.config.agent;
        let policy = agent
            .peer_uid
            .map_or_else(PeerPolicy::current_user, PeerPolicy::uid);
        match agent.peer_gid {
            Some(gid) => policy.with_gid(gid),
            None => policy,
        }
    }

    /// Lock artifacts are shared with the peer's group when one is set.
    pub fn artifact_access(&self) -> ArtifactAccess {
        match self.config.agent.peer_gid {
            Some(gid) => ArtifactAccess::Shared { gid },
            None => ArtifactAccess::Private,
        }
    }

    /// The leases whose artifacts must exist before serving: every writable
    /// workdir's (the MCP server takes them for its mutations), plus the
    /// sixteen legacy slot leases when any workdir came from a slot.
    pub fn lease_ids(&self) -> Result<Vec<LeaseId>, BridgeConfigError> {
        let mut ids = Vec::new();
        for workdir in self.config.workdirs.iter().filter(|w| !w.read_only) {
            let id = LeaseId::of_workdir(workdir.alias.as_str(), workdir.legacy_slot).map_err(
                |source| BridgeConfigError::Lease {
                    alias: workdir.alias.as_str().to_owned(),
                    source,
                },
            )?;
            ids.push(id);
        }
        if self.config.workdirs.iter().any(|w| w.legacy_slot.is_some()) {
            ids.extend(LeaseId::legacy_slots());
        }
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        ids.dedup_by(|a, b| a.as_str() == b.as_str());
        Ok(ids)
    }

    /// The workdir policies.
    pub fn policies(&self) -> Result<Policies, PolicyError> {
        Policies::from_config(&self.config)
    }

    /// One adapter per enabled runtime, each with its proxy policy.
    pub fn runtimes(&self) -> Runtimes {
        Runtimes::new(self.setups.iter().map(|setup| -> Arc<dyn Adapter> {
            match setup {
                RuntimeSetup::Fake(proxy) => Arc::new(FakeAdapter::with_proxy(proxy.clone())),
                RuntimeSetup::Codex(config) => Arc::new(CodexAdapter::new(config.clone())),
                RuntimeSetup::Claude(config) => {
                    Arc::new(StreamJsonAdapter::new(&CLAUDE, config.clone()))
                }
                RuntimeSetup::Qoder(config) => {
                    Arc::new(StreamJsonAdapter::new(&QODER, config.clone()))
                }
                RuntimeSetup::Acp(config) => Arc::new(AcpAdapter::new(config.clone())),
            }
        }))
    }

    /// Each runtime this Bridge runs, by name, with its resolved setup.
    pub fn setups(&self) -> impl Iterator<Item = (&str, &RuntimeSetup)> {
        self.runtimes.iter().map(String::as_str).zip(&self.setups)
    }

    /// The ACP runtimes, each with its adapter (for `probe` and the
    /// report).
    fn acp_adapters(&self) -> Vec<AcpAdapter> {
        self.setups
            .iter()
            .filter_map(|setup| match setup {
                RuntimeSetup::Acp(config) => Some(AcpAdapter::new(config.clone())),
                RuntimeSetup::Fake(_)
                | RuntimeSetup::Codex(_)
                | RuntimeSetup::Claude(_)
                | RuntimeSetup::Qoder(_) => None,
            })
            .collect()
    }

    /// `probe`: measures every ACP runtime's capabilities with a bounded
    /// spawn, `initialize` and shutdown (no session, no inference), and
    /// prints one `runtime.list` descriptor per runtime as a JSON line, or
    /// the refusal. `false` when any probe failed.
    pub async fn probe(&self) -> bool {
        let mut all = true;
        for adapter in self.acp_adapters() {
            match adapter.measure().await {
                Ok(()) => {
                    let probe = adapter.probe().await;
                    let info = adapter.runtime_info(&probe);
                    println!(
                        "{}",
                        serde_json::to_string(&info).unwrap_or_else(|_| info.name.clone())
                    );
                }
                Err(error) => {
                    all = false;
                    println!("{}: probe failed: {error}", adapter.name());
                }
            }
        }
        all
    }

    /// The `check-config` report: paths, peer, limits, runtimes and the
    /// agent policy of every workdir (aliases only; the operator's own
    /// paths are shown since only the operator runs this).
    pub fn report(&self) -> String {
        let agent = &self.config.agent;
        let settings = &self.settings;
        let mut out = String::new();
        let _ = writeln!(out, "agent bridge: enabled");
        let _ = writeln!(out, "  socket: {}", agent.bridge_socket.display());
        let _ = writeln!(out, "  state_dir: {}", self.state_dir.display());
        let _ = writeln!(out, "  lock_dir: {}", agent.lock_dir.display());
        let peer = self.peer_policy();
        let _ = writeln!(
            out,
            "  peer: uid {}{}",
            peer.allowed_uid(),
            peer.allowed_gid()
                .map_or_else(String::new, |gid| format!(", gid {gid}"))
        );
        let _ = writeln!(
            out,
            "  limits: max_active_tasks {}, task_timeout {} s, interaction_timeout {} s, \
             retention {} h, result_spool_threshold {} bytes",
            settings.limits.max_active_tasks,
            settings.task_timeout.as_secs(),
            settings.interaction_timeout.as_secs(),
            settings.retention.as_secs() / 3600,
            settings.limits.max_inline_result_bytes,
        );
        let proxied: Vec<&str> = agent
            .proxy_runtimes
            .iter()
            .map(AgentRuntime::as_str)
            .collect();
        let _ = writeln!(
            out,
            "  runtimes: {} (agent proxy: {})",
            list_or_none(&self.runtimes.iter().map(String::as_str).collect::<Vec<_>>()),
            list_or_none(&proxied),
        );
        for adapter in self.acp_adapters() {
            // What list_agent_runtimes reports, without starting anything.
            let info = adapter.runtime_info(&Probe {
                available: true,
                version: None,
            });
            let measured = match info.capabilities_measured_at {
                Some(at) => format!(
                    "measured at {at} (epoch ms): persistent_session {}, model_override {}",
                    info.persistent_session, info.model_override
                ),
                None => "unmeasured (run `serverfs-agent-bridge probe`)".to_owned(),
            };
            let _ = writeln!(out, "  {}: ACP, capabilities {measured}", info.name);
        }
        let _ = writeln!(out, "workdirs:");
        for workdir in &self.config.workdirs {
            let runtimes: Vec<&str> = workdir
                .agent_runtimes
                .iter()
                .map(AgentRuntime::as_str)
                .collect();
            let _ = writeln!(
                out,
                "  {}: agent_mode {}, runtimes {}, {}",
                workdir.alias.as_str(),
                workdir.agent_mode.as_str(),
                list_or_none(&runtimes),
                if workdir.read_only {
                    "read-only"
                } else {
                    "read-write"
                },
            );
        }
        out
    }
}

fn list_or_none(items: &[&str]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}
