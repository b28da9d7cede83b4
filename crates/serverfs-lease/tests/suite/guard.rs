//! Guard publication, validation, listing and removal on the owner side.

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use serverfs_lease::{
    ArtifactAccess, GuardRecord, GuardRemoval, GuardWrite, LeaseError, LeaseErrorCode, LeaseId,
    ProviderLiveness, RecoveryReason, hold, list_guards, read_guard, try_acquire,
};

use super::support::{Fixture, code, is_root, mode, repo, set_mode};

fn reason<T: std::fmt::Debug>(result: Result<T, LeaseError>) -> RecoveryReason {
    match result {
        Err(LeaseError::RecoveryRequired { reason, .. }) => reason,
        other => panic!("expected WORKDIR_RECOVERY_REQUIRED, got {other:?}"),
    }
}

fn record(task: &str) -> GuardRecord {
    let mut record = GuardRecord::new(task, "codex", 1_767_225_600_000);
    record.workdir_alias = Some("repo".into());
    record
}

#[test]
fn a_published_guard_round_trips_and_leaves_no_debris() {
    let fx = Fixture::prepared(&[repo()]);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    let mut written = record("agt_1");
    written.provider_pid = Some(4321);
    written.provider_pgid = Some(4321);
    lease.publish_guard(&written, GuardWrite::Create).unwrap();

    assert_eq!(fx.active_names(), [repo().stem()]);
    assert_eq!(mode(&fx.guard_file(&repo())), 0o600);
    assert_eq!(lease.read_guard().unwrap(), Some(written.clone()));
    assert_eq!(read_guard(&fx.lock_dir, &repo()).unwrap(), Some(written));
    let text = fs::read_to_string(fx.guard_file(&repo())).unwrap();
    assert!(text.starts_with(r#"{"correlation_id":null,"#), "{text}");
    assert!(text.contains(r#""lease_id":"alias:repo","#), "{text}");
    assert!(text.ends_with("}\n"), "{text}");
}

#[test]
fn a_shared_directory_gives_shared_guards() {
    let gid = if is_root() {
        4242
    } else {
        rustix::process::getegid().as_raw()
    };
    let fx = Fixture::new();
    fx.prepare(ArtifactAccess::Shared { gid }, &[repo()])
        .unwrap();
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    lease
        .publish_guard(&record("agt_1"), GuardWrite::Create)
        .unwrap();
    let meta = fs::symlink_metadata(fx.guard_file(&repo())).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o640);
    assert_eq!(meta.gid(), gid);
}

#[test]
fn create_refuses_an_existing_guard_and_keeps_it() {
    let fx = Fixture::prepared(&[repo()]);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    lease
        .publish_guard(&record("agt_1"), GuardWrite::Create)
        .unwrap();
    let before = fs::read(fx.guard_file(&repo())).unwrap();
    assert_eq!(
        reason(lease.publish_guard(&record("agt_2"), GuardWrite::Create)),
        RecoveryReason::Present
    );
    assert_eq!(fs::read(fx.guard_file(&repo())).unwrap(), before);
    assert_eq!(
        fx.active_names(),
        [repo().stem()],
        "the temporary file is cleaned up"
    );
}

#[test]
fn update_replaces_only_the_same_tasks_guard() {
    let fx = Fixture::prepared(&[repo()]);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    lease
        .publish_guard(&record("agt_1"), GuardWrite::Create)
        .unwrap();

    let mut updated = record("agt_1");
    updated.native_session_id = Some("thread-9".into());
    updated.updated_at = Some(1_767_225_700_000);
    lease.publish_guard(&updated, GuardWrite::Update).unwrap();
    assert_eq!(lease.read_guard().unwrap(), Some(updated.clone()));

    assert_eq!(
        reason(lease.publish_guard(&record("agt_2"), GuardWrite::Update)),
        RecoveryReason::ForeignTask
    );
    assert_eq!(lease.read_guard().unwrap(), Some(updated));
    assert_eq!(fx.active_names(), [repo().stem()]);
}

#[test]
fn update_restores_a_vanished_guard() {
    let fx = Fixture::prepared(&[repo()]);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    lease
        .publish_guard(&record("agt_1"), GuardWrite::Update)
        .unwrap();
    assert_eq!(lease.read_guard().unwrap(), Some(record("agt_1")));
}

#[test]
fn publication_is_atomic_for_concurrent_readers() {
    // Two large records, each made of one repeated letter: a reader that
    // ever sees a mix, a truncated file or no file at all has observed a
    // non-atomic publication.
    let fx = Fixture::prepared(&[repo()]);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    let variants: Vec<GuardRecord> = ['a', 'b']
        .iter()
        .zip([20_000, 40_000])
        .map(|(letter, len)| {
            let mut r = record("agt_1");
            r.native_session_id = Some(letter.to_string().repeat(len));
            r
        })
        .collect();
    lease
        .publish_guard(&variants[0], GuardWrite::Create)
        .unwrap();

    let path = fx.guard_file(&repo());
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut reads = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let bytes = fs::read(&path).expect("the guard must never be absent");
                let value: serde_json::Value =
                    serde_json::from_slice(&bytes).expect("the guard must never be partial");
                let session = value["native_session_id"].as_str().unwrap();
                let uniform =
                    session.chars().all(|c| c == 'a') || session.chars().all(|c| c == 'b');
                assert!(
                    uniform && [20_000, 40_000].contains(&session.len()),
                    "mixed content"
                );
                reads += 1;
            }
            reads
        })
    };
    for round in 0..300 {
        lease
            .publish_guard(&variants[round % 2], GuardWrite::Update)
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
    assert_eq!(fx.active_names(), [repo().stem()]);
}

