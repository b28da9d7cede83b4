//! Integration tests of the Bridge wire: shapes pinned both ways, the
//! envelope validation order, framing, and the committed JSON Schemas.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
