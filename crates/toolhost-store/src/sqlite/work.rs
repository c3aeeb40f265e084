//! The threads that have work no run is doing, found with one query rather than by reading
//! every thread: what a server takes up when it starts.

use super::db;
use crate::error::StoreResult;
use crate::rules::threads_with_work_sql;
use rusqlite::Connection;

/// Threads whose work no run may be doing, oldest first (see
/// [`crate::Store::threads_with_work`]).
pub(super) fn threads_with_work(conn: &Connection) -> StoreResult<Vec<String>> {
    let mut stmt = conn
        .prepare_cached(&threads_with_work_sql("rowid"))
        .map_err(db)?;
    let rows = stmt.query_map([], |r| r.get(0)).map_err(db)?;
    rows.collect::<Result<_, _>>().map_err(db)
}
