//! The one configuration model of ServerFS.
//!
//! Both ServerFS processes read their workdirs, limits, agent and HTTP
//! transport settings through this crate, from one of three sources
//! (chosen by [`select_source`]):
//!
//! - a `serverfs.toml` file (`--config FILE` or `SERVERFS_CONFIG`), the
//!   native format, documented key by key in `docs/configuration.md` and
//!   `examples/serverfs.toml`;
//! - upstream's container variables: `SERVERFS_*` globals and the sixteen
//!   `WORKDIR_NN_*` slots mounted at `/workdirs/NN`; the Agent Bridge beside
//!   such a container reads the same `.env` ([`read_env_file`]) as
//!   [`ConfigSource::ComposeHost`], with each slot at its host path;
//! - `--workdir ALIAS=PATH[:rw]` specs for a quick start without any file.
//!
//! Each source is parsed into a raw, source-independent form that still
//! remembers which key set each value; one validation pass then checks every
//! rule (alias syntax and uniqueness, root kind, limit bounds, deny globs,
//! agent policy, the HTTP authentication rule) and returns an immutable
//! [`Config`]. Every failure is a single-line [`ConfigError`] naming the
//! key, variable or spec at fault; the binaries print it as
//! `serverfs: configuration error: <reason>` and exit with status 2.
//!
//! Loading has no side effects: it reads the TOML file and inspects each
//! root with `lstat` (plus one directory listing for an environment slot
//! holding the `.serverfs-disabled` sentinel), and nothing else. The
//! environment is passed in as a map, never read from the process. The
//! roots are opened later, once, by the filesystem kernel.
//!
//! The complete reference of keys, variables, defaults and bounds is
//! `docs/configuration.md`.
//!
//! ```
//! use serverfs_config::{AgentMode, Config};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir();
//! let config = Config::from_toml_str(
//!     r#"
//!     [server]
//!     deny = ["*.log"]
//!
//!     [[workdirs]]
//!     alias = "scratch"
//!     path = "."
//!     read_only = false
//!     deny = ["build/**"]
//!     "#,
//!     &dir,
//! )?;
//! let scratch = config.workdir("scratch").ok_or("missing")?;
//! assert!(!scratch.read_only);
//! assert_eq!(scratch.deny, ["*.log", "build/**"]);
//! assert_eq!(scratch.agent_mode, AgentMode::Disabled);
//!
//! let err = Config::from_toml_str("[server]\nmax_list_entries = 0\n", &dir).unwrap_err();
//! assert_eq!(err.to_string(), "server.max_list_entries: must be between 1 and 100000, got 0");
//! # Ok(())
//! # }
//! ```

mod acp;
mod agent;
mod alias;
mod approvals;
mod cli;
mod cli_runtime;
mod codex;
mod doctor_report;
mod env;
mod env_file;
mod error;
mod http;
mod limits;
mod model;
mod oauth;
mod parse;
mod provider_cgroup;
mod qoder_auth;
mod raw;
mod report;
mod source;
mod toml_file;
mod validate;

#[cfg(test)]
mod test_support;

#[cfg(test)]
#[path = "properties_tests.rs"]
mod properties_tests;

pub use acp::AcpProfileSettings;
pub use agent::{AcpProfile, AgentMode, AgentRuntime};
pub use alias::{InvalidAlias, WorkdirAlias};
pub use approvals::{ApprovalPaths, ApprovalPolicy};
pub use cli_runtime::{ClaudeSettings, CliRuntimeSettings, QoderSettings};
pub use codex::{CodexSettings, CodexTransport};
pub use doctor_report::{DOCTOR_EXIT_CONFIG, DOCTOR_EXIT_FAILED, DoctorReport, plural};
pub use env_file::read_env_file;
pub use error::{ConfigError, PassthroughProblem, RootProblem, SlotProblem, one_line};
pub use http::{ConnectionLimits, EffectiveHttp, HttpAuth, HttpSettings};
pub use model::{AgentSettings, Config, LogLevel, ServerSettings, TextContent, WorkdirConfig};
pub use oauth::{
    DEFAULT_OAUTH_STATE_FILE, ExternalIssuer, HOSTED_CLIENT_CALLBACKS, JwksSource, OAuthClient,
    OAuthSettings, is_loopback_host, is_secure_url,
};
pub use provider_cgroup::ProviderCgroup;
pub use qoder_auth::{QODER_TOKEN_VARIABLE, QoderAuth};
pub use source::{ConfigSource, select_source};
