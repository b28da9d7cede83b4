//! The rules every source must satisfy, checked once on the raw values.
//!
//! Checks run in a fixed order (server settings, workdir defaults, agent
//! settings, HTTP settings, each workdir in configuration order, then the
//! agent proxy runtimes against the workdirs' runtimes) and the first
//! failure is reported, so the same configuration always gives the same
//! message.
//! Nothing here has side effects besides `lstat` on each root.

use std::fs;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::acp::{self, AcpProfileSettings};
use crate::agent::{AcpProfile, AgentMode, AgentRuntime};
use crate::alias::WorkdirAlias;
use crate::approvals::{ApprovalPaths, ApprovalPolicy};
use crate::cli_runtime::{self, CliRuntimeSettings, QoderSettings};
use crate::codex::{CodexSettings, CodexTransport};
use crate::error::{ConfigError, PassthroughProblem, RootProblem, one_line};
use crate::http::{self, ConnectionLimits, HttpSettings};
use crate::limits::{self, Bounds, Limit};
use crate::model::{AgentSettings, Config, ServerSettings, WorkdirConfig};
use crate::parse;
use crate::qoder_auth::{QODER_TOKEN_VARIABLE, QoderAuth};
use crate::raw::{
    RawAcpProfile, RawAgent, RawCliRuntime, RawCodex, RawConfig, RawConnectionLimits, RawDefaults,
    RawHttp, RawProxyRuntimes, RawServer, RawWorkdir, Val,
};

/// Turns raw values from any source into a validated [`Config`].
pub(crate) fn validate(raw: RawConfig) -> Result<Config, ConfigError> {
    let server = server_settings(&raw.server, raw.clamp_defaults)?;
    let defaults = workdir_defaults(&raw.defaults)?;
    let mut agent = agent_settings(&raw.agent)?;
    configured(&defaults.agent_runtimes, &agent.acp_profiles)?;
    let http = http_settings(&raw.http)?;

    if raw.workdirs.is_empty() {
        return Err(ConfigError::NoWorkdirs {
            hint: raw.empty_hint,
        });
    }
    if raw.workdirs.len() > limits::MAX_WORKDIRS {
        return Err(ConfigError::TooManyWorkdirs {
            count: raw.workdirs.len(),
            max: limits::MAX_WORKDIRS,
        });
    }

    let mut workdirs: Vec<WorkdirConfig> = Vec::with_capacity(raw.workdirs.len());
    let mut alias_keys: Vec<&str> = Vec::with_capacity(raw.workdirs.len());
    for workdir in &raw.workdirs {
        let alias = alias(&workdir.alias)?;
        if let Some(index) = workdirs
            .iter()
            .position(|earlier| earlier.alias.eq_ignore_case(&alias))
        {
            return Err(ConfigError::DuplicateAlias {
                key: workdir.alias.key.clone(),
                alias: alias.as_str().to_owned(),
                first: workdirs[index].alias.as_str().to_owned(),
                first_key: alias_keys[index].to_owned(),
            });
        }
        check_root(&alias, &workdir.root)?;
        workdirs.push(effective_workdir(
            alias,
            workdir,
            &defaults,
            &raw.agent,
            &agent.acp_profiles,
        )?);
        alias_keys.push(&workdir.alias.key);
    }
    agent.proxy_runtimes =
        proxy_runtimes(&raw.agent.proxy_runtimes, agent.proxy_runtimes, &workdirs)?;

    Ok(Config {
        server,
        agent,
        http,
        workdirs,
    })
}

/// Checks the overrides of one workdir on their own (bounds, globs, runtime
/// names). The environment adapter runs this on disabled slots too, so a
/// typo is never hidden by the slot being off.
pub(crate) fn check_overrides(workdir: &RawWorkdir) -> Result<(), ConfigError> {
    let numbers = [
        (&workdir.max_read_lines, limits::MAX_READ_LINES),
        (&workdir.max_read_bytes, limits::MAX_READ_BYTES),
        (&workdir.max_write_bytes, limits::MAX_WRITE_BYTES),
        (
            &workdir.max_binary_transfer_bytes,
            limits::MAX_BINARY_TRANSFER_BYTES,
        ),
    ];
    for (value, limit) in numbers {
        if let Some(value) = value {
            bounded(value, limit)?;
        }
    }
    if let Some(deny) = &workdir.deny {
        check_globs(deny)?;
    }
    if let Some(runtimes) = &workdir.agent_runtimes {
        runtime_list(runtimes)?;
    }
    Ok(())
}

/// Parses a runtime list: every name known, none twice; sorted by name so
/// reports and comparisons do not depend on the order written.
pub(crate) fn runtime_list(names: &Val<Vec<String>>) -> Result<Vec<AgentRuntime>, ConfigError> {
    let mut runtimes: Vec<AgentRuntime> = Vec::with_capacity(names.value.len());
    for name in &names.value {
        let runtime = AgentRuntime::parse(name).ok_or_else(|| ConfigError::InvalidRuntime {
            key: names.key.clone(),
            name: name.clone(),
        })?;
        if runtimes.contains(&runtime) {
            return Err(ConfigError::DuplicateRuntime {
                key: names.key.clone(),
                name: name.clone(),
            });
        }
        runtimes.push(runtime);
    }
    runtimes.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    Ok(runtimes)
}

