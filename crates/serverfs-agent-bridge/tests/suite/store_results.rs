//! Results (inline and spooled), chunked reads, retention purge.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use serverfs_agent_bridge::BridgeErrorCode;
use serverfs_agent_bridge::store::{
    RESULTS_DIR, StateDir, Store, StoreError, StoreLimits, StoredResult, Transition,
};
use serverfs_protocol::bridge::{ResultStorage, TaskStatus};

use super::{Fixture, T0, message, new_task};

fn small_spool() -> Fixture {
    Fixture::with_limits(StoreLimits {
        max_active_tasks: 1_000,
        max_inline_result_bytes: 64,
        result_preview_bytes: 16,
        max_spooled_result_bytes: 4_096,
        max_result_chunk_bytes: 32,
        ..StoreLimits::default()
    })
}

fn store_result(fixture: &Fixture, task_id: &str, text: &str) -> Result<StoredResult, StoreError> {
    let (id, text) = (task_id.to_owned(), text.to_owned());
    fixture
        .store
        .call_blocking(move |db| db.store_result(&id, &text, T0 + 500))
}

fn read(fixture: &Fixture, task_id: &str, offset: i64, max: i64) -> Result<String, StoreError> {
    let id = task_id.to_owned();
    fixture
        .store
        .call_blocking(move |db| db.read_result(&id, offset, max))
        .map(|chunk| chunk.text)
}

/// SHA-256 by an independent implementation (coreutils), when present.
fn sha256sum(path: &Path) -> Option<String> {
    let output = Command::new("sha256sum").arg(path).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.split_whitespace().next()?.to_owned())
}

/// Mixed 1-, 2-, 3- and 4-byte characters, so chunk edges land inside them.
fn multibyte_text(repeat: usize) -> String {
    "aé€😀 línea ✓\n".repeat(repeat)
}

#[test]
fn a_small_result_is_inline_and_completes_the_task() {
    let fixture = small_spool();
    let task = fixture.task_in(TaskStatus::Running);
    let stored = store_result(&fixture, &task.task_id, "abc").unwrap();
    assert_eq!(stored.storage, ResultStorage::Inline);
    assert_eq!(stored.final_response, "abc");
    assert_eq!(stored.size_bytes, 3);
    // FIPS 180-4 example vector.
    assert_eq!(
        stored.sha256,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let after = fixture.get(&task.task_id);
    assert_eq!(after.status, TaskStatus::Succeeded);
    assert_eq!(after.completed_at, Some(T0 + 500));
    assert_eq!(after.result, Some(stored));
    let error = read(&fixture, &task.task_id, 0, 10).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentResultNotRetrievable);

    let id = task.task_id.clone();
    let page = fixture
        .store
        .call_blocking(move |db| db.read_events(&id, 0, 10))
        .unwrap();
    let types: Vec<_> = page.events.iter().map(|e| e.event.event_type()).collect();
    assert_eq!(types, ["task.completed"]);
}

#[test]
fn a_large_result_is_spooled_privately_and_reads_back_whole() {
    let fixture = small_spool();
    let task = fixture.task_in(TaskStatus::Running);
    let text = multibyte_text(20);
    assert!(text.len() > 64);
    let stored = store_result(&fixture, &task.task_id, &text).unwrap();
    assert_eq!(stored.storage, ResultStorage::Spool);
    assert_eq!(stored.size_bytes, text.len() as u64);
    assert!(stored.final_response.len() <= 16);
    assert!(text.starts_with(&stored.final_response));
    assert!(!stored.final_response.is_empty());

    let name = stored.spool_name.clone().unwrap();
    assert_eq!(name, format!("{}.txt", task.task_id));
    let path = fixture.state().join(RESULTS_DIR).join(&name);
    let metadata = fs::symlink_metadata(&path).unwrap();
    assert!(metadata.file_type().is_file());
    assert_eq!(metadata.mode() & 0o7777, 0o600);
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    if let Some(independent) = sha256sum(&path) {
        assert_eq!(stored.sha256, independent);
    } else {
        eprintln!("sha256sum not available: digest cross-check skipped");
    }
    // No temp file left behind.
    let names: Vec<_> = fs::read_dir(fixture.state().join(RESULTS_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from(&name)]);

    let id = task.task_id.clone();
    let view = fixture
        .store
        .call_blocking(move |db| db.task_view(&id))
        .unwrap();
    assert!(view.final_response_truncated);
    assert!(view.result.as_ref().unwrap().retrievable);
    let id = task.task_id.clone();
    let types: Vec<_> = fixture
        .store
        .call_blocking(move |db| db.read_events(&id, 0, 10))
        .unwrap()
        .events
        .iter()
        .map(|e| e.event.event_type())
        .collect();
    assert_eq!(types, ["task.result_spooled", "task.completed"]);

    // Chunk sizes 1..=32 (the cap): every chunk is whole characters, and
    // the chunks add up to the text.
    for max in [4_i64, 5, 7, 13, 32] {
        let mut offset = 0_i64;
        let mut whole = String::new();
        loop {
            let id = task.task_id.clone();
            let chunk = fixture
                .store
                .call_blocking(move |db| db.read_result(&id, offset, max))
                .unwrap();
            assert_eq!(chunk.offset_bytes, offset as u64);
            assert!(chunk.text.len() as i64 <= max);
            assert_eq!(chunk.correlation_id.as_deref(), Some("corr-1"));
            whole.push_str(&chunk.text);
            offset = chunk.next_offset_bytes as i64;
            if chunk.eof {
                break;
            }
            assert!(!chunk.text.is_empty());
        }
        assert_eq!(whole, text, "chunk size {max}");
    }
}

