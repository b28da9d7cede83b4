//! The one `pre_exec` hook: a provider joins its cgroup between `fork` and
//! `exec`, before it can run a single instruction of its own.
//!
//! Moving the child from the parent after `spawn` would leave a window in
//! which the provider runs, and forks, outside its cgroup. The standard
//! library offers no safe `CLONE_INTO_CGROUP`, so the child writes `0`
//! ("the calling process") to the cgroup's `cgroup.procs`, opened by the
//! parent before the fork.
//!
//! # Safety
//!
//! Between `fork` and `exec` a multi-threaded parent's child may only make
//! async-signal-safe calls: no allocation, no locks. The hook makes exactly
//! one `write(2)` to an already open descriptor, and on failure builds an
//! `io::Error` from the raw errno, which allocates nothing.

#![allow(unsafe_code)]

use std::os::fd::OwnedFd;
use std::sync::Arc;

/// Makes the child join the cgroup whose `cgroup.procs` is `procs` before
/// it executes the provider; the spawn fails if the kernel refuses.
pub(crate) fn join_cgroup_before_exec(command: &mut tokio::process::Command, procs: Arc<OwnedFd>) {
    let hook = move || {
        rustix::io::write(&*procs, b"0")
            .map(drop)
            .map_err(std::io::Error::from)
    };
    // SAFETY: `hook` only calls `write(2)` on a descriptor it owns a
    // reference to and converts an errno, both async-signal-safe (see the
    // module documentation).
    unsafe {
        command.pre_exec(hook);
    }
}
