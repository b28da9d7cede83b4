//! The one error type of this crate.
//!
//! Every message is a single line that names the exact key, variable or
//! `--workdir` spec at fault, so an operator can fix the configuration from
//! the message alone. The binary prefixes it with
//! `serverfs: configuration error: ` and exits with status 2; nothing here
//! adds that prefix. Host paths may appear: configuration errors go to the
//! operator's terminal and never to an MCP client.

use std::fmt;
use std::path::PathBuf;

/// Why a configuration was refused.
///
/// Variants are matched by callers (and tests) instead of strings;
/// [`ConfigError::key`] gives the key or variable at fault where there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No source of workdirs was given at all (see [`crate::select_source`]).
    #[error(
        "no workdirs configured: pass --workdir ALIAS=PATH[:rw], --config FILE, \
         or set SERVERFS_CONFIG or WORKDIR_01_ALIAS"
    )]
    NoSource,

    /// A source was chosen but it yields no enabled workdir.
    #[error("no enabled workdir: {hint}")]
    NoWorkdirs {
        /// What to change, phrased for the source in use.
        hint: String,
    },

    /// More workdirs than the supported maximum.
    #[error("{count} workdirs configured, at most {max} are allowed")]
    TooManyWorkdirs {
        /// How many were configured.
        count: usize,
        /// The maximum.
        max: usize,
    },

    /// The configuration file could not be read.
    #[error("cannot read configuration file {path:?}: {reason}")]
    ReadFile {
        /// The file as given.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },

    /// A Compose `.env` file has a line the Bridge does not read the way
    /// Compose would (see [`crate::read_env_file`]).
    #[error("{path:?} line {line}: {reason}")]
    EnvFileSyntax {
        /// The file as given.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong and how to write it.
        reason: &'static str,
    },

    /// The configuration file is not valid TOML.
    #[error("invalid TOML at line {line}, column {column}: {message}")]
    TomlSyntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The parser's reason.
        message: String,
    },

    /// A TOML key is unknown, missing, or holds a value of the wrong type.
    #[error("{key}: {message} (line {line})")]
    TomlKey {
        /// Dotted path of the key, e.g. `workdirs[1].read_only`.
        key: String,
        /// 1-based line of the offending key or value.
        line: usize,
        /// The reason, e.g. ``invalid type: string "yes", expected a boolean``.
        message: String,
    },

    /// An environment variable in the `WORKDIR_NN_` namespace is not one
    /// ServerFS knows; refused so that a typo cannot silently drop a setting.
    #[error("{name}: unknown variable ({hint})")]
    UnknownVariable {
        /// The variable name.
        name: String,
        /// Which names are accepted.
        hint: &'static str,
    },

    /// A value does not parse as the expected type.
    #[error("{key}: expected {expected}, got {got:?}")]
    InvalidValue {
        /// Key or variable.
        key: String,
        /// What was expected, e.g. `a positive integer`.
        expected: &'static str,
        /// The value as written.
        got: String,
    },

    /// A number lies outside its bounds.
    #[error("{key}: {}, got {got}", describe_bounds(*.min, *.max))]
    OutOfRange {
        /// Key or variable.
        key: String,
        /// The value as configured.
        got: i64,
        /// Smallest allowed value.
        min: u64,
        /// Largest allowed value.
        max: u64,
    },

    /// A workdir alias does not match `^[A-Za-z][A-Za-z0-9_-]{0,31}$`.
    #[error(
        "{key}: {alias:?} is not a valid workdir alias \
         (a letter, then at most 31 letters, digits, '_' or '-')"
    )]
    InvalidAlias {
        /// Key or variable.
        key: String,
        /// The alias as written.
        alias: String,
    },

    /// Two workdirs have the same alias, compared ignoring ASCII case.
    #[error(
        "{key} {alias:?} duplicates {first:?} from {first_key} \
         (aliases are unique ignoring case)"
    )]
    DuplicateAlias {
        /// Key of the later alias.
        key: String,
        /// The later alias.
        alias: String,
        /// The earlier alias.
        first: String,
        /// Key of the earlier alias.
        first_key: String,
    },

    /// A deny glob does not compile.
    #[error("{key}: item {item} ({glob:?}) is not a valid glob: {reason}")]
    InvalidGlob {
        /// Key or variable holding the list.
        key: String,
        /// 1-based position in the list.
        item: usize,
        /// The glob as written.
        glob: String,
        /// Why it does not compile.
        reason: String,
    },

    /// An agent runtime name is not known.
    #[error(
        "{key}: unknown agent runtime {name:?} \
         (expected codex, claude, qoder, fake or acp-<name>)"
    )]
    InvalidRuntime {
        /// Key or variable.
        key: String,
        /// The name as written.
        name: String,
    },

    /// A well-formed `acp-<id>` runtime names no configured ACP profile.
    #[error(
        "{key}: runtime {name:?} is not a configured ACP profile \
         (define it with [[agent.acp_profiles]] id = \"{id}\")"
    )]
    UnknownAcpProfile {
        /// Key or variable naming the runtime.
        key: String,
        /// The runtime name as written.
        name: String,
        /// The profile id it would need.
        id: String,
    },

    /// A value that must be JSON is not, or does not have the documented
    /// shape.
    #[error("{key}: {message}")]
    InvalidJson {
        /// The variable.
        key: String,
        /// The parser's reason, on one line.
        message: String,
    },

    /// An agent runtime is listed twice.
    #[error("{key}: agent runtime {name:?} is listed more than once")]
    DuplicateRuntime {
        /// Key or variable.
        key: String,
        /// The repeated name.
        name: String,
    },

    /// A name in an `env_passthrough` list is refused. Only the name is
    /// quoted: the configuration never holds a value.
    #[error("{key}: {name:?} {problem}")]
    InvalidPassthrough {
        /// Key or variable holding the list.
        key: String,
        /// The name as written.
        name: String,
        /// Which rule it fails.
        problem: PassthroughProblem,
    },

    /// A workdir root fails the root rules.
    #[error("{key}: root of workdir {alias:?} ({path:?}) {problem}")]
    InvalidRoot {
        /// Key that configured the root (`workdirs[0].path`, `WORKDIR_03`,
        /// `--workdir "…"`).
        key: String,
        /// The workdir's alias.
        alias: String,
        /// The configured root.
        path: PathBuf,
        /// Which rule failed.
        problem: RootProblem,
    },

    /// An environment slot is in an inconsistent state (spec §2.4).
    #[error("{}", slot_message(*.slot, root, alias.as_deref(), problem))]
    Slot {
        /// Slot number, 1..=16.
        slot: u8,
        /// The slot root (`/workdirs/NN` or `$SERVERFS_WORKDIRS_ROOT/NN`).
        root: PathBuf,
        /// `WORKDIR_NN_ALIAS`, if set.
        alias: Option<String>,
        /// Which state rule failed.
        problem: SlotProblem,
    },

    /// Settings that are valid alone but not together.
    #[error("{key}: {reason}")]
    Conflict {
        /// The key to change.
        key: String,
        /// What conflicts with what.
        reason: String,
    },

    /// An HTTP listener was asked for but no address is known (see
    /// [`crate::HttpSettings::effective`]).
    #[error(
        "no HTTP bind address: pass --http ADDR or set [http] bind \
         (SERVERFS_HTTP_BIND in environment and --workdir modes)"
    )]
    NoHttpBind,

    /// A `--workdir` spec is malformed.
    #[error("--workdir {spec:?}: {reason} (expected ALIAS=PATH, ALIAS=PATH:ro or ALIAS=PATH:rw)")]
    CliSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl ConfigError {
    /// The key, variable or `--workdir` spec at fault, if the error has one.
    ///
    /// TOML keys are dotted paths (`workdirs[1].alias`, 0-based index),
    /// environment keys are variable names (`WORKDIR_03_MAX_READ_BYTES`),
    /// command-line keys are `--workdir "SPEC"`.
    pub fn key(&self) -> Option<String> {
        match self {
            ConfigError::NoSource
            | ConfigError::NoWorkdirs { .. }
            | ConfigError::TooManyWorkdirs { .. }
            | ConfigError::ReadFile { .. }
            | ConfigError::EnvFileSyntax { .. }
            | ConfigError::TomlSyntax { .. }
            | ConfigError::NoHttpBind => None,
            ConfigError::TomlKey { key, .. }
            | ConfigError::InvalidValue { key, .. }
            | ConfigError::OutOfRange { key, .. }
            | ConfigError::InvalidAlias { key, .. }
            | ConfigError::DuplicateAlias { key, .. }
            | ConfigError::InvalidGlob { key, .. }
            | ConfigError::InvalidRuntime { key, .. }
            | ConfigError::UnknownAcpProfile { key, .. }
            | ConfigError::InvalidJson { key, .. }
            | ConfigError::DuplicateRuntime { key, .. }
            | ConfigError::InvalidPassthrough { key, .. }
            | ConfigError::InvalidRoot { key, .. }
            | ConfigError::Conflict { key, .. } => Some(key.clone()),
            ConfigError::UnknownVariable { name, .. } => Some(name.clone()),
            ConfigError::Slot { slot, problem, .. } => Some(match problem {
                SlotProblem::MissingRoot | SlotProblem::PlaceholderWithAlias => {
                    format!("WORKDIR_{slot:02}_ALIAS")
                }
                SlotProblem::MountWithoutAlias
                | SlotProblem::ReservedFile
                | SlotProblem::NotADirectory
                | SlotProblem::Symlink
                | SlotProblem::Inaccessible(_) => format!("WORKDIR_{slot:02}"),
            }),
            ConfigError::CliSpec { spec, .. } => Some(format!("--workdir {spec:?}")),
        }
    }
}