#[test]
fn chunk_edges_never_split_a_character() {
    let fixture = small_spool();
    let task = fixture.task_in(TaskStatus::Running);
    let text = format!("{}{}", "€".repeat(30), "😀".repeat(10));
    store_result(&fixture, &task.task_id, &text).unwrap();
    let id = task.task_id.as_str();
    let size = text.len() as i64;

    // Inside the 3-byte '€' at offset 0..3.
    for offset in [1, 2, 91] {
        let error = read(&fixture, id, offset, 10).unwrap_err();
        assert_eq!(
            error.code(),
            BridgeErrorCode::InvalidResultOffset,
            "{offset}"
        );
    }
    // A chunk ending mid-character is trimmed to whole characters.
    assert_eq!(read(&fixture, id, 0, 7).unwrap(), "€€");
    // Too small for even one character.
    let error = read(&fixture, id, 90, 3).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::InvalidResultLimit);
    assert_eq!(read(&fixture, id, 90, 4).unwrap(), "😀");
    // Exactly at the end: empty and eof; past it: refused.
    let at_end = {
        let id = id.to_owned();
        fixture
            .store
            .call_blocking(move |db| db.read_result(&id, size, 10))
            .unwrap()
    };
    assert_eq!((at_end.text.as_str(), at_end.eof), ("", true));
    for (offset, max, code) in [
        (size + 1, 10, BridgeErrorCode::InvalidResultOffset),
        (-1, 10, BridgeErrorCode::InvalidResultOffset),
        (0, 0, BridgeErrorCode::InvalidResultLimit),
        (0, 33, BridgeErrorCode::InvalidResultLimit),
    ] {
        let error = read(&fixture, id, offset, max).unwrap_err();
        assert_eq!(error.code(), code, "{offset} {max}");
    }
}

#[test]
fn results_beyond_the_cap_or_for_ended_tasks_are_refused() {
    let fixture = small_spool();
    let task = fixture.task_in(TaskStatus::Running);
    let error = store_result(&fixture, &task.task_id, &"x".repeat(4_097)).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentResultTooLarge);
    assert_eq!(fixture.get(&task.task_id).status, TaskStatus::Running);

    // Cancelled meanwhile: the result is refused and no file stays behind.
    fixture
        .transition(
            &task.task_id,
            Transition::new(TaskStatus::Running, TaskStatus::Cancelled),
        )
        .unwrap();
    let error = store_result(&fixture, &task.task_id, &"y".repeat(500)).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::InvalidTaskTransition);
    assert_eq!(
        fs::read_dir(fixture.state().join(RESULTS_DIR))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn an_altered_or_missing_spool_file_is_not_served() {
    let fixture = small_spool();
    let task = fixture.task_in(TaskStatus::Running);
    let stored = store_result(&fixture, &task.task_id, &"z".repeat(200)).unwrap();
    let path = fixture
        .state()
        .join(RESULTS_DIR)
        .join(stored.spool_name.unwrap());

    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let error = read(&fixture, &task.task_id, 0, 10).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentResultStorageError);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();

    fs::write(&path, "short").unwrap();
    let error = read(&fixture, &task.task_id, 0, 10).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentResultStorageError);

    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &path).unwrap();
    let error = read(&fixture, &task.task_id, 0, 10).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentResultStorageError);

    fs::remove_file(&path).unwrap();
    let error = read(&fixture, &task.task_id, 0, 10).unwrap_err();
    assert_eq!(error.code(), BridgeErrorCode::AgentResultNotRetrievable);
}

