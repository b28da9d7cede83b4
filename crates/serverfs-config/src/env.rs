//! The environment source: upstream's `SERVERFS_*` globals and the
//! `WORKDIR_01_*` … `WORKDIR_16_*` container slots (spec §2.3, §2.4).
//!
//! The environment map is always injected; nothing here reads the process
//! environment, so tests can describe any deployment without mutating it.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::acp::AcpProfileEntry;
use crate::agent::AgentMode;
use crate::approvals::{Word, word};
use crate::cli_runtime::{self, StreamJsonCli};
use crate::codex::{self, CodexTransport};
use crate::error::{ConfigError, SlotProblem, one_line};
use crate::http::HttpAuth;
use crate::limits::{self, Limit};
use crate::model::{LogLevel, TextContent};
use crate::oauth::RawOAuth;
use crate::parse;
use crate::provider_cgroup::ProviderCgroup;
use crate::qoder_auth::QoderAuth;
use crate::raw::{
    RawAcpProfile, RawAgent, RawCliRuntime, RawCodex, RawConfig, RawConnectionLimits, RawDefaults,
    RawHttp, RawProxyRuntimes, RawServer, RawWorkdir, Val,
};
use crate::validate;

/// The environment, as given to [`crate::Config::load`].
pub(crate) type Env = BTreeMap<String, String>;

/// Where slot `NN` is mounted in the container image.
const DEFAULT_WORKDIRS_ROOT: &str = "/workdirs";
/// Test and non-container deployments move the slot roots with this.
pub(crate) const WORKDIRS_ROOT_VAR: &str = "SERVERFS_WORKDIRS_ROOT";
/// The file that marks the repository's empty placeholder mount
/// (`./.empty`); reserved inside every workdir (spec §3.1).
pub(crate) const SENTINEL: &str = ".serverfs-disabled";

/// Container defaults of the Bridge endpoints (spec agent-bridge §1.1).
const CONTAINER_BRIDGE_SOCKET: &str = "/run/serverfs-agent-bridge/bridge.sock";
const CONTAINER_LOCK_DIR: &str = "/run/serverfs-agent-locks";
/// The socket's name inside its directory, on both sides of a mount.
const SOCKET_NAME: &str = "bridge.sock";
/// The host directories the Compose agent overlay mounts at the container
/// paths above (read-only), read by the Bridge on the host.
pub(crate) const HOST_SOCKET_DIR_VAR: &str = "SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR";
pub(crate) const HOST_LOCK_DIR_VAR: &str = "SERVERFS_AGENT_LOCK_HOST_DIR";
/// Container default of the bearer token file (a persistent volume).
const CONTAINER_TOKEN_FILE: &str = "/var/lib/serverfs/tokens.json";
/// Name of the Bridge's state directory under the XDG state home.
const BRIDGE_STATE_NAME: &str = "serverfs-agent-bridge";

/// Per-slot variable names (`WORKDIR_NN_<NAME>`). `PATH` is consumed by
/// Compose for the bind mount and ignored here, but it is a known name.
pub(crate) const SLOT_NAMES: [&str; 17] = [
    "ALIAS",
    "PATH",
    "DESCRIPTION",
    "READ_ONLY",
    "ALLOW_HIDDEN",
    "DISABLE_DEFAULT_DENY",
    "EXTRA_DENY_GLOBS",
    "MAX_READ_BYTES",
    "MAX_READ_LINES",
    "MAX_WRITE_BYTES",
    "BINARY_TRANSFER_ENABLED",
    "MAX_BINARY_TRANSFER_BYTES",
    "READ_HARDLINKED_FILES",
    "AGENT_MODE",
    "AGENT_RUNTIMES",
    "AGENT_APPROVALS",
    "AGENT_APPROVAL_PATHS",
];

/// Which deployment the variables describe, which decides the defaults of
/// the Bridge endpoints and the token file, and whether hard-linked files
/// are read, when their variables are unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathDefaults {
    /// The container deployment: fixed paths (`/run/…`,
    /// `/var/lib/serverfs/…`).
    Container,
    /// The host side of the same Compose `.env` (the Agent Bridge beside
    /// the container): the socket and lock directories are the host
    /// directories the agent overlay mounts into the container.
    ComposeHost,
    /// `--workdir` specs: per-user paths from the XDG variables and HOME.
    Native,
}

impl PathDefaults {
    /// The default of `SERVERFS_READ_HARDLINKED_FILES`. The container
    /// environment is upstream's, and existing upstream deployments read
    /// every regular file: they keep doing so until they set the variable
    /// (this repository's compose.yml sets it to false for new ones).
    /// `--workdir` specs are new to this implementation and refuse
    /// (docs/configuration.md §5.8).
    fn reads_hardlinked_files(self) -> bool {
        match self {
            PathDefaults::Container | PathDefaults::ComposeHost => true,
            PathDefaults::Native => false,
        }
    }
}

/// Which side of a Compose deployment reads the variables: the container
/// (slot `NN` mounted at `/workdirs/NN`), or the host, where the Agent
/// Bridge finds each slot at its `WORKDIR_NN_PATH`, the very directory
/// Compose mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// `serverfs` in the container.
    Container,
    /// The Agent Bridge on the host.
    Host,
}

/// Where a slot's root is.
enum SlotRoots {
    /// `<base>/NN`.
    Mounted(PathBuf),
    /// `WORKDIR_NN_PATH`.
    HostPaths,
}

/// The whole environment source: globals plus the sixteen slots, as
/// `side` sees them.
pub(crate) fn raw_from_env(env: &Env, side: Side) -> Result<RawConfig, ConfigError> {
    check_slot_variable_names(env)?;
    let (paths, roots) = match side {
        Side::Container => (
            PathDefaults::Container,
            SlotRoots::Mounted(workdirs_root(env)?),
        ),
        Side::Host => (PathDefaults::ComposeHost, SlotRoots::HostPaths),
    };
    let mut raw = globals(env, paths)?;
    for slot in 1..=limits::SLOT_COUNT {
        if let Some(workdir) = slot_workdir(env, slot, &roots)? {
            raw.workdirs.push(workdir);
        }
    }
    Ok(raw)
}

