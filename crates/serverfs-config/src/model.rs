//! The validated configuration: immutable values the rest of ServerFS reads.

use std::fmt;
use std::path::PathBuf;

use crate::acp::AcpProfileSettings;
use crate::agent::{AcpProfile, AgentMode, AgentRuntime};
use crate::alias::WorkdirAlias;
use crate::approvals::{ApprovalPaths, ApprovalPolicy};
use crate::cli_runtime::{ClaudeSettings, CliRuntimeSettings, QoderSettings};
use crate::codex::CodexSettings;
use crate::env;
use crate::http::HttpSettings;
use crate::limits;
use crate::provider_cgroup::ProviderCgroup;

/// The whole validated configuration.
///
/// Built once at startup by [`Config::load`] or [`Config::from_toml_str`];
/// nothing is reloaded at runtime (spec §2.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Server-wide settings.
    pub server: ServerSettings,
    /// The Agent Bridge: how the MCP server reaches it, and how it runs
    /// tasks.
    pub agent: AgentSettings,
    /// The HTTP transport (`serverfs serve --http`).
    pub http: HttpSettings,
    /// The configured workdirs, in configuration order (1 to 64 of them,
    /// aliases unique ignoring case).
    pub workdirs: Vec<WorkdirConfig>,
}

impl Config {
    /// The workdir with exactly this alias (case-sensitive, as clients send it).
    pub fn workdir(&self, alias: &str) -> Option<&WorkdirConfig> {
        self.workdirs.iter().find(|w| w.alias.as_str() == alias)
    }

    /// Whether the agent tools should be offered: the Bridge is enabled and
    /// at least one workdir has an agent mode other than disabled (spec
    /// agent-bridge §1.1).
    pub fn agent_tools_enabled(&self) -> bool {
        self.agent.bridge_enabled && self.workdirs.iter().any(|w| w.agent_mode.is_enabled())
    }

    /// Whether any workdir enables the binary transfer tools.
    pub fn binary_tools_enabled(&self) -> bool {
        self.workdirs.iter().any(|w| w.binary_transfer)
    }
}

/// Log threshold of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum LogLevel {
    /// Everything, including per-request detail.
    Debug,
    /// Normal operation (the default).
    #[default]
    Info,
    /// Only problems.
    Warning,
    /// Only failures.
    Error,
}

impl LogLevel {
    /// Every level, most verbose first.
    pub const ALL: [LogLevel; 4] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warning,
        LogLevel::Error,
    ];

    /// The TOML spelling: `debug`, `info`, `warning`, `error`.
    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
        }
    }

    /// Parses the TOML spelling exactly.
    pub fn parse(text: &str) -> Option<LogLevel> {
        LogLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == text)
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the text block beside every tool result's `structuredContent`
/// carries (`[server] text_content`, `SERVERFS_TEXT_CONTENT`).
///
/// Many MCP clients hand the model only a result's `content`; for them the
/// text must carry everything the model needs (`full`). A deployment whose
/// clients all pass `structuredContent` to the model may send a one-line
/// summary instead (`summary`), so no result is sent twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TextContent {
    /// Everything a model needs to use the result and make the next call
    /// (the default).
    #[default]
    Full,
    /// One line saying what the result is; the data is only in
    /// `structuredContent`.
    Summary,
}

impl TextContent {
    /// Every mode, the default first.
    pub const ALL: [TextContent; 2] = [TextContent::Full, TextContent::Summary];

    /// The configuration spelling: `full` or `summary`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TextContent::Full => "full",
            TextContent::Summary => "summary",
        }
    }

    /// Parses the configuration spelling exactly.
    pub fn parse(text: &str) -> Option<TextContent> {
        TextContent::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
    }
}

