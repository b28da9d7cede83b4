//! Agent policy vocabulary: modes and runtime names.

use std::fmt;

/// What a workdir lets delegated coding agents do.
///
/// Agent execution is separate from file mutation and off by default
/// (ARCHITECTURE.md invariant 5): it needs the global Bridge switch, a
/// per-workdir mode other than [`AgentMode::Disabled`] and a runtime
/// allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum AgentMode {
    /// No agent tasks on this workdir (the default).
    #[default]
    Disabled,
    /// Agents may read the workdir but not change it.
    Review,
    /// Agents may change the workdir; requires a read-write workdir.
    WorkspaceWrite,
}

impl AgentMode {
    /// Every mode, in order of increasing power.
    pub const ALL: [AgentMode; 3] = [
        AgentMode::Disabled,
        AgentMode::Review,
        AgentMode::WorkspaceWrite,
    ];

    /// The configuration spelling: `disabled`, `review`, `workspace-write`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AgentMode::Disabled => "disabled",
            AgentMode::Review => "review",
            AgentMode::WorkspaceWrite => "workspace-write",
        }
    }

    /// Parses the exact configuration spelling (lower case, no spaces).
    pub fn parse(text: &str) -> Option<AgentMode> {
        AgentMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text)
    }

    /// Whether agents may run at all.
    pub const fn is_enabled(self) -> bool {
        match self {
            AgentMode::Disabled => false,
            AgentMode::Review | AgentMode::WorkspaceWrite => true,
        }
    }
}

impl fmt::Display for AgentMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Longest ACP profile id, the name after the `acp-` prefix: the whole
/// runtime name stays within 32 characters (seed 002 §5.2).
const MAX_ACP_ID_LEN: usize = 28;

/// A coding-agent runtime a workdir allows.
///
/// The Bridge maps each name to an operator-configured executable; the
/// configuration only checks that the name is one the Bridge can know.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AgentRuntime {
    /// OpenAI Codex (App Server protocol).
    Codex,
    /// Claude Code (stream-json control protocol).
    Claude,
    /// Qoder (stream-json control protocol).
    Qoder,
    /// The deterministic test and demo adapter.
    Fake,
    /// An operator-defined ACP agent profile, `acp-<name>`.
    Acp(AcpProfile),
}

impl AgentRuntime {
    /// The runtimes built into the Bridge. Their names are reserved: no ACP
    /// profile may take one as its id (seed 002 §5.1–§5.2), so that a
    /// configuration never reads as a native runtime it is not.
    pub const BUILT_IN: [AgentRuntime; 4] = [
        AgentRuntime::Codex,
        AgentRuntime::Claude,
        AgentRuntime::Qoder,
        AgentRuntime::Fake,
    ];

    /// Whether `name` is the name of a [built-in](Self::BUILT_IN) runtime.
    pub fn is_built_in_name(name: &str) -> bool {
        AgentRuntime::BUILT_IN
            .iter()
            .any(|runtime| runtime.as_str() == name)
    }

    /// Parses a runtime name: `codex`, `claude`, `qoder`, `fake`, or
    /// `acp-<id>` with `<id>` matching `^[a-z][a-z0-9_-]{0,27}$`. Whether
    /// such a profile is configured is checked by validation.
    pub fn parse(text: &str) -> Option<AgentRuntime> {
        match text {
            "codex" => Some(AgentRuntime::Codex),
            "claude" => Some(AgentRuntime::Claude),
            "qoder" => Some(AgentRuntime::Qoder),
            "fake" => Some(AgentRuntime::Fake),
            other => AcpProfile::parse(other).map(AgentRuntime::Acp),
        }
    }

    /// The configuration spelling.
    pub fn as_str(&self) -> &str {
        match self {
            AgentRuntime::Codex => "codex",
            AgentRuntime::Claude => "claude",
            AgentRuntime::Qoder => "qoder",
            AgentRuntime::Fake => "fake",
            AgentRuntime::Acp(profile) => profile.as_str(),
        }
    }

    /// Whether this is a native provider CLI (codex, claude, qoder), as
    /// opposed to the test adapter or a standard-protocol (ACP) profile.
    pub fn is_native(&self) -> bool {
        match self {
            AgentRuntime::Codex | AgentRuntime::Claude | AgentRuntime::Qoder => true,
            AgentRuntime::Fake | AgentRuntime::Acp(_) => false,
        }
    }

