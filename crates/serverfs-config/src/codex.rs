//! The Codex runtime's settings: which `codex` the Agent Bridge runs and how
//! it talks to Codex's App Server.
//!
//! Read by `serverfs-agent-bridge` only; `serverfs` checks them with the rest
//! of the configuration and otherwise ignores them. Nothing here is ever
//! downloaded or installed: the Bridge runs the `codex` the operator already
//! has, and sends it no sandbox, approval-policy or configuration overrides,
//! so the user's own Codex configuration decides how Codex behaves.

use std::fmt;
use std::path::PathBuf;

use crate::limits;

/// The executable the Bridge runs when none is configured: looked up on
/// `PATH` at Bridge start-up.
pub(crate) const DEFAULT_BIN: &str = "codex";

/// How the Bridge reaches Codex's App Server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum CodexTransport {
    /// The Bridge runs its own `codex app-server` child for each task and
    /// speaks JSON-RPC over the child's stdin and stdout (the default).
    #[default]
    Stdio,
    /// The Bridge connects to the user's managed Codex daemon through its
    /// control socket, `<codex home>/app-server-control/app-server-control.sock`.
    Daemon,
}

impl CodexTransport {
    /// Every transport, the default first.
    pub const ALL: [CodexTransport; 2] = [CodexTransport::Stdio, CodexTransport::Daemon];

    /// The configuration spelling: `stdio`, `daemon`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CodexTransport::Stdio => "stdio",
            CodexTransport::Daemon => "daemon",
        }
    }

    /// Parses the exact configuration spelling (lower case, no spaces).
    pub fn parse(text: &str) -> Option<CodexTransport> {
        CodexTransport::ALL
            .into_iter()
            .find(|transport| transport.as_str() == text)
    }
}

impl fmt::Display for CodexTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the Agent Bridge runs the `codex` runtime (`[agent] codex_*` keys,
/// `SERVERFS_CODEX_*` variables).
///
/// Read by `serverfs-agent-bridge` only. The Bridge runs Codex in its
/// native mode: it passes no sandbox, approval-policy or `-c` configuration
/// overrides, so the user's own Codex configuration (under [`home`]) decides.
///
/// [`home`]: CodexSettings::home
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexSettings {
    /// The `codex` executable: an absolute path, or a bare command name
    /// (no `/`) the Bridge looks up on `PATH` at start-up. Never empty,
    /// never holds NUL, CR or LF. Default `codex`.
    pub bin: String,
    /// The Codex home directory (`CODEX_HOME`) the Bridge gives Codex and
    /// finds the daemon's control socket in. Absolute when set. `None`
    /// (default): the Bridge uses its own `$CODEX_HOME`, else `~/.codex`,
    /// which is Codex's own default.
    pub home: Option<PathBuf>,
    /// How the Bridge reaches the App Server (default [`CodexTransport::Stdio`]).
    pub transport: CodexTransport,
    /// Whether the Bridge may start the managed daemon when its control
    /// socket does not answer (default false). Only ever true with
    /// [`CodexTransport::Daemon`].
    pub autostart: bool,
    /// Timeout of one App Server request, in milliseconds (default 10 000,
    /// 100..=600 000). Configured in seconds, possibly fractional.
    pub request_timeout_ms: u64,
    /// Names of variables of the Bridge's own environment handed to a
    /// Bridge-owned `codex app-server` (e.g. `OPENAI_API_KEY`), in the order
    /// written; the same rules as
    /// [`CliRuntimeSettings::env_passthrough`](crate::CliRuntimeSettings::env_passthrough).
    /// Names only: the values stay in the Bridge's environment. Default
    /// empty.
    pub env_passthrough: Vec<String>,
}

impl Default for CodexSettings {
    /// What an empty `[agent]` table gives: `codex` from `PATH`, Codex's
    /// own home, a `codex app-server` child per task, a 10 s request
    /// timeout, no variable passed through.
    fn default() -> CodexSettings {
        CodexSettings {
            bin: DEFAULT_BIN.to_owned(),
            home: None,
            transport: CodexTransport::Stdio,
            autostart: false,
            request_timeout_ms: limits::CODEX_REQUEST_TIMEOUT_MS.default,
            env_passthrough: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_round_trip_and_nothing_else_parses() {
        for transport in CodexTransport::ALL {
            assert_eq!(CodexTransport::parse(transport.as_str()), Some(transport));
            assert_eq!(transport.to_string(), transport.as_str());
        }
        for bad in ["", "Stdio", "DAEMON", " daemon", "socket", "ws"] {
            assert_eq!(CodexTransport::parse(bad), None, "{bad:?}");
        }
        assert_eq!(CodexTransport::default(), CodexTransport::Stdio);
    }
}