impl fmt::Display for TextContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Server-wide settings: logging, the text of tool results and the list,
/// search and edit limits that are never per workdir (spec §2.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSettings {
    /// Log threshold (default `info`).
    pub log_level: LogLevel,
    /// What the text block of a tool result carries (default
    /// [`TextContent::Full`]).
    pub text_content: TextContent,
    /// Default `limit` of `list_directory` (default 100, at most
    /// `max_list_entries`).
    pub default_list_limit: u32,
    /// Largest `limit` of `list_directory` (default 500, at most 100 000).
    pub max_list_entries: u32,
    /// Default `limit` of `find_files` / `search_text` (default 50, at most
    /// `max_search_results`).
    pub default_search_results: u32,
    /// Largest `limit` of `find_files` / `search_text` (default 100, at most
    /// 10 000).
    pub max_search_results: u32,
    /// Entries a search or find may visit before it stops with
    /// `truncated: true` (default 200 000).
    pub max_walk_entries: u64,
    /// Wall-clock budget of one search, in milliseconds (default 15 000,
    /// 100..=600 000).
    pub search_timeout_ms: u64,
    /// Files larger than this are skipped by `search_text` (default 50 MiB).
    pub search_max_file_bytes: u64,
    /// Edits one `edit_text_file` call may carry (default 50, 1..=1000).
    pub max_edits_per_call: u32,
}

impl Default for ServerSettings {
    fn default() -> ServerSettings {
        // The defaults are all far inside u32, see `limits`.
        ServerSettings {
            log_level: LogLevel::Info,
            text_content: TextContent::Full,
            default_list_limit: small(limits::DEFAULT_LIST_LIMIT.default),
            max_list_entries: small(limits::MAX_LIST_ENTRIES.default),
            default_search_results: small(limits::DEFAULT_SEARCH_RESULTS.default),
            max_search_results: small(limits::MAX_SEARCH_RESULTS.default),
            max_walk_entries: limits::MAX_WALK_ENTRIES.default,
            search_timeout_ms: limits::SEARCH_TIMEOUT_MS.default,
            search_max_file_bytes: limits::SEARCH_MAX_FILE_BYTES.default,
            max_edits_per_call: small(limits::MAX_EDITS_PER_CALL.default),
        }
    }
}

