//! What differs between the CLIs that speak the stream-json control
//! protocol: a [`Flavor`] is the data the one engine needs to run each of
//! them (argv, environment, handshake, catalog, proxy and auth delivery).
//! `claude.rs` and `qoder.rs` each define one.

use std::time::Duration;

use serde_json::Value;
use serverfs_agent_runtime::Capabilities;
use serverfs_protocol::bridge::CatalogScope;

/// How one turn's CLI is started.
#[derive(Debug, Clone, Copy)]
pub struct TurnArgs<'a> {
    /// A request-scoped model, passed verbatim.
    pub model: Option<&'a str>,
    /// The native session to resume.
    pub resume: Option<&'a str>,
    /// A short session that only lists models: the user's settings only,
    /// no project or local ones.
    pub discovery: bool,
}

/// Where a CLI reports its models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogSource {
    /// In the `initialize` answer's `models` (Claude Code).
    InitializeAnswer,
    /// In the answer to a `get_models` control request (Qoder).
    GetModels,
}

/// How a CLI gets the agent egress proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyDelivery {
    /// `HTTPS_PROXY`/`NO_PROXY` in its environment (the kit's policy).
    Environment,
    /// A `set_proxy` control request after `initialize`, never the
    /// environment (Qoder).
    ControlRequest,
}

/// A file the CLI reads its authentication choice from (Qoder): private
/// (`0600` in a fresh `0700` directory), written before the CLI starts and
/// removed once it has exited.
#[derive(Debug, Clone, Copy)]
pub struct AuthPayload {
    /// The variable naming the file.
    pub variable: &'static str,
    /// The payload that reuses the CLI's own local login.
    pub login: fn() -> Value,
    /// The payload carrying a personal access token.
    pub access_token: fn(&str) -> Value,
}

/// One stream-json CLI.
#[derive(Debug)]
pub struct Flavor {
    /// The runtime name (configuration, allowlists).
    pub runtime: &'static str,
    /// How people call it, in titles and messages ("Claude").
    pub display: &'static str,
    /// What it can do.
    pub capabilities: Capabilities,
    /// Its argv (without the executable).
    pub argv: fn(TurnArgs<'_>) -> Vec<String>,
    /// Fixed environment pairs (an entrypoint marker).
    pub fixed_env: &'static [(&'static str, &'static str)],
    /// The `initialize` control request's body.
    pub initialize: fn(Duration) -> Value,
    /// The user message's `priority`, when the CLI takes one.
    pub priority: Option<&'static str>,
    /// How the egress proxy reaches it.
    pub proxy: ProxyDelivery,
    /// Its authentication payload file, when it needs one.
    pub auth_payload: Option<AuthPayload>,
    /// Where it reports its models.
    pub catalog: CatalogSource,
    /// The catalog's `scope`.
    pub catalog_scope: CatalogScope,
    /// The catalog's `source`.
    pub catalog_source: &'static str,
    /// What the operator does when the CLI is not logged in.
    pub login_hint: &'static str,
}

/// The version in a `--version` line (`2.1.197 (Claude Code)`, `1.1.76`):
/// its first word that starts with a digit.
pub fn version_of(text: &str) -> Option<String> {
    text.split_whitespace()
        .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_the_first_numeric_word() {
        assert_eq!(
            version_of("2.1.197 (Claude Code)\n").as_deref(),
            Some("2.1.197")
        );
        assert_eq!(version_of("1.1.76").as_deref(), Some("1.1.76"));
        assert_eq!(version_of("qodercli v").as_deref(), None);
    }
}
