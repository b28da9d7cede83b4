//! Operator-defined ACP agent profiles: any agent that speaks the Agent
//! Client Protocol (v1) over stdio becomes a runtime `acp-<id>` by
//! configuration, without new code (seed 002 §5–§6).
//!
//! A profile says how the operator-installed agent is *launched*: an
//! absolute executable, fixed arguments, the variables of the Bridge's
//! environment it may see and fixed non-secret pairs, timeouts, and whether
//! the agent's "allow always" is scoped to its session. It is a trusted
//! administrative launch policy, exactly as trusted as the rest of the
//! file: MCP callers only choose among the configured runtime names and
//! never supply a command, an argument, an environment or a directory.
//!
//! Two spellings, one shape ([`AcpProfileEntry`]): `[[agent.acp_profiles]]`
//! tables in `serverfs.toml`, or one JSON array in
//! `SERVERFS_ACP_PROFILES_JSON` for container deployments (no numbered
//! variables). Read by `serverfs-agent-bridge`; `serverfs` checks them with
//! the rest of the configuration so both processes accept the same file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::agent::AcpProfile;
use crate::limits;
use crate::raw::{RawAcpProfile, Val};
use crate::toml_file::Seconds;

/// Most ACP profiles one configuration may define.
pub(crate) const MAX_PROFILES: usize = 16;
/// Most fixed arguments of one profile.
pub(crate) const MAX_ARGS: usize = 32;
/// Longest single argument, in bytes.
pub(crate) const MAX_ARG_BYTES: usize = 4_096;
/// Most fixed environment pairs of one profile.
pub(crate) const MAX_ENV_PAIRS: usize = 32;
/// Longest fixed environment value, in bytes.
pub(crate) const MAX_ENV_VALUE_BYTES: usize = 4_096;
/// Longest command path, in bytes (`PATH_MAX`).
pub(crate) const MAX_COMMAND_BYTES: usize = 4_096;

/// How the Agent Bridge runs one ACP agent profile, validated.
///
/// # Security
///
/// Everything here comes from the operator's configuration: `command` is
/// an absolute path, `args` are passed as they are (never through a shell,
/// so metacharacters are ordinary text), and `env` holds only names the
/// Bridge does not reserve. `env_passthrough` holds names only; the values
/// stay in the Bridge's environment. The Bridge supplies the working
/// directory (the task's authorized cwd), never the profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpProfileSettings {
    /// The runtime name, `acp-<id>`: what workdirs allowlist and tasks name.
    pub runtime: AcpProfile,
    /// The agent's executable: an absolute path (never looked up on
    /// `PATH`). Its existence is checked by the Bridge at start-up.
    pub command: PathBuf,
    /// Fixed arguments, in order (at most 32, each at most 4 KiB, no NUL).
    pub args: Vec<String>,
    /// Names of variables of the Bridge's environment handed to the agent
    /// (its API key, a base URL), in the order written; the rules of every
    /// `*_env_passthrough` list.
    pub env_passthrough: Vec<String>,
    /// Fixed `(name, value)` pairs for the agent, sorted by name: non-secret
    /// settings only (credentials belong in the Bridge's environment and
    /// `env_passthrough`). Names follow the passthrough rules and none is
    /// also passed through.
    pub env: Vec<(String, String)>,
    /// Bound of one ACP request of the Bridge (`initialize`, `session/new`,
    /// `session/resume`, `session/load`, `session/set_config_option`,
    /// `session/set_model`), in
    /// milliseconds (default 60 000, 100..=600 000). The prompt itself is
    /// bounded by the task's deadline.
    pub request_timeout_ms: u64,
    /// Bound of a whole capability probe (spawn, `initialize`, shutdown), in
    /// milliseconds (default 30 000, 100..=600 000).
    pub probe_timeout_ms: u64,
    /// How long a cancelled agent gets to end its prompt turn after
    /// `session/cancel`, and to exit after its stdin closes, before its
    /// process group is killed, in milliseconds (default 3 000,
    /// 100..=3 000: the whole stop must fit the Bridge's interrupt bound).
    pub shutdown_timeout_ms: u64,
    /// Whether the agent's `allow_always` lasts only for its session, so
    /// that it may be offered as `approve_session` (default false: an
    /// agent's "always" may persist a rule in its own settings, and is not
    /// offered).
    pub session_scoped_allow_always: bool,
}

