//! Integration tests of the confined kernel, each run once per resolver.

#[macro_use]
mod harness;
mod suite;
