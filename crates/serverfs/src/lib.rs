//! ServerFS, the MCP server: command line, transports, the tool surface and
//! the audit trail, over the confined kernel in `serverfs-fs`.
//!
//! `main.rs` only calls [`run`]. The layers, outermost first:
//!
//! - `cli`: parses arguments, loads configuration, picks a command;
//! - `mcp`: the MCP surface (tool catalog, argument decoding, results and
//!   errors, the `serverfs://` resource template) — thin;
//! - `service`: policy lookups, the hop onto blocking threads, result
//!   shaping and the audit record of each call;
//! - `serverfs-fs`: the synchronous, confined filesystem kernel.

mod audit;
mod cli;
mod doctor;
mod http;
mod install_units;
mod jsonrpc;
mod logging;
mod mcp;
mod oauth;
mod private_file;
mod rlimit;
mod secret;
mod service;
mod stdio;
mod tokens;

pub use cli::run;