fn server_settings(raw: &RawServer, clamp: bool) -> Result<ServerSettings, ConfigError> {
    let max_list_entries = bounded_u32(&raw.max_list_entries, limits::MAX_LIST_ENTRIES)?;
    let default_list_limit = default_below_max(
        &raw.default_list_limit,
        limits::DEFAULT_LIST_LIMIT,
        (max_list_entries, &raw.max_list_entries.key),
        clamp,
    )?;
    let max_search_results = bounded_u32(&raw.max_search_results, limits::MAX_SEARCH_RESULTS)?;
    let default_search_results = default_below_max(
        &raw.default_search_results,
        limits::DEFAULT_SEARCH_RESULTS,
        (max_search_results, &raw.max_search_results.key),
        clamp,
    )?;
    Ok(ServerSettings {
        log_level: raw.log_level,
        text_content: raw.text_content,
        default_list_limit,
        max_list_entries,
        default_search_results,
        max_search_results,
        max_walk_entries: bounded(&raw.max_walk_entries, limits::MAX_WALK_ENTRIES)?,
        search_timeout_ms: bounded(&raw.search_timeout_ms, limits::SEARCH_TIMEOUT_MS)?,
        search_max_file_bytes: bounded(&raw.search_max_file_bytes, limits::SEARCH_MAX_FILE_BYTES)?,
        max_edits_per_call: bounded_u32(&raw.max_edits_per_call, limits::MAX_EDITS_PER_CALL)?,
    })
}

/// A page-size default must not exceed its maximum. An unwritten default is
/// lowered to the maximum (the operator only lowered the maximum); so is a
/// written one in environment mode, as upstream did; in a TOML file a
/// written default above the written maximum is a contradiction and refused.
fn default_below_max(
    value: &Val<i64>,
    limit: Limit,
    (max, max_key): (u32, &str),
    clamp: bool,
) -> Result<u32, ConfigError> {
    let default = bounded_u32(value, limit)?;
    if default <= max {
        Ok(default)
    } else if clamp || !value.explicit {
        Ok(max)
    } else {
        Err(ConfigError::Conflict {
            key: value.key.clone(),
            reason: format!("{default} exceeds {max_key} ({max})"),
        })
    }
}

/// Workdir defaults after their own checks, with the keys that set them.
struct Defaults {
    allow_hidden: bool,
    default_deny: bool,
    deny: Vec<String>,
    binary_transfer: bool,
    read_hardlinked_files: bool,
    max_read_lines: u32,
    max_read_bytes: u64,
    max_write_bytes: u64,
    max_binary_transfer_bytes: u64,
    agent_mode: Val<AgentMode>,
    agent_runtimes: Val<Vec<AgentRuntime>>,
    approvals: ApprovalPolicy,
    approval_paths: ApprovalPaths,
}

fn workdir_defaults(raw: &RawDefaults) -> Result<Defaults, ConfigError> {
    let max_read_lines = bounded_u32(&raw.max_read_lines, limits::MAX_READ_LINES)?;
    let max_read_bytes = bounded(&raw.max_read_bytes, limits::MAX_READ_BYTES)?;
    let max_write_bytes = bounded(&raw.max_write_bytes, limits::MAX_WRITE_BYTES)?;
    let max_binary_transfer_bytes = bounded(
        &raw.max_binary_transfer_bytes,
        limits::MAX_BINARY_TRANSFER_BYTES,
    )?;
    check_globs(&raw.deny)?;
    let runtimes = runtime_list(&raw.agent_runtimes)?;
    let mode = &raw.agent_mode;
    // The global pair must be consistent on its own (spec §2.3), even if
    // every workdir overrides it.
    if !mode.value.is_enabled() && !runtimes.is_empty() {
        return Err(ConfigError::Conflict {
            key: raw.agent_runtimes.key.clone(),
            reason: format!("agent runtimes are listed but {} is \"disabled\"", mode.key),
        });
    }
    if mode.value.is_enabled() && runtimes.is_empty() {
        return Err(ConfigError::Conflict {
            key: mode.key.clone(),
            reason: format!(
                "agent mode \"{}\" needs at least one runtime in {}",
                mode.value, raw.agent_runtimes.key
            ),
        });
    }
    Ok(Defaults {
        allow_hidden: raw.allow_hidden,
        default_deny: raw.default_deny,
        deny: dedup(raw.deny.value.iter()),
        binary_transfer: raw.binary_transfer,
        read_hardlinked_files: raw.read_hardlinked_files,
        max_read_lines,
        max_read_bytes,
        max_write_bytes,
        max_binary_transfer_bytes,
        agent_mode: mode.clone(),
        agent_runtimes: Val {
            value: runtimes,
            key: raw.agent_runtimes.key.clone(),
            explicit: raw.agent_runtimes.explicit,
        },
        approvals: raw.approvals,
        approval_paths: raw.approval_paths,
    })
}

