//! The durable task store against real SQLite files in temp directories:
//! the private state directory, migrations and durability here; tasks,
//! events, interactions and results in the `store_*` files beside it.

#[path = "store_events.rs"]
mod events;
#[path = "store_interactions.rs"]
mod interactions;
#[path = "store_results.rs"]
mod results;
#[path = "store_tasks.rs"]
mod tasks;

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Map, Value, json};
use serverfs_agent_bridge::BridgeErrorCode;
use serverfs_agent_bridge::store::{
    Created, DATABASE_FILE, IdempotencyKey, InteractionPayload, NewInteraction, NewTask,
    RESULTS_DIR, SCHEMA_VERSION, StateDir, StatePart, Store, StoreError, StoreLimits, TaskRecord,
    Transition, UnsafeReason, new_request_id, new_task_id,
};
use serverfs_protocol::bridge::{
    AgentProfile, ApprovalCategory, ApprovalDecision, ApprovalPayload, EventPayload, Question,
    QuestionOption, QuestionPayload, TaskStatus,
};
use tempfile::TempDir;

/// A fixed clock: every test passes `now` explicitly.
pub const T0: i64 = 1_700_000_000_000;
/// Deadline of fixture tasks.
pub const DEADLINE: i64 = T0 + 7_200_000;

/// A temp directory holding one state directory, and a store open on it.
pub struct Fixture {
    pub dir: TempDir,
    pub store: Store,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with_limits(StoreLimits {
            max_active_tasks: 1_000,
            ..StoreLimits::default()
        })
    }

    pub fn with_limits(limits: StoreLimits) -> Fixture {
        let dir = TempDir::new().unwrap();
        let store = Store::open(StateDir::open(state_path(&dir)).unwrap(), limits).unwrap();
        Fixture { dir, store }
    }

    pub fn state(&self) -> PathBuf {
        state_path(&self.dir)
    }

    /// Inserts a fresh queued task and returns it.
    pub fn task(&self) -> TaskRecord {
        let new = new_task(None);
        match self
            .store
            .call_blocking(move |db| db.create_task(&new, T0))
            .unwrap()
        {
            Created::New(task) => task,
            Created::Replayed(task) => panic!("fresh task replayed: {task:?}"),
        }
    }

    /// A fresh task moved to `status` along allowed paths.
    pub fn task_in(&self, status: TaskStatus) -> TaskRecord {
        let task = self.task();
        self.drive(&task.task_id, status);
        self.get(&task.task_id)
    }

    pub fn get(&self, task_id: &str) -> TaskRecord {
        let id = task_id.to_owned();
        self.store
            .call_blocking(move |db| db.get_task(&id))
            .unwrap()
    }

    pub fn transition(
        &self,
        task_id: &str,
        transition: Transition,
    ) -> Result<serverfs_agent_bridge::store::Transitioned, StoreError> {
        let id = task_id.to_owned();
        self.store
            .call_blocking(move |db| db.transition(&id, transition, T0 + 10))
    }

    /// Moves a queued task to `target` through the table.
    pub fn drive(&self, task_id: &str, target: TaskStatus) {
        use TaskStatus::*;
        let path: &[TaskStatus] = match target {
            Queued => &[],
            Starting => &[Starting],
            Running => &[Starting, Running],
            WaitingForApproval | WaitingForQuestion => &[Starting, Running],
            Succeeded => &[Starting, Running, Succeeded],
            Failed => &[Starting, Failed],
            Cancelled => &[Cancelled],
            Interrupted => &[Interrupted],
        };
        let mut from = Queued;
        for &to in path {
            self.transition(task_id, Transition::new(from, to)).unwrap();
            from = to;
        }
        match target {
            WaitingForApproval => {
                self.ask(task_id, approval());
            }
            WaitingForQuestion => {
                self.ask(task_id, question());
            }
            Queued | Starting | Running | Succeeded | Failed | Cancelled | Interrupted => {}
        }
    }

    /// Raises an interaction (30 s timeout) and returns its id.
    pub fn ask(&self, task_id: &str, payload: InteractionPayload) -> String {
        let new = NewInteraction {
            request_id: new_request_id().unwrap(),
            task_id: task_id.to_owned(),
            payload,
            timeout: Duration::from_secs(30),
        };
        let id = new.request_id.clone();
        self.store
            .call_blocking(move |db| db.add_interaction(&new, T0 + 20))
            .unwrap();
        id
    }
}

