//! State shared by every session of one mock server: threads, id counters
//! and the log of received messages.
//!
//! A real Codex keeps threads as rollouts under `CODEX_HOME`, so a thread
//! started on one connection can be resumed or read on another, even by
//! another `codex app-server` process (the Bridge's stdio transport spawns
//! one per turn). Sessions of one mock share a [`MockState`]; with
//! [`MockState::with_thread_store`] separate processes share threads too.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::diag;

/// Threads, counters and the message log of one mock server, shared by
/// all its sessions (clone it freely: clones share everything).
#[derive(Clone)]
pub struct MockState {
    codex_home: Arc<Path>,
    log_file: Option<Arc<Path>>,
    store: Option<Arc<Path>>,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    threads: Threads,
    messages: Vec<Value>,
}

/// What [`MockState::with_thread_store`] persists.
#[derive(Default)]
struct Threads {
    threads_started: u64,
    turns_started: u64,
    by_id: BTreeMap<String, ThreadRecord>,
}

/// What the mock remembers about a thread.
#[derive(Clone)]
pub(crate) struct ThreadRecord {
    /// The `<n>` of `thread-<n>`; its parity picks the `thread/read` status
    /// shape.
    pub(crate) number: u64,
    pub(crate) cwd: String,
    pub(crate) model: String,
    pub(crate) created_at: i64,
    pub(crate) turns: Vec<TurnRecord>,
}

/// A turn as `thread/read` reports it.
#[derive(Clone)]
pub(crate) struct TurnRecord {
    pub(crate) id: String,
    /// Codex's turn status string: `inProgress`, `completed`,
    /// `interrupted` or `failed`.
    pub(crate) status: &'static str,
    /// The process that runs (or ran) the turn.
    pub(crate) owner: u32,
}

impl ThreadRecord {
    /// Whether a turn of this thread is running in this process. A turn
    /// left `inProgress` by another process (a killed or orphaned stdio
    /// app-server) is not: a fresh Codex process reports such a thread as
    /// not loaded, never as active (measured on 0.171.0, spec-adapters
    /// §1.9). The daemon runs every turn in its one process, so a turn whose
    /// client went away stays active there.
    pub(crate) fn running_here(&self) -> bool {
        let me = std::process::id();
        self.turns
            .iter()
            .any(|turn| turn.status == "inProgress" && turn.owner == me)
    }
}

impl MockState {
    /// A fresh state whose `initialize` answers report `codex_home`.
    /// Threads live in memory and received messages are kept in memory only
    /// (see [`MockState::with_log_file`], [`MockState::with_thread_store`]).
    pub fn new(codex_home: impl Into<PathBuf>) -> MockState {
        MockState {
            codex_home: Arc::from(codex_home.into()),
            log_file: None,
            store: None,
            inner: Arc::default(),
        }
    }

    /// Also appends every received message, one JSON line each, to `path`.
    /// Default: no file.
    pub fn with_log_file(mut self, path: impl Into<PathBuf>) -> MockState {
        self.log_file = Some(Arc::from(path.into()));
        self
    }

    /// Keeps threads and id counters in the JSON file `path` (locked with
    /// `flock` on `<path>.lock` around each change), so every mock process
    /// using the same file sees the same threads, as Codex processes
    /// sharing one `CODEX_HOME` do. Default: memory only.
    pub fn with_thread_store(mut self, path: impl Into<PathBuf>) -> MockState {
        self.store = Some(Arc::from(path.into()));
        self
    }

    /// Every message received so far by any session of this process, in
    /// arrival order. A line that was not JSON appears as a JSON string of
    /// its (lossy) text.
    pub fn messages(&self) -> Vec<Value> {
        self.lock().messages.clone()
    }

    /// The `codexHome` reported by `initialize`.
    pub fn codex_home(&self) -> &Path {
        &self.codex_home
    }

