//! How the daemon contains the providers it starts, set up once before the
//! first one runs: the Bridge as their child subreaper, and a cgroup per
//! task and provider where it was delegated a cgroup subtree.

use serverfs_agent_runtime::{
    CgroupSetupError, adopt_orphans, delegated_cgroup, remove_stale_task_cgroups, use_task_cgroups,
    watch_task_cgroups,
};
use serverfs_config::ProviderCgroup;

/// An explicitly configured cgroup directory that cannot be used; the
/// Bridge then does not start (`serverfs-agent-bridge: cannot start: …`).
#[derive(Debug, thiserror::Error)]
#[error("agent.provider_cgroup: {0}")]
pub(super) struct ContainmentError(#[source] CgroupSetupError);

/// Sets up containment as `agent.provider_cgroup` says.
///
/// # Errors
///
/// [`ContainmentError`] when an explicitly configured cgroup directory
/// cannot be used: the Bridge must not run providers with less
/// containment than asked for. `auto` never fails; it falls back to no
/// cgroups with a warning.
pub(super) fn set_up(setting: &ProviderCgroup) -> Result<(), ContainmentError> {
    // What a provider's process leaves behind when its parent exits comes
    // back to the Bridge, to be found, stopped with its task and reaped.
    if let Err(error) = adopt_orphans() {
        tracing::warn!(error = %error, "cannot become the child subreaper of providers");
    }
    let base = match setting {
        ProviderCgroup::Off => None,
        ProviderCgroup::Auto => delegated_cgroup(),
        ProviderCgroup::At(dir) => Some(dir.clone()),
    };
    let Some(base) = base else {
        tracing::info!(
            provider_cgroups = false,
            "providers are contained without cgroups"
        );
        return Ok(());
    };
    match use_task_cgroups(&base) {
        Ok(()) => {
            remove_stale_task_cgroups();
            tracing::info!(
                provider_cgroups = true,
                "each provider runs in a cgroup of its own"
            );
            Ok(())
        }
        Err(error) if *setting == ProviderCgroup::Auto => {
            tracing::warn!(error = %error, "the delegated cgroup takes no task cgroups; providers are contained without cgroups");
            Ok(())
        }
        Err(error) => Err(ContainmentError(error)),
    }
}

/// Lets `inspect` see a task cgroup that still holds a process, when
/// `agent.provider_cgroup` names a directory. (Under `auto` the cgroup is
/// the Bridge service's own, which another process cannot tell; `inspect`
/// then sees what process groups and task markers show.)
pub(super) fn observe(setting: &ProviderCgroup) {
    if let ProviderCgroup::At(dir) = setting
        && let Err(error) = watch_task_cgroups(dir)
    {
        tracing::debug!(error = %error, "task cgroups cannot be watched");
    }
}
