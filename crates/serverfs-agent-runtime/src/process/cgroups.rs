//! Task cgroups: where the Bridge was delegated a cgroup v2 subtree (a
//! systemd unit with `Delegate=yes`), every provider runs in a cgroup of
//! its own below one per task:
//!
//! ```text
//! <base>/agt_<task>/p<n>      one per provider process started for the task
//! ```
//!
//! A process cannot leave its cgroup the way it leaves a process group
//! (`setsid`) or sheds the task marker (`env -i`), so the provider cgroup
//! is the complete list of what a provider started, and the task cgroup's
//! `populated` flag says whether anything of the task runs, across Bridge
//! restarts too. [`ProviderChild::terminate`](super::ProviderChild::terminate)
//! kills the provider's cgroup as a whole (`cgroup.kill`), and a stop is
//! proven only once the cgroup is empty.
//!
//! Turned on once per process with [`use_task_cgroups`]; without it the
//! process-group, parentage and marker containment applies alone.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::sys::{self, Cgroup};

/// The delegated subtree task cgroups are created in, once chosen.
static BASE: OnceLock<PathBuf> = OnceLock::new();

/// Numbers provider cgroups within the process, so two providers of one
/// task (a fake runtime's helper tree beside its turn) never share one.
static NEXT_PROVIDER: AtomicU64 = AtomicU64::new(1);

/// Why [`use_task_cgroups`] refused a directory.
#[derive(Debug, thiserror::Error)]
pub enum CgroupSetupError {
    /// Not a directory of a cgroup v2 hierarchy.
    #[error("not a cgroup v2 directory")]
    NotCgroup2,
    /// A cgroup cannot be created and joined beneath it (not delegated to
    /// this user).
    #[error("cannot create cgroups beneath it: {0}")]
    NotWritable(#[source] io::Error),
    /// Task cgroups were already turned on with another directory.
    #[error("task cgroups already use another directory")]
    AlreadySet,
}

/// The cgroup v2 directory this process runs in, if it runs in the
/// unified hierarchy and that is mounted here.
pub fn own_cgroup() -> Option<PathBuf> {
    sys::own_cgroup()
}

/// The cgroup this process runs in, when systemd delegated it (a unit
/// with `Delegate=yes`): the `auto` choice of where task cgroups go.
/// `None` when the process is not in the unified hierarchy or its cgroup
/// was not delegated.
pub fn delegated_cgroup() -> Option<PathBuf> {
    own_cgroup().filter(|dir| sys::is_delegated(dir))
}

/// Puts every provider started in a task's working directory from now on
/// into a cgroup of its own beneath `base` (see the module documentation),
/// and has [`is_task_alive`](super::is_task_alive) count the task's
/// cgroups. Checks that `base` takes new cgroups by creating and removing
/// one.
///
/// # Errors
///
/// [`CgroupSetupError`]; nothing changes then.
pub fn use_task_cgroups(base: &Path) -> Result<(), CgroupSetupError> {
    if !sys::is_cgroup2(base) {
        return Err(CgroupSetupError::NotCgroup2);
    }
    let probe = base.join(format!("serverfs-probe-{}", std::process::id()));
    let created = Cgroup::create(probe).map_err(CgroupSetupError::NotWritable)?;
    created.remove();
    set_base(base)
}

/// Has [`is_task_alive`](super::is_task_alive) count the task cgroups
/// beneath `base` without creating any: for an inspector beside a running
/// Bridge.
///
/// # Errors
///
/// [`CgroupSetupError::NotCgroup2`] or [`CgroupSetupError::AlreadySet`].
pub fn watch_task_cgroups(base: &Path) -> Result<(), CgroupSetupError> {
    if !sys::is_cgroup2(base) {
        return Err(CgroupSetupError::NotCgroup2);
    }
    set_base(base)
}

fn set_base(base: &Path) -> Result<(), CgroupSetupError> {
    if BASE.get_or_init(|| base.to_path_buf()) != base {
        return Err(CgroupSetupError::AlreadySet);
    }
    Ok(())
}

/// Removes the empty task cgroups a previous run left beneath the base;
/// one still holding a process stays, for [`is_task_alive`] to see.
/// Call it at start-up, before any provider starts.
///
/// [`is_task_alive`]: super::is_task_alive
pub fn remove_stale_task_cgroups() {
    let Some(base) = BASE.get() else {
        return;
    };
    let Ok(tasks) = std::fs::read_dir(base) else {
        return;
    };
    for task in tasks.flatten() {
        let dir = task.path();
        if !is_task_cgroup_name(&task.file_name().to_string_lossy()) {
            continue;
        }
        if let Ok(providers) = std::fs::read_dir(&dir) {
            for provider in providers.flatten() {
                if provider.path().is_dir() {
                    sys::remove_if_empty(&provider.path());
                }
            }
        }
        sys::remove_if_empty(&dir);
    }
}

/// A new cgroup for one provider of task `task_id`, or `None` when task
/// cgroups are off.
///
/// # Errors
///
/// The OS error when the cgroup cannot be created: the provider must not
/// start then, since the operator asked for containment.
pub(crate) fn provider_cgroup(task_id: &str) -> io::Result<Option<Cgroup>> {
    let Some(dir) = task_dir(task_id)? else {
        return Ok(None);
    };
    Cgroup::create(dir.clone())?;
    let n = NEXT_PROVIDER.fetch_add(1, Ordering::Relaxed);
    Cgroup::create(dir.join(format!("p{n}"))).map(Some)
}

/// Whether a cgroup of task `task_id` holds a process: `None` when task
/// cgroups are off or the task has none, `Some(true)` also when that
/// cannot be read (a stop is never proven by accident).
pub(crate) fn task_populated(task_id: &str) -> Option<bool> {
    let dir = task_dir(task_id).ok()??;
    match sys::populated(&dir) {
        Ok(populated) => populated,
        Err(_) => Some(true),
    }
}

/// Removes task `task_id`'s cgroup once its providers' cgroups are gone.
pub(crate) fn remove_task_cgroup(task_id: &str) {
    if let Ok(Some(dir)) = task_dir(task_id) {
        sys::remove_if_empty(&dir);
    }
}

/// `<base>/<task_id>`, or `None` when task cgroups are off.
///
/// # Errors
///
/// `InvalidInput` for a task id that is not a plain file name.
fn task_dir(task_id: &str) -> io::Result<Option<PathBuf>> {
    let Some(base) = BASE.get() else {
        return Ok(None);
    };
    if !is_task_cgroup_name(task_id) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a task id must be letters, digits and underscores",
        ));
    }
    Ok(Some(base.join(task_id)))
}

/// Task ids the Bridge makes (`agt_` and hex) and test ids alike, and
/// nothing that could name another directory or a cgroup interface file.
fn is_task_cgroup_name(name: &str) -> bool {
    name.starts_with("agt_")
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}
