//! `serverfs-agent-bridge inspect`: what the Bridge's state holds, for an
//! operator at a terminal. Redacted by construction: it prints ids,
//! statuses, aliases, relative paths, codes and times — never a prompt, an
//! answer, a response, a provider-native id or a host path.
//!
//! Safe while the Bridge runs: the database is opened read-only (SQLite's
//! WAL lets it read beside the daemon; no migration, no write, no sweep of
//! result files the daemon may be writing), and recovery guards are only
//! read.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use serverfs_agent_bridge::store::{DATABASE_FILE, StateDir, Store, StoreError, TaskRecord};
use serverfs_agent_runtime::{ProcessGroupId, is_group_alive, is_task_alive};

use super::{ConfigArgs, bridge_config, config_error, containment};

/// Prints the summary; exit 0, or 2 when the configuration or state is
/// unusable.
pub fn run(args: &ConfigArgs, env: &BTreeMap<String, String>, limit: u32) -> ExitCode {
    let config = match bridge_config::load(args, env) {
        Ok(config) => config,
        Err(error) => return config_error(&error),
    };
    containment::observe(&config.config.agent.provider_cgroup);
    let mut out = String::new();
    if config.state_dir.join(DATABASE_FILE).exists() {
        match read_tasks(&config, limit) {
            Ok(tasks) => write_tasks(&mut out, &tasks),
            Err(message) => {
                eprintln!("serverfs-agent-bridge: cannot read the state: {message}");
                return ExitCode::from(super::EXIT_CONFIG);
            }
        }
    } else {
        let _ = writeln!(out, "tasks: none (the Bridge has not run yet)");
    }
    write_guards(&mut out, &config.config.agent.lock_dir);
    print!("{out}");
    ExitCode::SUCCESS
}

/// The state could not be read: shown with the store's code,
/// `serverfs-agent-bridge: cannot read the state: CODE: message`.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {store}", code = .store.code().as_str())]
struct StateUnreadable {
    #[from]
    store: StoreError,
}

fn read_tasks(
    config: &bridge_config::BridgeConfig,
    limit: u32,
) -> Result<Vec<TaskRecord>, StateUnreadable> {
    let state = StateDir::open(&config.state_dir)?;
    let store = Store::open_read_only(state, config.settings.limits.clone())?;
    let tasks = store.call_blocking(move |db| db.list_recent_tasks(limit));
    let _ = store.close();
    Ok(tasks?)
}

fn write_tasks(out: &mut String, tasks: &[TaskRecord]) {
    let active = tasks.iter().filter(|t| !t.status.is_terminal()).count();
    let _ = writeln!(out, "tasks: {} shown, {active} unfinished", tasks.len());
    for task in tasks {
        let cwd = if task.relative_cwd.is_empty() {
            "."
        } else {
            task.relative_cwd.as_str()
        };
        let _ = write!(
            out,
            "  {} {} runtime={} workdir={} cwd={} profile={} created_at={} events={}",
            task.task_id,
            task.status.as_str(),
            task.runtime,
            task.workdir_alias,
            cwd,
            task.profile.as_str(),
            task.created_at,
            task.event_count,
        );
        // Whether `continue_from_task_id` can resume it, never the id.
        if task.native_session_id.is_some() {
            out.push_str(" native_session=recorded");
        }
        if let Some(code) = task.error_code {
            let _ = write!(out, " error={}", code.as_str());
        }
        if let Some(request_id) = &task.pending_request_id {
            let _ = write!(out, " pending_request={request_id}");
        }
        if let Some(result) = &task.result {
            let _ = write!(out, " result_bytes={}", result.size_bytes);
        }
        out.push('\n');
    }
}

fn write_guards(out: &mut String, lock_dir: &std::path::Path) {
    // Before the Bridge's first run there is no lock directory, hence no
    // guard; any other trouble with it is reported below.
    if lock_dir
        .symlink_metadata()
        .is_err_and(|error| error.kind() == std::io::ErrorKind::NotFound)
    {
        let _ = writeln!(out, "recovery guards: none (no lock directory yet)");
        return;
    }
    match serverfs_lease::list_guards(lock_dir) {
        Ok(guards) if guards.is_empty() => {
            let _ = writeln!(out, "recovery guards: none");
        }
        Ok(guards) => {
            let _ = writeln!(out, "recovery guards: {}", guards.len());
            for (lease, record) in guards {
                // Judged as the Bridge judges it: a group whose members have
                // all exited (zombies not yet reaped) is gone; a process
                // carrying the task's marker is the provider's.
                let group = record.provider_pgid.and_then(ProcessGroupId::from_raw);
                let provider = match group {
                    _ if is_task_alive(&record.task_id) => "running",
                    Some(group) if is_group_alive(group) => "running",
                    Some(_) => "stopped",
                    None => "unknown",
                };
                let _ = write!(
                    out,
                    "  {} task={} runtime={} provider={provider}",
                    lease.label(),
                    record.task_id,
                    record.runtime,
                );
                if let Some(group) = group {
                    let _ = write!(out, " pgid={}", group.as_raw());
                }
                out.push('\n');
            }
        }
        Err(error) => {
            let _ = writeln!(
                out,
                "recovery guards: unreadable ({})",
                error.code().as_str()
            );
        }
    }
}