pub fn state_path(dir: &TempDir) -> PathBuf {
    dir.path().join("state")
}

pub fn new_task(idempotency: Option<(&str, &str)>) -> NewTask {
    let mut manifest = Map::new();
    manifest.insert("schema_version".to_owned(), json!(2));
    manifest.insert("workspace".to_owned(), json!({"alias": "demo"}));
    NewTask {
        task_id: new_task_id().unwrap(),
        runtime: "fake".to_owned(),
        workdir_alias: "demo".to_owned(),
        workdir_slot: None,
        relative_cwd: "src".to_owned(),
        profile: AgentProfile::Review,
        requested_model: Some("model-a".to_owned()),
        deadline_at: DEADLINE,
        continue_from_task_id: None,
        native_session_id: None,
        correlation_id: Some("corr-1".to_owned()),
        idempotency: idempotency.map(|(key, fingerprint)| IdempotencyKey {
            key: key.to_owned(),
            fingerprint: fingerprint.to_owned(),
        }),
        manifest,
        manifest_sha256: "ab".repeat(32),
    }
}

pub fn approval() -> InteractionPayload {
    InteractionPayload::Approval(Box::new(ApprovalPayload {
        category: ApprovalCategory::Command,
        title: Some("Run tests".to_owned()),
        reason: None,
        command_display: Some("cargo test".to_owned()),
        relative_cwd: Some(".".to_owned()),
        additional_permissions: None,
        network_approval_context: None,
        file_changes: None,
        requested_permissions: None,
        tool: None,
        tool_input: None,
        blocked_path: None,
        available_decisions: vec![ApprovalDecision::ApproveOnce, ApprovalDecision::Deny],
        options: None,
        approval_advice: None,
    }))
}

pub fn question() -> InteractionPayload {
    InteractionPayload::Question(QuestionPayload {
        questions: vec![Question {
            question_id: "q0".to_owned(),
            prompt: "Which?".to_owned(),
            options: vec![QuestionOption {
                option_id: "a".to_owned(),
                label: "A".to_owned(),
                description: None,
                preview: None,
            }],
            multi_select: false,
            allow_free_text: true,
        }],
    })
}

pub fn message(text: &str) -> EventPayload {
    EventPayload::AgentMessage {
        text: text.to_owned(),
        phase: None,
        truncated: false,
        size_bytes: None,
        sha256: None,
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn open_err(path: &Path) -> StoreError {
    match StateDir::open(path) {
        Ok(_) => panic!("state directory accepted"),
        Err(error) => error,
    }
}

#[test]
fn creates_every_part_private_with_exact_modes() {
    let fixture = Fixture::new();
    let state = fixture.state();
    let task = fixture.task();
    // Writes went to the WAL: it and the SHM index exist now.
    let database = state.join(DATABASE_FILE);
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&state.join(RESULTS_DIR)), 0o700);
    assert_eq!(mode(&database), 0o600);
    assert_eq!(mode(&with_suffix(&database, "-wal")), 0o600);
    assert_eq!(mode(&with_suffix(&database, "-shm")), 0o600);
    for part in [
        state.clone(),
        database.clone(),
        with_suffix(&database, "-wal"),
    ] {
        assert_eq!(
            fs::metadata(&part).unwrap().uid(),
            rustix::process::geteuid().as_raw()
        );
    }
    assert_eq!(fixture.get(&task.task_id).task_id, task.task_id);
}

#[test]
fn missing_parents_are_created_private_too() {
    let dir = TempDir::new().unwrap();
    let deep = dir.path().join("a/b/state");
    StateDir::open(&deep).unwrap();
    assert_eq!(mode(&dir.path().join("a")), 0o700);
    assert_eq!(mode(&dir.path().join("a/b")), 0o700);
    assert_eq!(mode(&deep), 0o700);
}