/// Only the `SERVERFS_*` globals, with no workdir: the base of command-line
/// mode, where server settings and workdir defaults still come from the
/// environment.
pub(crate) fn globals(env: &Env, paths: PathDefaults) -> Result<RawConfig, ConfigError> {
    let get = |name: &str| env.get(name).map(String::as_str);
    let strict = |name: &str, limit: Limit| -> Result<Val<i64>, ConfigError> {
        Ok(Val::or_default(
            parse::strict_int(name, get(name))?,
            limit.default_i64(),
            name,
        ))
    };
    let lenient = |name: &str, limit: Limit| {
        Val::or_default(parse::lenient_int(get(name)), limit.default_i64(), name)
    };
    let strict_bool = |name: &str, default: bool| -> Result<bool, ConfigError> {
        Ok(parse::strict_bool(name, get(name))?.unwrap_or(default))
    };
    let peer_id = |name: &str| -> Result<Option<Val<i64>>, ConfigError> {
        Ok(parse::strict_uint(name, get(name))?.map(|id| Val::set(id, name)))
    };

    let server = RawServer {
        log_level: log_level(get("SERVERFS_LOG_LEVEL")),
        text_content: text_content(get("SERVERFS_TEXT_CONTENT"))?,
        default_list_limit: lenient("SERVERFS_DEFAULT_LIST_LIMIT", limits::DEFAULT_LIST_LIMIT),
        max_list_entries: lenient("SERVERFS_MAX_LIST_ENTRIES", limits::MAX_LIST_ENTRIES),
        default_search_results: lenient(
            "SERVERFS_DEFAULT_SEARCH_RESULTS",
            limits::DEFAULT_SEARCH_RESULTS,
        ),
        max_search_results: lenient("SERVERFS_MAX_SEARCH_RESULTS", limits::MAX_SEARCH_RESULTS),
        max_walk_entries: lenient("SERVERFS_MAX_WALK_ENTRIES", limits::MAX_WALK_ENTRIES),
        search_timeout_ms: search_timeout(env),
        search_max_file_bytes: lenient(
            "SERVERFS_SEARCH_MAX_FILE_BYTES",
            limits::SEARCH_MAX_FILE_BYTES,
        ),
        max_edits_per_call: lenient("SERVERFS_MAX_EDITS_PER_CALL", limits::MAX_EDITS_PER_CALL),
    };

    let defaults = RawDefaults {
        allow_hidden: strict_bool("SERVERFS_ALLOW_HIDDEN", false)?,
        default_deny: !strict_bool("SERVERFS_DISABLE_DEFAULT_DENY", false)?,
        deny: Val::default_at(
            parse::list(get("SERVERFS_EXTRA_DENY_GLOBS")),
            "SERVERFS_EXTRA_DENY_GLOBS",
        ),
        binary_transfer: strict_bool("SERVERFS_BINARY_TRANSFER_ENABLED", false)?,
        read_hardlinked_files: strict_bool(
            "SERVERFS_READ_HARDLINKED_FILES",
            paths.reads_hardlinked_files(),
        )?,
        max_read_lines: strict("SERVERFS_MAX_READ_LINES", limits::MAX_READ_LINES)?,
        max_read_bytes: strict("SERVERFS_MAX_READ_BYTES", limits::MAX_READ_BYTES)?,
        max_write_bytes: strict("SERVERFS_MAX_WRITE_BYTES", limits::MAX_WRITE_BYTES)?,
        max_binary_transfer_bytes: strict(
            "SERVERFS_MAX_BINARY_TRANSFER_BYTES",
            limits::MAX_BINARY_TRANSFER_BYTES,
        )?,
        agent_mode: Val::or_default(
            agent_mode("SERVERFS_AGENT_MODE", get("SERVERFS_AGENT_MODE"))?,
            AgentMode::Disabled,
            "SERVERFS_AGENT_MODE",
        ),
        agent_runtimes: Val::default_at(
            runtime_names(get("SERVERFS_AGENT_RUNTIMES")),
            "SERVERFS_AGENT_RUNTIMES",
        ),
        approvals: env_word("SERVERFS_AGENT_APPROVALS", get("SERVERFS_AGENT_APPROVALS"))?
            .unwrap_or_default(),
        approval_paths: env_word(
            "SERVERFS_AGENT_APPROVAL_PATHS",
            get("SERVERFS_AGENT_APPROVAL_PATHS"),
        )?
        .unwrap_or_default(),
    };

    let (socket, lock_dir) = bridge_endpoints(env, paths);
    let agent = RawAgent {
        // Lenient on purpose: an unrecognised value fails towards "off".
        enabled: Val::default_at(
            parse::lenient_bool(get("SERVERFS_AGENT_BRIDGE_ENABLED")),
            "SERVERFS_AGENT_BRIDGE_ENABLED",
        ),
        socket,
        timeout_ms: Val::or_default(
            parse::lenient_float(get("SERVERFS_AGENT_BRIDGE_TIMEOUT_SECONDS"))
                .map(parse::seconds_to_ms),
            limits::BRIDGE_TIMEOUT_MS.default_i64(),
            "SERVERFS_AGENT_BRIDGE_TIMEOUT_SECONDS",
        ),
        lock_dir,
        // The Bridge's own settings are strict, as upstream's Bridge
        // renderer was: a typo aborts startup instead of silently running
        // agents with a default limit. Empty means "not set".
        state_dir: Val::or_default(
            non_empty(get("SERVERFS_AGENT_BRIDGE_STATE_DIR")).map(PathBuf::from),
            native_state_dir(env),
            "SERVERFS_AGENT_BRIDGE_STATE_DIR",
        ),
        max_active_tasks: strict("SERVERFS_AGENT_MAX_ACTIVE_TASKS", limits::MAX_ACTIVE_TASKS)?,
        task_timeout_seconds: strict(
            "SERVERFS_AGENT_TASK_TIMEOUT_SECONDS",
            limits::TASK_TIMEOUT_SECONDS,
        )?,
        interaction_timeout_seconds: strict(
            "SERVERFS_AGENT_INTERACTION_TIMEOUT_SECONDS",
            limits::INTERACTION_TIMEOUT_SECONDS,
        )?,
        retention_hours: strict(
            "SERVERFS_AGENT_TASK_RETENTION_HOURS",
            limits::TASK_RETENTION_HOURS,
        )?,
        result_spool_threshold_bytes: strict(
            "SERVERFS_AGENT_RESULT_SPOOL_THRESHOLD_BYTES",
            limits::RESULT_SPOOL_THRESHOLD_BYTES,
        )?,
        // 0 is root's id, a valid (if unwise) peer.
        peer_uid: peer_id("SERVERFS_AGENT_PEER_UID")?,
        peer_gid: peer_id("SERVERFS_AGENT_PEER_GID")?,
        // One switch for all runtimes (upstream's `.env` had no per-runtime
        // list): on means every runtime some workdir allows.
        proxy_runtimes: if strict_bool("SERVERFS_AGENT_USE_PROXY", false)? {
            RawProxyRuntimes::EveryListed
        } else {
            RawProxyRuntimes::Named(Val::default_at(Vec::new(), "SERVERFS_AGENT_USE_PROXY"))
        },
        provider_cgroup: provider_cgroup_global(env)?,
        codex: codex_globals(env)?,
        claude: cli_runtime_globals(env, &cli_runtime::CLAUDE, &CLAUDE_VARIABLES)?,
        qoder: cli_runtime_globals(env, &cli_runtime::QODER, &QODER_VARIABLES)?,
        qoder_auth: qoder_auth_global(env)?,
        acp_profiles: acp_profiles_json(get("SERVERFS_ACP_PROFILES_JSON"))?,
    };

    let http = http_globals(env, paths)?;

    Ok(RawConfig {
        server,
        defaults,
        agent,
        http,
        workdirs: Vec::new(),
        clamp_defaults: true,
        empty_hint: format!(
            "every slot WORKDIR_01 … WORKDIR_{:02} is disabled: set WORKDIR_NN_ALIAS \
             and mount the directory at the slot root",
            limits::SLOT_COUNT
        ),
    })
}