    /// Whether the runtime may only run tasks of the `workspace-write`
    /// profile: a native CLI or an ACP agent edits files itself, with no
    /// per-change gate ServerFS can enforce and no read-only mode ServerFS
    /// can prove, so it is only allowed where agents may write anyway and
    /// every task holds the writer lease (spec §2.4, seed 002 §5.4).
    pub fn requires_workspace_write(&self) -> bool {
        match self {
            AgentRuntime::Codex
            | AgentRuntime::Claude
            | AgentRuntime::Qoder
            | AgentRuntime::Acp(_) => true,
            AgentRuntime::Fake => false,
        }
    }
}

impl fmt::Display for AgentRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name of an ACP runtime, always of the form `acp-<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AcpProfile(String);

impl AcpProfile {
    fn parse(text: &str) -> Option<AcpProfile> {
        AcpProfile::from_id(text.strip_prefix("acp-")?)
    }

    /// The runtime `acp-<id>` of a profile id matching
    /// `^[a-z][a-z0-9_-]{0,27}$`; `None` for any other id.
    pub fn from_id(id: &str) -> Option<AcpProfile> {
        let mut chars = id.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
        let rest_ok =
            chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        (first_ok && rest_ok && id.len() <= MAX_ACP_ID_LEN).then(|| AcpProfile(format!("acp-{id}")))
    }

    /// The full runtime name, `acp-<name>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The profile name after `acp-`.
    pub fn name(&self) -> &str {
        self.0.get("acp-".len()..).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_and_nothing_else_parses() {
        for mode in AgentMode::ALL {
            assert_eq!(AgentMode::parse(mode.as_str()), Some(mode));
        }
        for bad in ["", "Review", "workspace_write", "write", " review"] {
            assert_eq!(AgentMode::parse(bad), None, "{bad:?}");
        }
        assert_eq!(AgentMode::default(), AgentMode::Disabled);
    }

    #[test]
    fn runtime_names() {
        assert_eq!(AgentRuntime::parse("codex"), Some(AgentRuntime::Codex));
        assert_eq!(AgentRuntime::parse("claude"), Some(AgentRuntime::Claude));
        assert_eq!(AgentRuntime::parse("qoder"), Some(AgentRuntime::Qoder));
        assert_eq!(AgentRuntime::parse("fake"), Some(AgentRuntime::Fake));
        let acp = AgentRuntime::parse("acp-open-code2").unwrap();
        assert_eq!(acp.as_str(), "acp-open-code2");
        let AgentRuntime::Acp(profile) = &acp else {
            panic!("not acp: {acp:?}");
        };
        assert_eq!(profile.name(), "open-code2");
        assert!(!acp.is_native());
        assert!(acp.requires_workspace_write());
        assert!(AgentRuntime::Codex.is_native());
        assert!(AgentRuntime::Codex.requires_workspace_write());
        assert!(!AgentRuntime::Fake.is_native());
        assert!(!AgentRuntime::Fake.requires_workspace_write());
        for built_in in AgentRuntime::BUILT_IN {
            assert_eq!(
                AgentRuntime::parse(built_in.as_str()),
                Some(built_in.clone())
            );
            assert!(AgentRuntime::is_built_in_name(built_in.as_str()));
        }
        assert!(!AgentRuntime::is_built_in_name("acp-codex"));
        assert!(!AgentRuntime::is_built_in_name("opencode"));
    }

    #[test]
    fn acp_name_rule() {
        // `acp-` and 28 characters: 32 in all.
        let longest = format!("acp-a{}", "b".repeat(27));
        assert_eq!(
            AgentRuntime::parse(&longest).map(|r| r.as_str().len()),
            Some(32)
        );
        let too_long = format!("acp-a{}", "b".repeat(28));
        assert!(AgentRuntime::parse("acp-a_b").is_some());
        assert_eq!(
            AcpProfile::from_id("open_code-2").map(|p| p.as_str().to_owned()),
            Some("acp-open_code-2".to_owned())
        );
        assert_eq!(AcpProfile::from_id("Open"), None);
        for bad in [
            "acp-",
            "acp-1x",
            "acp-X",
            "acp-a.b",
            "acp-a b",
            "acp--",
            "acp-_a",
            "acp",
            "ACP-x",
            "Codex",
            "",
            "gemini",
            too_long.as_str(),
        ] {
            assert_eq!(AgentRuntime::parse(bad), None, "{bad:?}");
        }
        assert!(AgentRuntime::parse("acp-a-").is_some());
    }
}
