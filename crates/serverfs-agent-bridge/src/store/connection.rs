//! Connection discipline: one dedicated thread owns the SQLite connection;
//! callers send it closures and await the answer.
//!
//! SQLite calls block (disk, fsync, `busy_timeout`), so they never run on
//! the async executor. Sending a job is a non-blocking push onto an
//! unbounded channel; the answer comes back on a `oneshot`. Jobs run one
//! at a time in submission order, so the store is serialized without a
//! mutex, and each typed operation of [`Db`] is one SQLite transaction.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

use super::dir::StateDir;
use super::error::StoreError;
use super::schema;
use super::{StoreLimits, spool};

/// How long a statement waits for another connection's write lock before
/// failing with `SQLITE_BUSY` (spec §7.2).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

type Job = Box<dyn FnOnce(&mut Db) + Send>;

enum Message {
    Job(Job),
    Close(mpsc::SyncSender<Result<(), StoreError>>),
}

/// The Bridge's durable task store: a handle to the database thread.
///
/// Cheap to clone; every clone talks to the same thread. The thread stops
/// when [`Store::close`] is called or the last handle is dropped; dropping
/// without closing loses nothing (every operation has committed before it
/// answers), it only skips the final permission re-check.
///
/// # Security
///
/// The database lives in a checked [`StateDir`]: private at creation,
/// refused when unsafe.
#[derive(Debug, Clone)]
pub struct Store {
    sender: mpsc::Sender<Message>,
}

/// The database side of the store: typed operations, each one SQLite
/// transaction, available inside [`Store::call`] closures.
#[derive(Debug)]
pub struct Db {
    pub(crate) conn: Connection,
    pub(crate) limits: StoreLimits,
    pub(crate) state: StateDir,
}

impl Store {
    /// Opens the store in `state`: starts the database thread, configures
    /// the connection, migrates the schema, and clears spool leftovers of
    /// an interrupted result write. Blocks until that is done (start-up).
    ///
    /// # Errors
    ///
    /// [`StoreError::InvalidLimits`], [`StoreError::SchemaTooNew`],
    /// [`StoreError::SchemaUnknown`], [`StoreError::UnsafeState`] (the
    /// database files are re-checked after SQLite opened them) and
    /// [`StoreError::Database`].
    pub fn open(state: StateDir, limits: StoreLimits) -> Result<Store, StoreError> {
        Store::start(state, limits, Access::ReadWrite)
    }

    /// Opens an existing store for reading only, beside a running Bridge
    /// (`inspect`): no migration, no spool sweep, no write of any kind —
    /// the live Bridge may be writing a result file that no row names yet.
    ///
    /// # Errors
    ///
    /// As [`Store::open`]; [`StoreError::SchemaUnknown`] for a database at
    /// another schema version.
    pub fn open_read_only(state: StateDir, limits: StoreLimits) -> Result<Store, StoreError> {
        Store::start(state, limits, Access::ReadOnly)
    }