/// The Bridge's socket and lock directory. In the container and with
/// `--workdir` specs they are `SERVERFS_AGENT_BRIDGE_SOCKET` and
/// `SERVERFS_AGENT_LOCK_DIR` (else the side's defaults). On the host of a
/// Compose deployment they are inside the directories the agent overlay
/// mounts, `SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR` and
/// `SERVERFS_AGENT_LOCK_HOST_DIR` (the container-side variables are the
/// overlay's, not the host's); unset, they stay empty, which validation
/// refuses while the Bridge is enabled.
fn bridge_endpoints(env: &Env, paths: PathDefaults) -> (Val<PathBuf>, Val<PathBuf>) {
    let get = |name: &str| non_empty(env.get(name).map(String::as_str)).map(PathBuf::from);
    match paths {
        PathDefaults::ComposeHost => (
            Val::or_default(
                get(HOST_SOCKET_DIR_VAR).map(|dir| dir.join(SOCKET_NAME)),
                PathBuf::new(),
                HOST_SOCKET_DIR_VAR,
            ),
            Val::or_default(get(HOST_LOCK_DIR_VAR), PathBuf::new(), HOST_LOCK_DIR_VAR),
        ),
        PathDefaults::Container | PathDefaults::Native => {
            let socket = get("SERVERFS_AGENT_BRIDGE_SOCKET");
            let lock_dir = get("SERVERFS_AGENT_LOCK_DIR");
            let (default_socket, default_lock_dir) = match paths {
                PathDefaults::Native => native_bridge_paths(env, socket.as_deref()),
                PathDefaults::Container | PathDefaults::ComposeHost => (
                    PathBuf::from(CONTAINER_BRIDGE_SOCKET),
                    PathBuf::from(CONTAINER_LOCK_DIR),
                ),
            };
            (
                Val::or_default(socket, default_socket, "SERVERFS_AGENT_BRIDGE_SOCKET"),
                Val::or_default(lock_dir, default_lock_dir, "SERVERFS_AGENT_LOCK_DIR"),
            )
        }
    }
}

/// `SERVERFS_QODER_AUTH`, strict like the Bridge's other settings. Empty
/// means "not set".
fn qoder_auth_global(env: &Env) -> Result<Val<QoderAuth>, ConfigError> {
    const KEY: &str = "SERVERFS_QODER_AUTH";
    let value = non_empty(env.get(KEY).map(String::as_str))
        .map(|text| {
            QoderAuth::parse(&text.to_ascii_lowercase()).ok_or_else(|| ConfigError::InvalidValue {
                key: KEY.to_owned(),
                expected: QoderAuth::EXPECTED,
                got: text.to_owned(),
            })
        })
        .transpose()?;
    Ok(Val::or_default(value, QoderAuth::default(), KEY))
}

/// `SERVERFS_AGENT_PROVIDER_CGROUP`, strict like the Bridge's other
/// settings. Empty means "not set".
fn provider_cgroup_global(env: &Env) -> Result<Val<ProviderCgroup>, ConfigError> {
    const KEY: &str = "SERVERFS_AGENT_PROVIDER_CGROUP";
    let value = match non_empty(env.get(KEY).map(String::as_str)) {
        None => None,
        Some(text) => {
            Some(
                ProviderCgroup::parse(text).ok_or_else(|| ConfigError::InvalidValue {
                    key: KEY.to_owned(),
                    expected: ProviderCgroup::EXPECTED,
                    got: text.to_owned(),
                })?,
            )
        }
    };
    Ok(Val::or_default(value, ProviderCgroup::Auto, KEY))
}

