//! The platform seam for process containment: put a provider in a group of
//! its own, signal that group, and tell whether any member still runs.
//!
//! Only Linux is implemented (`linux::process`: POSIX process groups,
//! `kill(2)` on the negative group id, `/proc` for liveness). A Windows twin
//! (a Job Object per provider, `TerminateJobObject`, the job's active
//! process count) or a macOS one exports the same three functions and
//! [`GroupSignal`], and nothing above this module changes.

mod linux {
    pub(crate) mod process;
}

pub(crate) use linux::process::{contain, group_has_live_member, signal_group};

/// A signal the Bridge sends to a whole provider group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupSignal {
    /// Ask every member to exit (`SIGTERM`).
    Terminate,
    /// Resume stopped members so they can act on a pending `Terminate`
    /// (`SIGCONT`).
    Continue,
    /// End every member now (`SIGKILL`).
    Kill,
}

/// Whether a group signal found anyone to deliver to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// At least one member received it.
    Delivered,
    /// The group has no member at all (not even a zombie).
    NoSuchGroup,
}
