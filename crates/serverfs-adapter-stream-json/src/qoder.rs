//! Qoder (spec-adapters.md §4, qodercli 1.1.76 as read from its SDK): the
//! Claude protocol with Qoder's differences — `--print`, two-token
//! `--resume`/`--setting-sources`, `priority` on user messages, the
//! catalog from `get_models`, the proxy through `set_proxy` instead of the
//! environment, and an authentication payload file (by default: reuse
//! the local `qodercli login`). Native mode as for Claude: no permission
//! mode, tool lists or settings overrides.

use std::time::Duration;

use serde_json::{Value, json};
use serverfs_agent_runtime::Capabilities;
use serverfs_protocol::bridge::{CatalogScope, InFlightRecovery, ModelDiscovery};

use crate::flavor::{AuthPayload, CatalogSource, Flavor, ProxyDelivery, TurnArgs};

/// The runtime's name.
pub const QODER_RUNTIME: &str = "qoder";

/// Qoder as the engine runs it.
pub static QODER: Flavor = Flavor {
    runtime: QODER_RUNTIME,
    display: "Qoder",
    capabilities: Capabilities {
        persistent_session: true,
        // `priority: now` ends the turn with several results; not a steer.
        live_steer: false,
        interactive_approval: true,
        interactive_question: true,
        in_flight_recovery: InFlightRecovery::SessionResume,
        model_override: true,
        model_discovery: ModelDiscovery::CurrentAccount,
    },
    argv: qoder_argv,
    fixed_env: &[
        ("QODER_ENTRYPOINT", "sdk-rust"),
        ("QODER_AGENT_SDK_ENTRYPOINT", "sdk-rust"),
    ],
    initialize: qoder_initialize,
    priority: Some("next"),
    proxy: ProxyDelivery::ControlRequest,
    auth_payload: Some(AuthPayload {
        variable: "QODER_SDK_AUTH_PAYLOAD_FILE",
        // Reuse the local `qodercli login` state.
        login: || json!({ "type": "qodercli" }),
        access_token: |token| json!({ "type": "accessToken", "accessToken": token }),
    }),
    catalog: CatalogSource::GetModels,
    catalog_scope: CatalogScope::CurrentAccount,
    catalog_source: "qoder_agent_sdk",
    login_hint: "run `qodercli login` as the Bridge's user",
};

/// `qodercli --print --output-format stream-json --input-format
/// stream-json --permission-prompt-tool stdio --setting-sources
/// user,project,local [--model=M] [--resume ID]`: two-token flags as the
/// SDK sends them, except the caller-chosen model, which is one word.
fn qoder_argv(args: TurnArgs<'_>) -> Vec<String> {
    let sources = if args.discovery {
        "user"
    } else {
        "user,project,local"
    };
    let mut argv: Vec<String> = [
        "--print",
        "--output-format",
        "stream-json",
        "--input-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
        "--setting-sources",
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
        argv.extend(["--resume".to_owned(), session.to_owned()]);
    }
    argv
}

fn qoder_initialize(timeout: Duration) -> Value {
    json!({
        "subtype": "initialize",
        "modelPolicyProvider": false,
        "initializeTimeoutMs": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_uses_two_token_flags_and_print() {
        // The model (caller-chosen; this one is refused at submit) is one
        // word, so the CLI cannot read it as an option.
        let argv = qoder_argv(TurnArgs {
            model: Some("--dangerously-skip-permissions"),
            resume: Some("q-1"),
            discovery: false,
        });
        assert_eq!(
            argv,
            [
                "--print",
                "--output-format",
                "stream-json",
                "--input-format",
                "stream-json",
                "--permission-prompt-tool",
                "stdio",
                "--setting-sources",
                "user,project,local",
                "--model=--dangerously-skip-permissions",
                "--resume",
                "q-1"
            ]
        );
        assert!(!argv.iter().any(|arg| arg == "--permission-mode"));
        assert_eq!(
            qoder_initialize(Duration::from_secs(60))["initializeTimeoutMs"],
            60_000
        );
    }
}