impl AcpProfileSettings {
    /// The profile id, the runtime name without `acp-`.
    pub fn id(&self) -> &str {
        self.runtime.name()
    }
}

/// One profile as written, in TOML or JSON: unknown keys are refused, and
/// only the documented types are accepted.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AcpProfileEntry {
    id: String,
    command: String,
    args: Option<Vec<String>>,
    env_passthrough: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    request_timeout_seconds: Option<Seconds>,
    probe_timeout_seconds: Option<Seconds>,
    shutdown_timeout_seconds: Option<Seconds>,
    session_scoped_allow_always: Option<bool>,
}

impl AcpProfileEntry {
    /// The raw profile, each value keyed as `<prefix>.<field>` (the key an
    /// operator edits: `agent.acp_profiles[0].command`,
    /// `SERVERFS_ACP_PROFILES_JSON[0].command`).
    pub(crate) fn into_raw(self, prefix: &str) -> RawAcpProfile {
        let key = |field: &str| format!("{prefix}.{field}");
        let seconds = |value: Option<Seconds>, limit: limits::Limit, field: &str| {
            Val::or_default(
                value.map(|Seconds(s)| s),
                limit.default_seconds(),
                key(field),
            )
        };
        RawAcpProfile {
            id: Val::set(self.id, key("id")),
            command: Val::set(self.command, key("command")),
            args: Val::or_default(self.args, Vec::new(), key("args")),
            env_passthrough: Val::or_default(
                self.env_passthrough,
                Vec::new(),
                key("env_passthrough"),
            ),
            env: Val::or_default(
                self.env.map(|pairs| pairs.into_iter().collect()),
                Vec::new(),
                key("env"),
            ),
            request_timeout_seconds: seconds(
                self.request_timeout_seconds,
                limits::ACP_REQUEST_TIMEOUT_MS,
                "request_timeout_seconds",
            ),
            probe_timeout_seconds: seconds(
                self.probe_timeout_seconds,
                limits::ACP_PROBE_TIMEOUT_MS,
                "probe_timeout_seconds",
            ),
            shutdown_timeout_seconds: seconds(
                self.shutdown_timeout_seconds,
                limits::ACP_SHUTDOWN_TIMEOUT_MS,
                "shutdown_timeout_seconds",
            ),
            session_scoped_allow_always: Val::or_default(
                self.session_scoped_allow_always,
                false,
                key("session_scoped_allow_always"),
            ),
        }
    }
}

/// Why a profile id is refused, if it is: `^[a-z][a-z0-9_-]{0,27}$`, so
/// that `acp-<id>` stays within 32 characters.
pub(crate) fn id_problem(id: &str) -> Option<&'static str> {
    AcpProfile::from_id(id).is_none().then_some(
        "a profile id: a lower-case letter, then at most 27 lower-case letters, digits, '_' or '-'",
    )
}

/// What a profile id that names a built-in runtime is told: `codex`,
/// `claude`, `qoder` and `fake` are reserved (seed 002 §5.2), even though
/// `acp-codex` could never be mistaken for `codex` by the Bridge, because
/// an operator or a caller reading the configuration could.
pub(crate) const RESERVED_ID: &str = "a profile id other than a built-in runtime's name \
     (codex, claude, qoder and fake are reserved; e.g. codex-acp)";

/// Why a profile command is refused, if it is.
pub(crate) fn command_problem(command: &str) -> Option<&'static str> {
    if command.contains(['\0', '\r', '\n']) {
        // NUL cannot reach execve(2); CR and LF would split log records
        // and check-config lines.
        Some("an absolute path without NUL, CR or LF characters")
    } else if !command.starts_with('/') {
        // Never looked up on PATH: which binary runs must not depend on
        // the environment the Bridge happens to start with.
        Some("an absolute path to the agent's executable (never looked up on PATH)")
    } else if command.len() > MAX_COMMAND_BYTES {
        Some("an absolute path of at most 4096 bytes")
    } else {
        None
    }
}

#[cfg(test)]
#[path = "acp_tests.rs"]
mod tests;
