//! One module per concern: `store` (and its `store_*` parts), `rpc` and
//! `service` test the library; the `daemon_*` modules the real binary; the
//! runtime modules (`codex`, `stream_json`, `acp`) what each adapter puts
//! on its own wire; `conformance` every lifecycle case against every
//! runtime. The Bridge harness, the doubles and the binary locator they
//! share live in `serverfs_testkit` (`bridge`, `mock_*`, `binaries`).

mod acp;
mod codex;
mod conformance;
mod daemon_cli;
mod daemon_confinement;
mod daemon_doctor;
mod daemon_lifecycle;
mod daemon_protocol;
mod daemon_recovery;
mod daemon_upgrade;
mod native_ids;
mod redaction;
mod rpc;
mod service;
mod store;
mod stream_json;
