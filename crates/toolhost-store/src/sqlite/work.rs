//! The threads that have work no run is doing, found with one query rather than by reading
//! every thread: what a server takes up when it starts.

use super::db;
use crate::error::StoreResult;
use rusqlite::Connection;

/// Running threads, and idle ones with queued work or whose last message is a person's,
/// oldest first.
pub(super) fn threads_with_work(conn: &Connection) -> StoreResult<Vec<String>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT t.id FROM threads t
             WHERE t.status = 'running'
                OR (t.status = 'idle' AND (
                    EXISTS (SELECT 1 FROM queue q WHERE q.thread = t.id)
                    OR (SELECT m.role FROM messages m WHERE m.thread = t.id
                        ORDER BY m.seq DESC LIMIT 1) = 'user'))
             ORDER BY t.created_at, t.rowid",
        )
        .map_err(db)?;
    let rows = stmt.query_map([], |r| r.get(0)).map_err(db)?;
    rows.collect::<Result<_, _>>().map_err(db)
}