/// The `SERVERFS_CODEX_*` variables, strict like the Bridge's other
/// settings: a typo aborts the Bridge's start instead of running another
/// `codex` than the operator meant. Empty means "not set".
fn codex_globals(env: &Env) -> Result<RawCodex, ConfigError> {
    let get = |name: &str| env.get(name).map(String::as_str);
    let transport = match non_empty(get("SERVERFS_CODEX_TRANSPORT")) {
        None => None,
        Some(text) => Some(
            CodexTransport::parse(&text.to_ascii_lowercase()).ok_or_else(|| {
                ConfigError::InvalidValue {
                    key: "SERVERFS_CODEX_TRANSPORT".to_owned(),
                    expected: "one of stdio, daemon",
                    got: get("SERVERFS_CODEX_TRANSPORT")
                        .unwrap_or_default()
                        .to_owned(),
                }
            })?,
        ),
    };
    Ok(RawCodex {
        bin: Val::or_default(
            non_empty(get("SERVERFS_CODEX_BIN")).map(str::to_owned),
            codex::DEFAULT_BIN.to_owned(),
            "SERVERFS_CODEX_BIN",
        ),
        home: non_empty(get("SERVERFS_CODEX_HOME"))
            .map(|home| Val::set(PathBuf::from(home), "SERVERFS_CODEX_HOME")),
        transport: Val::or_default(
            transport,
            CodexTransport::default(),
            "SERVERFS_CODEX_TRANSPORT",
        ),
        autostart: Val::or_default(
            parse::strict_bool("SERVERFS_CODEX_AUTOSTART", get("SERVERFS_CODEX_AUTOSTART"))?,
            false,
            "SERVERFS_CODEX_AUTOSTART",
        ),
        request_timeout_seconds: Val::or_default(
            parse::strict_float(
                "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS",
                get("SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS"),
            )?,
            limits::CODEX_REQUEST_TIMEOUT_MS.default_seconds(),
            "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS",
        ),
        env_passthrough: Val::or_default(
            parse::strict_list(
                "SERVERFS_CODEX_ENV_PASSTHROUGH",
                get("SERVERFS_CODEX_ENV_PASSTHROUGH"),
            )?,
            Vec::new(),
            "SERVERFS_CODEX_ENV_PASSTHROUGH",
        ),
    })
}

/// The variables of one stream-json runtime. Spelled out rather than
/// formatted from the runtime's name, so every variable name appears in
/// this file as written (the reference test checks each is documented).
struct CliRuntimeVariables {
    bin: &'static str,
    request_timeout_seconds: &'static str,
    env_passthrough: &'static str,
}

const CLAUDE_VARIABLES: CliRuntimeVariables = CliRuntimeVariables {
    bin: "SERVERFS_CLAUDE_BIN",
    request_timeout_seconds: "SERVERFS_CLAUDE_REQUEST_TIMEOUT_SECONDS",
    env_passthrough: "SERVERFS_CLAUDE_ENV_PASSTHROUGH",
};

const QODER_VARIABLES: CliRuntimeVariables = CliRuntimeVariables {
    bin: "SERVERFS_QODER_BIN",
    request_timeout_seconds: "SERVERFS_QODER_REQUEST_TIMEOUT_SECONDS",
    env_passthrough: "SERVERFS_QODER_ENV_PASSTHROUGH",
};

/// The `SERVERFS_CLAUDE_*` or `SERVERFS_QODER_*` variables, strict like
/// the Codex ones. Empty means "not set".
fn cli_runtime_globals(
    env: &Env,
    cli: &StreamJsonCli,
    names: &CliRuntimeVariables,
) -> Result<RawCliRuntime, ConfigError> {
    let get = |name: &str| env.get(name).map(String::as_str);
    Ok(RawCliRuntime {
        bin: Val::or_default(
            non_empty(get(names.bin)).map(str::to_owned),
            cli.default_bin.to_owned(),
            names.bin,
        ),
        request_timeout_seconds: Val::or_default(
            parse::strict_float(
                names.request_timeout_seconds,
                get(names.request_timeout_seconds),
            )?,
            limits::STREAM_JSON_REQUEST_TIMEOUT_MS.default_seconds(),
            names.request_timeout_seconds,
        ),
        env_passthrough: Val::or_default(
            parse::strict_list(names.env_passthrough, get(names.env_passthrough))?,
            Vec::new(),
            names.env_passthrough,
        ),
    })
}

/// `SERVERFS_ACP_PROFILES_JSON`: the ACP profiles as one JSON array of
/// objects with the keys of `[[agent.acp_profiles]]` (one structured
/// value rather than numbered variables; parsed, never evaluated). Empty
/// or unset means none.
fn acp_profiles_json(raw: Option<&str>) -> Result<Val<Vec<RawAcpProfile>>, ConfigError> {
    const KEY: &str = "SERVERFS_ACP_PROFILES_JSON";
    let Some(text) = non_empty(raw) else {
        return Ok(Val::default_at(Vec::new(), KEY));
    };
    let entries: Vec<AcpProfileEntry> =
        serde_json::from_str(text).map_err(|error| ConfigError::InvalidJson {
            key: KEY.to_owned(),
            message: format!(
                "expected a JSON array of ACP profiles ({})",
                one_line(&error.to_string())
            ),
        })?;
    Ok(Val::set(
        entries
            .into_iter()
            .enumerate()
            .map(|(index, entry)| entry.into_raw(&format!("{KEY}[{index}]")))
            .collect(),
        KEY,
    ))
}

/// Default Bridge socket and lock directory for a native (non-container)
/// install: `$XDG_RUNTIME_DIR/serverfs/bridge.sock`, else under
/// `$XDG_STATE_HOME/serverfs/`, else `~/.local/state/serverfs/`; the lock
/// directory is `locks` beside the socket (beside `socket` when given).
/// Relative XDG values are ignored, as the XDG spec requires. With none of
/// the variables set the socket stays relative, which is refused only if
/// the Bridge is enabled.
pub(crate) fn native_bridge_paths(env: &Env, socket: Option<&Path>) -> (PathBuf, PathBuf) {
    let default_socket = if let Some(dir) = absolute_var(env, "XDG_RUNTIME_DIR") {
        dir.join("serverfs").join("bridge.sock")
    } else if let Some(dir) = absolute_var(env, "XDG_STATE_HOME") {
        dir.join("serverfs").join("bridge.sock")
    } else if let Some(home) = absolute_var(env, "HOME") {
        home.join(".local/state/serverfs/bridge.sock")
    } else {
        PathBuf::from("serverfs/bridge.sock")
    };
    let lock_dir = socket
        .unwrap_or(&default_socket)
        .parent()
        .unwrap_or(Path::new(""))
        .join("locks");
    (default_socket, lock_dir)
}

