//! Black-box tests: the real `serverfs` binary driven by rmcp's client over
//! stdio, and its command line.

mod common;
mod suite;
