//! Moving up: a SQLite data folder's store copied into an empty PostgreSQL database, every row
//! with its positions, ids and times, then checked thread by thread (counts and a hash of
//! everything, read back through both stores).
//!
//! The copy is one transaction under the cluster's write lock, so no node writes while it runs
//! and a copy that fails leaves the database as empty as it found it (one that commits but does
//! not read back the same is taken out again). Leases are not copied (a
//! lease belongs to a running process, and a folder being copied must have none); a thread a
//! run still owns refuses the copy.

use crate::digest::{thread_digest, ThreadDigest};
use crate::error::{StoreError, StoreResult};
use crate::postgres::text::with_holdable;
use crate::postgres::{pg, WRITE_LOCK};
use crate::sqlite::db as sqlite;
use crate::{PostgresStore, SqliteStore, Store};
use postgres::types::ToSql;
use rusqlite::types::ValueRef;
use std::path::Path;

/// How a column is carried across: SQLite keeps booleans as integers.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Int,
    Bool,
    Bytes,
}

/// A table, its columns in SQLite (an expression each) and PostgreSQL, and the identity column
/// whose sequence must go on after the copied rows.
struct Table {
    name: &'static str,
    columns: &'static [(&'static str, &'static str, Kind)],
    order: &'static str,
    identity: Option<&'static str>,
}

use Kind::*;

/// Every table, parents before the rows that refer to them.
const TABLES: &[Table] = &[
    Table {
        name: "threads",
        columns: &[
            ("id", "id", Text),
            ("rowid", "ord", Int),
            ("agent", "agent", Text),
            ("parent", "parent", Text),
            ("tags", "tags", Text),
            ("status", "status", Text),
            ("created_at", "created_at", Int),
            ("updated_at", "updated_at", Int),
        ],
        order: "rowid",
        identity: Some("ord"),
    },
    Table {
        name: "messages",
        columns: &[
            ("seq", "seq", Int),
            ("id", "id", Text),
            ("thread", "thread", Text),
            ("role", "role", Text),
            ("content", "content", Text),
            ("name", "name", Text),
            ("tool_calls", "tool_calls", Text),
            ("tool_call_id", "tool_call_id", Text),
            ("created_at", "created_at", Int),
            ("parent_id", "parent_id", Text),
            ("depth", "depth", Int),
            ("silent", "silent", Bool),
            ("metadata", "metadata", Text),
            ("status", "status", Text),
        ],
        order: "seq",
        identity: Some("seq"),
    },
    Table {
        name: "calls",
        columns: &[
            ("thread", "thread", Text),
            ("call_id", "call_id", Text),
            ("tool", "tool", Text),
            ("arguments", "arguments", Text),
            ("message_id", "message_id", Text),
            ("state", "state", Text),
            ("result_message_id", "result_message_id", Text),
            ("intent_at", "intent_at", Int),
            ("completed_at", "completed_at", Int),
            ("position", "position", Int),
        ],
        order: "thread, position",
        identity: None,
    },
    Table {
        name: "kv",
        columns: &[
            ("thread", "thread", Text),
            ("key", "key", Text),
            ("value", "value", Text),
            ("bytes", "bytes", Int),
        ],
        order: "thread, key",
        identity: None,
    },
    Table {
        name: "queue",
        columns: &[
            ("seq", "seq", Int),
            ("thread", "thread", Text),
            ("item", "item", Text),
        ],
        order: "seq",
        identity: Some("seq"),
    },
    Table {
        name: "queue_keys",
        columns: &[("thread", "thread", Text), ("key", "key", Text)],
        order: "thread, key",
        identity: None,
    },
    Table {
        name: "events",
        columns: &[
            ("seq", "seq", Int),
            ("thread", "thread", Text),
            ("kind", "kind", Text),
            ("data", "data", Text),
            ("at", "at", Int),
            ("bytes", "bytes", Int),
        ],
        order: "seq",
        identity: Some("seq"),
    },
    Table {
        name: "files",
        columns: &[
            ("thread", "thread", Text),
            ("path", "path", Text),
            ("parent", "parent", Text),
            ("is_folder", "is_folder", Bool),
            ("size", "size", Int),
            ("mime_type", "mime_type", Text),
            ("message_id", "message_id", Text),
            ("modified_at", "modified_at", Int),
        ],
        order: "thread, path",
        identity: None,
    },
    Table {
        name: "file_chunks",
        columns: &[
            ("thread", "thread", Text),
            ("path", "path", Text),
            ("idx", "idx", Int),
            ("bytes", "bytes", Bytes),
        ],
        order: "thread, path, idx",
        identity: None,
    },
    Table {
        name: "approvals",
        columns: &[
            ("thread", "thread", Text),
            ("call_id", "call_id", Text),
            ("request", "request", Text),
            ("decision", "decision", Text),
            ("requested_at", "requested_at", Int),
            ("decided_at", "decided_at", Int),
            ("seq", "seq", Int),
        ],
        order: "thread, seq",
        identity: None,
    },
    Table {
        name: "variables",
        columns: &[
            ("thread", "thread", Text),
            ("name", "name", Text),
            ("secret", "secret", Bool),
            ("value", "value", Text),
            ("set_at", "set_at", Int),
        ],
        order: "thread, name",
        identity: None,
    },
    Table {
        name: "variable_requests",
        columns: &[
            ("thread", "thread", Text),
            ("id", "id", Text),
            ("rowid", "ord", Int),
            ("names", "names", Text),
            ("requested_at", "requested_at", Int),
            ("answered_at", "answered_at", Int),
        ],
        order: "rowid",
        identity: Some("ord"),
    },
    Table {
        name: "tokens",
        columns: &[
            ("id", "id", Text),
            ("name", "name", Text),
            ("secret_hash", "secret_hash", Text),
            ("scopes", "scopes", Text),
            ("agents", "agents", Text),
            ("created_at", "created_at", Int),
            ("revoked_at", "revoked_at", Int),
            ("expires_at", "expires_at", Int),
        ],
        order: "created_at, id",
        identity: None,
    },
    Table {
        name: "credentials",
        columns: &[
            ("name", "name", Text),
            ("value", "value", Text),
            ("version", "version", Int),
            ("updated_at", "updated_at", Int),
        ],
        order: "name",
        identity: None,
    },
];