/// The agent settings on their own. `proxy_runtimes` holds only the names
/// written (none for "every listed runtime"); [`proxy_runtimes`] completes
/// it once the workdirs are known.
fn agent_settings(raw: &RawAgent) -> Result<AgentSettings, ConfigError> {
    let bridge_timeout_ms = bounded(&raw.timeout_ms, limits::BRIDGE_TIMEOUT_MS)?;
    if raw.enabled.value {
        // Both processes must find the same socket and lease directory
        // whatever their working directory, so relative paths are refused.
        // The state directory is the Bridge's alone: its default may stay
        // relative (no XDG_STATE_HOME or HOME, as in a bare service
        // environment) without stopping serverfs, which never uses it, and
        // the Bridge refuses that itself; a relative directory the operator
        // wrote is a mistake both report.
        let state_dir = raw.state_dir.explicit.then_some(&raw.state_dir);
        for path in [Some(&raw.socket), Some(&raw.lock_dir), state_dir]
            .into_iter()
            .flatten()
        {
            if !path.value.is_absolute() {
                return Err(ConfigError::Conflict {
                    key: path.key.clone(),
                    reason: format!(
                        "must be an absolute path while {} is on, got {:?}",
                        raw.enabled.key, path.value
                    ),
                });
            }
        }
    }
    let peer_id = |id: &Option<Val<i64>>| {
        id.as_ref()
            .map(|id| bounded_u32(id, limits::PEER_ID))
            .transpose()
    };
    Ok(AgentSettings {
        bridge_enabled: raw.enabled.value,
        bridge_socket: raw.socket.value.clone(),
        bridge_timeout_ms,
        lock_dir: raw.lock_dir.value.clone(),
        state_dir: raw.state_dir.value.clone(),
        max_active_tasks: bounded_u32(&raw.max_active_tasks, limits::MAX_ACTIVE_TASKS)?,
        task_timeout_seconds: bounded(&raw.task_timeout_seconds, limits::TASK_TIMEOUT_SECONDS)?,
        interaction_timeout_seconds: bounded(
            &raw.interaction_timeout_seconds,
            limits::INTERACTION_TIMEOUT_SECONDS,
        )?,
        retention_seconds: bounded(&raw.retention_hours, limits::TASK_RETENTION_HOURS)?
            * limits::SECONDS_PER_HOUR,
        result_spool_threshold_bytes: bounded(
            &raw.result_spool_threshold_bytes,
            limits::RESULT_SPOOL_THRESHOLD_BYTES,
        )?,
        peer_uid: peer_id(&raw.peer_uid)?,
        peer_gid: peer_id(&raw.peer_gid)?,
        proxy_runtimes: match &raw.proxy_runtimes {
            RawProxyRuntimes::Named(names) => runtime_list(names)?,
            RawProxyRuntimes::EveryListed => Vec::new(),
        },
        provider_cgroup: raw.provider_cgroup.value.clone(),
        codex: codex_settings(&raw.codex)?,
        claude: cli_runtime_settings(&raw.claude)?,
        qoder: qoder_settings(&raw.qoder, &raw.qoder_auth)?,
        acp_profiles: acp_profiles(&raw.acp_profiles)?,
    })
}

/// Every `acp-<id>` runtime of `runtimes` names a configured profile: a
/// well-formed name alone authorizes nothing (seed 002 §5.3).
fn configured(
    runtimes: &Val<Vec<AgentRuntime>>,
    profiles: &[AcpProfileSettings],
) -> Result<(), ConfigError> {
    for runtime in &runtimes.value {
        if let AgentRuntime::Acp(profile) = runtime
            && !profiles.iter().any(|known| &known.runtime == profile)
        {
            return Err(ConfigError::UnknownAcpProfile {
                key: runtimes.key.clone(),
                name: profile.as_str().to_owned(),
                id: profile.name().to_owned(),
            });
        }
    }
    Ok(())
}

/// The ACP profiles, each checked on its own (in the order of its keys),
/// then ids unique. Checked whether or not any workdir allows the profile,
/// as every runtime's settings are.
fn acp_profiles(raw: &Val<Vec<RawAcpProfile>>) -> Result<Vec<AcpProfileSettings>, ConfigError> {
    if raw.value.len() > acp::MAX_PROFILES {
        return Err(ConfigError::InvalidValue {
            key: raw.key.clone(),
            expected: "at most 16 ACP profiles",
            got: format!("{} profiles", raw.value.len()),
        });
    }
    let mut profiles: Vec<AcpProfileSettings> = Vec::with_capacity(raw.value.len());
    for profile in &raw.value {
        let checked = acp_profile(profile)?;
        if profiles
            .iter()
            .any(|earlier| earlier.runtime == checked.runtime)
        {
            return Err(ConfigError::Conflict {
                key: profile.id.key.clone(),
                reason: format!(
                    "the ACP profile id {:?} is used by an earlier profile (ids are unique)",
                    profile.id.value
                ),
            });
        }
        profiles.push(checked);
    }
    Ok(profiles)
}

