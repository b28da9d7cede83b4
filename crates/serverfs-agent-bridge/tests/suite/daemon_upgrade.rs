//! Upgrading the Bridge over its task database (docs/agent-bridge.md,
//! "Upgrades"): a database written by this release opens in the next one —
//! simulated by the current binary opening a copy of the state directory,
//! as an upgraded Bridge would find it — with its tasks intact; a database
//! from a newer release (an unknown `user_version`) is refused at start-up
//! with its code, and left as it was.

use std::path::Path;
use std::time::Duration;

use serverfs_agent_bridge::store::{DATABASE_FILE, SCHEMA_VERSION};
use serverfs_testkit::bridge::Setup;

/// Copies the state directory's regular files (the database and its
/// journal; results are not needed here), keeping the 0700 rule.
fn copy_state(from: &Path, to: &Path) {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().mode(0o700).create(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            let target = to.join(entry.file_name());
            std::fs::copy(entry.path(), &target).unwrap();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    }
}

fn user_version(state: &Path) -> i64 {
    let conn = rusqlite::Connection::open(state.join(DATABASE_FILE)).unwrap();
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

#[test]
fn a_database_of_this_release_opens_after_an_upgrade_and_a_newer_one_is_refused() {
    // This release writes a database with one finished task.
    let old = Setup::new();
    let mut daemon = old.start_serving();
    let task = daemon.submit("fake: complete done");
    let before = daemon.wait_terminal(&task);
    assert_eq!(before["status"], "succeeded", "{before}");
    daemon.stop();
    assert_eq!(user_version(&old.state_dir()), SCHEMA_VERSION);

    // "The next release" opens a copy of it: the task is there, unchanged.
    let upgraded = Setup::new();
    copy_state(&old.state_dir(), &upgraded.state_dir());
    let mut daemon = upgraded.start_serving();
    let after = daemon.task(&task);
    daemon.stop();
    for field in [
        "task_id",
        "status",
        "runtime",
        "workdir_alias",
        "created_at",
        "completed_at",
        "final_response",
        "manifest_sha256",
    ] {
        assert_eq!(after[field], before[field], "{field}: {after}");
    }
    assert_eq!(user_version(&upgraded.state_dir()), SCHEMA_VERSION);

    // A database from a newer release: refused by code, not touched.
    let newer = SCHEMA_VERSION + 1;
    {
        let conn = rusqlite::Connection::open(upgraded.state_dir().join(DATABASE_FILE)).unwrap();
        conn.pragma_update(None, "user_version", newer).unwrap();
    }
    let mut daemon = upgraded.spawn();
    let status = daemon
        .wait_exit(Duration::from_secs(15))
        .unwrap_or_else(|| panic!("the Bridge started on a newer database"));
    let stderr = daemon.stderr();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("BRIDGE_PROTOCOL_ERROR")
            && stderr.contains(&format!(
                "schema version {newer}, newer than this Bridge supports"
            )),
        "{stderr}"
    );
    assert!(
        !upgraded.socket().exists(),
        "a refused start serves nothing"
    );
    assert_eq!(user_version(&upgraded.state_dir()), newer);
}