/// Default state directory of the Bridge, in every mode (the Bridge runs on
/// the host even when the MCP server is in a container):
/// `$XDG_STATE_HOME/serverfs-agent-bridge`, else
/// `$HOME/.local/state/serverfs-agent-bridge`. Relative values are ignored,
/// as the XDG spec requires; with neither set the directory stays relative.
pub(crate) fn native_state_dir(env: &Env) -> PathBuf {
    if let Some(dir) = absolute_var(env, "XDG_STATE_HOME") {
        dir.join(BRIDGE_STATE_NAME)
    } else if let Some(home) = absolute_var(env, "HOME") {
        home.join(".local/state").join(BRIDGE_STATE_NAME)
    } else {
        PathBuf::from(BRIDGE_STATE_NAME)
    }
}

/// The variable `name` as a path, if it is set to an absolute one.
fn absolute_var(env: &Env, name: &str) -> Option<PathBuf> {
    env.get(name).map(PathBuf::from).filter(|p| p.is_absolute())
}

/// The `SERVERFS_HTTP_*` variables and `SERVERFS_TOKEN_FILE`, all strict:
/// they decide who may reach the files, so a typo aborts startup. Empty
/// means "not set".
fn http_globals(env: &Env, paths: PathDefaults) -> Result<RawHttp, ConfigError> {
    let get = |name: &str| env.get(name).map(String::as_str);
    let int = |name: &str, limit: Limit| -> Result<Val<i64>, ConfigError> {
        Ok(Val::or_default(
            parse::strict_int(name, get(name))?,
            limit.default_i64(),
            name,
        ))
    };
    let list = |name: &str| {
        Val::or_default(
            non_empty(get(name)).map(|text| parse::list(Some(text))),
            Vec::new(),
            name,
        )
    };

    let auth = match non_empty(get("SERVERFS_HTTP_AUTH")) {
        None => None,
        Some(text) => Some(HttpAuth::parse(&text.to_ascii_lowercase()).ok_or_else(|| {
            ConfigError::InvalidValue {
                key: "SERVERFS_HTTP_AUTH".to_owned(),
                expected: "one of bearer, none, oauth",
                got: get("SERVERFS_HTTP_AUTH").unwrap_or_default().to_owned(),
            }
        })?),
    };
    // Absolute only: there is no file directory to resolve against, and a
    // token file that moves with the working directory is a trap.
    let token_file = match non_empty(get("SERVERFS_TOKEN_FILE")) {
        None => None,
        Some(path) if Path::new(path).is_absolute() => Some(PathBuf::from(path)),
        Some(path) => {
            return Err(ConfigError::InvalidValue {
                key: "SERVERFS_TOKEN_FILE".to_owned(),
                expected: "an absolute path",
                got: path.to_owned(),
            });
        }
    };
    let default_token_file = match paths {
        PathDefaults::Container | PathDefaults::ComposeHost => PathBuf::from(CONTAINER_TOKEN_FILE),
        PathDefaults::Native => native_token_file(env),
    };
    Ok(RawHttp {
        oauth: oauth_vars(env)?,
        bind: non_empty(get("SERVERFS_HTTP_BIND"))
            .map(|bind| Val::set(bind.to_owned(), "SERVERFS_HTTP_BIND")),
        auth: Val::or_default(auth, HttpAuth::default(), "SERVERFS_HTTP_AUTH"),
        trust_network: Val::or_default(
            parse::strict_bool(
                "SERVERFS_HTTP_TRUST_NETWORK",
                get("SERVERFS_HTTP_TRUST_NETWORK"),
            )?,
            false,
            "SERVERFS_HTTP_TRUST_NETWORK",
        ),
        allowed_hosts: list("SERVERFS_HTTP_ALLOWED_HOSTS"),
        allowed_origins: list("SERVERFS_HTTP_ALLOWED_ORIGINS"),
        token_file: Val::or_default(token_file, default_token_file, "SERVERFS_TOKEN_FILE"),
        request_timeout_ms: int(
            "SERVERFS_HTTP_REQUEST_TIMEOUT_MS",
            limits::HTTP_REQUEST_TIMEOUT_MS,
        )?,
        max_concurrent_requests: int(
            "SERVERFS_HTTP_MAX_CONCURRENT_REQUESTS",
            limits::HTTP_MAX_CONCURRENT_REQUESTS,
        )?,
        // 0 is a valid grace period, so this one is non-negative.
        shutdown_grace_ms: Val::or_default(
            parse::strict_uint(
                "SERVERFS_HTTP_SHUTDOWN_GRACE_MS",
                get("SERVERFS_HTTP_SHUTDOWN_GRACE_MS"),
            )?,
            limits::HTTP_SHUTDOWN_GRACE_MS.default_i64(),
            "SERVERFS_HTTP_SHUTDOWN_GRACE_MS",
        ),
        connections: RawConnectionLimits {
            header_timeout_ms: int(
                "SERVERFS_HTTP_HEADER_TIMEOUT_MS",
                limits::HTTP_HEADER_TIMEOUT_MS,
            )?,
            body_timeout_ms: int(
                "SERVERFS_HTTP_BODY_TIMEOUT_MS",
                limits::HTTP_BODY_TIMEOUT_MS,
            )?,
            max_connections: int(
                "SERVERFS_HTTP_MAX_CONNECTIONS",
                limits::HTTP_MAX_CONNECTIONS,
            )?,
            session_idle_timeout_ms: int(
                "SERVERFS_HTTP_SESSION_IDLE_TIMEOUT_MS",
                limits::HTTP_SESSION_IDLE_TIMEOUT_MS,
            )?,
            max_sessions: int("SERVERFS_HTTP_MAX_SESSIONS", limits::HTTP_MAX_SESSIONS)?,
            max_sessions_per_token: int(
                "SERVERFS_HTTP_MAX_SESSIONS_PER_TOKEN",
                limits::HTTP_MAX_SESSIONS_PER_TOKEN,
            )?,
        },
    })
}

