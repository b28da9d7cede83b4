//! Choosing a configuration source and loading it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::cli;
use crate::env::{self, PathDefaults, Side};
use crate::error::{ConfigError, one_line};
use crate::model::Config;
use crate::toml_file;
use crate::validate::validate;

/// Where the workdirs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// A `serverfs.toml` file (`--config FILE` or `SERVERFS_CONFIG`).
    /// `SERVERFS_*` and `WORKDIR_NN_*` variables are not consulted.
    Toml(PathBuf),
    /// Upstream's container variables: `SERVERFS_*` globals and the
    /// `WORKDIR_01_*` … `WORKDIR_16_*` slots.
    Environment,
    /// The same variables read on the host of a Compose deployment, by the
    /// Agent Bridge beside the container (its `--env-file`): each slot's
    /// root is its `WORKDIR_NN_PATH` (absolute), the socket is
    /// `bridge.sock` in `SERVERFS_AGENT_BRIDGE_HOST_SOCKET_DIR` and the
    /// lock directory `SERVERFS_AGENT_LOCK_HOST_DIR`, the directories the
    /// agent overlay mounts into the container. Lease identities are the
    /// slots', as in the container, so both processes lock the same files.
    ComposeHost,
    /// `--workdir ALIAS=PATH[:rw|:ro]` specs; server settings and workdir
    /// defaults come from the `SERVERFS_*` globals.
    Cli(Vec<String>),
}

/// Picks the source, first match wins:
///
/// 1. `--config FILE` → [`ConfigSource::Toml`] (any `--workdir` specs are
///    then passed to [`Config::load`] as extra workdirs);
/// 2. any `--workdir` → [`ConfigSource::Cli`];
/// 3. `SERVERFS_CONFIG` set and non-empty → [`ConfigSource::Toml`];
/// 4. any `WORKDIR_NN_*` variable with `NN` in `01..=16` →
///    [`ConfigSource::Environment`].
///
/// # Errors
///
/// [`ConfigError::NoSource`] when none applies.
pub fn select_source(
    config_flag: Option<PathBuf>,
    cli_workdirs: &[String],
    env: &BTreeMap<String, String>,
) -> Result<ConfigSource, ConfigError> {
    if let Some(path) = config_flag {
        return Ok(ConfigSource::Toml(path));
    }
    if !cli_workdirs.is_empty() {
        return Ok(ConfigSource::Cli(cli_workdirs.to_vec()));
    }
    if let Some(path) = env.get("SERVERFS_CONFIG").filter(|p| !p.trim().is_empty()) {
        return Ok(ConfigSource::Toml(PathBuf::from(path)));
    }
    if env.keys().any(|name| env::is_slot_variable(name)) {
        return Ok(ConfigSource::Environment);
    }
    Err(ConfigError::NoSource)
}

impl Config {
    /// Loads and validates the configuration from `source`, appending one
    /// workdir per `extra_cli_workdirs` spec (they inherit the source's
    /// workdir defaults).
    ///
    /// Pure apart from reading the TOML file and inspecting each root with
    /// `lstat` (plus one directory listing for an environment slot that
    /// holds the `.serverfs-disabled` sentinel). `env` is the environment
    /// to use; the process environment is never read. Relative `--workdir`
    /// paths are resolved against the current directory.
    ///
    /// # Errors
    ///
    /// The first rule that fails, as a one-line [`ConfigError`] naming the
    /// key, variable or spec at fault.
    pub fn load(
        source: &ConfigSource,
        extra_cli_workdirs: &[String],
        env: &BTreeMap<String, String>,
    ) -> Result<Config, ConfigError> {
        let mut raw = match source {
            ConfigSource::Toml(path) => {
                let text = fs::read_to_string(path).map_err(|err| ConfigError::ReadFile {
                    path: path.clone(),
                    reason: one_line(&err.to_string()),
                })?;
                toml_file::raw_from_toml(&text, &config_dir(path), env)?
            }
            ConfigSource::Environment => env::raw_from_env(env, Side::Container)?,
            ConfigSource::ComposeHost => env::raw_from_env(env, Side::Host)?,
            ConfigSource::Cli(specs) => {
                let mut raw = env::globals(env, PathDefaults::Native)?;
                raw.empty_hint = "no --workdir was given".to_owned();
                for spec in specs {
                    raw.workdirs.push(cli::raw_workdir(spec)?);
                }
                raw
            }
        };
        for spec in extra_cli_workdirs {
            raw.workdirs.push(cli::raw_workdir(spec)?);
        }
        validate(raw)
    }

    /// Parses and validates a `serverfs.toml` text. Relative workdir paths
    /// and `[http] token_file` resolve against `base_dir` (the file's
    /// directory). The default Bridge socket and token file are computed
    /// from an empty environment, so they are only usable when `[agent]
    /// socket` and `[http] token_file` are set; see
    /// [`Config::from_toml_str_with_env`].
    ///
    /// # Errors
    ///
    /// As [`Config::load`].
    pub fn from_toml_str(text: &str, base_dir: &Path) -> Result<Config, ConfigError> {
        Config::from_toml_str_with_env(text, base_dir, &BTreeMap::new())
    }

    /// As [`Config::from_toml_str`], with `env` supplying `XDG_RUNTIME_DIR`,
    /// `XDG_STATE_HOME` and `HOME` for the default Bridge socket and lock
    /// directory, and `XDG_CONFIG_HOME` and `HOME` for the default token
    /// file.
    ///
    /// # Errors
    ///
    /// As [`Config::load`].
    pub fn from_toml_str_with_env(
        text: &str,
        base_dir: &Path,
        env: &BTreeMap<String, String>,
    ) -> Result<Config, ConfigError> {
        validate(toml_file::raw_from_toml(text, base_dir, env)?)
    }
}

/// The directory relative workdir paths of a config file resolve against.
fn config_dir(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    absolute
        .parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