fn acp_profile(raw: &RawAcpProfile) -> Result<AcpProfileSettings, ConfigError> {
    let invalid = |value: &Val<String>, expected: &'static str| ConfigError::InvalidValue {
        key: value.key.clone(),
        expected,
        got: value.value.clone(),
    };
    let runtime = AcpProfile::from_id(&raw.id.value).ok_or_else(|| {
        invalid(
            &raw.id,
            acp::id_problem(&raw.id.value).unwrap_or("a profile id"),
        )
    })?;
    if AgentRuntime::is_built_in_name(&raw.id.value) {
        return Err(invalid(&raw.id, acp::RESERVED_ID));
    }
    if let Some(expected) = acp::command_problem(&raw.command.value) {
        return Err(invalid(&raw.command, expected));
    }
    if raw.args.value.len() > acp::MAX_ARGS {
        return Err(ConfigError::InvalidValue {
            key: raw.args.key.clone(),
            expected: "at most 32 arguments",
            got: format!("{} arguments", raw.args.value.len()),
        });
    }
    for (index, arg) in raw.args.value.iter().enumerate() {
        // No shell ever sees these: `;`, `$()` or `|` are ordinary text.
        // NUL alone cannot be passed to execve(2).
        if arg.contains('\0') || arg.len() > acp::MAX_ARG_BYTES {
            return Err(ConfigError::InvalidValue {
                key: format!("{}[{index}]", raw.args.key),
                expected: "an argument of at most 4096 bytes without NUL",
                got: arg.clone(),
            });
        }
    }
    let env_passthrough = passthrough_names(&raw.env_passthrough)?;
    if raw.env.value.len() > acp::MAX_ENV_PAIRS {
        return Err(ConfigError::InvalidValue {
            key: raw.env.key.clone(),
            expected: "at most 32 variables",
            got: format!("{} variables", raw.env.value.len()),
        });
    }
    for (name, value) in &raw.env.value {
        // The same reserved names as a passthrough list: a fixed pair must
        // not set what the Bridge decides (proxy, PATH, HOME, loader).
        if let Some(problem) = cli_runtime::passthrough_problem(name) {
            return Err(ConfigError::InvalidPassthrough {
                key: raw.env.key.clone(),
                name: name.clone(),
                problem,
            });
        }
        if env_passthrough.contains(name) {
            return Err(ConfigError::Conflict {
                key: raw.env.key.clone(),
                reason: format!(
                    "{name:?} is also in {}: a variable is either fixed or passed through",
                    raw.env_passthrough.key
                ),
            });
        }
        if value.contains('\0') || value.len() > acp::MAX_ENV_VALUE_BYTES {
            return Err(ConfigError::InvalidValue {
                key: format!("{}.{name}", raw.env.key),
                expected: "a value of at most 4096 bytes without NUL",
                got: value.clone(),
            });
        }
    }
    Ok(AcpProfileSettings {
        runtime,
        command: PathBuf::from(&raw.command.value),
        args: raw.args.value.clone(),
        env_passthrough,
        env: raw.env.value.clone(),
        request_timeout_ms: request_timeout_ms(&raw.request_timeout_seconds)?,
        probe_timeout_ms: request_timeout_ms(&raw.probe_timeout_seconds)?,
        shutdown_timeout_ms: seconds_within(
            &raw.shutdown_timeout_seconds,
            limits::ACP_SHUTDOWN_TIMEOUT_MS.bounds,
            "a number of seconds from 0.1 to 3",
        )?,
        session_scoped_allow_always: raw.session_scoped_allow_always.value,
    })
}

