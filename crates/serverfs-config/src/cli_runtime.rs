//! What every native CLI runtime (`codex`, `claude`, `qoder`) is configured
//! with: which executable the Agent Bridge runs, and which variables of the
//! Bridge's own environment it hands to the provider; plus the settings of
//! the two stream-json CLIs, Claude Code and Qoder, which need nothing else
//! but Qoder's choice of credentials.
//!
//! Read by `serverfs-agent-bridge` only; `serverfs` checks them with the rest
//! of the configuration and otherwise ignores them. Nothing here is ever
//! downloaded or installed, and only variable *names* are configured: the
//! values stay in the Bridge's environment and never pass through this
//! crate.

use crate::error::PassthroughProblem;
use crate::limits;
use crate::qoder_auth::QoderAuth;

/// How the Agent Bridge runs one stream-json CLI runtime: `claude` (Claude
/// Code, `[agent] claude_*` keys, `SERVERFS_CLAUDE_*` variables) or `qoder`
/// (`qodercli`, `[agent] qoder_*`, `SERVERFS_QODER_*`). Both speak the same
/// protocol and take these settings, so one type serves both: the alias
/// [`ClaudeSettings`] for Claude Code, and [`QoderSettings::cli`] beside
/// Qoder's credentials choice.
///
/// Read by `serverfs-agent-bridge` only. The Bridge runs the CLI in its
/// native mode: it passes no permission mode, tool lists, MCP servers or
/// settings overrides, so the user's own settings, `CLAUDE.md`, skills and
/// permission rules decide how the CLI behaves.
///
/// # Security
///
/// `env_passthrough` holds names only, each checked against the names the
/// Bridge reserves (proxy, loader and `SERVERFS_*` variables, the ones it
/// sets itself). The values are read by the Bridge from its own environment
/// when it starts a provider, and never appear in configuration, reports or
/// errors (ARCHITECTURE.md invariant 9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliRuntimeSettings {
    /// The CLI executable: an absolute path, or a bare command name (no
    /// `/`) the Bridge looks up on `PATH` at start-up. Never empty, never
    /// holds NUL, CR or LF. Default `claude`, respectively `qodercli`.
    pub bin: String,
    /// Timeout of one control request to the CLI (`initialize`,
    /// `interrupt`, …), in milliseconds (default 60 000, 100..=600 000).
    /// Configured in seconds, possibly fractional.
    pub request_timeout_ms: u64,
    /// Names of variables of the Bridge's own environment handed to this
    /// runtime's provider processes (e.g. `ANTHROPIC_API_KEY`), in the order
    /// written. Each matches `^[A-Za-z_][A-Za-z0-9_]*$`, none twice, none
    /// reserved (see [`PassthroughProblem`]). Default empty.
    pub env_passthrough: Vec<String>,
}

/// The settings of the `claude` runtime ([`CliRuntimeSettings`]).
pub type ClaudeSettings = CliRuntimeSettings;

/// The settings of the `qoder` runtime: Claude Code's, and how `qodercli`
/// gets its credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QoderSettings {
    /// The executable, request timeout and passthrough list, with the rules
    /// of [`CliRuntimeSettings`].
    pub cli: CliRuntimeSettings,
    /// What goes into the authentication payload file (default
    /// [`QoderAuth::Login`]). With
    /// [`PersonalAccessToken`](QoderAuth::PersonalAccessToken),
    /// `cli.env_passthrough` lists
    /// [`QODER_TOKEN_VARIABLE`](crate::QODER_TOKEN_VARIABLE).
    pub auth: QoderAuth,
}

impl Default for QoderSettings {
    /// What an empty `[agent]` table gives: [`CliRuntimeSettings::qoder_default`]
    /// and the local login.
    fn default() -> QoderSettings {
        QoderSettings {
            cli: CliRuntimeSettings::qoder_default(),
            auth: QoderAuth::Login,
        }
    }
}

impl CliRuntimeSettings {
    /// What an empty `[agent]` table gives the `claude` runtime: `claude`
    /// from `PATH`, a 60 s request timeout, no variable passed through.
    pub fn claude_default() -> CliRuntimeSettings {
        CliRuntimeSettings::default_for(&CLAUDE)
    }

    /// What an empty `[agent]` table gives the `qoder` runtime: `qodercli`
    /// from `PATH`, a 60 s request timeout, no variable passed through.
    pub fn qoder_default() -> CliRuntimeSettings {
        CliRuntimeSettings::default_for(&QODER)
    }

    pub(crate) fn default_for(cli: &StreamJsonCli) -> CliRuntimeSettings {
        CliRuntimeSettings {
            bin: cli.default_bin.to_owned(),
            request_timeout_ms: limits::STREAM_JSON_REQUEST_TIMEOUT_MS.default,
            env_passthrough: Vec::new(),
        }
    }
}

/// What differs between the two stream-json runtimes' configuration.
#[derive(Debug)]
pub(crate) struct StreamJsonCli {
    /// The runtime name: the prefix of its `[agent]` keys (`claude_bin`)
    /// and the heading of its `check-config` block.
    pub name: &'static str,
    /// The executable run when none is configured, looked up on `PATH`.
    pub default_bin: &'static str,
}

pub(crate) const CLAUDE: StreamJsonCli = StreamJsonCli {
    name: "claude",
    default_bin: "claude",
};

