//! Defaults and bounds of every numeric setting, in one table.
//!
//! The bounds are ours (upstream had none): they keep a typo such as an extra
//! zero from turning a page budget into a memory hazard, while staying far
//! above anything a sensible deployment needs.

/// An inclusive range a numeric setting must fall in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub min: u64,
    pub max: u64,
}

const fn bounds(min: u64, max: u64) -> Bounds {
    Bounds { min, max }
}

/// A numeric setting: its default and its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limit {
    pub default: u64,
    pub bounds: Bounds,
}

impl From<Limit> for Bounds {
    fn from(limit: Limit) -> Bounds {
        limit.bounds
    }
}

impl Limit {
    /// The default as the signed type raw values use (every default fits).
    pub(crate) fn default_i64(self) -> i64 {
        i64::try_from(self.default).unwrap_or(i64::MAX)
    }

    /// A default kept in milliseconds, in the seconds it is configured in
    /// (exact: every such default is a small whole number of milliseconds).
    pub(crate) fn default_seconds(self) -> f64 {
        self.default as f64 / 1000.0
    }
}

const fn limit(default: u64, min: u64, max: u64) -> Limit {
    Limit {
        default,
        bounds: bounds(min, max),
    }
}

// Per-workdir limits (overridable per workdir; the [server] / SERVERFS_*
// value is the default every workdir inherits).
pub(crate) const MAX_READ_LINES: Limit = limit(500, 1, 100_000);
pub(crate) const MAX_READ_BYTES: Limit = limit(524_288, 1_024, 67_108_864);
pub(crate) const MAX_WRITE_BYTES: Limit = limit(1_048_576, 1, 268_435_456);
pub(crate) const MAX_BINARY_TRANSFER_BYTES: Limit = limit(8_388_608, 1, 1_073_741_824);

// Server-wide limits (never per workdir, spec §2.4).
pub(crate) const DEFAULT_LIST_LIMIT: Limit = limit(100, 1, 100_000);
pub(crate) const MAX_LIST_ENTRIES: Limit = limit(500, 1, 100_000);
pub(crate) const DEFAULT_SEARCH_RESULTS: Limit = limit(50, 1, 10_000);
pub(crate) const MAX_SEARCH_RESULTS: Limit = limit(100, 1, 10_000);
pub(crate) const MAX_WALK_ENTRIES: Limit = limit(200_000, 1, 100_000_000);
pub(crate) const SEARCH_TIMEOUT_MS: Limit = limit(15_000, 100, 600_000);
// No useful ceiling exists for a per-file size filter; only "positive" is
// checked, and i64::MAX is what a TOML integer can carry anyway.
pub(crate) const SEARCH_MAX_FILE_BYTES: Limit = limit(52_428_800, 1, i64::MAX as u64);
pub(crate) const MAX_EDITS_PER_CALL: Limit = limit(50, 1, 1_000);

// Agent Bridge RPC timeout. The ceiling is an hour: a longer single RPC means
// a hung Bridge, and the long-polls of the agent tools are at most 45 s.
pub(crate) const BRIDGE_TIMEOUT_MS: Limit = limit(30_000, 100, 3_600_000);

// The Agent Bridge's task service (read by serverfs-agent-bridge, ignored by
// serverfs). The ceilings only catch typos: 64 concurrent agents, a week per
// task or per unanswered question, a year of retained results. A result
// larger than the spool threshold is kept in a file instead of inline, and
// 8 MiB is the largest result the Bridge keeps at all, so a higher threshold
// would never spool.
pub(crate) const MAX_ACTIVE_TASKS: Limit = limit(4, 1, 64);
pub(crate) const TASK_TIMEOUT_SECONDS: Limit = limit(7_200, 1, 604_800);
pub(crate) const INTERACTION_TIMEOUT_SECONDS: Limit = limit(1_800, 1, 604_800);
pub(crate) const TASK_RETENTION_HOURS: Limit = limit(168, 1, 8_760);
pub(crate) const RESULT_SPOOL_THRESHOLD_BYTES: Limit = limit(262_144, 1_024, 8_388_608);
/// Seconds per hour: the retention is configured in hours, kept in seconds.
pub(crate) const SECONDS_PER_HOUR: u64 = 3_600;
/// The peer uid/gid the Bridge accepts. `u32::MAX` is excluded: it is
/// `(uid_t)-1`, the "no id" value of chown(2) and the kernel's overflow id,
/// never a real caller.
pub(crate) const PEER_ID: Bounds = bounds(0, u32::MAX as u64 - 1);