/// The Codex runtime's settings. Checked whether or not any workdir allows
/// `codex`, as the Bridge's other settings are, so a typo never waits for
/// the day the runtime is enabled.
fn codex_settings(raw: &RawCodex) -> Result<CodexSettings, ConfigError> {
    let bin = checked_bin(&raw.bin)?;
    // Absolute whether or not the Bridge is enabled (unlike `state_dir`): a
    // home is only ever written by the operator, the default being resolved
    // by the Bridge, and a relative one would follow the Bridge's working
    // directory.
    if let Some(home) = &raw.home
        && !home.value.is_absolute()
    {
        return Err(ConfigError::InvalidValue {
            key: home.key.clone(),
            expected: "an absolute path",
            got: home.value.display().to_string(),
        });
    }
    if raw.autostart.value && raw.transport.value != CodexTransport::Daemon {
        return Err(ConfigError::Conflict {
            key: raw.autostart.key.clone(),
            reason: format!(
                "codex_autostart needs {} = \"daemon\": with \"{}\" the Bridge runs its own \
                 app-server for each task, so there is no daemon to start",
                raw.transport.key, raw.transport.value
            ),
        });
    }
    let request_timeout_ms = request_timeout_ms(&raw.request_timeout_seconds)?;
    let env_passthrough = passthrough_names(&raw.env_passthrough)?;
    // The managed daemon is started by the user (or once by autostart) and
    // serves every task with the environment it was started with, so a list
    // here would silently do nothing.
    if !env_passthrough.is_empty() && raw.transport.value == CodexTransport::Daemon {
        return Err(ConfigError::Conflict {
            key: raw.env_passthrough.key.clone(),
            reason: format!(
                "codex_env_passthrough needs {} = \"stdio\": the managed daemon keeps the \
                 environment it was started with, so no variable can be handed to it",
                raw.transport.key
            ),
        });
    }
    Ok(CodexSettings {
        bin,
        home: raw.home.as_ref().map(|home| home.value.clone()),
        transport: raw.transport.value,
        autostart: raw.autostart.value,
        request_timeout_ms,
        env_passthrough,
    })
}

/// A stream-json CLI runtime's settings (`claude`, `qoder`), checked
/// whether or not any workdir allows the runtime, as Codex's are.
fn cli_runtime_settings(raw: &RawCliRuntime) -> Result<CliRuntimeSettings, ConfigError> {
    Ok(CliRuntimeSettings {
        bin: checked_bin(&raw.bin)?,
        request_timeout_ms: request_timeout_ms(&raw.request_timeout_seconds)?,
        env_passthrough: passthrough_names(&raw.env_passthrough)?,
    })
}

/// The `qoder` runtime's settings: Claude Code's, and the credentials
/// choice, whose token must be passed through by name for this runtime.
fn qoder_settings(
    raw: &RawCliRuntime,
    auth: &Val<QoderAuth>,
) -> Result<QoderSettings, ConfigError> {
    let cli = cli_runtime_settings(raw)?;
    if auth.value == QoderAuth::PersonalAccessToken
        && !cli
            .env_passthrough
            .iter()
            .any(|n| n == QODER_TOKEN_VARIABLE)
    {
        return Err(ConfigError::Conflict {
            key: auth.key.clone(),
            reason: format!(
                "\"{}\" reads the token from {QODER_TOKEN_VARIABLE}: add \"{QODER_TOKEN_VARIABLE}\" \
                 to {} so the Bridge may hand it to qodercli",
                auth.value, raw.env_passthrough.key
            ),
        });
    }
    Ok(QoderSettings {
        cli,
        auth: auth.value,
    })
}

/// A `*_bin` value, if it is an absolute path or a bare command name.
fn checked_bin(bin: &Val<String>) -> Result<String, ConfigError> {
    match cli_runtime::bin_problem(&bin.value) {
        Some(expected) => Err(ConfigError::InvalidValue {
            key: bin.key.clone(),
            expected,
            got: bin.value.clone(),
        }),
        None => Ok(bin.value.clone()),
    }
}

/// An `*_env_passthrough` list: every item a variable name that is not
/// reserved, none twice. Kept in the order written. Only names are ever
/// looked at; no value is read.
fn passthrough_names(names: &Val<Vec<String>>) -> Result<Vec<String>, ConfigError> {
    let mut checked: Vec<String> = Vec::with_capacity(names.value.len());
    for name in &names.value {
        let problem = cli_runtime::passthrough_problem(name).or_else(|| {
            checked
                .contains(name)
                .then_some(PassthroughProblem::Duplicate)
        });
        if let Some(problem) = problem {
            return Err(ConfigError::InvalidPassthrough {
                key: names.key.clone(),
                name: name.clone(),
                problem,
            });
        }
        checked.push(name.clone());
    }
    Ok(checked)
}

/// A provider request timeout written in seconds, rounded to milliseconds
/// and checked there. The refusal quotes seconds, the unit of the key,
/// rather than the milliseconds the bounds are kept in.
fn request_timeout_ms(seconds: &Val<f64>) -> Result<u64, ConfigError> {
    // `expected` is static text, so it repeats the bounds in seconds;
    // `request_timeouts_are_bounded_in_seconds` pins both edges to it for
    // every runtime.
    seconds_within(
        seconds,
        limits::PROVIDER_REQUEST_TIMEOUT_MS,
        "a number of seconds from 0.1 to 600",
    )
}

/// A duration written in seconds, rounded to milliseconds and checked
/// against `bounds` there; `expected` states the bounds in seconds.
fn seconds_within(
    seconds: &Val<f64>,
    bounds: Bounds,
    expected: &'static str,
) -> Result<u64, ConfigError> {
    let ms = seconds
        .value
        .is_finite()
        .then(|| parse::seconds_to_ms(seconds.value));
    match ms.map(u64::try_from) {
        Some(Ok(ms)) if (bounds.min..=bounds.max).contains(&ms) => Ok(ms),
        Some(Ok(_) | Err(_)) | None => Err(ConfigError::InvalidValue {
            key: seconds.key.clone(),
            expected,
            got: seconds.value.to_string(),
        }),
    }
}

