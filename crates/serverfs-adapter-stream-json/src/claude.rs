//! Claude Code (spec-adapters.md §3, measured on 2.1.197): the `claude`
//! CLI as the official Agent SDKs drive it, in native mode — no
//! `--print`, no system-prompt flag (the CLI's own Claude Code prompt),
//! the user's, project's and local settings sources, and permission
//! prompts over stdio; never a permission mode, tool list, MCP
//! configuration or settings override.

use std::time::Duration;

use serde_json::{Value, json};
use serverfs_agent_runtime::Capabilities;
use serverfs_protocol::bridge::{CatalogScope, InFlightRecovery, ModelDiscovery};

use crate::flavor::{CatalogSource, Flavor, ProxyDelivery, TurnArgs};

/// The runtime's name.
pub const CLAUDE_RUNTIME: &str = "claude";

/// Claude Code as the engine runs it.
pub static CLAUDE: Flavor = Flavor {
    runtime: CLAUDE_RUNTIME,
    display: "Claude",
    capabilities: Capabilities {
        persistent_session: true,
        // A second user message during a turn may queue rather than
        // steer; off until a real-CLI test proves otherwise.
        live_steer: false,
        interactive_approval: true,
        interactive_question: true,
        in_flight_recovery: InFlightRecovery::SessionResume,
        model_override: true,
        model_discovery: ModelDiscovery::RuntimeCatalog,
    },
    argv: claude_argv,
    fixed_env: &[("CLAUDE_CODE_ENTRYPOINT", "sdk-rust")],
    initialize: claude_initialize,
    priority: None,
    proxy: ProxyDelivery::Environment,
    auth_payload: None,
    catalog: CatalogSource::InitializeAnswer,
    catalog_scope: CatalogScope::RuntimeCatalog,
    catalog_source: "claude_initialize",
    login_hint: "log in by running `claude` once as the Bridge's user, or hand an API key \
                 through claude_env_passthrough",
};

/// `claude --output-format stream-json --verbose --input-format stream-json
/// --permission-prompt-tool stdio --setting-sources=user,project,local
/// [--model=M] [--resume=ID]` (equals forms, so that no value — the model is
/// caller-chosen — can ever be read as an option of its own).
fn claude_argv(args: TurnArgs<'_>) -> Vec<String> {
    let sources = if args.discovery {
        "--setting-sources=user"
    } else {
        "--setting-sources=user,project,local"
    };
    let mut argv: Vec<String> = [
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
        sources,
    ]
    .map(str::to_owned)
    .into();
    if let Some(model) = args.model {
        // One word: the model is the caller's, and as `--model=VALUE`
        // (commander.js, which both CLIs use, accepts it) no value can be
        // read as an option of its own, whatever the submit check let by.
        argv.push(format!("--model={model}"));
    }
    if let Some(session) = args.resume {
        argv.push(format!("--resume={session}"));
    }
    argv
}

fn claude_initialize(_timeout: Duration) -> Value {
    json!({ "subtype": "initialize", "hooks": null })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_is_the_sdks_in_native_mode() {
        let argv = claude_argv(TurnArgs {
            model: Some("opus"),
            resume: Some("s-1"),
            discovery: false,
        });
        assert_eq!(
            argv,
            [
                "--output-format",
                "stream-json",
                "--verbose",
                "--input-format",
                "stream-json",
                "--permission-prompt-tool",
                "stdio",
                "--setting-sources=user,project,local",
                "--model=opus",
                "--resume=s-1"
            ]
        );
        for forbidden in ["--print", "-p", "--permission-mode", "--system-prompt"] {
            assert!(!argv.iter().any(|arg| arg == forbidden), "{forbidden}");
        }
    }
}
