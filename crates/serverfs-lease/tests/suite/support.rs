//! A temporary lock directory per test.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serverfs_lease::{ArtifactAccess, LeaseError, LeaseErrorCode, LeaseId, prepare_artifacts};
use tempfile::TempDir;

/// A temporary directory with the lock directory `locks/` inside (not
/// created until [`Fixture::prepared`] or [`Fixture::prepare`]).
pub struct Fixture {
    pub tmp: TempDir,
    pub lock_dir: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let lock_dir = tmp.path().join("locks");
        Fixture { tmp, lock_dir }
    }

    /// A fixture whose lock directory is prepared, privately, for `ids`.
    pub fn prepared(ids: &[LeaseId]) -> Fixture {
        let fx = Fixture::new();
        fx.prepare(ArtifactAccess::Private, ids).unwrap();
        fx
    }

    pub fn prepare(&self, access: ArtifactAccess, ids: &[LeaseId]) -> Result<(), LeaseError> {
        prepare_artifacts(&self.lock_dir, access, ids)
    }

    pub fn lock_file(&self, id: &LeaseId) -> PathBuf {
        self.lock_dir.join(id.lock_file_name())
    }

    pub fn active(&self) -> PathBuf {
        self.lock_dir.join("active")
    }

    pub fn guard_file(&self, id: &LeaseId) -> PathBuf {
        self.active().join(id.stem())
    }

    /// The names in `active/`, sorted.
    pub fn active_names(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.active())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }
}

pub fn repo() -> LeaseId {
    LeaseId::alias("repo").unwrap()
}

/// Permission bits of `path`, not following a final symlink.
pub fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

pub fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// The code of a result that must be an error.
pub fn code<T: std::fmt::Debug>(result: Result<T, LeaseError>) -> LeaseErrorCode {
    result.unwrap_err().code()
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}