/// The runtimes routed through the agent proxy, once every workdir's
/// runtimes are known: all of them for "every listed runtime", else the
/// `named` ones, each of which some workdir must allow. A name no workdir
/// allows is refused: routing it would be a silent no-op, most likely a
/// typo for a runtime that then bypasses the proxy.
fn proxy_runtimes(
    raw: &RawProxyRuntimes,
    named: Vec<AgentRuntime>,
    workdirs: &[WorkdirConfig],
) -> Result<Vec<AgentRuntime>, ConfigError> {
    let mut listed: Vec<AgentRuntime> = Vec::new();
    for runtime in workdirs.iter().flat_map(|w| &w.agent_runtimes) {
        if !listed.contains(runtime) {
            listed.push(runtime.clone());
        }
    }
    match raw {
        RawProxyRuntimes::EveryListed => {
            listed.sort_by(|a, b| a.as_str().cmp(b.as_str()));
            Ok(listed)
        }
        RawProxyRuntimes::Named(names) => match named.iter().find(|r| !listed.contains(r)) {
            Some(unused) => Err(ConfigError::Conflict {
                key: names.key.clone(),
                reason: format!(
                    "runtime \"{unused}\" is not in any workdir's agent_runtimes, \
                     so routing it through the agent proxy would have no effect"
                ),
            }),
            None => Ok(named),
        },
    }
}

fn http_settings(raw: &RawHttp) -> Result<HttpSettings, ConfigError> {
    let bind = raw
        .bind
        .as_ref()
        .map(|bind| {
            bind.value
                .parse::<SocketAddr>()
                .map_err(|_| ConfigError::InvalidValue {
                    key: bind.key.clone(),
                    expected: "an IP address and port, such as 127.0.0.1:8080 or [::1]:8080",
                    got: bind.value.clone(),
                })
        })
        .transpose()?;
    if let Some(host) = raw
        .allowed_hosts
        .value
        .iter()
        .find(|host| !http::is_valid_host(host))
    {
        return Err(ConfigError::InvalidValue {
            key: raw.allowed_hosts.key.clone(),
            expected: "host names or name:port values (not empty, no '/' or whitespace)",
            got: host.clone(),
        });
    }
    if let Some(origin) = raw
        .allowed_origins
        .value
        .iter()
        .find(|origin| !http::is_valid_origin(origin))
    {
        return Err(ConfigError::InvalidValue {
            key: raw.allowed_origins.key.clone(),
            expected: "origins such as https://host, http://host:port, http://host:* or null \
                       (no path, no trailing '/')",
            got: origin.clone(),
        });
    }
    let request_timeout_ms = bounded(&raw.request_timeout_ms, limits::HTTP_REQUEST_TIMEOUT_MS)?;
    let max_concurrent_requests = bounded_u32(
        &raw.max_concurrent_requests,
        limits::HTTP_MAX_CONCURRENT_REQUESTS,
    )?;
    let shutdown_grace_ms = bounded(&raw.shutdown_grace_ms, limits::HTTP_SHUTDOWN_GRACE_MS)?;
    let connections = connection_limits(&raw.connections)?;
    let oauth = crate::oauth::oauth_settings(&raw.oauth, &raw.token_file.value)?;
    // A configured listener is checked now, so `check-config` reports the
    // same refusal `serve` would; a `--http` address is checked at serve
    // time by `HttpSettings::effective`.
    if let Some(bind) = bind {
        http::check_auth_bind(
            bind,
            raw.auth.value,
            raw.trust_network.value,
            &raw.auth.key,
            &raw.trust_network.key,
        )?;
        http::check_token_file(
            raw.auth.value,
            &raw.token_file.value,
            &raw.token_file.key,
            &raw.auth.key,
        )?;
        if raw.auth.value == http::HttpAuth::OAuth {
            let public_url_key = raw
                .oauth
                .public_url
                .as_ref()
                .map_or_else(|| oauth_key(&raw.auth.key, "public_url"), |v| v.key.clone());
            crate::oauth::check_public_url(bind, &oauth, &public_url_key)?;
            let state_key = raw
                .oauth
                .state_file
                .as_ref()
                .map_or_else(|| oauth_key(&raw.auth.key, "state_file"), |v| v.key.clone());
            http::check_state_file(&oauth.state_file, &state_key)?;
        }
    }
    Ok(HttpSettings {
        bind,
        auth: raw.auth.value,
        trust_network: raw.trust_network.value,
        allowed_hosts: raw.allowed_hosts.value.clone(),
        allowed_origins: raw.allowed_origins.value.clone(),
        token_file: raw.token_file.value.clone(),
        request_timeout_ms,
        max_concurrent_requests,
        shutdown_grace_ms,
        connections,
        oauth,
    })
}

