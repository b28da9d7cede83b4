//! Provider liveness and the one rule that decides guard removal.
//!
//! ARCHITECTURE.md §6: "Guard removal is decided in exactly one place, from
//! an explicit provider-liveness state." That place is [`may_remove_guard`];
//! every removal path of this crate ([`HeldLease::remove_guard`],
//! [`HeldLease::reconcile`]) goes through it, and there is no other way to
//! delete a guard.
//!
//! [`HeldLease::remove_guard`]: crate::HeldLease::remove_guard
//! [`HeldLease::reconcile`]: crate::HeldLease::reconcile

use crate::sys;

/// What is known about whether a workspace-write task's provider (and
/// everything it spawned) can still write to the workdir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderLiveness {
    /// Stop is proven: the provider returned normally and its process group
    /// is gone, the adapter's reconciliation reported it inactive, the
    /// kernel reports the recorded process group gone, or the provider was
    /// never started.
    ProvenStopped,
    /// The provider (or a process of its group) is still running.
    Running,
    /// Nothing can be proven either way.
    Unknown,
}

impl ProviderLiveness {
    /// Maps an adapter's reconciliation answer `provider_active: bool|null`
    /// (spec-agent-bridge.md §8.5): `false` → proven stopped, `true` →
    /// running, `null` → unknown.
    pub fn from_provider_active(active: Option<bool>) -> ProviderLiveness {
        match active {
            Some(false) => ProviderLiveness::ProvenStopped,
            Some(true) => ProviderLiveness::Running,
            None => ProviderLiveness::Unknown,
        }
    }
}

/// The single guard-removal decision: a recovery guard may be removed only
/// when the provider is proven stopped. A running provider may still write
/// (the guard keeps ServerFS mutations out once the lease is released), and
/// an unprovable stop fails closed (ARCHITECTURE.md invariant 7).
pub fn may_remove_guard(liveness: ProviderLiveness) -> bool {
    match liveness {
        ProviderLiveness::ProvenStopped => true,
        ProviderLiveness::Running | ProviderLiveness::Unknown => false,
    }
}

/// Probes whether any process of the process group `pgid` still exists
/// (`kill(-pgid, 0)`; no signal is delivered).
///
/// - the kernel reports no such group (`ESRCH`) → [`ProviderLiveness::ProvenStopped`];
/// - the group exists, even if we may not signal it (`EPERM`) →
///   [`ProviderLiveness::Running`];
/// - any other answer, or `pgid` ≤ 1 (which would address every process or
///   our own group) → [`ProviderLiveness::Unknown`].
///
/// A group whose members have exited but are not yet reaped still exists,
/// and a reused group id reads as running: both err on the side of keeping
/// the guard.
pub fn probe_process_group(pgid: i32) -> ProviderLiveness {
    match sys::probe_process_group(pgid) {
        sys::ProcessGroup::Gone => ProviderLiveness::ProvenStopped,
        sys::ProcessGroup::Exists => ProviderLiveness::Running,
        sys::ProcessGroup::Unknown => ProviderLiveness::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_proven_stop_allows_removal() {
        assert!(may_remove_guard(ProviderLiveness::ProvenStopped));
        assert!(!may_remove_guard(ProviderLiveness::Running));
        assert!(!may_remove_guard(ProviderLiveness::Unknown));
    }

    #[test]
    fn adapter_answers_map_to_liveness() {
        assert_eq!(
            ProviderLiveness::from_provider_active(Some(false)),
            ProviderLiveness::ProvenStopped
        );
        assert_eq!(
            ProviderLiveness::from_provider_active(Some(true)),
            ProviderLiveness::Running
        );
        assert_eq!(
            ProviderLiveness::from_provider_active(None),
            ProviderLiveness::Unknown
        );
    }

    #[test]
    fn dangerous_group_ids_are_never_probed() {
        for pgid in [i32::MIN, -5, -1, 0, 1] {
            assert_eq!(
                probe_process_group(pgid),
                ProviderLiveness::Unknown,
                "pgid {pgid}"
            );
        }
    }

    #[test]
    fn our_own_group_is_running() {
        let own = rustix::process::getpgrp().as_raw_nonzero().get();
        if own <= 1 {
            eprintln!("skipped: this test runs in process group {own}");
            return;
        }
        assert_eq!(probe_process_group(own), ProviderLiveness::Running);
    }
}
