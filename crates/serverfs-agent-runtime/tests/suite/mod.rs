//! One module per concern; `support` holds the shared helpers.

mod environment;
mod fake;
mod spawn;
mod stderr;
mod support;
mod termination;