/// Which root rule a workdir root failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootProblem {
    /// Nothing exists at the path.
    Missing,
    /// The path exists but is not a directory.
    NotADirectory,
    /// The final component is a symbolic link.
    Symlink,
    /// `lstat` failed for another reason (permissions, invalid path).
    Inaccessible(String),
}

impl fmt::Display for RootProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootProblem::Missing => f.write_str("does not exist"),
            RootProblem::NotADirectory => f.write_str("is not a directory"),
            // The root is the one path opened by name, with O_NOFOLLOW; a
            // link there would let whoever can rewrite it move the workdir.
            RootProblem::Symlink => f.write_str(
                "is a symbolic link (the root itself must be a real directory; \
                 its parent directories may be links)",
            ),
            RootProblem::Inaccessible(reason) => write!(f, "cannot be inspected: {reason}"),
        }
    }
}

/// Why a name in an `env_passthrough` list is refused.
///
/// Every reserved name is one the Bridge decides itself: handing the
/// Bridge's own value of it to a provider would undo that decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassthroughProblem {
    /// Not `^[A-Za-z_][A-Za-z0-9_]*$` (empty, or holds `=`, NUL, a space…).
    NotAName,
    /// Contains `PROXY`, in any case (`HTTPS_PROXY`, `http_proxy`,
    /// `NO_PROXY`, `ALL_PROXY`, …): the Bridge alone decides whether a
    /// provider uses the agent proxy (`proxy_runtimes`).
    Proxy,
    /// Starts with `SERVERFS_`, in any case: the operator's settings of
    /// ServerFS itself, never a provider's business.
    ServerfsSetting,
    /// `PATH`, `HOME`, `PWD`, `CODEX_HOME` or `QODER_SDK_AUTH_PAYLOAD_FILE`:
    /// the Bridge sets it for the provider itself.
    SetByBridge,
    /// `LD_PRELOAD` or `LD_LIBRARY_PATH`: it could make the provider load
    /// and run other code.
    Loader,
    /// Listed more than once.
    Duplicate,
}

