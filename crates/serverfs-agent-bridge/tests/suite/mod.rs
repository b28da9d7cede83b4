//! One module per concern; `support` holds the shared helpers.

mod codex;
mod daemon;
mod daemon_cli;
mod daemon_lifecycle;
mod daemon_protocol;
mod daemon_recovery;
mod environment;
mod fake;
mod rpc;
mod service;
mod spawn;
mod stderr;
mod store;
mod support;
mod termination;