/// The `SERVERFS_HTTP_OAUTH_*` variables. Pre-registered clients are a
/// TOML-only setting (`[[http.oauth.clients]]`).
fn oauth_vars(env: &Env) -> Result<RawOAuth, ConfigError> {
    let get = |name: &str| non_empty(env.get(name).map(String::as_str));
    let text = |name: &str| get(name).map(|v| Val::set(v.to_owned(), name));
    let absolute = |name: &str| match get(name) {
        None => Ok(None),
        Some(path) if Path::new(path).is_absolute() => {
            Ok(Some(Val::set(PathBuf::from(path), name)))
        }
        Some(path) => Err(ConfigError::InvalidValue {
            key: name.to_owned(),
            expected: "an absolute path",
            got: path.to_owned(),
        }),
    };
    let mut raw =
        RawOAuth::defaults(|name| format!("SERVERFS_HTTP_OAUTH_{}", name.to_ascii_uppercase()));
    raw.public_url = text("SERVERFS_HTTP_OAUTH_PUBLIC_URL");
    raw.state_file = absolute("SERVERFS_HTTP_OAUTH_STATE_FILE")?;
    for (target, name) in [
        (
            &mut raw.access_token_ttl_s,
            "SERVERFS_HTTP_OAUTH_ACCESS_TOKEN_TTL_S",
        ),
        (
            &mut raw.refresh_token_ttl_s,
            "SERVERFS_HTTP_OAUTH_REFRESH_TOKEN_TTL_S",
        ),
    ] {
        if let Some(value) = parse::strict_int(name, get(name))? {
            *target = Val::set(value, name);
        }
    }
    if let Some(list) = get("SERVERFS_HTTP_OAUTH_ALLOWED_REDIRECT_URIS") {
        raw.allowed_redirect_uris = Val::set(
            parse::list(Some(list)),
            "SERVERFS_HTTP_OAUTH_ALLOWED_REDIRECT_URIS",
        );
    }
    for (target, name) in [
        (
            &mut raw.dynamic_registration,
            "SERVERFS_HTTP_OAUTH_DYNAMIC_REGISTRATION",
        ),
        (
            &mut raw.client_metadata_documents,
            "SERVERFS_HTTP_OAUTH_CLIENT_METADATA_DOCUMENTS",
        ),
        (
            &mut raw.accept_bearer_tokens,
            "SERVERFS_HTTP_OAUTH_ACCEPT_BEARER_TOKENS",
        ),
    ] {
        if let Some(value) = parse::strict_bool(name, get(name))? {
            *target = Val::set(value, name);
        }
    }
    raw.external_issuer = text("SERVERFS_HTTP_OAUTH_EXTERNAL_ISSUER");
    raw.external_jwks_file = absolute("SERVERFS_HTTP_OAUTH_EXTERNAL_JWKS_FILE")?;
    raw.external_jwks_url = text("SERVERFS_HTTP_OAUTH_EXTERNAL_JWKS_URL");
    raw.external_audience = text("SERVERFS_HTTP_OAUTH_EXTERNAL_AUDIENCE");
    Ok(raw)
}

/// Default bearer token file of a native install:
/// `$XDG_CONFIG_HOME/serverfs/tokens.json`, else
/// `$HOME/.config/serverfs/tokens.json`. Relative values are ignored, as
/// the XDG spec requires; with neither set the path stays relative, which
/// is refused only when bearer authentication is used.
pub(crate) fn native_token_file(env: &Env) -> PathBuf {
    if let Some(dir) = absolute_var(env, "XDG_CONFIG_HOME") {
        dir.join("serverfs").join("tokens.json")
    } else if let Some(home) = absolute_var(env, "HOME") {
        home.join(".config/serverfs/tokens.json")
    } else {
        PathBuf::from("serverfs/tokens.json")
    }
}

/// Upper-cased; anything but DEBUG/INFO/WARNING/ERROR silently means INFO
/// (spec §2.3: the log level never aborts startup).
fn log_level(raw: Option<&str>) -> LogLevel {
    match raw.map(|t| t.trim().to_ascii_uppercase()).as_deref() {
        Some("DEBUG") => LogLevel::Debug,
        Some("WARNING") => LogLevel::Warning,
        Some("ERROR") => LogLevel::Error,
        Some(_) | None => LogLevel::Info,
    }
}

/// `SERVERFS_SEARCH_TIMEOUT_MS` (integer, lenient) wins when set; otherwise
/// upstream's `SERVERFS_SEARCH_TIMEOUT_SECONDS` (float, lenient) is honoured.
fn search_timeout(env: &Env) -> Val<i64> {
    const MS: &str = "SERVERFS_SEARCH_TIMEOUT_MS";
    const SECONDS: &str = "SERVERFS_SEARCH_TIMEOUT_SECONDS";
    let default = limits::SEARCH_TIMEOUT_MS.default_i64();
    if non_empty(env.get(MS).map(String::as_str)).is_some() {
        return Val::or_default(
            parse::lenient_int(env.get(MS).map(String::as_str)),
            default,
            MS,
        );
    }
    Val::or_default(
        parse::lenient_float(env.get(SECONDS).map(String::as_str)).map(parse::seconds_to_ms),
        default,
        SECONDS,
    )
}

/// Agent mode: trimmed, any case; empty means "not set".
/// `SERVERFS_TEXT_CONTENT`: `full` or `summary`, trimmed, any case; empty
/// means the default. Strict, unlike the log level: a typo must not
/// silently starve content-only clients of the data.
fn text_content(raw: Option<&str>) -> Result<TextContent, ConfigError> {
    let Some(text) = non_empty(raw) else {
        return Ok(TextContent::default());
    };
    TextContent::parse(&text.to_ascii_lowercase()).ok_or_else(|| ConfigError::InvalidValue {
        key: "SERVERFS_TEXT_CONTENT".to_owned(),
        expected: "one of full, summary",
        got: raw.unwrap_or_default().to_owned(),
    })
}

