//! The agent-runtime kit: the contract between the ServerFS Agent Bridge's
//! task core and a provider adapter, and the pieces every adapter builds
//! on, so that each protocol family (Codex App Server, the stream-json
//! control protocol of Claude Code and Qoder, ACP) writes only what is its
//! own.
//!
//! * **The contract** ([`Adapter`], [`Host`], [`TaskContext`],
//!   [`TurnOutcome`], [`Capabilities`], [`AgentError`]): what the core asks
//!   of a runtime and the callbacks a runtime uses to talk back.
//! * **Process containment** ([`ProviderCommand`], [`ProviderChild`]): a
//!   provider starts from an absolute executable with fixed argv, in the
//!   authorized working directory held open as a [`WorkingDir`], with an environment built from nothing
//!   ([`provider_environment`]: a short allowlist, the adapter's pairs,
//!   and `HTTPS_PROXY`/`NO_PROXY` only when the runtime uses the agent
//!   egress proxy), stdin/stdout piped for the adapter's protocol, stderr
//!   drained into a bounded [`StderrCapture`], in a process group of its
//!   own that [`ProviderChild::terminate`] stops as a whole and proves
//!   gone. Provider text is cleaned of credentials by
//!   [`scrub_credentials`].
//! * **The kit**: the turn registry and stop signals ([`turns`]),
//!   newline framing with a line cap ([`lines`]), request/response
//!   matching ([`pending`]) and a JSON-RPC peer over any transport
//!   ([`jsonrpc`]), the set of provider requests being served
//!   ([`serving`]), spawning a provider with its process group recorded
//!   before it acts ([`spawn`]), probe caching and `--version` probes
//!   ([`probe`]), bounds for provider text and structures ([`bounds`]),
//!   and the payloads every adapter builds ([`payload`]).
//! * **The fake runtime** ([`fake`]): deterministic and prompt-scripted,
//!   the reference implementation of the contract, built on the kit.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//!
//! use serverfs_agent_runtime::{ProviderCommand, ProxyPolicy, is_group_alive};
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
//!     assert!(stopped.tree_gone);
//!     assert!(!is_group_alive(provider.process_group()));
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok(()) }
//! ```
//!
//! The rules live in ARCHITECTURE.md §1 and §6, spec-agent-bridge.md §9
//! and §10.5 (egress proxy) and spec-adapters.md §1 and §7.1. This crate
//! has no SQLite, configuration or lease dependency: those stay in the
//! Bridge, out of the adapters' reach.

#![warn(missing_docs)]

pub mod bounds;
mod contract;
mod error;
pub mod fake;
pub mod jsonrpc;
pub mod lines;
pub mod payload;
pub mod pending;
pub mod probe;
mod process;
mod scrub;
pub mod serving;
pub mod spawn;
pub mod turns;
mod working_dir;

pub use contract::{
    Adapter, BoxFuture, Capabilities, Host, NativeIds, Probe, ProviderState, TaskContext,
    TurnOutcome, TurnStatus,
};
pub use error::{AgentError, CommandProblem, ProcessError};
pub use process::{
    CgroupSetupError, DEFAULT_STDERR_CAPACITY, ProcessGroupId, ProviderChild, ProviderCommand,
    ProxyPolicy, StartDir, StderrCapture, StderrTail, Termination, adopt_orphans, delegated_cgroup,
    is_group_alive, is_task_alive, own_cgroup, provider_environment, reap_adopted,
    reap_adopted_forever, remove_stale_task_cgroups, use_task_cgroups, watch_task_cgroups,
};
pub use scrub::{CREDENTIAL_MARKER, scrub_credentials};
pub use serverfs_protocol::bridge::BridgeErrorCode;
pub use working_dir::{TASK_MARKER_VAR, WorkingDir};