#[test]
fn an_oversized_record_is_refused_before_anything_is_written() {
    let fx = Fixture::prepared(&[repo()]);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    let mut huge = record("agt_1");
    huge.native_turn_id = Some("x".repeat(70_000));
    assert_eq!(
        reason(lease.publish_guard(&huge, GuardWrite::Create)),
        RecoveryReason::Persist
    );
    assert!(fx.active_names().is_empty());
}

#[test]
fn publication_refuses_an_unsafe_or_missing_active_directory() {
    let fx = Fixture::prepared(&[repo()]);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    set_mode(&fx.active(), 0o777);
    assert_eq!(
        reason(lease.publish_guard(&record("agt_1"), GuardWrite::Create)),
        RecoveryReason::Persist
    );
    assert!(fx.active_names().is_empty());

    fs::remove_dir(fx.active()).unwrap();
    let elsewhere = fx.tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, fx.active()).unwrap();
    assert_eq!(
        code(lease.publish_guard(&record("agt_1"), GuardWrite::Create)),
        LeaseErrorCode::WorkdirRecoveryRequired
    );
    assert_eq!(
        fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing written through the symlink"
    );

    fs::remove_file(fx.active()).unwrap();
    assert_eq!(
        reason(lease.publish_guard(&record("agt_1"), GuardWrite::Create)),
        RecoveryReason::Persist
    );
}