/// Narrows a compile-time default to `u32`, saturating (never reached: every
/// default in `limits` fits).
fn small(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// How the MCP server reaches the Agent Bridge, and how the Bridge
/// (`serverfs-agent-bridge`) runs its tasks.
///
/// Both processes read the same configuration. The first four fields
/// concern both; the others are the Bridge's alone, and `serverfs` ignores
/// them (it only checks them with the rest of the file, so one file is
/// either valid for both or refused by both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSettings {
    /// Master switch for the agent tools and the writer lease (default
    /// false).
    pub bridge_enabled: bool,
    /// The Bridge's Unix socket. Absolute whenever `bridge_enabled`.
    pub bridge_socket: PathBuf,
    /// Timeout of one Bridge RPC, in milliseconds (default 30 000).
    pub bridge_timeout_ms: u64,
    /// Directory of writer-lease artifacts. Absolute whenever
    /// `bridge_enabled`.
    pub lock_dir: PathBuf,
    /// The Bridge's private state: task database and spooled results.
    /// Default `$XDG_STATE_HOME/serverfs-agent-bridge`, else
    /// `$HOME/.local/state/serverfs-agent-bridge`. A written value is
    /// absolute whenever `bridge_enabled`; the default stays relative (the
    /// bare `serverfs-agent-bridge`) when neither variable is an absolute
    /// path, which `serverfs` tolerates because it never uses this
    /// directory, and which the Bridge must refuse.
    pub state_dir: PathBuf,
    /// Tasks that may be active (not yet terminal) at once; more are
    /// refused (default 4, 1..=64).
    pub max_active_tasks: u32,
    /// Wall-clock budget of one task from submission, in seconds (default
    /// 7 200, 1..=604 800).
    pub task_timeout_seconds: u64,
    /// How long a pending approval or question may wait for an answer, in
    /// seconds (default 1 800, 1..=604 800).
    pub interaction_timeout_seconds: u64,
    /// How long terminal tasks, their events and spooled results are kept,
    /// in seconds. Configured in whole hours (default 168 h, 1..=8 760 h),
    /// so always a multiple of 3 600.
    pub retention_seconds: u64,
    /// Results larger than this many bytes are spooled to a file under
    /// `state_dir` instead of kept inline (default 262 144,
    /// 1 024..=8 388 608).
    pub result_spool_threshold_bytes: u64,
    /// The uid a Bridge client must have; `None` means the Bridge's own
    /// effective uid (default).
    pub peer_uid: Option<u32>,
    /// The gid a Bridge client must have; `None` (default) means the gid is
    /// not checked. When set, the socket and its directory are shared with
    /// this group, so a client of another uid in the group can connect.
    pub peer_gid: Option<u32>,
    /// Runtimes whose provider traffic the Bridge routes through the agent
    /// proxy (whose endpoint, `SERVERFS_AGENT_PROXY_URL`, is read by the
    /// Bridge from its own environment and is not configuration). Sorted by
    /// name, no duplicates, each allowed by at least one workdir. Default
    /// empty: no runtime uses the proxy.
    pub proxy_runtimes: Vec<AgentRuntime>,
    /// Where the Bridge puts a cgroup per task and provider process
    /// (default [`ProviderCgroup::Auto`]).
    pub provider_cgroup: ProviderCgroup,
    /// How the Bridge runs the `codex` runtime: which executable, which
    /// Codex home, and whether it talks to a per-task `codex app-server`
    /// child or to the user's managed daemon, and which of the Bridge's
    /// variables it gets.
    pub codex: CodexSettings,
    /// How the Bridge runs the `claude` runtime (Claude Code): which
    /// executable, its control-request timeout, and which of the Bridge's
    /// variables it gets.
    pub claude: ClaudeSettings,
    /// How the Bridge runs the `qoder` runtime (`qodercli`): as for
    /// [`claude`](AgentSettings::claude), and how it authenticates.
    pub qoder: QoderSettings,
    /// The operator's ACP agent profiles, each the runtime `acp-<id>`, in
    /// the order written (at most 16, ids unique). Default none.
    pub acp_profiles: Vec<AcpProfileSettings>,
}

impl AgentSettings {
    /// The profile of the ACP runtime `runtime`, if one is configured.
    pub fn acp_profile(&self, runtime: &AcpProfile) -> Option<&AcpProfileSettings> {
        self.acp_profiles
            .iter()
            .find(|profile| &profile.runtime == runtime)
    }
}

impl Default for AgentSettings {
    /// What an empty `[agent]` table gives with no `XDG_*` or `HOME`
    /// variable: the Bridge off, every number at its default, and the
    /// relative fallback paths (`serverfs/bridge.sock`, `serverfs/locks`,
    /// `serverfs-agent-bridge`), which are refused if the Bridge is enabled.
    /// Meant for tests and fixtures, which set the paths they need.
    fn default() -> AgentSettings {
        let no_env = env::Env::new();
        let (bridge_socket, lock_dir) = env::native_bridge_paths(&no_env, None);
        AgentSettings {
            bridge_enabled: false,
            bridge_socket,
            bridge_timeout_ms: limits::BRIDGE_TIMEOUT_MS.default,
            lock_dir,
            state_dir: env::native_state_dir(&no_env),
            max_active_tasks: small(limits::MAX_ACTIVE_TASKS.default),
            task_timeout_seconds: limits::TASK_TIMEOUT_SECONDS.default,
            interaction_timeout_seconds: limits::INTERACTION_TIMEOUT_SECONDS.default,
            retention_seconds: limits::TASK_RETENTION_HOURS.default * limits::SECONDS_PER_HOUR,
            result_spool_threshold_bytes: limits::RESULT_SPOOL_THRESHOLD_BYTES.default,
            peer_uid: None,
            peer_gid: None,
            proxy_runtimes: Vec::new(),
            provider_cgroup: ProviderCgroup::Auto,
            codex: CodexSettings::default(),
            claude: CliRuntimeSettings::claude_default(),
            qoder: QoderSettings::default(),
            acp_profiles: Vec::new(),
        }
    }
}

