//! One module per concern; `support` holds the shared helpers.

mod environment;
mod spawn;
mod stderr;
mod support;
mod termination;
