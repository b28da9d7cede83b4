//! Bridge-side workdir policy (spec-agent-bridge.md §8.6): which workdir
//! may run which runtime with which profile, and where the provider's
//! working directory is on the host.
//!
//! The MCP server authorizes first; the Bridge authorizes again from the
//! same configuration, so a client of the socket cannot bypass the policy.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;
use serverfs_agent_runtime::{AgentError, WorkingDir};
use serverfs_config::{AgentMode, ApprovalPaths, Config, WorkdirConfig};
use serverfs_fs::{FsError, PathPolicy, RelPath, Resolver, Workdir};
use serverfs_lease::{LeaseError, LeaseId};
use serverfs_protocol::bridge::{AgentProfile, BridgeErrorCode};
use thiserror::Error;

use super::error::ServiceResult;
use super::manifest::sha256_of_canonical;

/// Why the configuration's workdirs give no policy. The configuration
/// crate checks both rules first, so this guards against the two crates
/// drifting apart.
#[derive(Debug, Error)]
pub enum PolicyError {
    /// A deny pattern does not compile.
    #[error("workdir {alias}: invalid deny pattern")]
    InvalidDenyPattern {
        /// The workdir.
        alias: String,
    },
    /// The workdir has no valid lease id.
    #[error("workdir {alias}: {source}")]
    InvalidLeaseId {
        /// The workdir.
        alias: String,
        /// Why.
        source: LeaseError,
    },
}

/// The agent policy of one configured workdir.
#[derive(Debug)]
pub struct WorkdirPolicy {
    /// The alias clients use.
    pub alias: String,
    /// Absolute host root (never shown to a client).
    pub root: PathBuf,
    /// Whether ServerFS itself may write the workdir.
    pub read_only: bool,
    /// What agents may do.
    pub mode: AgentMode,
    /// The allowlisted runtime names, sorted.
    pub runtimes: Vec<String>,
    /// The legacy container slot, if the workdir came from one.
    pub legacy_slot: Option<u8>,
    /// The writer lease of the workdir.
    pub lease: LeaseId,
    /// How its approvals and questions show host paths outside it.
    pub approval_paths: ApprovalPaths,
    /// SHA-256 of the policy's canonical JSON (part of the manifest).
    pub policy_sha256: String,
    /// Naming rules shared with the file tools: a cwd the file tools would
    /// refuse (hidden, denied) is refused here too.
    path_policy: PathPolicy,
}

/// Every configured workdir's policy, by alias.
#[derive(Debug, Default)]
pub struct Policies {
    by_alias: BTreeMap<String, WorkdirPolicy>,
}

/// A submission the policy allows.
#[derive(Debug)]
pub struct Authorized<'a> {
    /// The workdir's policy.
    pub workdir: &'a WorkdirPolicy,
    /// The normalized relative cwd (`""` is the root).
    pub relative_cwd: String,
    /// The cwd, opened beneath the workdir root, for the adapter only.
    pub cwd: WorkingDir,
}

impl Policies {
    /// The policies of `config`'s workdirs.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] when a workdir's deny patterns or lease id are
    /// invalid.
    pub fn from_config(config: &Config) -> Result<Policies, PolicyError> {
        let mut by_alias = BTreeMap::new();
        for workdir in &config.workdirs {
            let policy = WorkdirPolicy::from_config(workdir)?;
            by_alias.insert(policy.alias.clone(), policy);
        }
        Ok(Policies { by_alias })
    }

    /// Every workdir's policy, by alias.
    pub fn iter(&self) -> impl Iterator<Item = &WorkdirPolicy> {
        self.by_alias.values()
    }

    /// The policy of `alias` (exact match).
    pub fn get(&self, alias: &str) -> Option<&WorkdirPolicy> {
        self.by_alias.get(alias)
    }

    /// Checks a submission in the spec's order: workdir, agent mode,
    /// runtime, profile, then the working directory.
    ///
    /// # Errors
    ///
    /// `WORKDIR_NOT_FOUND`, `AGENT_DISABLED`, `AGENT_RUNTIME_NOT_ALLOWED`,
    /// `AGENT_PROFILE_NOT_ALLOWED`, `INVALID_WORKDIR_PATH`,
    /// `WORKDIR_PATH_NOT_FOUND`.
    pub fn authorize(
        &self,
        alias: &str,
        runtime: &str,
        profile: AgentProfile,
        relative_cwd: &RelPath,
    ) -> ServiceResult<Authorized<'_>> {
        let workdir = self
            .get(alias)
            .ok_or_else(|| AgentError::new(BridgeErrorCode::WorkdirNotFound, "unknown workdir"))?;
        workdir.allows(runtime, profile)?;
        let cwd = workdir.open_cwd(relative_cwd)?;
        Ok(Authorized {
            workdir,
            relative_cwd: relative_cwd.as_string(),
            cwd,
        })
    }
}

