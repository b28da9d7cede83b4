//! The Agent Bridge's integration tests, one binary over `suite/`: the
//! durable store on real SQLite files, the RPC transport on real Unix
//! sockets, the task service as a library, and the real daemon as a black
//! box (protocol, command line, lifecycle, confinement, recovery) with
//! every runtime behind it — the fake, Codex, Claude Code, Qoder and ACP
//! against the testkit's scripted doubles, and the conformance matrix that
//! runs each lifecycle case against every runtime. (Provider process
//! containment is tested in `serverfs-agent-runtime`.)

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
