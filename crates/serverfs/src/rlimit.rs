//! The open-file limit, raised at start-up.
//!
//! Every connection and every open file or directory of a request costs a
//! descriptor. The common soft limit (1,024) is far below the hard limit
//! most systems allow, and an unprivileged process may raise its soft
//! limit up to the hard one; doing so keeps a busy server from failing
//! `accept` or `openat` with `EMFILE` long before the hard limit.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, and logs both.
pub fn raise_open_files() {
    let limit = getrlimit(Resource::Nofile);
    if limit.current == limit.maximum {
        tracing::info!(
            event = "open_file_limit",
            soft = limit.current,
            hard = limit.maximum
        );
        return;
    }
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => tracing::info!(
            event = "open_file_limit",
            soft = limit.maximum,
            hard = limit.maximum,
            raised_from = limit.current,
        ),
        Err(e) => tracing::warn!(
            event = "open_file_limit_not_raised",
            soft = limit.current,
            hard = limit.maximum,
            reason = %e,
        ),
    }
}
