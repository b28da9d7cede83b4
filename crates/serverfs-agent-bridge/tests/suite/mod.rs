//! One module per concern; `support` holds the shared helpers.

mod environment;
mod fake;
mod rpc;
mod spawn;
mod stderr;
mod store;
mod support;
mod termination;
