//! The SQLite backend: one database file, WAL mode, `synchronous=FULL`.
//!
//! One writer thread owns the write connection and applies every write; writes that arrive
//! together share one commit ([`writer`]). Reads use a small pool of read connections beside it
//! (WAL lets them read while the writer writes); each read runs in a read transaction of its
//! own, so a read that takes several queries sees one snapshot. An in-memory database has one
//! connection and no writer thread: its writes and reads take turns on it, on the caller's
//! thread. Every connection keeps its statements and their plans ([`statements`]).

mod apply;
mod delete;
mod files;
mod gates;
mod leases;
mod pages;
mod read;
mod rows;
mod schema;
mod statements;
mod tokens;
mod work;
mod writer;

pub(crate) use crate::error::corrupt;
use crate::error::{StoreError, StoreResult};
use rusqlite::{Connection, OpenFlags};
use statements::keep_plans;
pub(crate) use statements::{exec, query_one};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use writer::{Job, Reply, TypedJob};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = schema::MIGRATIONS.len() as i64;

/// How many pages the log holds before a commit copies them into the database (a checkpoint):
/// eight times SQLite's default. Under load the same pages (the tables' and indexes' hot
/// leaves) change in commit after commit; a checkpoint copies each once however often it
/// changed, so rarer checkpoints write less. Measured with 100 threads at once (durable
/// throughput bench, alternating runs): about a quarter more cycles per second than with
/// 1,000 pages. The log file grows to about 32 MiB (at 4 KiB pages) and is reused from then on;
/// until it first gets there each flush also records its new size, so a lone thread on a new
/// data folder runs some 10-15% slower at first.
const CHECKPOINT_PAGES: i64 = 8_000;

/// How many read connections a file database gets.
const READERS: usize = 4;

/// A store in one SQLite file.
pub struct SqliteStore {
    /// Feeds the writer thread; `None` only while the store is dropped.
    writes: Option<Sender<Box<dyn Job>>>,
    writer: Option<std::thread::JoinHandle<()>>,
    readers: Vec<Arc<Mutex<Connection>>>,
    next_reader: AtomicUsize,
    /// Counts of writes and commits, and the notices of commits (see [`writer::Told`]).
    told: Arc<writer::Told>,
    /// In memory: the one connection, written on the caller's thread (no writer thread, since
    /// there is no disk to share commits of).
    in_place: Option<Arc<Mutex<Connection>>>,
}

/// How many writes the store applied and in how many commits: with many writers at once,
/// fewer commits than writes means writes shared a commit (and its fsync).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStats {
    /// Writes applied (batches, thread creations, lease operations).
    pub writes: u64,
    /// Transactions committed for them.
    pub commits: u64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

pub(crate) fn db(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(Box::new(e))
}

