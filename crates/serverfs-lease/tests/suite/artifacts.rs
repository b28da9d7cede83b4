//! The owner's artifact preparation: modes, groups, symlink refusal,
//! idempotence.

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;

use serverfs_lease::{
    ArtifactAccess, ArtifactProblem, LeaseError, LeaseErrorCode, LeaseId, hold, prepare_artifacts,
    try_acquire,
};

use super::support::{Fixture, code, is_root, mode, repo, set_mode};

fn problem(result: Result<(), LeaseError>) -> ArtifactProblem {
    match result {
        Err(LeaseError::LockPathUnsafe { problem, .. }) => problem,
        other => panic!("expected LOCK_PATH_UNSAFE, got {other:?}"),
    }
}

#[test]
fn private_artifacts_are_owner_only() {
    let fx = Fixture::new();
    let ids = [repo(), LeaseId::slot(1).unwrap()];
    fx.prepare(ArtifactAccess::Private, &ids).unwrap();
    assert_eq!(mode(&fx.lock_dir), 0o700);
    assert_eq!(mode(&fx.active()), 0o700);
    for id in &ids {
        let meta = fs::symlink_metadata(fx.lock_file(id)).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.len(), 0);
        assert_eq!(mode(&fx.lock_file(id)), 0o600);
    }
    assert!(fx.active_names().is_empty(), "no guard is created up front");
}

#[test]
fn shared_artifacts_are_group_readable_and_carry_the_group() {
    // As root, a foreign gid shows the group is really set; otherwise our
    // own effective gid is the only one we may assign.
    let gid = if is_root() {
        4242
    } else {
        rustix::process::getegid().as_raw()
    };
    let fx = Fixture::new();
    fx.prepare(ArtifactAccess::Shared { gid }, &[repo()])
        .unwrap();
    for (path, expected) in [
        (fx.lock_dir.clone(), 0o750),
        (fx.active(), 0o750),
        (fx.lock_file(&repo()), 0o640),
    ] {
        assert_eq!(mode(&path), expected, "{}", path.display());
        assert_eq!(
            fs::symlink_metadata(&path).unwrap().gid(),
            gid,
            "{}",
            path.display()
        );
    }
}

#[test]
fn missing_parents_are_created() {
    let fx = Fixture::new();
    let deep = fx.tmp.path().join("run/serverfs/locks");
    prepare_artifacts(&deep, ArtifactAccess::Private, &[repo()]).unwrap();
    assert!(deep.join(repo().lock_file_name()).is_file());
    assert_eq!(mode(&deep), 0o700);
}

#[test]
fn preparation_is_idempotent() {
    let fx = Fixture::new();
    let ids = [repo()];
    fx.prepare(ArtifactAccess::Private, &ids).unwrap();
    let inode = fs::metadata(fx.lock_file(&repo())).unwrap().ino();
    // A held lease is unaffected by re-preparation.
    let lease = hold(&fx.lock_dir, &repo()).unwrap();
    fx.prepare(ArtifactAccess::Private, &ids).unwrap();
    assert_eq!(fs::metadata(fx.lock_file(&repo())).unwrap().ino(), inode);
    assert_eq!(mode(&fx.lock_dir), 0o700);
    assert_eq!(mode(&fx.lock_file(&repo())), 0o600);
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    drop(lease);
    // Adding a lease later only adds its lock file.
    let other = LeaseId::alias("other").unwrap();
    fx.prepare(ArtifactAccess::Private, &[repo(), other.clone()])
        .unwrap();
    assert!(fx.lock_file(&other).is_file());
}

#[test]
fn a_lock_file_with_a_wrong_mode_is_reset() {
    // spec §8.2: lock files are chmod'ed to the configured mode.
    let fx = Fixture::prepared(&[repo()]);
    set_mode(&fx.lock_file(&repo()), 0o666);
    fx.prepare(ArtifactAccess::Private, &[repo()]).unwrap();
    assert_eq!(mode(&fx.lock_file(&repo())), 0o600);
}

#[test]
fn the_sixteen_legacy_slots_can_be_prepared() {
    let fx = Fixture::new();
    let slots: Vec<LeaseId> = LeaseId::legacy_slots().collect();
    fx.prepare(ArtifactAccess::Private, &slots).unwrap();
    let mut names: Vec<String> = fs::read_dir(&fx.lock_dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name != "active")
        .collect();
    names.sort();
    let expected: Vec<String> = (1..=16).map(|n| format!("{n:02}.lock")).collect();
    assert_eq!(names, expected);
}

