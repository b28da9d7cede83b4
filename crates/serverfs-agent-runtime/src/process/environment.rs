//! The environment a provider child starts with.
//!
//! A provider runs with the user's account but not with the Bridge's
//! environment: that may hold the operator's proxy endpoint, control-plane
//! and tunnel settings, or tokens of other services (ARCHITECTURE.md
//! invariant 9). So the child starts from nothing and receives, in order:
//!
//! 1. a short allowlist of inherited variables ([`INHERITED_ALLOWLIST`]),
//! 2. the adapter's fixed pairs (which may override 1),
//! 3. when the runtime uses the agent egress proxy, exactly `HTTPS_PROXY`
//!    and `NO_PROXY` (spec-agent-bridge.md §10.5).

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{CommandProblem, ProcessError};

/// Variables copied from the Bridge's own environment, and why each one.
///
/// Everything else is dropped: the reference passed the parent environment
/// through minus a denylist, which leaks whatever a future deployment adds;
/// an allowlist cannot. Credentials a provider needs (for example an API
/// key from the operator's `provider.env`) are the adapter's to pass
/// explicitly as fixed pairs.
const INHERITED_ALLOWLIST: &[&str] = &[
    // Provider CLIs keep their configuration and login under the home
    // directory (`~/.codex`, `~/.claude`, `~/.qoder`).
    "HOME",
    // Identity of the account; some CLIs and git read these rather than
    // calling getpwuid.
    "USER",
    "LOGNAME",
    // Not used to find the provider (its path is absolute and resolved at
    // start-up), but the provider itself runs `node`, `git` and the user's
    // tools by name, and npm-installed CLIs start with `#!/usr/bin/env node`.
    "PATH",
    // The shell the provider's command tool should use, as the user would.
    "SHELL",
    // Character set and messages: without them tools fall back to the C
    // locale and mangle non-ASCII file names and output.
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    // Local time in timestamps the provider writes.
    "TZ",
    // Where the provider may create scratch files.
    "TMPDIR",
    // Config and data locations of XDG-style CLIs (ACP agents, Qoder), when
    // the user moved them away from the defaults under `HOME`.
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    // Deliberately absent: `TERM` (stdout is a protocol pipe, never a
    // terminal, and a terminal type invites colour codes and pagers), and
    // `SSH_AUTH_SOCK`, `DISPLAY`, `DBUS_SESSION_BUS_ADDRESS` (capabilities
    // that reach beyond the workdir).
];

/// Prefixes that never reach a provider (case-insensitive): the Bridge's
/// own settings and those of the processes that start it
/// (spec-agent-bridge.md §10.5 lists `SERVERFS_AGENT_`, `SERVERFS_PROXY_`,
/// `CONTROL_PLANE_`, `TUNNEL_CLIENT_` and `MCP_`; all of `SERVERFS_` is
/// ours, so the whole prefix is reserved).
const RESERVED_PREFIXES: &[&str] = &["SERVERFS_", "CONTROL_PLANE_", "TUNNEL_CLIENT_", "MCP_"];

/// Name fragments that mark a credential (case-insensitive). Only applied to
/// inherited variables: an adapter passes a credential on purpose.
const SECRET_FRAGMENTS: &[&str] = &["TOKEN", "KEY", "SECRET", "PASSWORD"];

/// The names `NO_PROXY` always contains, so that loopback traffic (the
/// Codex control socket's WebSocket handshake, test mock endpoints) never
/// goes through the egress proxy.
const LOOPBACK_NO_PROXY: [&str; 3] = ["127.0.0.1", "localhost", "::1"];

/// Whether and where a runtime's provider sends its outbound HTTPS traffic.
///
/// # Security
///
/// The endpoint is a secret of the deployment (invariant 9): `Debug` prints
/// `<redacted>` in its place, and the value only ever reaches a provider's
/// environment.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProxyPolicy {
    /// The agent egress proxy endpoint (`SERVERFS_AGENT_PROXY_URL`, the
    /// supervisor's bootstrap frame, or the config's `proxy.url`), already
    /// validated by whoever read it. `None` when none is configured.
    pub proxy_url: Option<String>,
    /// The operator's extra `NO_PROXY` entries, separated by `,` or `;`
    /// (`SERVERFS_AGENT_NO_PROXY` or the bootstrap frame's `no_proxy`).
    /// The loopback names are added regardless.
    pub no_proxy: Option<String>,
    /// The runtime's `use_proxy` setting.
    pub enabled_for_runtime: bool,
}

impl ProxyPolicy {
    /// A policy that adds no proxy variable.
    pub fn disabled() -> Self {
        Self::default()
    }
}

