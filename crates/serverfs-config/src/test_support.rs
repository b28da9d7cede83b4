//! Fixtures shared by this crate's unit tests.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::{Config, ConfigError, ConfigSource};

/// A temporary directory to put workdir roots, slot roots and config files
/// in. Removed on drop.
pub(crate) struct Fixture {
    dir: TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn mkdir(&self, rel: &str) -> PathBuf {
        let path = self.join(rel);
        fs::create_dir_all(&path).unwrap();
        path
    }

    pub(crate) fn file(&self, rel: &str, contents: &str) -> PathBuf {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&path, contents).unwrap();
        path
    }

    pub(crate) fn symlink(&self, target: &Path, rel: &str) -> PathBuf {
        let path = self.join(rel);
        std::os::unix::fs::symlink(target, &path).unwrap();
        path
    }

    /// Parses `text` as `serverfs.toml` living in this directory.
    pub(crate) fn toml(&self, text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str(text, self.path())
    }

    /// Loads the environment source with the slot roots under this
    /// directory (`SERVERFS_WORKDIRS_ROOT` is added to `pairs`).
    pub(crate) fn env_config(&self, pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut env = env(pairs);
        env.insert(
            "SERVERFS_WORKDIRS_ROOT".to_owned(),
            self.path().display().to_string(),
        );
        Config::load(&ConfigSource::Environment, &[], &env)
    }

    /// A slot root holding a file, i.e. a real mounted directory.
    pub(crate) fn slot(&self, slot: u8) -> PathBuf {
        let root = self.mkdir(&format!("{slot:02}"));
        fs::write(root.join("README"), "x").unwrap();
        root
    }

    /// The empty placeholder mount: only the sentinel.
    pub(crate) fn placeholder(&self, slot: u8) -> PathBuf {
        let root = self.mkdir(&format!("{slot:02}"));
        fs::write(root.join(".serverfs-disabled"), "").unwrap();
        root
    }
}

pub(crate) fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The error's message, for asserting on the exact text.
pub(crate) fn message<T: std::fmt::Debug>(result: Result<T, ConfigError>) -> String {
    let err = result.unwrap_err();
    let text = err.to_string();
    assert!(!text.contains('\n'), "multi-line error: {text:?}");
    text
}