    /// Records one received message in memory and in the log file.
    pub(crate) fn record(&self, msg: &Value) {
        self.lock().messages.push(msg.clone());
        let Some(path) = &self.log_file else { return };
        // One write of a whole line to an O_APPEND file: lines from
        // concurrent connections (or processes) never interleave.
        let line = format!("{msg}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(line.as_bytes()));
        if let Err(e) = written {
            diag(&format!("cannot append to {}: {e}", path.display()));
        }
    }

    /// Creates `thread-<n>` and returns its id and record.
    pub(crate) fn new_thread(&self, cwd: String, model: String) -> (String, ThreadRecord) {
        self.with_threads(|threads| {
            threads.threads_started += 1;
            let number = threads.threads_started;
            let id = format!("thread-{number}");
            let record = ThreadRecord {
                number,
                cwd,
                model,
                created_at: now_ms() / 1000,
                turns: Vec::new(),
            };
            threads.by_id.insert(id.clone(), record.clone());
            (id, record)
        })
    }

    /// A copy of a thread's record.
    pub(crate) fn thread(&self, id: &str) -> Option<ThreadRecord> {
        self.with_threads(|threads| threads.by_id.get(id).cloned())
    }

    /// Changes a known thread's model (a `thread/resume` override).
    pub(crate) fn set_thread_model(&self, id: &str, model: String) {
        self.with_threads(|threads| {
            if let Some(thread) = threads.by_id.get_mut(id) {
                thread.model = model;
            }
        });
    }

    /// Adds an `inProgress` turn to a known thread and returns its number
    /// (`turn-<n>`); `None` if the thread is unknown.
    pub(crate) fn new_turn(&self, thread_id: &str) -> Option<u64> {
        self.with_threads(|threads| {
            let number = threads.turns_started + 1;
            let thread = threads.by_id.get_mut(thread_id)?;
            thread.turns.push(TurnRecord {
                id: format!("turn-{number}"),
                status: "inProgress",
                owner: std::process::id(),
            });
            threads.turns_started = number;
            Some(number)
        })
    }

    /// Ends every turn still `inProgress` as `interrupted` and returns how
    /// many there were: a test's stand-in for a daemon finishing the turn
    /// of a client that went away (a killed Bridge), which no client can
    /// interrupt any more.
    pub fn interrupt_open_turns(&self) -> usize {
        self.with_threads(|threads| {
            let mut ended = 0;
            for turn in threads.by_id.values_mut().flat_map(|t| t.turns.iter_mut()) {
                if turn.status == "inProgress" {
                    turn.status = "interrupted";
                    ended += 1;
                }
            }
            ended
        })
    }

    /// Sets the final status of a turn.
    pub(crate) fn finish_turn(&self, thread_id: &str, turn_id: &str, status: &'static str) {
        self.with_threads(|threads| {
            let turn = threads
                .by_id
                .get_mut(thread_id)
                .and_then(|t| t.turns.iter_mut().find(|turn| turn.id == turn_id));
            if let Some(turn) = turn {
                turn.status = status;
            }
        });
    }

    /// Runs `f` on the threads; with a store, on the stored copy under an
    /// exclusive `flock`, saving afterwards. Store failures are reported on
    /// stderr and the in-memory copy is used: a test then fails on the
    /// missing thread rather than on a panic in the mock.
    fn with_threads<R>(&self, f: impl FnOnce(&mut Threads) -> R) -> R {
        let mut inner = self.lock();
        let Some(store) = &self.store else {
            return f(&mut inner.threads);
        };
        let lock = match lock_store(store) {
            Ok(lock) => lock,
            Err(e) => {
                diag(&format!("cannot lock {}: {e}", store.display()));
                return f(&mut inner.threads);
            }
        };
        match std::fs::read(store) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(value) => inner.threads = Threads::from_json(&value),
                Err(e) => diag(&format!("ignoring unreadable {}: {e}", store.display())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => diag(&format!("cannot read {}: {e}", store.display())),
        }
        let result = f(&mut inner.threads);
        // Write then rename: a reader never sees half a file.
        let mut tmp = store.as_os_str().to_owned();
        tmp.push(".tmp");
        let saved = std::fs::write(&tmp, inner.threads.to_json().to_string())
            .and_then(|()| std::fs::rename(&tmp, store));
        if let Err(e) = saved {
            diag(&format!("cannot save {}: {e}", store.display()));
        }
        drop(lock);
        result
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves plain data behind;
        // keep serving rather than cascading the panic into every session.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Takes an exclusive `flock` on `<store>.lock`; released when the file
/// is closed.
fn lock_store(store: &Path) -> std::io::Result<File> {
    let mut path = store.as_os_str().to_owned();
    path.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(file)
}

impl Threads {
    fn to_json(&self) -> Value {
        let threads: serde_json::Map<String, Value> = self
            .by_id
            .iter()
            .map(|(id, t)| {
                let turns: Vec<Value> = t
                    .turns
                    .iter()
                    .map(
                        |turn| json!({ "id": turn.id, "status": turn.status, "owner": turn.owner }),
                    )
                    .collect();
                let record = json!({
                    "number": t.number, "cwd": t.cwd, "model": t.model,
                    "createdAt": t.created_at, "turns": turns,
                });
                (id.clone(), record)
            })
            .collect();
        json!({
            "threadsStarted": self.threads_started,
            "turnsStarted": self.turns_started,
            "threads": threads,
        })
    }

    /// The inverse of [`Threads::to_json`]; malformed parts are skipped.
    fn from_json(value: &Value) -> Threads {
        let text =
            |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        let by_id = value
            .get("threads")
            .and_then(Value::as_object)
            .map(|threads| {
                threads
                    .iter()
                    .map(|(id, t)| {
                        let turns = t
                            .get("turns")
                            .and_then(Value::as_array)
                            .map(|turns| {
                                turns
                                    .iter()
                                    .map(|turn| TurnRecord {
                                        id: text(turn, "id"),
                                        status: static_status(turn.get("status")),
                                        owner: turn
                                            .get("owner")
                                            .and_then(Value::as_u64)
                                            .and_then(|pid| u32::try_from(pid).ok())
                                            .unwrap_or(0),
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        let record = ThreadRecord {
                            number: t.get("number").and_then(Value::as_u64).unwrap_or(0),
                            cwd: text(t, "cwd"),
                            model: text(t, "model"),
                            created_at: t.get("createdAt").and_then(Value::as_i64).unwrap_or(0),
                            turns,
                        };
                        (id.clone(), record)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let counter = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
        Threads {
            threads_started: counter("threadsStarted"),
            turns_started: counter("turnsStarted"),
            by_id,
        }
    }
}

/// A stored turn status as one of Codex's four (`failed` if unknown).
fn static_status(status: Option<&Value>) -> &'static str {
    match status.and_then(Value::as_str) {
        Some("inProgress") => "inProgress",
        Some("completed") => "completed",
        Some("interrupted") => "interrupted",
        Some(_) | None => "failed",
    }
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
