//! The platform seam. Only Linux is implemented; a macOS or Windows twin
//! exports the same items and nothing above this module changes.
//!
//! * Process containment (`linux::process`): put a provider in a group of
//!   its own, signal that group, tell whether any member still runs (POSIX
//!   process groups, `kill(2)` on the negative group id, `/proc` for
//!   liveness). A Windows twin would use a Job Object per provider,
//!   `TerminateJobObject` and the job's active process count.
//! * The RPC socket (`linux::socket`): who is connecting (`SO_PEERCRED`),
//!   who we are, an exclusive lock that dies with its holder (`flock(2)`),
//!   and the `sun_path` budget. A macOS twin would use `getpeereid` (no
//!   pid) and a 104-byte `sun_path`; Windows a named pipe and its SID.

mod linux {
    pub(crate) mod process;
    pub(crate) mod socket;
}

pub(crate) use linux::process::{contain, group_has_live_member, signal_group};
pub(crate) use linux::socket::{
    effective_uid, fits_socket_address, measure_peer, try_lock_exclusive,
};

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