/// What a copy did: the rows of each table, and each thread's digest (the same on both sides).
#[derive(Debug, Clone)]
pub struct CopyReport {
    /// Rows copied, per table, in copy order.
    pub tables: Vec<(String, u64)>,
    /// Every thread, checked.
    pub threads: Vec<ThreadDigest>,
}

/// How far a copy is, for a caller that shows progress.
#[derive(Debug, Clone)]
pub enum CopyProgress {
    /// Every row of a table was copied.
    Table {
        /// The table's name.
        name: String,
        /// How many rows it had.
        rows: u64,
    },
    /// A thread was read back from both stores and found the same.
    Checked {
        /// How many threads are checked so far.
        done: usize,
        /// Of how many.
        of: usize,
    },
}

/// Copies the store of the SQLite database `from` into the PostgreSQL database at `to`, which
/// must hold no threads, tokens or credentials yet, then checks every thread. Refused, changing
/// nothing, while a run owns a thread of `from` (its lease has not expired).
pub fn copy_sqlite_to_postgres(
    from: &Path,
    to: &str,
    progress: &mut dyn FnMut(CopyProgress),
) -> StoreResult<CopyReport> {
    if !from.is_file() {
        return Err(StoreError::Backend(
            format!("there is no toolhost store at {}", from.display()).into(),
        ));
    }
    // Both schemas brought up to date by their own stores first.
    let source = SqliteStore::open(from)?;
    let target = PostgresStore::connect(to)?;
    let conn =
        rusqlite::Connection::open_with_flags(from, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(sqlite)?;
    let mut client = crate::postgres::client_for(to)?;
    // Every table is read from one state of the folder.
    conn.execute_batch("BEGIN").map_err(sqlite)?;
    let tables = copy_tables(&conn, &mut client, progress)?;
    let checked = check(&source, &target, progress);
    if checked.is_err() {
        // A copy that does not read back the same is taken out again: the database is left as
        // empty as it was found, for another try.
        let names: Vec<&str> = TABLES.iter().map(|t| t.name).collect();
        client
            .batch_execute(&format!("TRUNCATE {}", names.join(", ")))
            .map_err(pg)?;
    }
    Ok(CopyReport {
        tables,
        threads: checked?,
    })
}

/// Reads every thread back from both stores and compares their digests.
fn check(
    source: &SqliteStore,
    target: &PostgresStore,
    progress: &mut dyn FnMut(CopyProgress),
) -> StoreResult<Vec<ThreadDigest>> {
    let ids: Vec<String> = source.threads(None)?.into_iter().map(|t| t.id).collect();
    let mut threads = Vec::with_capacity(ids.len());
    for (done, id) in ids.iter().enumerate() {
        let before = thread_digest(source, id)?;
        let after = thread_digest(target, id)?;
        if before != after {
            return Err(StoreError::Corrupt(format!(
                "thread {id} differs after the copy: {before:?} in the folder, {after:?} in \
                 PostgreSQL; the copy was taken out again"
            )));
        }
        threads.push(after);
        progress(CopyProgress::Checked {
            done: done + 1,
            of: ids.len(),
        });
    }
    if source.tokens()? != target.tokens()? {
        return Err(StoreError::Corrupt(
            "the API tokens differ after the copy; the copy was taken out again".into(),
        ));
    }
    Ok(threads)
}

/// Copies every table in one transaction under the cluster's write lock.
fn copy_tables(
    from: &rusqlite::Connection,
    to: &mut postgres::Client,
    progress: &mut dyn FnMut(CopyProgress),
) -> StoreResult<Vec<(String, u64)>> {
    let now: i64 = crate::model::now_millis();
    let live: Option<String> = from
        .query_row(
            "SELECT thread FROM leases WHERE expires_at > ?1 LIMIT 1",
            [now],
            |r| r.get(0),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })
        .map_err(sqlite)?;
    if let Some(thread) = live {
        return Err(StoreError::Refused(format!(
            "thread {thread} is being run (its lease has not expired): stop every toolhost \
             that uses the folder first"
        )));
    }
    let mut tx = to.transaction().map_err(pg)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
        .map_err(pg)?;
    let held: i64 = tx
        .query_one(
            "SELECT (SELECT COUNT(*) FROM threads) + (SELECT COUNT(*) FROM tokens)
                  + (SELECT COUNT(*) FROM credentials)",
            &[],
        )
        .map_err(pg)?
        .get(0);
    if held > 0 {
        return Err(StoreError::Refused(
            "the PostgreSQL database already holds threads, tokens or credentials: a copy goes \
             into an empty one"
                .into(),
        ));
    }
    let mut copied = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        let rows = copy_table(from, &mut tx, table)?;
        progress(CopyProgress::Table {
            name: table.name.to_owned(),
            rows,
        });
        copied.push((table.name.to_owned(), rows));
    }
    tx.commit().map_err(pg)?;
    Ok(copied)
}