/// SQLite reports a FIFO or a device in place of the database only as "disk I/O error"; this
/// says what the path is instead. A missing file is fine (it is created).
fn refuse_special_file(path: &Path) -> StoreResult<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if meta.is_file() {
        return Ok(());
    }
    #[cfg(unix)]
    let kind = {
        use std::os::unix::fs::FileTypeExt as _;
        let t = meta.file_type();
        if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_dir() {
            "a folder"
        } else {
            "something else"
        }
    };
    #[cfg(not(unix))]
    let kind = if meta.is_dir() {
        "a folder"
    } else {
        "something else"
    };
    Err(StoreError::Backend(
        format!(
            "the database {} is {kind}, not a regular file",
            path.display()
        )
        .into(),
    ))
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    /// A database written by a newer toolhost is refused and left as it is.
    pub fn open(path: &Path) -> StoreResult<Self> {
        refuse_special_file(path)?;
        let conn = Self::init(Connection::open(path).map_err(db)?)?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let reader = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(db)?;
            reader.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
            keep_plans(&reader)?;
            // Only the writer writes.
            reader.execute_batch("PRAGMA query_only = 1").map_err(db)?;
            readers.push(Arc::new(Mutex::new(reader)));
        }
        Self::start(Arc::new(Mutex::new(conn)), readers)
    }

    /// A private in-memory database, for tests and throw-away runs: the same semantics as a
    /// file, nothing on disk.
    pub fn in_memory() -> StoreResult<Self> {
        let conn = Arc::new(Mutex::new(Self::init(
            Connection::open_in_memory().map_err(db)?,
        )?));
        Ok(Self {
            writes: None,
            writer: None,
            readers: vec![conn.clone()],
            next_reader: AtomicUsize::new(0),
            told: Arc::default(),
            in_place: Some(conn),
        })
    }

    fn start(
        conn: Arc<Mutex<Connection>>,
        readers: Vec<Arc<Mutex<Connection>>>,
    ) -> StoreResult<Self> {
        let (writes, jobs) = mpsc::channel();
        let told = Arc::new(writer::Told::default());
        let seen = told.clone();
        let writer = std::thread::Builder::new()
            .name("toolhost-store-writer".to_owned())
            .spawn(move || writer::run_writer(conn, jobs, seen))
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        Ok(Self {
            writes: Some(writes),
            writer: Some(writer),
            readers,
            next_reader: AtomicUsize::new(0),
            told,
            in_place: None,
        })
    }

    /// Opens the write connection and brings the schema up to date.
    fn init(mut conn: Connection) -> StoreResult<Connection> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        keep_plans(&conn)?;
        let version = user_version(&conn)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        // Switching to WAL takes an exclusive lock that the busy handler does not wait for, so
        // a process that opens a new data folder beside others retries it.
        let started = std::time::Instant::now();
        loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => return Err(db(e)),
            }
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(db)?;
        conn.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES)
            .map_err(db)?;
        if version < SCHEMA_VERSION {
            // Under the database's write lock, and from the version read inside it: of many
            // processes opening a new folder at once, the first migrates and the rest see it done.
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(db)?;
            let version = user_version(&tx)?;
            if version > SCHEMA_VERSION {
                return Err(StoreError::SchemaTooNew {
                    found: version,
                    known: SCHEMA_VERSION,
                });
            }
            for migration in schema::MIGRATIONS.iter().skip(version as usize) {
                tx.execute_batch(migration).map_err(db)?;
            }
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(db)?;
            tx.commit().map_err(db)?;
        }
        Ok(conn)
    }

    /// Runs `work` on the writer thread inside the next group's transaction and returns its
    /// result once the group is committed (in memory: at once, on this thread). A write that
    /// changes a thread goes through [`SqliteStore::write_to`] instead, so that its commit is
    /// told.
    pub(crate) fn write<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        self.write_job(work, None)
    }

    /// [`SqliteStore::write`] of a write that changes `thread`: its commit is told to the
    /// store's listeners ([`crate::Store::commits`]).
    pub(crate) fn write_to<T, F>(&self, thread: &str, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        self.write_job(work, Some(thread.to_owned()))
    }

    fn write_job<T, F>(&self, work: F, thread: Option<String>) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let (reply, outcome) = mpsc::sync_channel(1);
        self.send(Box::new(TypedJob::new(
            work,
            Reply::Blocking(reply),
            thread,
        )))?;
        outcome.recv().map_err(|_| writer_gone())?
    }

    /// Like [`SqliteStore::write_to`], without blocking: the future resolves once the group is
    /// committed.
    pub(crate) fn write_to_async<T, F>(
        &self,
        thread: &str,
        work: F,
    ) -> impl std::future::Future<Output = StoreResult<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let (reply, outcome) = tokio::sync::oneshot::channel();
        let job = TypedJob::new(work, Reply::Async(reply), Some(thread.to_owned()));
        let sent = self.send(Box::new(job));
        async move {
            sent?;
            outcome.await.map_err(|_| writer_gone())?
        }
    }

    fn send(&self, job: Box<dyn Job>) -> StoreResult<()> {
        if let Some(conn) = &self.in_place {
            writer::apply_group(&lock_conn(conn), vec![job], &self.told);
            return Ok(());
        }
        self.writes
            .as_ref()
            .ok_or_else(writer_gone)?
            .send(job)
            .map_err(|_| writer_gone())
    }

    /// The journal mode and `synchronous` level in force on the write connection, as SQLite
    /// reports them (`("wal", 2)` means WAL with FULL synchronisation).
    pub fn durability_settings(&self) -> StoreResult<(String, i64)> {
        self.write(|conn| {
            let mode: String = conn
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .map_err(db)?;
            let sync: i64 = conn
                .query_row("PRAGMA synchronous", [], |r| r.get(0))
                .map_err(db)?;
            Ok((mode, sync))
        })
    }

    /// How many writes were applied in how many commits since the store was opened.
    pub fn write_stats(&self) -> WriteStats {
        WriteStats {
            writes: self.told.counters.writes.load(Ordering::Relaxed),
            commits: self.told.counters.commits.load(Ordering::Relaxed),
        }
    }

    /// A read connection in a read transaction of its own: every query made through it sees
    /// the same snapshot, and it is given back when dropped.
    fn lock(&self) -> ReadGuard<'_> {
        let n = self.readers.len();
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        let conn = (0..n)
            .find_map(|i| self.readers[(start + i) % n].try_lock().ok())
            .unwrap_or_else(|| lock_conn(&self.readers[start % n]));
        // A failed BEGIN only loses the snapshot guarantee of a many-query read; the queries
        // themselves still report their own errors.
        let open = exec(&conn, "BEGIN", []).is_ok();
        ReadGuard { conn, open }
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // The writer ends when its channel closes, after the writes already sent.
        drop(self.writes.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// A read connection, in a read transaction until it is dropped.
pub(crate) struct ReadGuard<'a> {
    conn: MutexGuard<'a, Connection>,
    open: bool,
}

impl std::ops::Deref for ReadGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = exec(&self.conn, "COMMIT", []);
        }
    }
}

fn writer_gone() -> StoreError {
    StoreError::Backend("the store's writer has stopped".into())
}

/// A connection's lock; a panic in another holder does not make the database unusable.
pub(crate) fn lock_conn(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long a connection waits for another one's lock before it gives up; shorter than the
/// runtime's default lease, so a renewal that waits behind another process's write still lands.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

fn user_version(conn: &Connection) -> StoreResult<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(db)
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Fails with [`StoreError::ThreadNotFound`] unless the thread exists.
pub(crate) fn require_thread(conn: &Connection, thread: &str) -> StoreResult<()> {
    let found: Option<i64> =
        query_one(conn, "SELECT 1 FROM threads WHERE id = ?1", [thread], |r| {
            r.get(0)
        })
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(db(e)),
        })?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::ThreadNotFound(thread.to_owned())),
    }
}