fn agent_mode(key: &str, raw: Option<&str>) -> Result<Option<AgentMode>, ConfigError> {
    let Some(text) = non_empty(raw) else {
        return Ok(None);
    };
    AgentMode::parse(&text.to_ascii_lowercase())
        .map(Some)
        .ok_or_else(|| ConfigError::InvalidValue {
            key: key.to_owned(),
            expected: "one of disabled, review, workspace-write",
            got: raw.unwrap_or_default().to_owned(),
        })
}

/// A one-of-a-few-words variable (`*_AGENT_APPROVALS`,
/// `*_AGENT_APPROVAL_PATHS`), any case, as the agent mode; `None` when
/// unset or empty.
fn env_word<T: Word>(key: &str, raw: Option<&str>) -> Result<Option<T>, ConfigError> {
    let Some(text) = non_empty(raw) else {
        return Ok(None);
    };
    word(key, raw.unwrap_or_default(), &text.to_ascii_lowercase()).map(Some)
}

/// Runtime list: comma-separated, trimmed, any case; names are checked
/// (unknown, duplicate) by validation with the variable's name.
fn runtime_names(raw: Option<&str>) -> Vec<String> {
    parse::list(raw)
        .into_iter()
        .map(|name| name.to_ascii_lowercase())
        .collect()
}

fn non_empty(raw: Option<&str>) -> Option<&str> {
    raw.map(str::trim).filter(|t| !t.is_empty())
}

/// Splits `WORKDIR_<digits>_<NAME>` into the digits and the name; `None`
/// for any other variable (e.g. `WORKDIR_ROOT` is not ours).
fn split_slot_variable(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("WORKDIR_")?;
    let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (digits, tail) = rest.split_at(digits_len);
    let field = tail.strip_prefix('_')?;
    (!digits.is_empty()).then_some((digits, field))
}

/// The slot number of a well-formed slot variable (`01`..=`16`).
fn slot_number(digits: &str) -> Option<u8> {
    if digits.len() != 2 {
        return None;
    }
    digits
        .parse::<u8>()
        .ok()
        .filter(|n| (1..=limits::SLOT_COUNT).contains(n))
}

/// Whether `name` is a variable of slot 01..16 (any field name); this is
/// what makes the environment the configuration source.
pub(crate) fn is_slot_variable(name: &str) -> bool {
    split_slot_variable(name).is_some_and(|(digits, _)| slot_number(digits).is_some())
}

/// Refuses `WORKDIR_NN_*` variables with an unknown slot or field, so a
/// typo (`WORKDIR_03_READONLY`, `WORKDIR_3_ALIAS`, `WORKDIR_17_ALIAS`)
/// cannot silently leave a setting at its default.
fn check_slot_variable_names(env: &Env) -> Result<(), ConfigError> {
    for name in env.keys() {
        let Some((digits, field)) = split_slot_variable(name) else {
            continue;
        };
        if slot_number(digits).is_none() {
            return Err(ConfigError::UnknownVariable {
                name: name.clone(),
                hint: "slots are numbered with two digits, WORKDIR_01 … WORKDIR_16",
            });
        }
        if !SLOT_NAMES.contains(&field) {
            return Err(ConfigError::UnknownVariable {
                name: name.clone(),
                hint: "per-slot names are ALIAS, PATH, DESCRIPTION, READ_ONLY, ALLOW_HIDDEN, \
                       DISABLE_DEFAULT_DENY, EXTRA_DENY_GLOBS, MAX_READ_BYTES, MAX_READ_LINES, \
                       MAX_WRITE_BYTES, BINARY_TRANSFER_ENABLED, MAX_BINARY_TRANSFER_BYTES, \
                       READ_HARDLINKED_FILES, AGENT_MODE, AGENT_RUNTIMES, AGENT_APPROVALS, \
                       AGENT_APPROVAL_PATHS",
            });
        }
    }
    Ok(())
}

/// `$SERVERFS_WORKDIRS_ROOT` (absolute) or `/workdirs`.
fn workdirs_root(env: &Env) -> Result<PathBuf, ConfigError> {
    match non_empty(env.get(WORKDIRS_ROOT_VAR).map(String::as_str)) {
        None => Ok(PathBuf::from(DEFAULT_WORKDIRS_ROOT)),
        Some(dir) if Path::new(dir).is_absolute() => Ok(PathBuf::from(dir)),
        Some(dir) => Err(ConfigError::InvalidValue {
            key: WORKDIRS_ROOT_VAR.to_owned(),
            expected: "an absolute path",
            got: dir.to_owned(),
        }),
    }
}

/// What is mounted at a slot root.
enum SlotRoot {
    /// Nothing: no bind mount (typical outside the container image).
    Missing,
    /// The repository's placeholder: a directory holding only the sentinel.
    Placeholder,
    /// A real directory.
    Directory,
}

/// Inspects a slot root with `lstat` and, only when the sentinel is
/// present, one directory listing (to tell the placeholder from a real
/// directory that happens to contain a reserved file).
fn inspect_slot_root(root: &Path) -> Result<SlotRoot, SlotProblem> {
    let inaccessible = |err: io::Error| SlotProblem::Inaccessible(one_line(&err.to_string()));
    let meta = match fs::symlink_metadata(root) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(SlotRoot::Missing),
        Err(err) => return Err(inaccessible(err)),
        Ok(meta) => meta,
    };
    if meta.file_type().is_symlink() {
        return Err(SlotProblem::Symlink);
    }
    if !meta.is_dir() {
        return Err(SlotProblem::NotADirectory);
    }
    match fs::symlink_metadata(root.join(SENTINEL)) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(SlotRoot::Directory),
        Err(err) => Err(inaccessible(err)),
        Ok(sentinel) if !sentinel.is_file() => Err(SlotProblem::ReservedFile),
        Ok(_) => {
            let mut entries = fs::read_dir(root).map_err(inaccessible)?;
            let has_others = entries.any(|entry| entry.map_or(true, |e| e.file_name() != SENTINEL));
            if has_others {
                Err(SlotProblem::ReservedFile)
            } else {
                Ok(SlotRoot::Placeholder)
            }
        }
    }
}