impl fmt::Display for PassthroughProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PassthroughProblem::NotAName => {
                "is not an environment variable name \
                 (a letter or '_', then letters, digits or '_')"
            }
            PassthroughProblem::Proxy => {
                "is reserved: proxy variables are set by the Bridge alone \
                 (a runtime uses the agent proxy only through proxy_runtimes)"
            }
            PassthroughProblem::ServerfsSetting => {
                "is reserved: SERVERFS_* variables are settings of ServerFS itself, \
                 never handed to a provider"
            }
            PassthroughProblem::SetByBridge => {
                "is reserved: the Bridge sets it for the provider itself"
            }
            PassthroughProblem::Loader => {
                "is reserved: a dynamic-loader variable could make the provider \
                 run other code"
            }
            PassthroughProblem::Duplicate => "is listed more than once",
        })
    }
}

/// Which slot-state rule of spec §2.4 an environment slot failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotProblem {
    /// Alias set, but the slot root does not exist.
    MissingRoot,
    /// State B: alias set, but the slot root is the empty placeholder
    /// (contains only `.serverfs-disabled`).
    PlaceholderWithAlias,
    /// State C: a real directory is mounted but no alias is set.
    MountWithoutAlias,
    /// The sentinel sits beside other entries, or is not a regular file.
    ReservedFile,
    /// The slot root is not a directory.
    NotADirectory,
    /// The slot root is a symbolic link.
    Symlink,
    /// The slot root could not be inspected (the operating system's reason).
    Inaccessible(String),
}

