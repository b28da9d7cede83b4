//! Test fixtures for ServerFS (dev-dependency only).
//!
//! - [`TempWorkdir`]: a fresh directory per test with helpers to create the
//!   hostile objects confinement tests need (symlinks in and out, FIFOs,
//!   sockets, hard links), plus a sibling "outside" directory holding a
//!   secret that no read may ever return.

mod workdir;

pub use workdir::{OUTSIDE_SECRET, TempWorkdir};
