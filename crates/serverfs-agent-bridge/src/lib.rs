//! The ServerFS Agent Bridge: the host-side daemon that runs
//! operator-configured coding-agent CLIs (Codex, Claude Code, Qoder, ACP
//! agents) for tasks the MCP server submits over a Unix socket. The MCP
//! server never spawns an agent itself (ARCHITECTURE.md invariant 6).
//!
//! The binary `serverfs-agent-bridge` (`src/main.rs`, `src/cli/`) is a thin
//! shell over these modules:
//!
//! * [`rpc`] — the peer-checked Unix-socket server and its framing;
//! * [`service`] — the task service behind the ten methods: submission,
//!   runners, interactions, cancellation, recovery;
//! * [`store`] — the durable SQLite state;
//! * [`adapter`] — the runtime interface with the [`adapter::codex`] and
//!   [`adapter::fake`] runtimes;
//! * [`redact`] — host-path redaction of everything a provider emits;
//! * process containment, shared by every adapter (below).
//!
//! **Process containment**: [`ProviderCommand`] starts a
//! provider from an absolute executable with fixed argv, in the authorized
//! working directory, with an environment built from nothing
//! ([`provider_environment`]: a short allowlist, the adapter's pairs, and
//! `HTTPS_PROXY`/`NO_PROXY` only when the runtime uses the agent egress
//! proxy), stdin/stdout piped for the adapter's protocol, stderr drained
//! into a bounded [`StderrCapture`], in a process group of its own that
//! [`ProviderChild::terminate`] stops as a whole and proves gone.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//!
//! use serverfs_agent_bridge::{ProviderCommand, ProxyPolicy, is_group_alive};
//! use tokio::io::AsyncReadExt;
//!
//! let runtime = tokio::runtime::Runtime::new()?;
//! runtime.block_on(async {
//!     let workdir = std::env::temp_dir();
//!     let mut provider = ProviderCommand::new("/bin/sh", &workdir)
//!         .args(["-c", "echo ready; echo diagnostics >&2; sleep 300 & wait"])
//!         .env("PROVIDER_ENTRYPOINT", "serverfs")
//!         .proxy(ProxyPolicy::disabled())
//!         .spawn()?;
//!
//!     let mut stdout = provider.take_stdout().ok_or("stdout is piped")?;
//!     let mut line = [0_u8; 6];
//!     stdout.read_exact(&mut line).await?;
//!     assert_eq!(&line, b"ready\n");
//!
//!     // Cancel: the shell and the `sleep` it started go down together.
//!     let stopped = provider.terminate(Duration::from_secs(5)).await;
//!     assert!(stopped.group_gone);
//!     assert!(!is_group_alive(provider.process_group()));
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok(()) }
//! ```
//!
//! The rules live in ARCHITECTURE.md §1 and §6, spec-agent-bridge.md §10.5
//! (egress proxy) and spec-adapters.md §7.1. Every error is a
//! [`BridgeError`] with a stable [`BridgeErrorCode`]. The operating-system
//! calls sit behind a platform seam (`platform`), Linux only for now.

#![warn(missing_docs)]

pub mod adapter;
mod error;
mod platform;
mod process;
pub mod redact;
pub mod rpc;
pub mod service;
pub mod store;

pub use error::{BridgeError, CommandProblem};
pub use process::{
    DEFAULT_STDERR_CAPACITY, ProcessGroupId, ProviderChild, ProviderCommand, ProxyPolicy,
    StderrCapture, StderrTail, Termination, is_group_alive, provider_environment,
};
pub use serverfs_protocol::bridge::BridgeErrorCode;
