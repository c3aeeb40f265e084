//! The SQLite backend: one database file, WAL mode, `synchronous=FULL`.
//!
//! One connection serves every call, behind a mutex: SQLite allows one writer at a time anyway,
//! and a single connection makes every read a consistent snapshot without further ceremony.

mod apply;
mod files;
mod gates;
mod leases;
mod read;
mod schema;

use crate::error::{StoreError, StoreResult};
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = schema::MIGRATIONS.len() as i64;

/// A store in one SQLite file.
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

pub(crate) fn db(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(Box::new(e))
}

pub(crate) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    /// A database written by a newer toolhost is refused and left as it is.
    pub fn open(path: &Path) -> StoreResult<Self> {
        let conn = Connection::open(path).map_err(db)?;
        Self::init(conn)
    }

    /// A private in-memory database, for tests and throw-away runs.
    pub fn in_memory() -> StoreResult<Self> {
        Self::init(Connection::open_in_memory().map_err(db)?)
    }

    fn init(mut conn: Connection) -> StoreResult<Self> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
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
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    /// The journal mode and `synchronous` level in force, as SQLite reports them
    /// (`("wal", 2)` means WAL with FULL synchronisation).
    pub fn durability_settings(&self) -> StoreResult<(String, i64)> {
        let conn = self.lock();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(db)?;
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .map_err(db)?;
        Ok((mode, sync))
    }

    /// The connection; a panic in another holder does not make the database unusable.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// How long a connection waits for another one's lock before it gives up.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

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
    let found: Option<i64> = conn
        .query_row("SELECT 1 FROM threads WHERE id = ?1", [thread], |r| {
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
