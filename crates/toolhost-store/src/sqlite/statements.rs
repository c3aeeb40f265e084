//! How the store runs its SQL: every statement prepared once per connection and kept.

use super::db;
use crate::error::StoreResult;
use rusqlite::config::DbConfig;
use rusqlite::Connection;

/// How many prepared statements each connection keeps: every statement the store runs, so none
/// is parsed twice.
const STATEMENT_CACHE: usize = 192;

/// Sets a connection up so that a statement is parsed once and kept: a statement cache that
/// holds every statement the store runs, and the query planner's stability guarantee. Without
/// the guarantee SQLite marks a statement whose plan might depend on a bound value (a `LIMIT ?`,
/// a column compared with a parameter) for re-preparing each time its parameters are cleared,
/// which the cache does on every return: the queue read of every step was parsed anew (15% of a
/// busy process's samples). The store keeps no statistics tables, so no plan would change.
pub(super) fn keep_plans(conn: &Connection) -> StoreResult<()> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(db)?;
    Ok(())
}

/// Runs a query for one row through the connection's statement cache (rusqlite's own
/// `query_row` parses its SQL each time, and the hot paths run a few statements many times).
pub(crate) fn query_one<T, P, F>(
    conn: &Connection,
    sql: &str,
    params: P,
    row: F,
) -> rusqlite::Result<T>
where
    P: rusqlite::Params,
    F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
{
    conn.prepare_cached(sql)?.query_row(params, row)
}

/// Runs one statement through the connection's statement cache: the write paths run the same
/// few statements over and over, and parsing them anew took a fifth of the writer's time.
pub(crate) fn exec<P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

#[cfg(test)]
mod tests {
    use super::super::SqliteStore;
    use crate::conformance::*;
    use rusqlite::{ffi, Connection};
    use std::ffi::CStr;

    /// The statements of a connection that SQLite prepared again more than once. Once is
    /// allowed: a statement prepared before its connection first read the schema (a reader's
    /// `BEGIN`) is prepared again when it does.
    /// rusqlite does not list a connection's statements, so this walks SQLite's own list.
    #[allow(unsafe_code)]
    fn prepared_again(conn: &Connection) -> Vec<String> {
        let mut found = Vec::new();
        // SAFETY: the connection is locked for the walk, and each statement pointer comes from
        // SQLite's own list of that connection's statements, read only until the next step.
        unsafe {
            let db = conn.handle();
            let mut stmt = ffi::sqlite3_next_stmt(db, std::ptr::null_mut());
            while !stmt.is_null() {
                let times = ffi::sqlite3_stmt_status(stmt, ffi::SQLITE_STMTSTATUS_REPREPARE, 0);
                if times > 1 {
                    let sql = CStr::from_ptr(ffi::sqlite3_sql(stmt)).to_string_lossy();
                    found.push(format!("{times} times: {sql}"));
                }
                stmt = ffi::sqlite3_next_stmt(db, stmt);
            }
        }
        found
    }

    #[test]
    fn statements_are_not_prepared_again_at_each_use() {
        type Case = fn(&dyn crate::Store);
        let cases: [(&str, Case); 12] = [
            ("messages", messages_keep_order_and_every_field),
            ("journal", calls_are_journaled_intent_then_result_once),
            ("values", values_are_set_overwritten_and_deleted_by_null),
            (
                "queue",
                queued_work_is_ordered_and_dequeued_through_a_position,
            ),
            ("queue once", work_queued_once_under_a_key_is_queued_once),
            ("events", events_and_status_are_stored),
            ("files", files_and_folders_behave_like_a_file_system),
            (
                "approvals",
                approvals_are_decided_once_and_only_when_they_match,
            ),
            ("variables", variables_and_their_requests_are_stored),
            ("leases", leases_are_renewed_and_carry_stop_requests),
            ("pages", lists_come_a_page_at_a_time),
            (
                "since",
                every_threads_messages_and_events_follow_in_store_order,
            ),
        ];
        let dir = std::env::temp_dir().join(format!("toolhost-plans-{}", std::process::id()));
        for (n, (name, case)) in cases.into_iter().enumerate() {
            // In memory, the writer and the reader are one connection: both sides are seen. On
            // a file, the read connections are.
            let file = dir.join(format!("{n}.db"));
            std::fs::create_dir_all(&dir).unwrap();
            for store in [
                SqliteStore::in_memory().unwrap(),
                SqliteStore::open(&file).unwrap(),
            ] {
                case(&store);
                for reader in &store.readers {
                    let again = prepared_again(&super::super::lock_conn(reader));
                    assert!(again.is_empty(), "{name}: prepared again: {again:#?}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