fn slot_message(
    slot: u8,
    root: &std::path::Path,
    alias: Option<&str>,
    problem: &SlotProblem,
) -> String {
    let nn = format!("{slot:02}");
    match problem {
        SlotProblem::MissingRoot => format!(
            "WORKDIR_{nn}_ALIAS is {:?} but the slot root {root:?} does not exist \
             (bind the host directory there, e.g. with WORKDIR_{nn}_PATH in Compose)",
            alias.unwrap_or_default()
        ),
        SlotProblem::PlaceholderWithAlias => format!(
            "WORKDIR_{nn}_ALIAS is {:?} but the slot root {root:?} is the empty placeholder \
             mount: set WORKDIR_{nn}_PATH to the host directory to expose",
            alias.unwrap_or_default()
        ),
        SlotProblem::MountWithoutAlias => format!(
            "WORKDIR_{nn}: the slot root {root:?} is a mounted directory but \
             WORKDIR_{nn}_ALIAS is not set: set WORKDIR_{nn}_ALIAS (or unset WORKDIR_{nn}_PATH)"
        ),
        SlotProblem::ReservedFile => format!(
            "WORKDIR_{nn}: the slot root {root:?} contains the reserved file \
             .serverfs-disabled beside other entries (or it is not a regular file): \
             remove it from the mounted directory"
        ),
        SlotProblem::NotADirectory => {
            format!("WORKDIR_{nn}: the slot root {root:?} is not a directory")
        }
        SlotProblem::Symlink => format!(
            "WORKDIR_{nn}: the slot root {root:?} is a symbolic link; \
             slot roots must be real directories"
        ),
        SlotProblem::Inaccessible(reason) => {
            format!("WORKDIR_{nn}: the slot root {root:?} cannot be inspected: {reason}")
        }
    }
}

fn describe_bounds(min: u64, max: u64) -> String {
    // The largest representable value means "no upper bound".
    if max >= i64::MAX as u64 {
        format!("must be at least {min}")
    } else {
        format!("must be between {min} and {max}")
    }
}

/// Collapses a foreign message (parser, OS) to one line, so no error ever
/// spans several lines of the operator's terminal or log: every run of
/// white space, newlines included, becomes one space.
pub fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}