/// The key of an OAuth setting in the source `auth_key` comes from:
/// `http.oauth.NAME` beside `http.auth`, `SERVERFS_HTTP_OAUTH_NAME` beside
/// `SERVERFS_HTTP_AUTH`.
fn oauth_key(auth_key: &str, name: &str) -> String {
    match auth_key.strip_suffix("_AUTH") {
        Some(prefix) => format!("{prefix}_OAUTH_{}", name.to_ascii_uppercase()),
        None => format!("http.oauth.{name}"),
    }
}

fn connection_limits(raw: &RawConnectionLimits) -> Result<ConnectionLimits, ConfigError> {
    Ok(ConnectionLimits {
        header_timeout_ms: bounded(&raw.header_timeout_ms, limits::HTTP_HEADER_TIMEOUT_MS)?,
        body_timeout_ms: bounded(&raw.body_timeout_ms, limits::HTTP_BODY_TIMEOUT_MS)?,
        max_connections: bounded_u32(&raw.max_connections, limits::HTTP_MAX_CONNECTIONS)?,
        session_idle_timeout_ms: bounded(
            &raw.session_idle_timeout_ms,
            limits::HTTP_SESSION_IDLE_TIMEOUT_MS,
        )?,
        max_sessions: bounded_u32(&raw.max_sessions, limits::HTTP_MAX_SESSIONS)?,
        max_sessions_per_token: bounded_u32(
            &raw.max_sessions_per_token,
            limits::HTTP_MAX_SESSIONS_PER_TOKEN,
        )?,
    })
}

fn alias(value: &Val<String>) -> Result<WorkdirAlias, ConfigError> {
    WorkdirAlias::new(&value.value).map_err(|_| ConfigError::InvalidAlias {
        key: value.key.clone(),
        alias: value.value.clone(),
    })
}

/// The root must be an existing directory and not itself a symbolic link;
/// only the final component is checked (`lstat`), parents may be links.
/// This is an early, friendly check: the filesystem kernel opens the root
/// with `O_NOFOLLOW | O_DIRECTORY` and does not rely on it.
fn check_root(alias: &WorkdirAlias, root: &Val<PathBuf>) -> Result<(), ConfigError> {
    let problem = match fs::symlink_metadata(&root.value) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Some(RootProblem::Missing),
        Err(err) => Some(RootProblem::Inaccessible(one_line(&err.to_string()))),
        Ok(meta) if meta.file_type().is_symlink() => Some(RootProblem::Symlink),
        Ok(meta) if !meta.is_dir() => Some(RootProblem::NotADirectory),
        Ok(_) => None,
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ConfigError::InvalidRoot {
            key: root.key.clone(),
            alias: alias.as_str().to_owned(),
            path: root.value.clone(),
            problem,
        }),
    }
}

fn effective_workdir(
    alias: WorkdirAlias,
    raw: &RawWorkdir,
    defaults: &Defaults,
    agent: &RawAgent,
    profiles: &[AcpProfileSettings],
) -> Result<WorkdirConfig, ConfigError> {
    // The workdir's own values first, in the same order as for a disabled
    // environment slot, so the same typo gets the same message either way.
    check_overrides(raw)?;
    let pick = |value: &Option<Val<i64>>, limit: Limit, default: u64| match value {
        Some(value) => bounded(value, limit),
        None => Ok(default),
    };
    let max_read_lines = match &raw.max_read_lines {
        Some(value) => bounded_u32(value, limits::MAX_READ_LINES)?,
        None => defaults.max_read_lines,
    };
    let max_read_bytes = pick(
        &raw.max_read_bytes,
        limits::MAX_READ_BYTES,
        defaults.max_read_bytes,
    )?;
    let max_write_bytes = pick(
        &raw.max_write_bytes,
        limits::MAX_WRITE_BYTES,
        defaults.max_write_bytes,
    )?;
    let max_binary_transfer_bytes = pick(
        &raw.max_binary_transfer_bytes,
        limits::MAX_BINARY_TRANSFER_BYTES,
        defaults.max_binary_transfer_bytes,
    )?;
    // Extra globs only ever add to the server-wide floor: a workdir can
    // tighten the deny policy, never loosen it (spec §2.4).
    let own_deny = raw
        .deny
        .as_ref()
        .map(|d| d.value.as_slice())
        .unwrap_or_default();
    let deny = dedup(defaults.deny.iter().chain(own_deny));

    let (agent_mode, agent_runtimes) = effective_agent(&alias, raw, defaults, agent, profiles)?;

    Ok(WorkdirConfig {
        description: raw
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_owned),
        read_only: raw.read_only.value,
        allow_hidden: raw.allow_hidden.unwrap_or(defaults.allow_hidden),
        default_deny: raw.default_deny.unwrap_or(defaults.default_deny),
        deny,
        binary_transfer: raw.binary_transfer.unwrap_or(defaults.binary_transfer),
        read_hardlinked_files: raw
            .read_hardlinked_files
            .unwrap_or(defaults.read_hardlinked_files),
        max_read_lines,
        max_read_bytes,
        max_write_bytes,
        max_binary_transfer_bytes,
        agent_mode,
        agent_runtimes,
        approvals: raw.approvals.unwrap_or(defaults.approvals),
        approval_paths: raw.approval_paths.unwrap_or(defaults.approval_paths),
        legacy_slot: raw.legacy_slot,
        root: raw.root.value.clone(),
        alias,
    })
}