// The native CLI runtimes (read by serverfs-agent-bridge, ignored by
// serverfs): the timeout of one request to the provider CLI. Configured in
// seconds, possibly fractional, kept in milliseconds. The floor keeps a typo
// such as 0.001 from failing every request, the ten-minute ceiling only
// catches typos; every runtime shares the bounds, so a refusal reads the
// same whichever runtime's key it names.
pub(crate) const PROVIDER_REQUEST_TIMEOUT_MS: Bounds = bounds(100, 600_000);
// One Codex App Server request (thread start, turn start, an approval
// answer) normally answers in well under a second.
pub(crate) const CODEX_REQUEST_TIMEOUT_MS: Limit = Limit {
    default: 10_000,
    bounds: PROVIDER_REQUEST_TIMEOUT_MS,
};
// One stream-json control request to `claude` or `qodercli` (initialize,
// interrupt, get_models, set_proxy). The Claude Agent SDK waits 60 s for a
// control response, `initialize` included, which can be slow while the CLI
// loads a large user configuration (spec-adapters §3.3); Qoder speaks the
// same protocol and gets the same default.
pub(crate) const STREAM_JSON_REQUEST_TIMEOUT_MS: Limit = Limit {
    default: 60_000,
    bounds: PROVIDER_REQUEST_TIMEOUT_MS,
};

// ACP agent profiles (read by serverfs-agent-bridge, ignored by serverfs).
// One ACP request of the Bridge (initialize, session/new, resume, load,
// set_config_option): an agent that loads its own configuration and
// providers can take seconds to initialize (measured on OpenCode).
pub(crate) const ACP_REQUEST_TIMEOUT_MS: Limit = Limit {
    default: 60_000,
    bounds: PROVIDER_REQUEST_TIMEOUT_MS,
};
// A capability probe: spawn, initialize, shutdown. Generous, since it is a
// cold start of the agent, and rare (an operator's `probe`).
pub(crate) const ACP_PROBE_TIMEOUT_MS: Limit = Limit {
    default: 30_000,
    bounds: PROVIDER_REQUEST_TIMEOUT_MS,
};
// The grace a cancelled agent gets to end its turn after `session/cancel`,
// and again to exit once its stdin closes, before its group is killed. The
// ceiling keeps the whole stop (two graces, SIGTERM's own two seconds)
// within the Bridge's ten-second interrupt bound.
pub(crate) const ACP_SHUTDOWN_TIMEOUT_MS: Limit = limit(3_000, 100, 3_000);

// HTTP transport. The request timeout bounds one MCP request end to end
// (the agent tools' long-polls are at most 45 s, so a second is the useful
// floor); the grace period may be 0 (stop at once).
pub(crate) const HTTP_REQUEST_TIMEOUT_MS: Limit = limit(120_000, 1_000, 3_600_000);
pub(crate) const HTTP_MAX_CONCURRENT_REQUESTS: Limit = limit(64, 1, 10_000);
pub(crate) const HTTP_SHUTDOWN_GRACE_MS: Limit = limit(10_000, 0, 300_000);

// HTTP connections and sessions (issue 14). A connection must deliver a
// request's whole header within the header timeout, counted from when it
// connects or its previous response ended (so it is also the keep-alive
// idle bound), and a request's whole body within the body timeout of its
// header. The connection bound keeps the open sockets well inside the
// descriptor limit; legacy MCP sessions (about 57 KB each) are bounded per
// token and in total and end after the idle timeout.
pub(crate) const HTTP_HEADER_TIMEOUT_MS: Limit = limit(30_000, 100, 600_000);
pub(crate) const HTTP_BODY_TIMEOUT_MS: Limit = limit(30_000, 100, 3_600_000);
pub(crate) const HTTP_MAX_CONNECTIONS: Limit = limit(512, 1, 100_000);
pub(crate) const HTTP_SESSION_IDLE_TIMEOUT_MS: Limit = limit(120_000, 1_000, 86_400_000);
pub(crate) const HTTP_MAX_SESSIONS: Limit = limit(1_024, 1, 100_000);
pub(crate) const HTTP_MAX_SESSIONS_PER_TOKEN: Limit = limit(128, 1, 100_000);

// OAuth token lifetimes, in seconds: access tokens are short-lived (an
// hour by default, a day at most); a refresh token (rotated at every use)
// lives 30 days by default, a year at most.
pub(crate) const OAUTH_ACCESS_TOKEN_TTL_S: Limit = limit(3_600, 60, 86_400);
pub(crate) const OAUTH_REFRESH_TOKEN_TTL_S: Limit = limit(2_592_000, 3_600, 31_536_000);

/// Number of `[[workdirs]]` a configuration may hold (spec §2.6).
pub(crate) const MAX_WORKDIRS: usize = 64;

/// Number of environment slots, `WORKDIR_01` … `WORKDIR_16` (spec §2.4).
pub(crate) const SLOT_COUNT: u8 = 16;