#[test]
fn removal_needs_the_owning_task_and_a_proven_stop() {
    let fx = Fixture::prepared(&[repo()]);
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    assert_eq!(
        lease
            .remove_guard("agt_1", ProviderLiveness::ProvenStopped)
            .unwrap(),
        GuardRemoval::Absent
    );
    lease
        .publish_guard(&record("agt_1"), GuardWrite::Create)
        .unwrap();

    assert_eq!(
        reason(lease.remove_guard("agt_2", ProviderLiveness::ProvenStopped)),
        RecoveryReason::ForeignTask
    );
    for liveness in [ProviderLiveness::Running, ProviderLiveness::Unknown] {
        assert_eq!(
            lease.remove_guard("agt_1", liveness).unwrap(),
            GuardRemoval::Kept { liveness }
        );
        assert!(fx.guard_file(&repo()).exists());
    }
    assert_eq!(
        lease
            .remove_guard("agt_1", ProviderLiveness::ProvenStopped)
            .unwrap(),
        GuardRemoval::Removed
    );
    assert!(fx.active_names().is_empty());
    assert_eq!(
        lease
            .remove_guard("agt_1", ProviderLiveness::ProvenStopped)
            .unwrap(),
        GuardRemoval::Absent
    );
    drop(lease);
    drop(try_acquire(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn unsafe_unreadable_and_invalid_guards_are_recovery_state() {
    let fx = Fixture::prepared(&[repo()]);
    let guard = fx.guard_file(&repo());

    fs::create_dir(&guard).unwrap();
    assert_eq!(
        reason(read_guard(&fx.lock_dir, &repo())),
        RecoveryReason::Unsafe
    );
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    assert_eq!(
        reason(lease.remove_guard("agt_1", ProviderLiveness::ProvenStopped)),
        RecoveryReason::Unsafe
    );
    assert!(guard.is_dir(), "an unsafe guard is never removed");
    fs::remove_dir(&guard).unwrap();

    symlink(fx.tmp.path(), &guard).unwrap();
    assert_eq!(
        reason(read_guard(&fx.lock_dir, &repo())),
        RecoveryReason::Unsafe
    );
    fs::remove_file(&guard).unwrap();

    fs::write(&guard, b"{not json").unwrap();
    assert_eq!(reason(lease.read_guard()), RecoveryReason::Unreadable);

    // A guard claiming another workdir.
    let other = LeaseId::alias("other").unwrap();
    let text =
        format!(r#"{{"schema_version":1,"lease_id":"{other}","task_id":"t","runtime":"codex"}}"#);
    fs::write(&guard, text).unwrap();
    assert_eq!(reason(lease.read_guard()), RecoveryReason::Invalid);
    assert_eq!(
        reason(lease.remove_guard("t", ProviderLiveness::ProvenStopped)),
        RecoveryReason::Invalid
    );
    assert!(guard.exists());

    fs::write(&guard, vec![b' '; 70_000]).unwrap();
    assert_eq!(reason(lease.read_guard()), RecoveryReason::Invalid);
}

#[test]
fn listing_ignores_junk_and_never_skips_a_bad_guard() {
    let slot = LeaseId::slot(2).unwrap();
    let fx = Fixture::prepared(&[repo(), slot.clone()]);
    hold(&fx.lock_dir, &repo())
        .unwrap()
        .publish_guard(&record("agt_1"), GuardWrite::Create)
        .unwrap();
    // A legacy slot-only guard.
    fs::write(
        fx.guard_file(&slot),
        br#"{"schema_version":1,"slot":2,"task_id":"agt_0","runtime":"claude"}"#,
    )
    .unwrap();
    let upper = repo().stem().to_uppercase();
    for junk in ["notes.txt", "17", "01.lock", ".tmp", upper.as_str()] {
        fs::write(fx.active().join(junk), b"junk").unwrap();
    }
    fs::write(
        fx.active()
            .join(format!(".{}.0123456789abcdef.tmp", repo().stem())),
        b"partial",
    )
    .unwrap();

    let listed: Vec<(String, String)> = list_guards(&fx.lock_dir)
        .unwrap()
        .into_iter()
        .map(|(id, record)| (id.to_string(), record.task_id))
        .collect();
    let mut expected = vec![
        ("slot:02".to_owned(), "agt_0".to_owned()),
        ("alias:repo".to_owned(), "agt_1".to_owned()),
    ];
    expected.sort_by_key(|(id, _)| LeaseId::parse(id).unwrap().stem().to_owned());
    assert_eq!(listed, expected);

    // A recognised guard that cannot be read is an error, not a skip.
    fs::write(fx.active().join("05"), b"garbage").unwrap();
    assert_eq!(
        code(list_guards(&fx.lock_dir)),
        LeaseErrorCode::WorkdirRecoveryRequired
    );
    fs::write(
        fx.active().join("05"),
        br#"{"schema_version":1,"slot":6,"task_id":"t","runtime":"r"}"#,
    )
    .unwrap();
    assert_eq!(
        reason(list_guards(&fx.lock_dir)),
        RecoveryReason::Invalid,
        "a guard named 05 cannot claim slot 06"
    );
}

#[test]
fn no_lock_directory_state_means_no_guards() {
    let fx = Fixture::prepared(&[repo()]);
    assert!(list_guards(&fx.lock_dir).unwrap().is_empty());
    assert_eq!(read_guard(&fx.lock_dir, &repo()).unwrap(), None);
    fs::remove_dir(fx.active()).unwrap();
    assert!(list_guards(&fx.lock_dir).unwrap().is_empty());
    assert_eq!(read_guard(&fx.lock_dir, &repo()).unwrap(), None);
}