impl WorkdirPolicy {
    fn from_config(workdir: &WorkdirConfig) -> Result<WorkdirPolicy, PolicyError> {
        let alias = workdir.alias.as_str().to_owned();
        let path_policy =
            PathPolicy::new(workdir.allow_hidden, workdir.default_deny, &workdir.deny).map_err(
                |_| PolicyError::InvalidDenyPattern {
                    alias: alias.clone(),
                },
            )?;
        let lease = LeaseId::of_workdir(&alias, workdir.legacy_slot).map_err(|source| {
            PolicyError::InvalidLeaseId {
                alias: alias.clone(),
                source,
            }
        })?;
        let mut runtimes: Vec<String> = workdir
            .agent_runtimes
            .iter()
            .map(|runtime| runtime.as_str().to_owned())
            .collect();
        runtimes.sort_unstable();
        let policy_sha256 = sha256_of_canonical(&json!({
            "alias": alias,
            "slot": workdir.legacy_slot,
            "read_only": workdir.read_only,
            "agent_mode": workdir.agent_mode.as_str(),
            "agent_runtimes": runtimes,
        }));
        Ok(WorkdirPolicy {
            alias,
            root: workdir.root.clone(),
            read_only: workdir.read_only,
            mode: workdir.agent_mode,
            runtimes,
            legacy_slot: workdir.legacy_slot,
            lease,
            approval_paths: workdir.approval_paths,
            policy_sha256,
            path_policy,
        })
    }

    /// Whether `runtime` may run here with `profile`.
    ///
    /// # Errors
    ///
    /// `AGENT_DISABLED`, `AGENT_RUNTIME_NOT_ALLOWED`,
    /// `AGENT_PROFILE_NOT_ALLOWED`.
    pub fn allows(&self, runtime: &str, profile: AgentProfile) -> ServiceResult<()> {
        if !self.mode.is_enabled() {
            return Err(AgentError::new(
                BridgeErrorCode::AgentDisabled,
                "agents are disabled on this workdir",
            ));
        }
        if !self.runtimes.iter().any(|allowed| allowed == runtime) {
            return Err(AgentError::new(
                BridgeErrorCode::AgentRuntimeNotAllowed,
                "the runtime is not allowed on this workdir",
            ));
        }
        let may_write = self.mode == AgentMode::WorkspaceWrite && !self.read_only;
        if profile == AgentProfile::WorkspaceWrite && !may_write {
            return Err(AgentError::new(
                BridgeErrorCode::AgentProfileNotAllowed,
                "this workdir only allows the review profile",
            ));
        }
        Ok(())
    }

    /// Opens `relative_cwd` through the confined kernel: no symlink
    /// anywhere on the way, naming rules applied, and it must be a
    /// directory. The task keeps the descriptor, so whatever happens to the
    /// path afterwards, its providers start in this very directory.
    fn open_cwd(&self, relative_cwd: &RelPath) -> ServiceResult<WorkingDir> {
        let invalid =
            |why: &str| AgentError::new(BridgeErrorCode::InvalidWorkdirPath, why.to_owned());
        let workdir =
            Workdir::open(&self.root, self.path_policy.clone(), Resolver::Auto).map_err(|_| {
                AgentError::new(
                    BridgeErrorCode::WorkdirPathNotFound,
                    "the workdir root is unavailable",
                )
            })?;
        workdir
            .policy()
            .check(relative_cwd)
            .map_err(|_| invalid("the working directory is not allowed by the workdir's rules"))?;
        match workdir.open_directory(relative_cwd) {
            Ok(dir) => Ok(WorkingDir::from_descriptor(dir)),
            Err(FsError::NotFound) => Err(AgentError::new(
                BridgeErrorCode::WorkdirPathNotFound,
                "the working directory does not exist",
            )),
            Err(FsError::NotADirectory) => Err(invalid("the working directory is not a directory")),
            Err(_) => Err(invalid("the working directory cannot be used")),
        }
    }
}

/// Normalizes a submitted relative cwd (spec §3.4 step 9): NUL, an absolute
/// path, a `..` component or a backslash is refused; empty and `.`
/// segments vanish; `""` is the root.
///
/// # Errors
///
/// `INVALID_WORKDIR_PATH`.
pub fn normalize_cwd(path: &str) -> ServiceResult<RelPath> {
    let invalid = || {
        AgentError::new(
            BridgeErrorCode::InvalidWorkdirPath,
            "the path must be relative to the workdir, without '..'",
        )
    };
    if path.split('/').any(|segment| segment == "..") {
        return Err(invalid());
    }
    RelPath::parse(path).map_err(|_| invalid())
}