/// The effective policy of one workdir: every default and override already
/// applied.
///
/// # Security
///
/// `root` was checked to be an existing directory that is not itself a
/// symbolic link when the configuration was loaded; the filesystem kernel
/// still opens it with `O_NOFOLLOW | O_DIRECTORY` and never trusts that
/// check. `root` is a host path: it must never appear in anything a client
/// sees (ARCHITECTURE.md invariant 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkdirConfig {
    /// The name clients use.
    pub alias: WorkdirAlias,
    /// Absolute host path of the root directory.
    pub root: PathBuf,
    /// Shown by `list_workdirs`; trimmed, never empty.
    pub description: Option<String>,
    /// Refuse every mutation (default true).
    pub read_only: bool,
    /// Allow path components starting with `.` (default false).
    pub allow_hidden: bool,
    /// Apply the built-in credential deny rules of spec §3.2 (default true).
    pub default_deny: bool,
    /// Extra deny globs: the server-wide list, then this workdir's own, with
    /// duplicates removed (first occurrence kept). Always active, even with
    /// `default_deny` off; every glob compiles.
    pub deny: Vec<String>,
    /// Offer the binary transfer tools on this workdir (default false).
    pub binary_transfer: bool,
    /// Read the content of regular files that have more than one hard
    /// link (another name, possibly outside the workdir). Default false for
    /// new configurations (TOML files, `--workdir` specs); true in the
    /// upstream-compatible container environment unless set there
    /// (docs/configuration.md §5.8).
    pub read_hardlinked_files: bool,
    /// Cap on the `max_lines` of one text read (default 500).
    pub max_read_lines: u32,
    /// Byte budget of one text read page and of its longest line (default
    /// 512 KiB).
    pub max_read_bytes: u64,
    /// Largest text a mutation may write (default 1 MiB).
    pub max_write_bytes: u64,
    /// Largest binary upload or download (default 8 MiB).
    pub max_binary_transfer_bytes: u64,
    /// What delegated agents may do here (default disabled).
    pub agent_mode: AgentMode,
    /// Runtimes agents may use here, sorted by name, no duplicates. Empty
    /// exactly when `agent_mode` is disabled.
    pub agent_runtimes: Vec<AgentRuntime>,
    /// Who answers an agent's approvals and questions here (default
    /// [`ApprovalPolicy::Model`]).
    pub approvals: ApprovalPolicy,
    /// How approvals and questions show host paths outside the workdir
    /// (default [`ApprovalPaths::Informative`]).
    pub approval_paths: ApprovalPaths,
    /// The environment slot `NN` this workdir came from, if any; keys the
    /// writer lease of container deployments (spec §2.4).
    pub legacy_slot: Option<u8>,
}

impl WorkdirConfig {
    /// A workdir with every setting at its default: read-only, hidden paths
    /// denied, built-in deny rules on, no extra globs, no binary transfer,
    /// hard-linked files not read, agents disabled (approvals by the model,
    /// informative approval paths). Meant for tests and
    /// fixtures; nothing is checked about `root`.
    pub fn with_defaults(alias: WorkdirAlias, root: PathBuf) -> WorkdirConfig {
        WorkdirConfig {
            alias,
            root,
            description: None,
            read_only: true,
            allow_hidden: false,
            default_deny: true,
            deny: Vec::new(),
            binary_transfer: false,
            read_hardlinked_files: false,
            max_read_lines: small(limits::MAX_READ_LINES.default),
            max_read_bytes: limits::MAX_READ_BYTES.default,
            max_write_bytes: limits::MAX_WRITE_BYTES.default,
            max_binary_transfer_bytes: limits::MAX_BINARY_TRANSFER_BYTES.default,
            agent_mode: AgentMode::Disabled,
            agent_runtimes: Vec::new(),
            approvals: ApprovalPolicy::Model,
            approval_paths: ApprovalPaths::Informative,
            legacy_slot: None,
        }
    }
}
