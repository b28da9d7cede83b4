//! Tests of the testkit's fixtures through their public API, with plain
//! std sockets as the client.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod suite;
