//! Integration tests of the agent-runtime kit against real processes:
//! environment scrubbing and proxy mapping as the child sees them, working
//! directory, process-group termination, bounded stderr, and the fake
//! reference adapter through the contract.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
