//! Test fixtures for ServerFS (dev-dependency only).
//!
//! - [`TempWorkdir`]: a fresh directory per test with helpers to create the
//!   hostile objects confinement tests need (symlinks in and out, FIFOs,
//!   sockets, hard links), plus a sibling "outside" directory holding a
//!   secret that no read may ever return.
//! - [`MockModel`]: a scripted model endpoint on 127.0.0.1 speaking the
//!   OpenAI Responses, OpenAI Chat Completions and Anthropic Messages wire
//!   formats, so real agent CLIs (Codex, Claude Code, OpenCode) run
//!   offline; a [`Script`] of [`Rule`]s decides each [`Reply`], and every
//!   request is recorded ([`RecordedRequest`]) for assertions.
//! - [`mock_codex`]: a scripted Codex App Server (the `mock-codex` binary
//!   over stdio or a WebSocket daemon, and the in-process
//!   [`MockCodexDaemon`]) for hermetic tests of the Bridge's Codex adapter.
//! - [`mock_stream_json`]: scripted fake `claude` and `qodercli` CLIs
//!   (the `fake-claude` and `fake-qodercli` binaries) speaking the
//!   stream-json control protocol.
//! - [`mock_acp`]: a scripted ACP agent (the `fake-acp` binary) for
//!   hermetic tests of the Bridge's generic ACP runtime.
//! - [`bridge`]: the real Agent Bridge as a black box (configuration,
//!   daemon, socket clients, leases and guards), for every crate's tests.
//! - [`host`]: a recording, scripted [`serverfs_agent_runtime::Host`] for
//!   adapter tests.
//! - [`binaries`]: the one locator of workspace binaries tests run.
//! - [`process`]: what `/proc` says about a provider's process group.
//! - [`within`]: a bound on every await, so a hang fails by name.
//! - [`check_table`]: table tests of text renderings.

pub mod binaries;
pub mod bridge;
pub mod cgroup;
mod deadline;
pub mod host;
mod jsonl;
pub mod mock_acp;
pub mod mock_codex;
mod mock_model;
pub mod mock_stream_json;
pub mod process;
mod table;
mod workdir;

pub use deadline::{LIMIT, within};
pub use mock_codex::MockCodexDaemon;
pub use mock_model::{MockModel, RecordedRequest, Reply, Rule, Script};
pub use table::check_table;
pub use workdir::{OUTSIDE_SECRET, TempWorkdir};
