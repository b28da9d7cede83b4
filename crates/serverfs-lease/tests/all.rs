//! Integration tests of the lease artifacts, the reader, the owner and
//! reconciliation, including real cross-process locking.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
