//! Black-box tests: the real `serverfs` binary driven by rmcp's client over
//! stdio, and its command line.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod common_clients;
mod suite;