#[test]
fn refuses_a_group_or_world_accessible_state_dir_without_repairing_it() {
    for bits in [0o750, 0o705, 0o770, 0o777] {
        let dir = TempDir::new().unwrap();
        let state = state_path(&dir);
        fs::DirBuilder::new().mode(0o700).create(&state).unwrap();
        fs::set_permissions(&state, fs::Permissions::from_mode(bits)).unwrap();
        let error = open_err(&state);
        assert!(
            matches!(
                error,
                StoreError::UnsafeState {
                    part: StatePart::StateDirectory,
                    reason: UnsafeReason::GroupOrWorldAccess
                }
            ),
            "{bits:o}: {error:?}"
        );
        assert_eq!(error.code(), BridgeErrorCode::PrivateStateUnsafe);
        assert!(!error.to_string().contains(dir.path().to_str().unwrap()));
        assert_eq!(mode(&state), bits, "refused, not repaired");
    }
}

#[test]
fn refuses_permissive_database_and_spool_dir() {
    let dir = TempDir::new().unwrap();
    let state = state_path(&dir);
    StateDir::open(&state).unwrap();

    fs::set_permissions(state.join(DATABASE_FILE), fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(
        open_err(&state),
        StoreError::UnsafeState {
            part: StatePart::Database,
            reason: UnsafeReason::GroupOrWorldAccess
        }
    ));
    fs::set_permissions(state.join(DATABASE_FILE), fs::Permissions::from_mode(0o600)).unwrap();

    fs::set_permissions(state.join(RESULTS_DIR), fs::Permissions::from_mode(0o755)).unwrap();
    assert!(matches!(
        open_err(&state),
        StoreError::UnsafeState {
            part: StatePart::ResultSpoolDirectory,
            reason: UnsafeReason::GroupOrWorldAccess
        }
    ));
}

#[test]
fn refuses_symlinks_for_every_part() {
    let dir = TempDir::new().unwrap();
    let real = dir.path().join("real");
    StateDir::open(&real).unwrap();

    // The state directory itself.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert!(matches!(
        open_err(&link),
        StoreError::UnsafeState {
            part: StatePart::StateDirectory,
            reason: UnsafeReason::Symlink
        }
    ));

    // A database file that is a link to a private file elsewhere.
    let other = TempDir::new().unwrap();
    let state = state_path(&other);
    fs::DirBuilder::new().mode(0o700).create(&state).unwrap();
    let elsewhere = other.path().join("elsewhere.sqlite3");
    fs::write(&elsewhere, b"").unwrap();
    fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, state.join(DATABASE_FILE)).unwrap();
    assert!(matches!(
        open_err(&state),
        StoreError::UnsafeState {
            part: StatePart::Database,
            reason: UnsafeReason::Symlink
        }
    ));

    // A planted WAL link: SQLite would follow it, so it is refused first.
    let third = TempDir::new().unwrap();
    let state = state_path(&third);
    StateDir::open(&state).unwrap();
    std::os::unix::fs::symlink(&elsewhere, with_suffix(&state.join(DATABASE_FILE), "-wal"))
        .unwrap();
    assert!(matches!(
        open_err(&state),
        StoreError::UnsafeState {
            part: StatePart::WriteAheadLog,
            reason: UnsafeReason::Symlink
        }
    ));

    // The result spool directory.
    let fourth = TempDir::new().unwrap();
    let state = state_path(&fourth);
    fs::DirBuilder::new().mode(0o700).create(&state).unwrap();
    let spool_elsewhere = fourth.path().join("spool");
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&spool_elsewhere)
        .unwrap();
    std::os::unix::fs::symlink(&spool_elsewhere, state.join(RESULTS_DIR)).unwrap();
    assert!(matches!(
        open_err(&state),
        StoreError::UnsafeState {
            part: StatePart::ResultSpoolDirectory,
            reason: UnsafeReason::Symlink
        }
    ));
}

#[test]
fn a_file_where_the_state_dir_should_be_is_refused() {
    let dir = TempDir::new().unwrap();
    let state = state_path(&dir);
    fs::write(&state, b"").unwrap();
    let error = open_err(&state);
    assert!(
        matches!(
            error,
            StoreError::StateUnavailable {
                part: StatePart::StateDirectory,
                ..
            } | StoreError::UnsafeState {
                part: StatePart::StateDirectory,
                reason: UnsafeReason::WrongType
            }
        ),
        "{error:?}"
    );
}

