//! Integration tests of the confined kernel, each run once per resolver.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod harness;
mod suite;
