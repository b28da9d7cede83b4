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
//! * [`redact`] — host-path redaction of everything a provider emits;
//! * `cli` (binary only) — configuration, runtime wiring, `serve`,
//!   `check-config` and `inspect`.
//!
//! The adapter contract, process containment and the fake runtime live in
//! `serverfs-agent-runtime`; the Codex runtime in `serverfs-adapter-codex`.
//! Every error a client sees is an [`AgentError`] with a stable
//! [`BridgeErrorCode`]. The socket's operating-system calls sit behind a
//! platform seam (`platform`), Linux only for now.

#![warn(missing_docs)]

mod platform;
pub mod redact;
pub mod rpc;
pub mod service;
pub mod store;

pub use serverfs_agent_runtime::AgentError;
pub use serverfs_protocol::bridge::BridgeErrorCode;
