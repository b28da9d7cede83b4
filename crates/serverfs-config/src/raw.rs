//! The source-independent, unvalidated configuration.
//!
//! Each source (TOML file, environment, `--workdir` specs) is parsed into
//! these types first; [`crate::validate`] then checks every rule once for all
//! sources. Every value carries the key that configured it, so a validation
//! error can name `workdirs[1].max_read_lines`, `WORKDIR_03_MAX_READ_BYTES` or
//! `--workdir "docs=./d"` without knowing which source it came from.

use std::path::PathBuf;

use crate::agent::AgentMode;
use crate::approvals::{ApprovalPaths, ApprovalPolicy};
use crate::codex::CodexTransport;
use crate::http::HttpAuth;
use crate::model::{LogLevel, TextContent};
use crate::provider_cgroup::ProviderCgroup;
use crate::qoder_auth::QoderAuth;

/// A configured value and the key it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Val<T> {
    pub value: T,
    /// The key, variable or spec an operator changes to change this value.
    pub key: String,
    /// Whether the operator wrote it (false: the built-in default).
    pub explicit: bool,
}

impl<T> Val<T> {
    /// A value the operator wrote at `key`.
    pub fn set(value: T, key: impl Into<String>) -> Val<T> {
        Val {
            value,
            key: key.into(),
            explicit: true,
        }
    }

    /// The built-in default of the setting at `key`.
    pub fn default_at(value: T, key: impl Into<String>) -> Val<T> {
        Val {
            value,
            key: key.into(),
            explicit: false,
        }
    }

    /// `Some(written)` becomes an explicit value, `None` the default.
    pub fn or_default(value: Option<T>, default: T, key: impl Into<String>) -> Val<T> {
        match value {
            Some(value) => Val::set(value, key),
            None => Val::default_at(default, key),
        }
    }
}

/// Everything one source said, before any rule is checked.
#[derive(Debug, Clone)]
pub(crate) struct RawConfig {
    pub server: RawServer,
    pub defaults: RawDefaults,
    pub agent: RawAgent,
    pub http: RawHttp,
    pub workdirs: Vec<RawWorkdir>,
    /// Lower a list/search default that exceeds its maximum to the maximum
    /// even when the operator wrote it: the environment adapter keeps
    /// upstream's `min(default, max)`. Elsewhere only an unwritten default is
    /// lowered and a written one is an error.
    pub clamp_defaults: bool,
    /// What to tell the operator when no workdir is configured.
    pub empty_hint: String,
}

/// Server-wide settings.
#[derive(Debug, Clone)]
pub(crate) struct RawServer {
    pub log_level: LogLevel,
    pub text_content: TextContent,
    pub default_list_limit: Val<i64>,
    pub max_list_entries: Val<i64>,
    pub default_search_results: Val<i64>,
    pub max_search_results: Val<i64>,
    pub max_walk_entries: Val<i64>,
    pub search_timeout_ms: Val<i64>,
    pub search_max_file_bytes: Val<i64>,
    pub max_edits_per_call: Val<i64>,
}

/// Defaults every workdir inherits unless it overrides them.
#[derive(Debug, Clone)]
pub(crate) struct RawDefaults {
    pub allow_hidden: bool,
    pub default_deny: bool,
    pub deny: Val<Vec<String>>,
    pub binary_transfer: bool,
    pub read_hardlinked_files: bool,
    pub max_read_lines: Val<i64>,
    pub max_read_bytes: Val<i64>,
    pub max_write_bytes: Val<i64>,
    pub max_binary_transfer_bytes: Val<i64>,
    pub agent_mode: Val<AgentMode>,
    pub agent_runtimes: Val<Vec<String>>,
    pub approvals: ApprovalPolicy,
    pub approval_paths: ApprovalPaths,
}

/// How the server reaches the Agent Bridge, and the Bridge's own settings.
#[derive(Debug, Clone)]
pub(crate) struct RawAgent {
    pub enabled: Val<bool>,
    pub socket: Val<PathBuf>,
    pub timeout_ms: Val<i64>,
    pub lock_dir: Val<PathBuf>,
    pub state_dir: Val<PathBuf>,
    pub max_active_tasks: Val<i64>,
    pub task_timeout_seconds: Val<i64>,
    pub interaction_timeout_seconds: Val<i64>,
    /// In hours, as written; validation turns it into seconds.
    pub retention_hours: Val<i64>,
    pub result_spool_threshold_bytes: Val<i64>,
    /// `None`: not configured (the Bridge's own uid).
    pub peer_uid: Option<Val<i64>>,
    /// `None`: not configured (the gid is not checked).
    pub peer_gid: Option<Val<i64>>,
    pub proxy_runtimes: RawProxyRuntimes,
    pub provider_cgroup: Val<ProviderCgroup>,
    pub codex: RawCodex,
    pub claude: RawCliRuntime,
    pub qoder: RawCliRuntime,
    pub qoder_auth: Val<QoderAuth>,
    /// ACP agent profiles, as written; the key is that of the whole list.
    pub acp_profiles: Val<Vec<RawAcpProfile>>,
}