#[test]
fn a_permissive_existing_directory_is_refused_not_repaired() {
    let fx = Fixture::new();
    fs::create_dir(&fx.lock_dir).unwrap();
    set_mode(&fx.lock_dir, 0o755);
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Private, &[repo()])),
        ArtifactProblem::PermissiveMode
    );
    assert_eq!(
        mode(&fx.lock_dir),
        0o755,
        "never chmod an existing directory"
    );
    assert!(!fx.lock_file(&repo()).exists());

    // Shared tolerates group read/search but not group write.
    let gid = rustix::process::getegid().as_raw();
    set_mode(&fx.lock_dir, 0o750);
    fx.prepare(ArtifactAccess::Shared { gid }, &[repo()])
        .unwrap();
    set_mode(&fx.lock_dir, 0o770);
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Shared { gid }, &[repo()])),
        ArtifactProblem::PermissiveMode
    );
    assert_eq!(mode(&fx.lock_dir), 0o770);
}

#[test]
fn a_permissive_active_directory_is_refused() {
    let fx = Fixture::prepared(&[repo()]);
    set_mode(&fx.active(), 0o777);
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Private, &[repo()])),
        ArtifactProblem::PermissiveMode
    );
    assert_eq!(mode(&fx.active()), 0o777);
}

#[test]
fn a_foreign_owned_directory_is_refused() {
    if !is_root() {
        eprintln!("skipped: changing a directory's owner needs root");
        return;
    }
    let fx = Fixture::new();
    fs::create_dir(&fx.lock_dir).unwrap();
    set_mode(&fx.lock_dir, 0o700);
    std::os::unix::fs::chown(&fx.lock_dir, Some(4242), None).unwrap();
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Private, &[repo()])),
        ArtifactProblem::WrongOwner
    );
}

#[test]
fn a_symlinked_lock_directory_is_refused_everywhere() {
    let fx = Fixture::new();
    let real = fx.tmp.path().join("real");
    prepare_artifacts(&real, ArtifactAccess::Private, &[repo()]).unwrap();
    symlink(&real, &fx.lock_dir).unwrap();
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Private, &[repo()])),
        ArtifactProblem::Symlink
    );
    assert_eq!(
        code(hold(&fx.lock_dir, &repo())),
        LeaseErrorCode::LockPathUnsafe
    );
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
}

#[test]
fn a_symlinked_active_directory_is_refused() {
    let fx = Fixture::prepared(&[repo()]);
    let elsewhere = fx.tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::remove_dir(fx.active()).unwrap();
    symlink(&elsewhere, fx.active()).unwrap();
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Private, &[repo()])),
        ArtifactProblem::Symlink
    );
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::AgentLockUnavailable
    );
}

#[test]
fn a_symlink_at_a_lock_file_path_is_refused_and_not_followed() {
    let fx = Fixture::prepared(&[]);
    // Dangling: O_CREAT without O_NOFOLLOW would create the target.
    let victim = fx.tmp.path().join("victim");
    symlink(&victim, fx.lock_file(&repo())).unwrap();
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Private, &[repo()])),
        ArtifactProblem::Symlink
    );
    assert!(!victim.exists(), "the symlink target must not be created");

    // Pointing at an existing file: its mode must not change.
    fs::write(&victim, b"precious").unwrap();
    set_mode(&victim, 0o644);
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Private, &[repo()])),
        ArtifactProblem::Symlink
    );
    assert_eq!(mode(&victim), 0o644);
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn a_directory_at_a_lock_file_path_is_refused() {
    let fx = Fixture::prepared(&[]);
    fs::create_dir(fx.lock_file(&repo())).unwrap();
    assert_eq!(
        problem(fx.prepare(ArtifactAccess::Private, &[repo()])),
        ArtifactProblem::NotRegular
    );
    assert_eq!(
        code(hold(&fx.lock_dir, &repo())),
        LeaseErrorCode::LockPathUnsafe
    );
}

#[test]
fn a_relative_or_root_lock_directory_is_refused() {
    for path in ["locks", "./locks", "/"] {
        let path = Path::new(path);
        assert_eq!(
            problem(prepare_artifacts(path, ArtifactAccess::Private, &[])),
            ArtifactProblem::NotAbsolute
        );
        assert_eq!(code(hold(path, &repo())), LeaseErrorCode::LockPathUnsafe);
        if path.is_relative() {
            assert_eq!(
                code(try_acquire(path, &repo())),
                LeaseErrorCode::AgentLockUnavailable
            );
        }
    }
}

#[test]
fn the_owner_never_creates_a_missing_lock_file() {
    let fx = Fixture::prepared(&[]);
    match hold(&fx.lock_dir, &repo()) {
        Err(LeaseError::LockPathUnsafe { problem, .. }) => {
            assert_eq!(problem, ArtifactProblem::Missing)
        }
        other => panic!("expected LOCK_PATH_UNSAFE, got {other:?}"),
    }
    assert!(!fx.lock_file(&repo()).exists());
}