fn user_version(state: &Path) -> i64 {
    let conn = rusqlite::Connection::open(state.join(DATABASE_FILE)).unwrap();
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

#[test]
fn migrations_are_idempotent_across_reopens() {
    let fixture = Fixture::new();
    let state = fixture.state();
    let task = fixture.task();
    fixture.store.close().unwrap();
    assert_eq!(user_version(&state), SCHEMA_VERSION);
    for _ in 0..3 {
        let store = Store::open(StateDir::open(&state).unwrap(), StoreLimits::default()).unwrap();
        let id = task.task_id.clone();
        let again = store.call_blocking(move |db| db.get_task(&id)).unwrap();
        assert_eq!(again, task);
        store.close().unwrap();
        assert_eq!(user_version(&state), SCHEMA_VERSION);
    }
}

#[test]
fn a_newer_schema_version_is_refused_clearly() {
    let fixture = Fixture::new();
    let state = fixture.state();
    fixture.store.close().unwrap();
    {
        let conn = rusqlite::Connection::open(state.join(DATABASE_FILE)).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let error = Store::open(StateDir::open(&state).unwrap(), StoreLimits::default()).unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::SchemaTooNew {
                found: 99,
                supported: SCHEMA_VERSION
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("99") && message.contains("upgrade"),
        "{message}"
    );
    assert!(!message.contains(state.to_str().unwrap()));
    // Refused, not touched.
    assert_eq!(user_version(&state), 99);
}

#[test]
fn an_unversioned_foreign_database_is_not_adopted() {
    let dir = TempDir::new().unwrap();
    let state = state_path(&dir);
    let checked = StateDir::open(&state).unwrap();
    {
        let conn = rusqlite::Connection::open(checked.database_path()).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT);")
            .unwrap();
    }
    let error = Store::open(checked, StoreLimits::default()).unwrap_err();
    assert!(matches!(error, StoreError::SchemaUnknown), "{error:?}");
}

#[test]
fn inconsistent_limits_are_refused() {
    let dir = TempDir::new().unwrap();
    let limits = StoreLimits {
        terminal_headroom: 200,
        ..StoreLimits::default()
    };
    let error = Store::open(StateDir::open(state_path(&dir)).unwrap(), limits).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::BridgeConfigInvalid);
}

#[test]
fn dropping_the_store_without_close_loses_nothing() {
    let fixture = Fixture::new();
    let state = fixture.state();
    let task = fixture.task_in(TaskStatus::Running);
    let id = task.task_id.clone();
    let event_id = fixture
        .store
        .call_blocking(move |db| db.append_event(&id, &message("kept"), T0 + 30))
        .unwrap();
    let Fixture { dir, store } = fixture;
    drop(store);

    let store = Store::open(StateDir::open(&state).unwrap(), StoreLimits::default()).unwrap();
    let id = task.task_id.clone();
    let reopened = store.call_blocking(move |db| db.get_task(&id)).unwrap();
    assert_eq!(reopened.status, TaskStatus::Running);
    let id = task.task_id.clone();
    let page = store
        .call_blocking(move |db| db.read_events(&id, 0, 100))
        .unwrap();
    assert_eq!(page.events.last().unwrap().event_id, event_id);
    drop(dir);
}

/// The child half of [`a_crash_after_commit_loses_nothing`]: writes, then
/// aborts (no destructor, no WAL checkpoint, no clean close).
#[test]
#[ignore = "helper: run by a_crash_after_commit_loses_nothing in a child process"]
fn crash_child() {
    let Some(state) = std::env::var_os("STORE_CRASH_STATE") else {
        return;
    };
    let store = Store::open(StateDir::open(&state).unwrap(), StoreLimits::default()).unwrap();
    let new = new_task(Some(("crash-key", "crash-fp")));
    let created = store
        .call_blocking(move |db| db.create_task(&new, T0))
        .unwrap();
    let id = created.task().task_id.clone();
    store
        .call_blocking(move |db| {
            db.transition(
                &id,
                Transition::new(TaskStatus::Queued, TaskStatus::Starting),
                T0,
            )?;
            db.append_event(&id, &message("before the crash"), T0)
        })
        .unwrap();
    std::process::abort();
}