pub(crate) const QODER: StreamJsonCli = StreamJsonCli {
    name: "qoder",
    // `qodercli` is the name its npm package installs (it also installs a
    // `qoder` alias, which a desktop Qoder may shadow).
    default_bin: "qodercli",
};

/// Why a configured CLI executable is refused, if it is. The rule of every
/// `*_bin` key.
pub(crate) fn bin_problem(bin: &str) -> Option<&'static str> {
    if bin.trim().is_empty() {
        Some("a command name or an absolute path, not an empty one")
    } else if bin.contains(['\0', '\r', '\n']) {
        // NUL cannot be passed to execve(2) at all; CR and LF would split the
        // Bridge's one-line log records and `check-config` lines.
        Some("a command name or path without NUL, CR or LF characters")
    } else if bin.contains('/') && !bin.starts_with('/') {
        // A relative path would be resolved against whatever the Bridge's
        // working directory happens to be, so which binary runs would depend
        // on how the service was started.
        Some(
            "an absolute path, or a bare command name looked up on PATH \
             (no '/' unless the path is absolute)",
        )
    } else {
        None
    }
}

/// Names the Bridge sets for a provider itself; passing the Bridge's own
/// value through would override what it set.
const SET_BY_BRIDGE: [&str; 5] = [
    "PATH",
    "HOME",
    "PWD",
    "CODEX_HOME",
    "QODER_SDK_AUTH_PAYLOAD_FILE",
];

/// Dynamic-loader variables: with one of these a provider would load code
/// the operator never installed as the provider.
const LOADER: [&str; 2] = ["LD_PRELOAD", "LD_LIBRARY_PATH"];

/// Why one name of a passthrough list is refused on its own, if it is
/// (duplicates are found by the caller, which sees the whole list).
pub(crate) fn passthrough_problem(name: &str) -> Option<PassthroughProblem> {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    // Also keeps out `=`, NUL and every non-ASCII byte: a name with one of
    // those cannot be set in an environment block at all.
    if !first_ok || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Some(PassthroughProblem::NotAName);
    }
    let upper = name.to_ascii_uppercase();
    // Any case: `http_proxy` is honoured by curl and most HTTP stacks, and
    // `NO_PROXY` would punch holes into the agent proxy.
    if upper.contains("PROXY") {
        Some(PassthroughProblem::Proxy)
    } else if upper.starts_with("SERVERFS_") {
        Some(PassthroughProblem::ServerfsSetting)
    } else if SET_BY_BRIDGE.contains(&name) {
        Some(PassthroughProblem::SetByBridge)
    } else if LOADER.contains(&name) {
        Some(PassthroughProblem::Loader)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_rule() {
        for ok in [
            "codex",
            "/usr/local/bin/codex",
            "codex-0.1",
            "/opt/my codex/codex",
            "qodercli",
        ] {
            assert_eq!(bin_problem(ok), None, "{ok:?}");
        }
        for bad in [
            "",
            "  ",
            "bin/codex",
            "./codex",
            "../codex",
            "co\0dex",
            "codex\n",
            "\rcodex",
        ] {
            assert!(bin_problem(bad).is_some(), "{bad:?} accepted");
        }
    }

    #[test]
    fn passthrough_names() {
        for ok in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "_X",
            "a",
            "x9",
            "QODER_PERSONAL_ACCESS_TOKEN",
            // Only exact names are set by the Bridge; these merely resemble them.
            "path",
            "HOMEDIR",
            "MY_PATH",
            "LD_AUDIT_NOT",
            "XSERVERFS_Y",
        ] {
            assert_eq!(passthrough_problem(ok), None, "{ok:?}");
        }
        for bad in ["", "1X", "A-B", "A=B", "A B", "A\0", "Ä", " A", "A\n"] {
            assert_eq!(
                passthrough_problem(bad),
                Some(PassthroughProblem::NotAName),
                "{bad:?}"
            );
        }
        for proxy in [
            "HTTPS_PROXY",
            "http_proxy",
            "NO_PROXY",
            "no_proxy",
            "ALL_PROXY",
            "Ftp_Proxy",
            "PROXY",
            "MY_PROXY_URL",
            "SERVERFS_AGENT_PROXY_URL",
        ] {
            assert_eq!(
                passthrough_problem(proxy),
                Some(PassthroughProblem::Proxy),
                "{proxy:?}"
            );
        }
        for own in [
            "SERVERFS_CONFIG",
            "serverfs_log_level",
            "Serverfs_X",
            "SERVERFS_",
        ] {
            assert_eq!(
                passthrough_problem(own),
                Some(PassthroughProblem::ServerfsSetting),
                "{own:?}"
            );
        }
        for set in SET_BY_BRIDGE {
            assert_eq!(
                passthrough_problem(set),
                Some(PassthroughProblem::SetByBridge),
                "{set:?}"
            );
        }
        for loader in LOADER {
            assert_eq!(
                passthrough_problem(loader),
                Some(PassthroughProblem::Loader),
                "{loader:?}"
            );
        }
    }

    #[test]
    fn defaults() {
        assert_eq!(
            CliRuntimeSettings::claude_default(),
            CliRuntimeSettings {
                bin: "claude".to_owned(),
                request_timeout_ms: 60_000,
                env_passthrough: Vec::new(),
            }
        );
        assert_eq!(
            CliRuntimeSettings::qoder_default(),
            CliRuntimeSettings {
                bin: "qodercli".to_owned(),
                request_timeout_ms: 60_000,
                env_passthrough: Vec::new(),
            }
        );
    }
}
