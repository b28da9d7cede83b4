//! Where a small kernel call runs: on the thread that received the
//! request, or on the blocking pool.
//!
//! The hop onto the pool wakes a sleeping pool thread and then wakes the
//! runtime thread back. On a virtual machine those two wake-ups cost about
//! 0.1 ms, more than a `stat` or a page read itself (issue 15 measured it).
//! The hop buys one thing: a call that hangs, on a dead NFS server say,
//! does not stall the runtime thread, which over stdio serves the whole
//! connection. So a call whose work is bounded by its page runs inline
//! when every path of its workdir lies on local storage, where no call
//! waits on another machine or a user-space daemon; every other call, and
//! every call on a workdir that can reach a network or FUSE filesystem,
//! keeps the hop (ARCHITECTURE.md §3 names `spawn_blocking` for the
//! kernel; this is the one, measured, exception).
//!
//! The mount table can change while the server runs. A watcher thread
//! waits for the kernel's change event on `/proc/self/mountinfo` and
//! decides again for every workdir.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use serverfs_fs::MountTable;

use crate::service::WorkdirHandle;

/// How often the watcher looks whether its workdirs still exist.
const WATCH_TICK: Duration = Duration::from_secs(1);

/// Whether a workdir's small calls may run inline, kept current by the
/// mount watcher.
#[derive(Debug, Default)]
pub struct Placement {
    inline: AtomicBool,
}

impl Placement {
    /// True when every path of the workdir lies on local storage. Until
    /// the mount table has been read, false.
    pub fn inline(&self) -> bool {
        self.inline.load(Ordering::Relaxed)
    }

    /// Decides for the workdir whose root descriptor is on mount
    /// `root_mount` and whose root is now at `root` (either unknown: never
    /// inline).
    fn decide(&self, root_mount: Option<u64>, root: Option<&Path>, mounts: &MountTable) -> bool {
        let inline = match (root_mount, root) {
            (Some(mount), Some(root)) => mounts.local_beneath(mount, root),
            _ => false,
        };
        self.inline.store(inline, Ordering::Relaxed);
        inline
    }
}

/// A kernel call panicked (a bug). Its message is not passed on: it may
/// name a host path.
#[derive(Debug, PartialEq, Eq)]
pub struct Panicked;

/// Runs `work` on the calling thread when `inline`, else on the blocking
/// pool. A panic in `work` is caught either way, so that it cannot unwind
/// through the runtime.
pub async fn run_placed<T: Send + 'static>(
    inline: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Panicked> {
    if inline {
        return catch_unwind(AssertUnwindSafe(work)).map_err(|_| Panicked);
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| Panicked)
}

/// Decides and logs every workdir's placement from the current mount
/// table, then keeps deciding on each change for as long as `workdirs`
/// exists. Without a readable mount table every call keeps the hop.
///
/// Between a mount appearing and the watcher's next decision (well under
/// a millisecond once the kernel reports it) a call may still start
/// inline; so may one that had read the old decision.
pub fn watch_mounts(workdirs: &Arc<Vec<Arc<WorkdirHandle>>>) {
    // Opened before the first read: a change after the open is reported
    // by the first poll, so none is missed between the two.
    let Ok(mut table) = File::open(MountTable::PROC_PATH) else {
        workdirs.iter().for_each(|w| log_placement(w));
        return;
    };
    decide_all(workdirs, &mut table, true);
    let watched = Arc::downgrade(workdirs);
    let spawned = std::thread::Builder::new()
        .name("serverfs-mounts".to_owned())
        .spawn(move || watch(&watched, &mut table));
    if spawned.is_err() {
        // No watcher: nothing may stay inline on a decision never revisited.
        for workdir in workdirs.iter() {
            workdir.placement.inline.store(false, Ordering::Relaxed);
            log_placement(workdir);
        }
    }
}

fn watch(workdirs: &Weak<Vec<Arc<WorkdirHandle>>>, table: &mut File) {
    let tick = Timespec {
        tv_sec: WATCH_TICK.as_secs().try_into().unwrap_or(1),
        tv_nsec: 0,
    };
    loop {
        // Only the change event is asked for: the file is always readable.
        let mut fds = [PollFd::new(&*table, PollFlags::PRI)];
        let polled = poll(&mut fds, Some(&tick));
        let Some(workdirs) = workdirs.upgrade() else {
            return;
        };
        match polled {
            Ok(0) => {}
            Ok(_) => decide_all(&workdirs, table, false),
            // Not expected; wait a tick rather than spin on it.
            Err(_) => std::thread::sleep(WATCH_TICK),
        }
    }
}

/// Reads the table from its start and decides every workdir; logs the
/// first decisions and later the ones that change.
fn decide_all(workdirs: &[Arc<WorkdirHandle>], table: &mut File, first: bool) {
    let mut text = Vec::new();
    let read = table
        .seek(SeekFrom::Start(0))
        .and_then(|_| table.read_to_end(&mut text));
    // An unreadable table is an empty one: nothing is local.
    let mounts = match read {
        Ok(_) => MountTable::parse(&text),
        Err(_) => MountTable::default(),
    };
    for workdir in workdirs {
        let before = workdir.placement.inline();
        let root = workdir.fs.root_location();
        let inline = workdir
            .placement
            .decide(workdir.fs.root_mount_id(), root.as_deref(), &mounts);
        if first || inline != before {
            log_placement(workdir);
        }
    }
}

/// One log line: where `workdir`'s small calls run now.
fn log_placement(workdir: &WorkdirHandle) {
    tracing::info!(
        event = "kernel_placement",
        workdir = workdir.config.alias.as_str(),
        inline = workdir.placement.inline(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn inline_work_runs_on_the_calling_thread_and_pooled_work_does_not() {
        let caller = std::thread::current().id();
        let inline = run_placed(true, || std::thread::current().id()).await;
        assert_eq!(inline, Ok(caller));
        let pooled = run_placed(false, || std::thread::current().id()).await;
        assert!(matches!(pooled, Ok(id) if id != caller), "{pooled:?}");
    }

    #[tokio::test]
    async fn a_panic_is_an_error_in_both_placements() {
        for inline in [true, false] {
            let result = run_placed(inline, || -> u8 { panic!("kernel bug") }).await;
            assert_eq!(result, Err(Panicked), "inline: {inline}");
        }
    }

    #[test]
    fn an_unknown_root_is_never_inline() {
        let placement = Placement::default();
        assert!(!placement.inline(), "not before the table is read");
        let table = MountTable::parse(b"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
        let srv = Some(Path::new("/srv"));
        assert!(!placement.decide(None, srv, &table));
        assert!(!placement.decide(Some(1), None, &table));
        assert!(placement.decide(Some(1), srv, &table));
        assert!(placement.inline());
        assert!(!placement.decide(Some(1), srv, &MountTable::default()));
        assert!(!placement.inline());
    }
}
