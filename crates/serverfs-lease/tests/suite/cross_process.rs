//! Real cross-process locking: a child process holds the lease (this test
//! binary re-executed in a helper mode, or util-linux `flock(1)`) while this
//! process tries to take it.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serverfs_lease::{
    GuardRecord, GuardWrite, LeaseErrorCode, LeaseId, ProviderLiveness, Reconciliation, hold,
    probe_recorded_group, reconcile, try_acquire,
};

use super::support::{Fixture, code, repo};

const HELPER_DIR: &str = "SERVERFS_LEASE_TEST_HELPER_LOCK_DIR";
const HELPER_GUARD: &str = "SERVERFS_LEASE_TEST_HELPER_GUARD";
const HELD: &str = "SERVERFS_LEASE_HELD";
const TIMEOUT: Duration = Duration::from_secs(30);

/// Helper mode, run only in a child re-executed by the tests below: holds
/// the `repo` lease (and, if asked, publishes a guard), reports, then waits
/// for stdin to close.
#[test]
#[ignore = "helper process for the cross-process tests"]
fn helper_hold_lease() {
    let Some(lock_dir) = std::env::var_os(HELPER_DIR) else {
        return;
    };
    let lease = hold(Path::new(&lock_dir), &repo()).unwrap();
    if std::env::var_os(HELPER_GUARD).is_some() {
        lease
            .publish_guard(
                &GuardRecord::new("agt_child", "fake", 0),
                GuardWrite::Create,
            )
            .unwrap();
    }
    println!("{HELD}");
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(lease);
}

/// A child that is killed if the test fails before it is reaped.
struct Helper {
    child: Child,
}

impl Helper {
    fn wait_for(child: Child, marker: &str) -> Helper {
        let mut helper = Helper { child };
        let stdout = helper.child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let marker = marker.to_owned();
        thread::spawn(move || {
            // Keep draining after the marker: a closed pipe would make the
            // helper's final output fail with EPIPE.
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // libtest prints the test name on the same line, without a newline.
                if line.trim_end().ends_with(&marker) {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(TIMEOUT)
            .expect("the helper process did not report holding the lease");
        helper
    }

    /// Lets the helper exit normally (it waits for stdin to close).
    fn finish(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "helper failed: {status}");
                return;
            }
            assert!(Instant::now() < deadline, "helper did not exit");
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILLs the helper and reaps it: a crash, as far as the lease knows.
    fn crash(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_holder(lock_dir: &Path, with_guard: bool) -> Helper {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "suite::cross_process::helper_hold_lease",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_DIR, lock_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    if with_guard {
        command.env(HELPER_GUARD, "1");
    }
    Helper::wait_for(command.spawn().unwrap(), HELD)
}

#[test]
fn a_lease_held_by_another_process_makes_the_reader_busy() {
    let other = LeaseId::alias("other").unwrap();
    let fx = Fixture::prepared(&[repo(), other.clone()]);
    let helper = spawn_holder(&fx.lock_dir, false);
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    assert_eq!(
        code(hold(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    // Another workdir's lease is not affected.
    drop(try_acquire(&fx.lock_dir, &other).unwrap());
    helper.finish();
    drop(try_acquire(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn a_crashed_owner_releases_the_lock_but_its_guard_blocks() {
    let fx = Fixture::prepared(&[repo()]);
    let helper = spawn_holder(&fx.lock_dir, true);
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    helper.crash();

    // The kernel dropped the dead holder's lock; the guard persists.
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirRecoveryRequired
    );
    // No process group was recorded: the stop cannot be proven.
    match reconcile(&fx.lock_dir, &repo(), probe_recorded_group).unwrap() {
        Reconciliation::Kept { record, liveness } => {
            assert_eq!(record.task_id, "agt_child");
            assert_eq!(liveness, ProviderLiveness::Unknown);
        }
        other => panic!("expected the guard to be kept, got {other:?}"),
    }
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirRecoveryRequired
    );
    // The adapter proves the provider inactive: now it may go.
    let proven = |_: &GuardRecord| ProviderLiveness::from_provider_active(Some(false));
    assert!(matches!(
        reconcile(&fx.lock_dir, &repo(), proven).unwrap(),
        Reconciliation::Removed { .. }
    ));
    drop(try_acquire(&fx.lock_dir, &repo()).unwrap());
}

#[test]
fn util_linux_flock_interoperates() {
    // An independent flock(2) user (as the earlier Python implementation
    // was) must see the same lock.
    let fx = Fixture::prepared(&[repo()]);
    let lock_file = fx.lock_file(&repo());
    let spawned = Command::new("flock")
        .arg("--exclusive")
        .arg("--nonblock")
        .arg(&lock_file)
        .args(["sh", "-c", &format!("echo {HELD}; exec cat >/dev/null")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let child = match spawned {
        Ok(child) => child,
        Err(err) => {
            eprintln!("skipped: util-linux flock(1) is not available ({err})");
            return;
        }
    };
    let helper = Helper::wait_for(child, HELD);
    assert_eq!(
        code(try_acquire(&fx.lock_dir, &repo())),
        LeaseErrorCode::WorkdirBusy
    );
    helper.finish();
    let reader = try_acquire(&fx.lock_dir, &repo()).unwrap();
    // And the other way round: flock(1) -n fails (exit 1) while we hold it.
    let status = Command::new("flock")
        .arg("--exclusive")
        .arg("--nonblock")
        .arg(&lock_file)
        .arg("true")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    drop(reader);
}