#[test]
fn retention_purges_old_terminal_tasks_with_their_spool_files() {
    let fixture = small_spool();
    let spooled = fixture.task_in(TaskStatus::Running);
    let id = spooled.task_id.as_str();
    fixture.ask(id, super::approval());
    fixture
        .transition(
            id,
            Transition::new(TaskStatus::WaitingForApproval, TaskStatus::Running),
        )
        .unwrap();
    let id_owned = id.to_owned();
    fixture
        .store
        .call_blocking(move |db| db.append_event(&id_owned, &message("hi"), T0 + 1))
        .unwrap();
    let stored = store_result(&fixture, id, &"r".repeat(300)).unwrap();
    let path = fixture
        .state()
        .join(RESULTS_DIR)
        .join(stored.spool_name.unwrap());
    assert!(path.exists());

    let guarded = fixture.task_in(TaskStatus::Cancelled);
    let active = fixture.task_in(TaskStatus::Running);
    let keyed = new_task(Some(("purge-key", "fp")));
    let keyed_id = keyed.task_id.clone();
    fixture
        .store
        .call_blocking(move |db| db.create_task(&keyed, T0))
        .unwrap();
    fixture.drive(&keyed_id, TaskStatus::Interrupted);

    // Completed at T0 + 10 or T0 + 500: a cutoff of T0 + 10 keeps both.
    let kept = fixture
        .store
        .call_blocking(|db| db.purge_terminal_before(T0 + 10, &[]))
        .unwrap();
    assert!(kept.purged.is_empty());

    let keep = vec![guarded.task_id.clone()];
    let report = fixture
        .store
        .call_blocking(move |db| db.purge_terminal_before(T0 + 1_000, &keep))
        .unwrap();
    let mut purged = report.purged.clone();
    purged.sort();
    let mut want = vec![spooled.task_id.clone(), keyed_id.clone()];
    want.sort();
    assert_eq!(purged, want);
    assert!(report.skipped.is_empty());
    assert!(!path.exists(), "spool file removed");

    for gone in [&spooled.task_id, &keyed_id] {
        let id = gone.clone();
        let error = fixture
            .store
            .call_blocking(move |db| db.get_task(&id))
            .unwrap_err();
        assert_eq!(error.code(), BridgeErrorCode::AgentTaskNotFound);
        let id = gone.clone();
        let error = fixture
            .store
            .call_blocking(move |db| db.read_events(&id, 0, 10))
            .unwrap_err();
        assert_eq!(error.code(), BridgeErrorCode::AgentTaskNotFound);
    }
    // Cascades removed the rows too, not just hid them.
    let conn = rusqlite::Connection::open(fixture.state().join("state.sqlite3")).unwrap();
    for table in ["events", "interactions", "results"] {
        let count: i64 = conn
            .query_row(
                &format!("SELECT COUNT(*) FROM {table} WHERE task_id = ?1"),
                [&spooled.task_id],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(count, 0, "{table}");
    }
    // Survivors: guarded by the keep list, and still active.
    fixture.get(&guarded.task_id);
    fixture.get(&active.task_id);
    // The idempotency key is free again.
    let reuse = new_task(Some(("purge-key", "another-fp")));
    let created = fixture
        .store
        .call_blocking(move |db| db.create_task(&reuse, T0 + 2_000))
        .unwrap();
    assert!(matches!(
        created,
        serverfs_agent_bridge::store::Created::New(_)
    ));
}

#[test]
fn leftovers_of_an_interrupted_write_are_swept_at_open() {
    let fixture = small_spool();
    let task = fixture.task_in(TaskStatus::Running);
    let stored = store_result(&fixture, &task.task_id, &"k".repeat(300)).unwrap();
    let results = fixture.state().join(RESULTS_DIR);
    let temp = results.join(".agt_0123456789abcdef01234567.0123456789abcdef.tmp");
    let orphan = results.join("agt_0123456789abcdef01234567.txt");
    let foreign = results.join("notes.txt");
    for path in [&temp, &orphan, &foreign] {
        fs::write(path, "x").unwrap();
    }
    let state = fixture.state();
    let Fixture { dir, store } = fixture;
    store.close().unwrap();

    let store = Store::open(StateDir::open(&state).unwrap(), StoreLimits::default()).unwrap();
    assert!(!temp.exists() && !orphan.exists());
    assert!(
        foreign.exists(),
        "names the store never writes are left alone"
    );
    assert!(results.join(stored.spool_name.unwrap()).exists());
    store.close().unwrap();
    drop(dir);
}