#[test]
fn a_crash_after_commit_loses_nothing() {
    let dir = TempDir::new().unwrap();
    let state = state_path(&dir);
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::store::crash_child",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env("STORE_CRASH_STATE", &state)
        .output()
        .unwrap();
    assert!(
        !status.status.success(),
        "the child must die by abort: {}",
        String::from_utf8_lossy(&status.stdout)
    );
    // The commit is in the WAL, never checkpointed into the main file.
    let wal = with_suffix(&state.join(DATABASE_FILE), "-wal");
    assert!(fs::metadata(&wal).unwrap().len() > 0);

    let store = Store::open(StateDir::open(&state).unwrap(), StoreLimits::default()).unwrap();
    let task = store
        .call_blocking(|db| db.find_by_idempotency_key("crash-key"))
        .unwrap()
        .expect("the task survived the crash");
    assert_eq!(task.status, TaskStatus::Starting);
    let id = task.task_id.clone();
    let page = store
        .call_blocking(move |db| db.read_events(&id, 0, 10))
        .unwrap();
    assert_eq!(page.events.len(), 1);
    assert_eq!(page.events[0].event, message("before the crash"));
}

#[tokio::test]
async fn async_calls_panics_and_close() {
    let fixture = Fixture::new();
    let store = fixture.store.clone();
    let count = store.call(|db| db.count_active_tasks()).await.unwrap();
    assert_eq!(count, 0);

    // A panicking job fails alone; the thread and its connection go on.
    let error = store
        .call(|_db| -> Result<(), StoreError> { panic!("boom") })
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Panicked));
    let new = new_task(None);
    store
        .call(move |db| db.create_task(&new, T0))
        .await
        .unwrap();
    assert_eq!(store.call(|db| db.count_active_tasks()).await.unwrap(), 1);

    let other = store.clone();
    fixture.store.close().unwrap();
    let error = other.call(|db| db.count_active_tasks()).await.unwrap_err();
    assert!(matches!(error, StoreError::Closed));
    assert_eq!(error.code(), BridgeErrorCode::BridgeClosed);
}

#[test]
fn error_codes_are_stable() {
    // A sample of the mapping clients bind to.
    let cases = [
        (StoreError::TaskNotFound, "AGENT_TASK_NOT_FOUND"),
        (
            StoreError::IdempotencyConflict,
            "AGENT_IDEMPOTENCY_CONFLICT",
        ),
        (
            StoreError::RequestAlreadyResolved,
            "REQUEST_ALREADY_RESOLVED",
        ),
        (StoreError::RequestExpired, "REQUEST_STALE"),
        (StoreError::EventLimitReached, "AGENT_EVENT_LIMIT_REACHED"),
        (StoreError::InvalidEventPage, "INVALID_LIMIT"),
        (
            StoreError::ResultNotRetrievable,
            "AGENT_RESULT_NOT_RETRIEVABLE",
        ),
    ];
    for (error, code) in cases {
        assert_eq!(error.code().as_str(), code, "{error}");
    }
    let value: Value = serde_json::to_value(BridgeErrorCode::RequestStale).unwrap();
    assert_eq!(value, json!("REQUEST_STALE"));
}

/// `inspect` reads beside a live Bridge: the read-only store sees the
/// tasks, refuses every write, and never sweeps a result file that no row
/// names yet (the Bridge may be writing it at that moment).
#[test]
fn a_read_only_store_reads_and_never_writes_or_sweeps() {
    let fixture = Fixture::new();
    let task = fixture.task();
    // The name of a result the Bridge is writing right now.
    let in_flight = fixture
        .state()
        .join("results")
        .join(format!(".{}.0123456789abcdef.tmp", task.task_id));
    std::fs::write(&in_flight, "partial").unwrap();

    let reader = Store::open_read_only(
        StateDir::open(fixture.state()).unwrap(),
        StoreLimits::default(),
    )
    .unwrap();
    let id = task.task_id.clone();
    assert_eq!(
        reader
            .call_blocking(move |db| db.get_task(&id))
            .unwrap()
            .task_id,
        task.task_id
    );
    let new = new_task(None);
    let refused = reader.call_blocking(move |db| db.create_task(&new, T0));
    assert!(
        matches!(refused, Err(StoreError::Database(_))),
        "{refused:?}"
    );
    assert!(
        in_flight.exists(),
        "the reader swept a file it does not own"
    );
    reader.close().unwrap();
    // The writer is unaffected.
    fixture.task();
}