/// Parses slot `slot` and decides its state (spec §2.4). Returns the
/// workdir for an enabled slot, `None` for a disabled one.
fn slot_workdir(env: &Env, slot: u8, roots: &SlotRoots) -> Result<Option<RawWorkdir>, ConfigError> {
    let var = |field: &str| format!("WORKDIR_{slot:02}_{field}");
    let get = |field: &str| env.get(&var(field)).map(String::as_str);
    let strict_int = |field: &str| -> Result<Option<Val<i64>>, ConfigError> {
        let key = var(field);
        Ok(parse::strict_int(&key, get(field))?.map(|v| Val::set(v, key)))
    };

    // Parse every variable before looking at the slot state: invalid values
    // are errors even on a disabled slot (typos never survive).
    let alias = non_empty(get("ALIAS")).map(str::to_owned);
    let root = match roots {
        SlotRoots::Mounted(base) => base.join(format!("{slot:02}")),
        // Unset: an empty path, which inspects as missing.
        SlotRoots::HostPaths => match non_empty(get("PATH")) {
            None => PathBuf::new(),
            Some(path) if Path::new(path).is_absolute() => PathBuf::from(path),
            Some(path) => {
                return Err(ConfigError::InvalidValue {
                    key: var("PATH"),
                    expected: "an absolute path (the Agent Bridge reads it on the host)",
                    got: path.to_owned(),
                });
            }
        },
    };
    let read_only = parse::strict_bool(&var("READ_ONLY"), get("READ_ONLY"))?;
    let deny_items = parse::list(get("EXTRA_DENY_GLOBS"));
    let runtimes = runtime_names(get("AGENT_RUNTIMES"));

    let mut workdir = RawWorkdir::new(
        Val::set(alias.clone().unwrap_or_default(), var("ALIAS")),
        Val::set(root.clone(), format!("WORKDIR_{slot:02}")),
        // Empty means read-only: the safe reading of a half-filled `.env`.
        Val::or_default(read_only, true, var("READ_ONLY")),
    );
    workdir.description = non_empty(get("DESCRIPTION")).map(str::to_owned);
    workdir.allow_hidden = parse::strict_bool(&var("ALLOW_HIDDEN"), get("ALLOW_HIDDEN"))?;
    workdir.default_deny =
        parse::strict_bool(&var("DISABLE_DEFAULT_DENY"), get("DISABLE_DEFAULT_DENY"))?
            .map(|disable| !disable);
    workdir.deny = (!deny_items.is_empty()).then(|| Val::set(deny_items, var("EXTRA_DENY_GLOBS")));
    workdir.binary_transfer = parse::strict_bool(
        &var("BINARY_TRANSFER_ENABLED"),
        get("BINARY_TRANSFER_ENABLED"),
    )?;
    workdir.max_read_lines = strict_int("MAX_READ_LINES")?;
    workdir.max_read_bytes = strict_int("MAX_READ_BYTES")?;
    workdir.max_write_bytes = strict_int("MAX_WRITE_BYTES")?;
    workdir.max_binary_transfer_bytes = strict_int("MAX_BINARY_TRANSFER_BYTES")?;
    workdir.read_hardlinked_files =
        parse::strict_bool(&var("READ_HARDLINKED_FILES"), get("READ_HARDLINKED_FILES"))?;
    workdir.agent_mode =
        agent_mode(&var("AGENT_MODE"), get("AGENT_MODE"))?.map(|m| Val::set(m, var("AGENT_MODE")));
    workdir.agent_runtimes =
        (!runtimes.is_empty()).then(|| Val::set(runtimes, var("AGENT_RUNTIMES")));
    workdir.approvals = env_word(&var("AGENT_APPROVALS"), get("AGENT_APPROVALS"))?;
    workdir.approval_paths = env_word(&var("AGENT_APPROVAL_PATHS"), get("AGENT_APPROVAL_PATHS"))?;
    workdir.legacy_slot = Some(slot);
    validate::check_overrides(&workdir)?;

    let slot_error = |problem| ConfigError::Slot {
        slot,
        root: root.clone(),
        alias: alias.clone(),
        problem,
    };
    let state = inspect_slot_root(&root).map_err(slot_error)?;
    match (state, alias.is_some()) {
        (SlotRoot::Directory, true) => Ok(Some(workdir)),
        (SlotRoot::Directory, false) => Err(slot_error(SlotProblem::MountWithoutAlias)),
        (SlotRoot::Placeholder, true) => Err(slot_error(SlotProblem::PlaceholderWithAlias)),
        (SlotRoot::Missing, true) => Err(slot_error(SlotProblem::MissingRoot)),
        (SlotRoot::Placeholder | SlotRoot::Missing, false) => {
            check_disabled_slot(slot, &workdir)?;
            Ok(None)
        }
    }
}

/// A disabled slot must not ask for more than a disabled slot has: the
/// operator clearly meant to configure something, and silently ignoring a
/// write or agent grant would hide that (spec §2.4).
fn check_disabled_slot(slot: u8, workdir: &RawWorkdir) -> Result<(), ConfigError> {
    let conflict = |field: &str, what: &str| ConfigError::Conflict {
        key: format!("WORKDIR_{slot:02}_{field}"),
        reason: format!(
            "slot {slot:02} is disabled (WORKDIR_{slot:02}_ALIAS is not set) and must not {what}"
        ),
    };
    if !workdir.read_only.value {
        return Err(conflict("READ_ONLY", "be made writable"));
    }
    if workdir
        .agent_mode
        .as_ref()
        .is_some_and(|m| m.value.is_enabled())
    {
        return Err(conflict("AGENT_MODE", "enable an agent mode"));
    }
    if workdir.agent_runtimes.is_some() {
        return Err(conflict("AGENT_RUNTIMES", "list agent runtimes"));
    }
    if workdir.binary_transfer == Some(true) {
        return Err(conflict(
            "BINARY_TRANSFER_ENABLED",
            "enable binary transfer",
        ));
    }
    if workdir.read_hardlinked_files == Some(true) {
        return Err(conflict("READ_HARDLINKED_FILES", "read hard-linked files"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
