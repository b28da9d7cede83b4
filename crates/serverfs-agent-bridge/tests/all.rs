//! Integration tests of provider process containment against real
//! processes: environment scrubbing and proxy mapping as the child sees
//! them, working directory, process-group termination, bounded stderr.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
