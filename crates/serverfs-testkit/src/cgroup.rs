//! A cgroup v2 directory of a test's own, for the Bridge's task cgroups
//! (`agent.provider_cgroup`), removed with everything in it when dropped.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A fresh cgroup beneath the test process's own.
pub struct TestCgroup {
    dir: PathBuf,
}

impl TestCgroup {
    /// Creates one, or `None` when this machine offers no cgroup v2
    /// hierarchy this user may create cgroups in (then a test says so and
    /// checks nothing).
    pub fn new() -> Option<TestCgroup> {
        let own = serverfs_agent_runtime::own_cgroup()?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = own.join(format!("serverfs-test-{}-{n}", std::process::id()));
        fs::create_dir(&dir).ok()?;
        Some(TestCgroup { dir })
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The cgroups directly beneath it (the Bridge's task cgroups).
    pub fn children(&self) -> Vec<String> {
        subdirs(&self.dir)
            .iter()
            .filter_map(|dir| Some(dir.file_name()?.to_string_lossy().into_owned()))
            .collect()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("cgroup.kill"), "1");
        let deadline = Instant::now() + Duration::from_secs(5);
        while fs::read_to_string(self.dir.join("cgroup.events"))
            .is_ok_and(|events| events.contains("populated 1"))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        remove_tree(&self.dir);
    }
}

/// Removes a cgroup and every cgroup beneath it, deepest first.
fn remove_tree(dir: &Path) {
    for child in subdirs(dir) {
        remove_tree(&child);
    }
    let _ = fs::remove_dir(dir);
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.is_dir())
                .collect()
        })
        .unwrap_or_default()
}