fn copy_table(
    from: &rusqlite::Connection,
    to: &mut postgres::Transaction<'_>,
    table: &Table,
) -> StoreResult<u64> {
    let sources: Vec<&str> = table.columns.iter().map(|c| c.0).collect();
    let targets: Vec<&str> = table.columns.iter().map(|c| c.1).collect();
    let placeholders: Vec<String> = (1..=targets.len()).map(|i| format!("${i}")).collect();
    let insert = to
        .prepare(&format!(
            "INSERT INTO {} ({}) OVERRIDING SYSTEM VALUE VALUES ({})",
            table.name,
            targets.join(", "),
            placeholders.join(", ")
        ))
        .map_err(pg)?;
    let mut select = from
        .prepare(&format!(
            "SELECT {} FROM {} ORDER BY {}",
            sources.join(", "),
            table.name,
            table.order
        ))
        .map_err(sqlite)?;
    let mut rows = select.query([]).map_err(sqlite)?;
    let mut count = 0u64;
    while let Some(row) = rows.next().map_err(sqlite)? {
        let mut values: Vec<Box<dyn ToSql + Sync>> = Vec::with_capacity(table.columns.len());
        for (i, (column, _, kind)) in table.columns.iter().enumerate() {
            values.push(
                carry(row.get_ref(i).map_err(sqlite)?, *kind).map_err(|why| {
                    StoreError::Corrupt(format!("{}.{column}: {why}", table.name))
                })?,
            );
        }
        // Bound as the store binds its own writes: text that holds U+0000 gets U+FFFD.
        let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
        with_holdable(&refs, |refs| to.execute(&insert, refs)).map_err(pg)?;
        count += 1;
    }
    if let Some(identity) = table.identity {
        // Positions go on after the copied ones, and after any SQLite handed out and then lost
        // with a deleted row: a position is never given twice.
        let handed_out: i64 = from
            .query_row(
                "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?1), 0)",
                [table.name],
                |r| r.get(0),
            )
            .unwrap_or(0);
        to.execute(
            &format!(
                "SELECT setval(pg_get_serial_sequence('{0}', '{1}'),
                    GREATEST((SELECT COALESCE(MAX({1}), 0) FROM {0}), $1::bigint, 1))",
                table.name, identity
            ),
            &[&handed_out],
        )
        .map_err(pg)?;
    }
    Ok(count)
}

/// One SQLite value as the PostgreSQL column of `kind` takes it.
fn carry(value: ValueRef<'_>, kind: Kind) -> Result<Box<dyn ToSql + Sync>, String> {
    Ok(match (value, kind) {
        (ValueRef::Null, Text) => Box::new(None::<String>),
        (ValueRef::Null, Int) => Box::new(None::<i64>),
        (ValueRef::Null, Bool) => Box::new(None::<bool>),
        (ValueRef::Null, Bytes) => Box::new(None::<Vec<u8>>),
        (ValueRef::Text(text), Text) => Box::new(
            std::str::from_utf8(text)
                .map_err(|e| format!("text that is not UTF-8: {e}"))?
                .to_owned(),
        ),
        (ValueRef::Integer(n), Int) => Box::new(n),
        (ValueRef::Integer(n), Bool) => Box::new(n != 0),
        (ValueRef::Blob(bytes), Bytes) => Box::new(bytes.to_vec()),
        (other, _) => return Err(format!("an unexpected {:?} value", other.data_type())),
    })
}
