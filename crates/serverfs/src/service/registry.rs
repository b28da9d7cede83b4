//! The configured workdirs, each opened once at start-up.

use std::sync::Arc;

use serverfs_config::{Config, WorkdirConfig};
use serverfs_fs::{FsError, PathPolicy, Resolver, Workdir};
use thiserror::Error;

use crate::service::placement::{Placement, watch_mounts};

/// One workdir: its effective configuration and its open root.
#[derive(Debug)]
pub struct WorkdirHandle {
    /// The effective policy from configuration.
    pub config: WorkdirConfig,
    /// The open, confined root.
    pub fs: Workdir,
    /// Serializes this workdir's mutations within the process (other
    /// workdirs proceed in parallel). Reads never take it.
    pub mutation_lock: Arc<tokio::sync::Mutex<()>>,
    /// Whether its small calls run inline or on the blocking pool.
    pub placement: Placement,
}

/// Why the configured workdirs could not be opened.
#[derive(Debug, Error)]
pub enum RegistryError {
    /// A deny glob does not compile (validation has checked it; a defence
    /// against the two crates drifting apart).
    #[error("workdir {alias:?}: invalid deny glob: {source}")]
    InvalidDeny {
        /// The workdir.
        alias: String,
        /// Why.
        source: globset::Error,
    },
    /// The root cannot be opened (it changed since validation, or is
    /// unreadable).
    #[error("workdir {alias:?}: cannot open its root: {source}")]
    RootUnavailable {
        /// The workdir.
        alias: String,
        /// Why.
        source: FsError,
    },
}

/// All workdirs, in configuration order.
#[derive(Debug, Clone)]
pub struct WorkdirRegistry {
    workdirs: Arc<Vec<Arc<WorkdirHandle>>>,
}

impl WorkdirRegistry {
    /// Opens every configured root. A root that cannot be opened is a
    /// start-up error naming its alias (configuration validated that it
    /// existed; it may have changed since, or be unreadable).
    ///
    /// # Errors
    ///
    /// [`RegistryError`] naming the workdir.
    pub fn open(config: &Config, resolver: Resolver) -> Result<WorkdirRegistry, RegistryError> {
        let mut workdirs = Vec::with_capacity(config.workdirs.len());
        for workdir in &config.workdirs {
            let alias = || workdir.alias.as_str().to_owned();
            let policy = PathPolicy::new(workdir.allow_hidden, workdir.default_deny, &workdir.deny)
                .map_err(|source| RegistryError::InvalidDeny {
                    alias: alias(),
                    source,
                })?;
            let mut fs = Workdir::open(&workdir.root, policy, resolver).map_err(|source| {
                RegistryError::RootUnavailable {
                    alias: alias(),
                    source,
                }
            })?;
            fs.set_read_hardlinked_files(workdir.read_hardlinked_files);
            workdirs.push(Arc::new(WorkdirHandle {
                config: workdir.clone(),
                fs,
                mutation_lock: Arc::new(tokio::sync::Mutex::new(())),
                placement: Placement::default(),
            }));
        }
        Ok(WorkdirRegistry {
            workdirs: Arc::new(workdirs),
        })
    }

    /// The workdir named `alias` (exact match).
    pub fn get(&self, alias: &str) -> Option<Arc<WorkdirHandle>> {
        self.workdirs
            .iter()
            .find(|w| w.config.alias.as_str() == alias)
            .cloned()
    }

    /// Decides (and logs) where each workdir's small calls run, and starts
    /// the thread that decides again when the mount table changes; until
    /// then every call goes to the blocking pool. For a serving process,
    /// once logging is set up.
    pub fn watch_mounts(&self) {
        watch_mounts(&self.workdirs);
    }

    /// All workdirs in configuration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<WorkdirHandle>> {
        self.workdirs.iter()
    }
}