impl fmt::Debug for ProxyPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redact = |value: &Option<String>| value.as_ref().map(|_| "<redacted>");
        f.debug_struct("ProxyPolicy")
            .field("proxy_url", &redact(&self.proxy_url))
            .field("no_proxy", &redact(&self.no_proxy))
            .field("enabled_for_runtime", &self.enabled_for_runtime)
            .finish()
    }
}

/// Computes the complete environment of a provider child.
///
/// `inherited` is the Bridge's own environment, of which only `HOME`,
/// `USER`, `LOGNAME`, `PATH`, `SHELL`, `LANG`, `LC_ALL`, `LC_CTYPE`, `TZ`,
/// `TMPDIR` and `XDG_{CONFIG,DATA,STATE,CACHE}_HOME` are taken; `extra` the
/// adapter's fixed pairs (they override inherited ones); `proxy` the
/// runtime's egress policy. The result is sorted by name, each name once.
///
/// # Security
///
/// Never returns a proxy variable (any name ending in `_PROXY` or
/// `_PROXY_URL`, either case) or a `SERVERFS_`, `CONTROL_PLANE_`,
/// `TUNNEL_CLIENT_` or `MCP_` name, except exactly `HTTPS_PROXY` and
/// `NO_PROXY` when `proxy` enables the egress proxy. `HTTP_PROXY` and
/// `ALL_PROXY` are never set (spec-agent-bridge.md §10.5).
///
/// # Errors
///
/// - [`ProcessError::InvalidCommand`] (`AGENT_RUNTIME_UNAVAILABLE`) when an
///   `extra` name is malformed or reserved, or a value contains NUL.
/// - [`ProcessError::ProxyEndpointMissing`] (`AGENT_RUNTIME_NOT_READY`) when
///   the runtime must use the proxy and no endpoint is configured.
pub fn provider_environment<I>(
    inherited: I,
    extra: &[(String, String)],
    proxy: &ProxyPolicy,
) -> Result<Vec<(String, String)>, ProcessError>
where
    I: IntoIterator<Item = (String, String)>,
{
    let mut env = BTreeMap::new();
    for (name, value) in inherited {
        // The deny checks cannot fire for today's allowlist (a unit test
        // pins that); they keep a careless addition to it harmless.
        if INHERITED_ALLOWLIST.contains(&name.as_str())
            && !is_reserved_name(&name)
            && !is_secret_like(&name)
            && !value.contains('\0')
        {
            env.insert(name, value);
        }
    }

    for (name, value) in extra {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(ProcessError::InvalidCommand(
                CommandProblem::InvalidEnvironmentName,
            ));
        }
        if value.contains('\0') {
            return Err(ProcessError::InvalidCommand(
                CommandProblem::InvalidEnvironmentValue,
            ));
        }
        // An adapter that sets its own proxy variable would bypass the
        // operator's policy; refuse loudly rather than drop it silently.
        if is_reserved_name(name) {
            return Err(ProcessError::InvalidCommand(
                CommandProblem::ForbiddenEnvironmentName,
            ));
        }
        env.insert(name.clone(), value.clone());
    }

    if proxy.enabled_for_runtime {
        let url = proxy
            .proxy_url
            .as_deref()
            .filter(|url| !url.trim().is_empty())
            .ok_or(ProcessError::ProxyEndpointMissing)?;
        if url.contains('\0') {
            return Err(ProcessError::ProxyEndpointMissing);
        }
        env.insert("HTTPS_PROXY".to_owned(), url.to_owned());
        env.insert(
            "NO_PROXY".to_owned(),
            merged_no_proxy(proxy.no_proxy.as_deref()),
        );
    }

    Ok(env.into_iter().collect())
}

/// A proxy variable or a reserved prefix (case-insensitive).
fn is_reserved_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_PROXY")
        || upper.ends_with("_PROXY_URL")
        || RESERVED_PREFIXES
            .iter()
            .any(|prefix| upper.starts_with(prefix))
}

fn is_secret_like(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_FRAGMENTS
        .iter()
        .any(|fragment| upper.contains(fragment))
}

/// The operator's entries (split on `,` or `;`, trimmed, empties and
/// duplicates dropped, order kept), then each loopback name not already
/// present. Entries compare exactly, as the spec says: `LOCALHOST` does not
/// stand in for `localhost`, so the literal loopback names are always there
/// whatever case rules a provider's HTTP stack applies.
fn merged_no_proxy(configured: Option<&str>) -> String {
    let mut entries: Vec<&str> = Vec::new();
    let configured = configured
        .unwrap_or_default()
        .split([',', ';'])
        .map(str::trim);
    for entry in configured.chain(LOOPBACK_NO_PROXY) {
        if !entry.is_empty() && !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    entries.join(",")
}

#[cfg(test)]
#[path = "environment_tests.rs"]
mod tests;
