//! The mutation-side reader: busy, recovery and unavailable outcomes, within
//! one process (flock conflicts between open file descriptions, so two
//! descriptors of one process are as good as two processes here; the real
//! cross-process check is in `cross_process`).

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};

use rustix::fs::{CWD, FileType, Mode, mknodat};
use serverfs_lease::{
    GuardRecord, GuardWrite, LeaseError, LeaseErrorCode, LeaseId, RecoveryReason, hold, try_acquire,
};

use super::support::{Fixture, code, repo};

fn mkfifo(path: &std::path::Path) {
    mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
}

#[test]
fn a_free_lease_is_acquired_and_released_on_drop() {
    let fx = Fixture::prepared(&[repo()]);
    let first = try_acquire(&fx.lock_dir, &repo()).unwrap();
    assert_eq!(first.id(), &repo());
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    drop(first);
    drop(try_acquire(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn busy_names_the_workdir_not_the_path() {
    let fx = Fixture::prepared(&[repo()]);
    let _held = hold(&fx.lock_dir, &repo()).unwrap();
    let err = try_acquire(&fx.lock_dir, &repo()).unwrap_err();
    assert_eq!(err.code().as_str(), "WORKDIR_BUSY");
    assert_eq!(err.to_string(), "workdir repo has an active Agent writer");
}

#[test]
fn owner_and_reader_exclude_each_other() {
    let fx = Fixture::prepared(&[repo()]);
    let owner = hold(&fx.lock_dir, &repo()).unwrap();
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    // A second owner in the same process conflicts too (spec §8.3 relies on it).
    assert_eq!(
        code(hold(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    drop(owner);
    let reader = try_acquire(&fx.lock_dir, &repo()).unwrap();
    // The exclusive lock taken through a read-only descriptor excludes
    // another read-only descriptor.
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    drop(reader);
    drop(hold(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn different_leases_are_independent() {
    let foo = LeaseId::alias("foo").unwrap();
    let upper = LeaseId::alias("Foo").unwrap();
    let slot = LeaseId::slot(1).unwrap();
    let fx = Fixture::prepared(&[foo.clone(), upper.clone(), slot.clone()]);
    let _a = hold(&fx.lock_dir, &foo).unwrap();
    let _b = try_acquire(&fx.lock_dir, &upper).unwrap();
    let _c = try_acquire(&fx.lock_dir, &slot).unwrap();
}

#[test]
fn the_reader_never_creates_or_modifies_artifacts() {
    let fx = Fixture::prepared(&[repo()]);
    let before = fs::metadata(fx.lock_file(&repo())).unwrap();
    drop(try_acquire(&fx.lock_dir, &repo()).unwrap());
    let after = fs::metadata(fx.lock_file(&repo())).unwrap();
    assert_eq!(
        (
            before.ino(),
            before.len(),
            before.mode(),
            before.mtime(),
            before.mtime_nsec()
        ),
        (
            after.ino(),
            after.len(),
            after.mode(),
            after.mtime(),
            after.mtime_nsec()
        )
    );

    let missing = LeaseId::alias("missing").unwrap();
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &missing)),
        LeaseErrorCode::AgentLockUnavailable
    );
    assert!(
        !fx.lock_file(&missing).exists(),
        "the reader must not create a lock file"
    );

    let nowhere = fx.tmp.path().join("nowhere");
    assert_eq!(
        code(try_acquire(&nowhere, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
    assert!(!nowhere.exists());
}

#[test]
fn the_reader_works_on_a_read_only_lock_file() {
    // The MCP container sees the lock directory through a read-only mount;
    // flock(LOCK_EX) needs no write access.
    let fx = Fixture::prepared(&[repo()]);
    super::support::set_mode(&fx.lock_file(&repo()), 0o400);
    let reader = try_acquire(&fx.lock_dir, &repo()).unwrap();
    // The exclusive lock taken through a read-only descriptor excludes
    // another read-only descriptor.
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    drop(reader);
}

#[test]
fn a_symlinked_lock_file_is_unavailable() {
    let fx = Fixture::prepared(&[repo()]);
    let real = fx.tmp.path().join("real.lock");
    fs::write(&real, b"").unwrap();
    fs::remove_file(fx.lock_file(&repo())).unwrap();
    symlink(&real, fx.lock_file(&repo())).unwrap();
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
}

#[test]
fn a_non_regular_lock_file_is_unavailable() {
    let fx = Fixture::prepared(&[repo()]);
    fs::remove_file(fx.lock_file(&repo())).unwrap();
    fs::create_dir(fx.lock_file(&repo())).unwrap();
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );

    // A FIFO must be refused without blocking the open.
    fs::remove_dir(fx.lock_file(&repo())).unwrap();
    mkfifo(&fx.lock_file(&repo()));
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
}

#[test]
fn a_guard_means_recovery_and_the_lock_is_released_again() {
    let fx = Fixture::prepared(&[repo()]);
    let owner = hold(&fx.lock_dir, &repo()).unwrap();
    owner
        .publish_guard(&GuardRecord::new("agt_1", "fake", 0), GuardWrite::Create)
        .unwrap();
    drop(owner);
    match try_acquire(&fx.lock_dir, &repo()) {
        Err(
            err @ LeaseError::RecoveryRequired {
                reason: RecoveryReason::Present,
                ..
            },
        ) => {
            assert_eq!(err.code().as_str(), "WORKDIR_RECOVERY_REQUIRED");
            assert_eq!(
                err.to_string(),
                "workdir repo has unresolved Agent recovery state"
            );
        }
        other => panic!("expected WORKDIR_RECOVERY_REQUIRED, got {other:?}"),
    }
    // The refused reader did not keep the lock.
    drop(hold(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn a_guard_of_any_content_counts() {
    // The reader only lstat's: even an empty or garbage guard blocks.
    let fx = Fixture::prepared(&[repo()]);
    fs::write(fx.guard_file(&repo()), b"").unwrap();
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirRecoveryRequired
    );
}

#[test]
fn a_non_regular_guard_is_unavailable() {
    let fx = Fixture::prepared(&[repo()]);
    let guard = fx.guard_file(&repo());

    fs::create_dir(&guard).unwrap();
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
    fs::remove_dir(&guard).unwrap();

    // Even a symlink to a regular file: lstat, not stat.
    let target = fx.tmp.path().join("target");
    fs::write(&target, b"{}").unwrap();
    symlink(&target, &guard).unwrap();
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
    fs::remove_file(&guard).unwrap();

    mkfifo(&guard);
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
    fs::remove_file(&guard).unwrap();

    // Each refusal released the lock.
    drop(hold(&fx.lock_dir, &repo()).unwrap());
    drop(try_acquire(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn a_missing_active_directory_means_no_guard() {
    let fx = Fixture::prepared(&[repo()]);
    fs::remove_dir(fx.active()).unwrap();
    drop(try_acquire(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn an_active_path_that_is_not_a_directory_is_unavailable() {
    let fx = Fixture::prepared(&[repo()]);
    fs::remove_dir(fx.active()).unwrap();
    fs::write(fx.active(), b"").unwrap();
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
}
