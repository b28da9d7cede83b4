//! What the Bridge recorded of a task's native ids, read from its store
//! beside the running daemon (a read-only connection): the task view does
//! not show them, and a test that kills the Bridge must know they were
//! persisted first.

use serverfs_agent_bridge::store::{StateDir, Store, StoreLimits};
use serverfs_testkit::bridge::Setup;

/// The native session the Bridge of `setup` recorded for `task`.
pub fn recorded_session(setup: &Setup, task: &str) -> Option<String> {
    let state = StateDir::open(setup.state_dir()).expect("the state directory");
    let store = Store::open_read_only(state, StoreLimits::default()).expect("the store");
    let task = task.to_owned();
    let record = store
        .call_blocking(move |db| db.get_task(&task))
        .expect("the task record");
    let _closed = store.close();
    record.native_session_id
}
