//! The process-containment platform seam. Only Linux is implemented; a
//! macOS or Windows twin exports the same items and nothing above this
//! module changes.
//!
//! Put a provider in a group of its own, signal that group, tell whether
//! any member still runs: POSIX process groups, `kill(2)` on the negative
//! group id, `/proc` for liveness (`linux`). A Windows twin would use a Job
//! Object per provider, `TerminateJobObject` and the job's active process
//! count.

mod linux;

pub(crate) use linux::{
    Cgroup, Member, become_subreaper, contain, group_has_live_member, is_cgroup2, is_delegated,
    join_cgroup_before_exec, own_cgroup, populated, provider_members, reap_adopted_zombies,
    remove_if_empty, signal_group, signal_member,
};

/// A signal sent to a whole provider group.
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
