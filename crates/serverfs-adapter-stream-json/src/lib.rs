//! The Claude Code and Qoder runtimes of the ServerFS Agent Bridge: one
//! engine for the stream-json control protocol both CLIs speak over stdio
//! (the protocol the official Agent SDKs speak; spec-adapters.md §3–§4),
//! built on the agent-runtime kit.
//!
//! Native mode, as for Codex: the Bridge passes no permission mode, tool
//! lists, MCP servers, sandbox or settings overrides, so the user's own
//! configuration, CLAUDE.md, skills and permission rules stay
//! authoritative, and every `can_use_tool` the CLI raises reaches the
//! remote human.
//!
//! Modules: `engine` (the adapter and its turn loop), `session` (one CLI
//! process and the control protocol with it), `permission` (`can_use_tool`
//! ↔ neutral approvals and questions), `wire` (the typed protocol subset),
//! `flavor` (what differs between CLIs), `auth` (Qoder's private auth
//! payload file), `claude` and `qoder` (the two flavors).
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use serverfs_adapter_stream_json::{AuthSource, CLAUDE, StreamJsonAdapter, StreamJsonConfig};
//! use serverfs_agent_runtime::ProxyPolicy;
//!
//! let claude = StreamJsonAdapter::new(
//!     &CLAUDE,
//!     StreamJsonConfig {
//!         bin: "/usr/local/bin/claude".into(),
//!         request_timeout: Duration::from_secs(60),
//!         env_passthrough: vec!["ANTHROPIC_API_KEY".to_owned()],
//!         proxy: ProxyPolicy::disabled(),
//!         auth: AuthSource::LocalLogin,
//!     },
//! );
//! # drop(claude);
//! ```

#![warn(missing_docs)]

mod auth;
mod claude;
mod engine;
mod flavor;
mod permission;
mod qoder;
mod session;
mod wire;

pub use auth::AuthSource;
pub use claude::{CLAUDE, CLAUDE_RUNTIME};
pub use engine::{StreamJsonAdapter, StreamJsonConfig};
pub use flavor::Flavor;
pub use qoder::{QODER, QODER_RUNTIME};
