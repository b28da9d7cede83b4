//! One module per concern; `support` holds the shared fixture.

mod artifacts;
mod cross_process;
mod guard;
mod reader;
mod reconcile;
mod support;
