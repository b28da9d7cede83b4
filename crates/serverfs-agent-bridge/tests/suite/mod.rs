//! One module per concern; `daemon` holds the Bridge harness.

mod acp;
mod codex;
mod conformance;
mod daemon_cli;
mod daemon_confinement;
mod daemon_lifecycle;
mod daemon_protocol;
mod daemon_recovery;
mod native_ids;
mod rpc;
mod service;
mod store;
mod stream_json;