/// Resolves and checks the agent policy of one workdir (spec §2.4 and
/// agent-bridge §1.1). Errors name the key that supplied the offending
/// value, which is the workdir's own key or, when inherited, the default's.
fn effective_agent(
    alias: &WorkdirAlias,
    raw: &RawWorkdir,
    defaults: &Defaults,
    agent: &RawAgent,
    profiles: &[AcpProfileSettings],
) -> Result<(AgentMode, Vec<AgentRuntime>), ConfigError> {
    let mode = raw.agent_mode.as_ref().unwrap_or(&defaults.agent_mode);
    let runtimes = match (&raw.agent_runtimes, &raw.agent_mode) {
        (Some(names), _) => Val::set(runtime_list(names)?, names.key.clone()),
        // An explicit `disabled` also drops the inherited runtimes, so a
        // workdir can opt out without repeating an empty list.
        (None, Some(own_mode)) if own_mode.value == AgentMode::Disabled => {
            Val::set(Vec::new(), own_mode.key.clone())
        }
        (None, _) => defaults.agent_runtimes.clone(),
    };
    configured(&runtimes, profiles)?;
    let conflict = |key: &str, reason: String| ConfigError::Conflict {
        key: key.to_owned(),
        reason: format!("workdir \"{alias}\": {reason}"),
    };

    if !mode.value.is_enabled() {
        if let Some(runtime) = runtimes.value.first() {
            return Err(conflict(
                &runtimes.key,
                format!(
                    "agent runtime \"{runtime}\" is allowed but the agent mode is \"disabled\" ({})",
                    mode.key
                ),
            ));
        }
        return Ok((mode.value, Vec::new()));
    }
    if runtimes.value.is_empty() {
        return Err(conflict(
            &mode.key,
            format!(
                "agent mode \"{}\" needs at least one runtime ({})",
                mode.value, runtimes.key
            ),
        ));
    }
    if mode.value == AgentMode::WorkspaceWrite && raw.read_only.value {
        return Err(conflict(
            &mode.key,
            format!(
                "agent mode \"workspace-write\" requires a writable workdir: set {} to false",
                raw.read_only.key
            ),
        ));
    }
    if mode.value != AgentMode::WorkspaceWrite
        && let Some(native) = runtimes.value.iter().find(|r| r.requires_workspace_write())
    {
        return Err(conflict(
            &runtimes.key,
            format!(
                "runtime \"{native}\" requires agent mode \"workspace-write\", \
                 but the mode is \"{}\" ({})",
                mode.value, mode.key
            ),
        ));
    }
    if !agent.enabled.value {
        return Err(conflict(
            &mode.key,
            format!(
                "agent mode \"{}\" needs the Agent Bridge: set {} to true",
                mode.value, agent.enabled.key
            ),
        ));
    }
    Ok((mode.value, runtimes.value))
}

fn check_globs(globs: &Val<Vec<String>>) -> Result<(), ConfigError> {
    for (index, glob) in globs.value.iter().enumerate() {
        let invalid = |reason: String| ConfigError::InvalidGlob {
            key: globs.key.clone(),
            item: index + 1,
            glob: glob.clone(),
            reason,
        };
        if glob.is_empty() {
            return Err(invalid("a glob must not be empty".to_owned()));
        }
        globset::Glob::new(glob).map_err(|err| invalid(one_line(&err.kind().to_string())))?;
    }
    Ok(())
}

/// Keeps the first occurrence of each string, in order.
fn dedup<'a>(items: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    out
}

pub(crate) fn bounded(value: &Val<i64>, bounds: impl Into<Bounds>) -> Result<u64, ConfigError> {
    let bounds = bounds.into();
    match u64::try_from(value.value) {
        Ok(v) if (bounds.min..=bounds.max).contains(&v) => Ok(v),
        Ok(_) | Err(_) => Err(out_of_range(value, bounds)),
    }
}

fn bounded_u32(value: &Val<i64>, bounds: impl Into<Bounds>) -> Result<u32, ConfigError> {
    let bounds = bounds.into();
    let v = bounded(value, bounds)?;
    u32::try_from(v).map_err(|_| out_of_range(value, bounds))
}

fn out_of_range(value: &Val<i64>, bounds: Bounds) -> ConfigError {
    ConfigError::OutOfRange {
        key: value.key.clone(),
        got: value.value,
        min: bounds.min,
        max: bounds.max,
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