/// One ACP agent profile, as written; every value keyed by its own field
/// (`agent.acp_profiles[0].command`).
#[derive(Debug, Clone)]
pub(crate) struct RawAcpProfile {
    pub id: Val<String>,
    pub command: Val<String>,
    pub args: Val<Vec<String>>,
    pub env_passthrough: Val<Vec<String>>,
    /// In the order written (a TOML or JSON object: sorted by name).
    pub env: Val<Vec<(String, String)>>,
    /// In seconds, as written (possibly fractional).
    pub request_timeout_seconds: Val<f64>,
    pub probe_timeout_seconds: Val<f64>,
    pub shutdown_timeout_seconds: Val<f64>,
    pub session_scoped_allow_always: Val<bool>,
}

/// The Codex runtime's settings, as written.
#[derive(Debug, Clone)]
pub(crate) struct RawCodex {
    pub bin: Val<String>,
    /// `None`: not configured (the Bridge uses Codex's own default home).
    pub home: Option<Val<PathBuf>>,
    pub transport: Val<CodexTransport>,
    pub autostart: Val<bool>,
    /// In seconds, as written (possibly fractional); validation checks it
    /// and turns it into milliseconds.
    pub request_timeout_seconds: Val<f64>,
    /// Variable names, as written; validation checks each.
    pub env_passthrough: Val<Vec<String>>,
}

/// One stream-json CLI runtime's settings (`claude`, `qoder`), as written.
#[derive(Debug, Clone)]
pub(crate) struct RawCliRuntime {
    pub bin: Val<String>,
    /// In seconds, as written (possibly fractional).
    pub request_timeout_seconds: Val<f64>,
    /// Variable names, as written; validation checks each.
    pub env_passthrough: Val<Vec<String>>,
}

/// Which runtimes the Bridge routes through the agent proxy, as written.
#[derive(Debug, Clone)]
pub(crate) enum RawProxyRuntimes {
    /// Exactly these names (`[agent] proxy_runtimes`; empty: none).
    Named(Val<Vec<String>>),
    /// Every runtime some workdir allows (`SERVERFS_AGENT_USE_PROXY=true`).
    EveryListed,
}

/// The HTTP transport. Paths are already absolute where the source can make
/// them so (only a default without any known directory stays relative).
#[derive(Debug, Clone)]
pub(crate) struct RawHttp {
    /// As written; parsed as a socket address by validation.
    pub bind: Option<Val<String>>,
    pub auth: Val<HttpAuth>,
    pub trust_network: Val<bool>,
    pub allowed_hosts: Val<Vec<String>>,
    pub allowed_origins: Val<Vec<String>>,
    pub token_file: Val<PathBuf>,
    pub request_timeout_ms: Val<i64>,
    pub max_concurrent_requests: Val<i64>,
    pub shutdown_grace_ms: Val<i64>,
    pub connections: RawConnectionLimits,
    pub oauth: crate::oauth::RawOAuth,
}

/// The bounds on HTTP connections and sessions, as written.
#[derive(Debug, Clone)]
pub(crate) struct RawConnectionLimits {
    pub header_timeout_ms: Val<i64>,
    pub body_timeout_ms: Val<i64>,
    pub max_connections: Val<i64>,
    pub session_idle_timeout_ms: Val<i64>,
    pub max_sessions: Val<i64>,
    pub max_sessions_per_token: Val<i64>,
}

/// One workdir as written: `None` means "inherit the default".
#[derive(Debug, Clone)]
pub(crate) struct RawWorkdir {
    pub alias: Val<String>,
    /// Already absolute (sources resolve relative paths).
    pub root: Val<PathBuf>,
    pub description: Option<String>,
    pub read_only: Val<bool>,
    pub allow_hidden: Option<bool>,
    pub default_deny: Option<bool>,
    pub deny: Option<Val<Vec<String>>>,
    pub binary_transfer: Option<bool>,
    pub read_hardlinked_files: Option<bool>,
    pub max_read_lines: Option<Val<i64>>,
    pub max_read_bytes: Option<Val<i64>>,
    pub max_write_bytes: Option<Val<i64>>,
    pub max_binary_transfer_bytes: Option<Val<i64>>,
    pub agent_mode: Option<Val<AgentMode>>,
    pub agent_runtimes: Option<Val<Vec<String>>>,
    pub approvals: Option<ApprovalPolicy>,
    pub approval_paths: Option<ApprovalPaths>,
    pub legacy_slot: Option<u8>,
}

impl RawWorkdir {
    /// A workdir with nothing overridden: read-only, everything inherited.
    pub fn new(alias: Val<String>, root: Val<PathBuf>, read_only: Val<bool>) -> RawWorkdir {
        RawWorkdir {
            alias,
            root,
            description: None,
            read_only,
            allow_hidden: None,
            default_deny: None,
            deny: None,
            binary_transfer: None,
            read_hardlinked_files: None,
            max_read_lines: None,
            max_read_bytes: None,
            max_write_bytes: None,
            max_binary_transfer_bytes: None,
            agent_mode: None,
            agent_runtimes: None,
            approvals: None,
            approval_paths: None,
            legacy_slot: None,
        }
    }
}
