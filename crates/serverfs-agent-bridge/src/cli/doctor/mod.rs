//! `serverfs-agent-bridge doctor`: whether this Bridge will work before a
//! task fails, one `OK`/`WARN`/`FAIL` line per check with the fix, exit
//! 0/1/2 like `serverfs doctor` (the same report format).
//!
//! Read-only: it creates, changes and deletes nothing, never starts a
//! turn, a login or a daemon, and never prints a credential — variables
//! are shown by name only, files by path, the proxy not at all.
//!
//! The checks live beside it by subject: the Bridge's directories and lock
//! artifacts ([`files`]), each runtime and the environment it receives
//! ([`runtimes`]), and what the host provides: the egress proxy, the socket
//! and systemd linger ([`host`]).

mod files;
mod host;
mod runtimes;

use std::collections::BTreeMap;
use std::process::ExitCode;

use serverfs_config::{DoctorReport, plural};

use super::{ConfigArgs, bridge_config, config_error};

/// Runs every check and prints the report; exit 2 (and no report) when
/// the configuration cannot be loaded.
pub fn run(args: &ConfigArgs, process_env: &BTreeMap<String, String>) -> ExitCode {
    let loaded = match bridge_config::load_tolerant(args, process_env) {
        Ok(loaded) => loaded,
        Err(error) => return config_error(&error),
    };
    let config = &loaded.config;
    let mut report = DoctorReport::stdout();
    let agent_workdirs = config
        .config
        .workdirs
        .iter()
        .filter(|workdir| workdir.agent_mode.is_enabled())
        .count();
    report.ok(
        "configuration",
        format!(
            "agent bridge enabled, {} with agents, runtimes: {}",
            plural(agent_workdirs, "workdir", "workdirs"),
            runtime_names(&loaded)
        ),
    );
    files::check(&mut report, config);
    runtimes::check(&mut report, &loaded);
    host::check(&mut report, config, &loaded.env);
    report.finish()
}

/// Every runtime the workdirs allow, usable or not.
fn runtime_names(loaded: &bridge_config::LoadedConfig) -> String {
    let mut names: Vec<&str> = loaded.config.runtimes.iter().map(String::as_str).collect();
    names.extend(loaded.unusable.iter().map(|(runtime, _)| runtime.as_str()));
    names.sort_unstable();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
