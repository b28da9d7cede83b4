//! Orphans: the Bridge as child subreaper, and the reaping that comes with
//! it.
//!
//! With the Bridge a subreaper, a provider process whose parent exits is
//! re-parented to the Bridge rather than to init, so it stays in reach of
//! [`ProviderChild::terminate`](super::ProviderChild::terminate) and of
//! liveness checks. Such adopted processes are the Bridge's children, and
//! nobody else will reap them: [`reap_adopted`] does, leaving alone the
//! children a [`ProviderChild`](super::ProviderChild) reaps itself (their
//! exit status is read there), which [`register_spawned`] lists.

use std::collections::BTreeSet;
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::sys;

/// How often [`reap_adopted_forever`] looks for adopted zombies. A zombie
/// runs nothing and liveness checks ignore zombies, so a second of delay
/// costs only a process-table slot.
const REAP_INTERVAL: Duration = Duration::from_secs(1);

/// The pids of the children spawned here whose handle still reaps them.
/// Held across `spawn` (see [`register_spawned`]), so that the reaper
/// never sees one of them unlisted.
static SPAWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn spawned() -> MutexGuard<'static, BTreeSet<i32>> {
    SPAWNED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `spawn` with the reaper held off, and lists the pid it returns as
/// one a handle reaps.
pub(super) fn register_spawned<T>(spawn: impl FnOnce() -> io::Result<(T, i32)>) -> io::Result<T> {
    let mut listed = spawned();
    let (child, pid) = spawn()?;
    listed.insert(pid);
    Ok(child)
}

/// Forgets a spawned pid once its handle reaped it or was dropped.
pub(super) fn unregister_spawned(pid: i32) {
    spawned().remove(&pid);
}

/// Makes the calling process (the Bridge) the child subreaper of the
/// providers it starts. Call it once at start-up, before any provider
/// runs, then keep [`reap_adopted_forever`] running.
///
/// # Errors
///
/// The OS error of `prctl(PR_SET_CHILD_SUBREAPER)`.
pub fn adopt_orphans() -> io::Result<()> {
    sys::become_subreaper()
}

/// Reaps the adopted zombies present now; returns how many.
///
/// # Errors
///
/// When `/proc` cannot be read.
pub fn reap_adopted() -> io::Result<usize> {
    let listed = spawned();
    sys::reap_adopted_zombies(|pid| listed.contains(&pid))
}

/// Reaps adopted zombies until the future is dropped.
pub async fn reap_adopted_forever() {
    let mut ticks = tokio::time::interval(REAP_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match tokio::task::spawn_blocking(reap_adopted).await {
            Ok(Ok(0)) => {}
            Ok(Ok(reaped)) => tracing::debug!(reaped, "reaped adopted provider processes"),
            Ok(Err(error)) => tracing::warn!(error = %error, "reaping adopted processes failed"),
            Err(error) => tracing::warn!(error = %error, "the reaper task failed"),
        }
    }
}