    fn start(state: StateDir, limits: StoreLimits, access: Access) -> Result<Store, StoreError> {
        limits.validate()?;
        let (sender, receiver) = mpsc::channel::<Message>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), StoreError>>(1);
        thread::Builder::new()
            .name("bridge-store".to_owned())
            .spawn(move || {
                let db = match Db::open(state, limits, access) {
                    Ok(db) => {
                        let _ = ready_tx.send(Ok(()));
                        db
                    }
                    Err(error) => {
                        let _ = ready_tx.send(Err(error));
                        return;
                    }
                };
                serve(db, &receiver);
            })
            .map_err(|source| StoreError::StateUnavailable {
                part: super::error::StatePart::Database,
                source,
            })?;
        ready_rx.recv().map_err(|_| StoreError::Closed)??;
        Ok(Store { sender })
    }

    /// Runs `operation` on the database thread and awaits its answer. The
    /// async task is suspended, never blocked.
    ///
    /// # Errors
    ///
    /// Whatever `operation` returns; [`StoreError::Closed`] when the store
    /// was closed; [`StoreError::Panicked`] when `operation` panicked (its
    /// open transaction is rolled back and the thread carries on).
    pub async fn call<R, F>(&self, operation: F) -> Result<R, StoreError>
    where
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
        R: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.submit(operation, move |result| {
            let _ = reply.send(result);
        })?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// [`Store::call`] for start-up and command-line code: blocks the
    /// calling thread until the answer arrives. Never call it from an async
    /// task.
    ///
    /// # Errors
    ///
    /// As [`Store::call`].
    pub fn call_blocking<R, F>(&self, operation: F) -> Result<R, StoreError>
    where
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
        R: Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel(1);
        self.submit(operation, move |result| {
            let _ = reply.send(result);
        })?;
        answer.recv().map_err(|_| StoreError::Closed)?
    }

    /// Stops the database thread after the jobs already sent, closes the
    /// connection (SQLite checkpoints the WAL on the last close), and
    /// re-checks the database files (spec §7.1). Blocks briefly; other
    /// clones answer [`StoreError::Closed`] afterwards.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnsafeState`] when a database file became unsafe;
    /// [`StoreError::Closed`] when the thread had already stopped.
    pub fn close(self) -> Result<(), StoreError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.sender
            .send(Message::Close(reply))
            .map_err(|_| StoreError::Closed)?;
        answer.recv().map_err(|_| StoreError::Closed)?
    }

    fn submit<R, F, A>(&self, operation: F, answer: A) -> Result<(), StoreError>
    where
        F: FnOnce(&mut Db) -> Result<R, StoreError> + Send + 'static,
        A: FnOnce(Result<R, StoreError>) + Send + 'static,
    {
        let job: Job = Box::new(move |db: &mut Db| {
            // A panicking operation must not take the store down with it:
            // its `Transaction` is dropped during unwinding, which rolls it
            // back, and the connection stays usable.
            let result = catch_unwind(AssertUnwindSafe(|| operation(db)))
                .unwrap_or(Err(StoreError::Panicked));
            answer(result);
        });
        self.sender
            .send(Message::Job(job))
            .map_err(|_| StoreError::Closed)
    }
}

fn serve(mut db: Db, receiver: &mpsc::Receiver<Message>) {
    while let Ok(message) = receiver.recv() {
        match message {
            Message::Job(job) => job(&mut db),
            Message::Close(reply) => {
                let Db { conn, state, .. } = db;
                let closed = conn
                    .close()
                    .map_err(|(_, error)| StoreError::Database(error))
                    .and_then(|()| state.check_database_files());
                let _ = reply.send(closed);
                return;
            }
        }
    }
}

/// How a store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// The Bridge's own store.
    ReadWrite,
    /// A reader beside the Bridge.
    ReadOnly,
}

impl Db {
    fn open(state: StateDir, limits: StoreLimits, access: Access) -> Result<Db, StoreError> {
        // No URI parsing, no creation: `StateDir` created the file 0600.
        let flags = match access {
            Access::ReadWrite => OpenFlags::SQLITE_OPEN_READ_WRITE,
            Access::ReadOnly => OpenFlags::SQLITE_OPEN_READ_ONLY,
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(state.database_path(), flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        if access == Access::ReadOnly {
            let found: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
            if found != schema::SCHEMA_VERSION {
                return Err(StoreError::SchemaUnknown);
            }
            return Ok(Db {
                conn,
                limits,
                state,
            });
        }
        // WAL: readers never block the writer and a crash leaves either the
        // committed transaction or nothing (ARCHITECTURE.md invariant 8).
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::corrupt("journal mode"));
        }
        // FULL, not NORMAL: in WAL mode NORMAL survives an application
        // crash but may lose the last commits on power loss or an OS crash,
        // because the WAL is only synced at checkpoints. "Nothing is lost"
        // includes an answered approval and a recorded result, and the
        // Bridge commits rarely (state changes and events, not tokens), so
        // one fsync per commit is the right price.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut db = Db {
            conn,
            limits,
            state,
        };
        schema::migrate(&mut db.conn)?;
        db.state.check_database_files()?;
        spool::sweep_leftovers(&db)?;
        Ok(db)
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> &StoreLimits {
        &self.limits
    }
}
