//! Reconciliation: a guard is removed only when the recorded provider is
//! proven stopped.

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use serverfs_lease::{
    GuardRecord, GuardWrite, LeaseError, LeaseErrorCode, ProviderLiveness, Reconciliation,
    RecoveryReason, hold, probe_process_group, probe_recorded_group, reconcile, try_acquire,
};

use super::support::{Fixture, code, repo};

/// A `sleep 30` in its own process group, killed on drop.
struct Provider(Child);

impl Provider {
    fn spawn() -> Option<Provider> {
        let spawned = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn();
        match spawned {
            Ok(child) => Some(Provider(child)),
            Err(err) => {
                eprintln!("skipped: cannot spawn sleep(1) ({err})");
                None
            }
        }
    }

    /// Its process group id: it leads its own group.
    fn pgid(&self) -> i32 {
        i32::try_from(self.0.id()).unwrap()
    }

    /// Kills and reaps it; a reaped group is gone for good.
    fn stop(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn publish(fx: &Fixture, task: &str, pgid: Option<i32>) {
    let mut record = GuardRecord::new(task, "fake", 0);
    record.provider_pgid = pgid;
    record.provider_pid = pgid;
    hold(&fx.lock_dir, &repo())
        .unwrap()
        .publish_guard(&record, GuardWrite::Create)
        .unwrap();
}

#[test]
fn the_guard_stays_until_the_recorded_process_group_is_gone() {
    let Some(provider) = Provider::spawn() else {
        return;
    };
    let pgid = provider.pgid();
    let fx = Fixture::prepared(&[repo()]);
    publish(&fx, "agt_1", Some(pgid));
    assert_eq!(probe_process_group(pgid), ProviderLiveness::Running);

    match reconcile(&fx.lock_dir, &repo(), probe_recorded_group).unwrap() {
        Reconciliation::Kept { record, liveness } => {
            assert_eq!(liveness, ProviderLiveness::Running);
            assert_eq!(record.provider_pgid, Some(pgid));
        }
        other => panic!("expected the guard to be kept, got {other:?}"),
    }
    assert!(fx.guard_file(&repo()).exists());
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirRecoveryRequired
    );

    provider.stop();
    assert_eq!(probe_process_group(pgid), ProviderLiveness::ProvenStopped);
    match reconcile(&fx.lock_dir, &repo(), probe_recorded_group).unwrap() {
        Reconciliation::Removed { record } => assert_eq!(record.task_id, "agt_1"),
        other => panic!("expected the guard to be removed, got {other:?}"),
    }
    assert!(!fx.guard_file(&repo()).exists());
    drop(try_acquire(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn an_unrecorded_provider_keeps_the_guard() {
    let fx = Fixture::prepared(&[repo()]);
    publish(&fx, "agt_1", None);
    let outcome = reconcile(&fx.lock_dir, &repo(), probe_recorded_group).unwrap();
    assert!(
        matches!(
            outcome,
            Reconciliation::Kept {
                liveness: ProviderLiveness::Unknown,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(fx.guard_file(&repo()).exists());
}

#[test]
fn adapter_answers_decide_through_the_same_rule() {
    let fx = Fixture::prepared(&[repo()]);
    publish(&fx, "agt_1", None);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    for (active, kept) in [(Some(true), true), (None, true), (Some(false), false)] {
        let outcome = lease
            .reconcile(|_| ProviderLiveness::from_provider_active(active))
            .unwrap();
        assert_eq!(
            matches!(outcome, Reconciliation::Kept { .. }),
            kept,
            "{active:?}: {outcome:?}"
        );
        assert_eq!(fx.guard_file(&repo()).exists(), kept);
    }
    assert_eq!(
        lease
            .reconcile(|_| ProviderLiveness::ProvenStopped)
            .unwrap(),
        Reconciliation::NoGuard
    );
}

#[test]
fn a_live_lease_holder_is_never_reconciled_away() {
    let fx = Fixture::prepared(&[repo()]);
    publish(&fx, "agt_1", None);
    let live = hold(&fx.lock_dir, &repo()).unwrap();
    assert_eq!(
        code(reconcile(&fx.lock_dir, &repo(), |_| {
            ProviderLiveness::ProvenStopped
        })),
        LeaseErrorCode::WorkdirBusy
    );
    assert!(fx.guard_file(&repo()).exists());
    drop(live);
}

#[test]
fn an_invalid_guard_is_an_error_and_stays() {
    let fx = Fixture::prepared(&[repo()]);
    fs::write(fx.guard_file(&repo()), b"{\"schema_version\":1}").unwrap();
    let mut probed = false;
    let result = reconcile(&fx.lock_dir, &repo(), |_| {
        probed = true;
        ProviderLiveness::ProvenStopped
    });
    assert!(
        matches!(
            result,
            Err(LeaseError::RecoveryRequired {
                reason: RecoveryReason::Invalid,
                ..
            })
        ),
        "{result:?}"
    );
    assert!(!probed, "nothing to probe in an invalid guard");
    assert!(fx.guard_file(&repo()).exists());
}
