//! The threads that have work no run is doing, found with one query rather than by reading
//! every thread: what a server takes up when it starts.

use super::db;
use crate::error::StoreResult;
use rusqlite::Connection;

/// Threads whose work no run may be doing, oldest first (see
/// [`crate::Store::threads_with_work`]): the work is looked for itself, whatever the thread's
/// status says, so that a crash between accepting work and running it loses nothing.
pub(super) fn threads_with_work(conn: &Connection) -> StoreResult<Vec<String>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT t.id FROM threads t
             WHERE t.status = 'running'
                OR (t.status <> 'paused'
                    AND EXISTS (SELECT 1 FROM queue q WHERE q.thread = t.id))
                OR (t.status = 'idle'
                    AND (SELECT m.role FROM messages m WHERE m.thread = t.id
                         ORDER BY m.seq DESC LIMIT 1) = 'user')
                OR (t.status = 'paused'
                    AND NOT EXISTS (SELECT 1 FROM approvals a
                                    WHERE a.thread = t.id AND a.decision IS NULL)
                    AND NOT EXISTS (SELECT 1 FROM variable_requests v
                                    WHERE v.thread = t.id AND v.answered_at IS NULL))
             ORDER BY t.created_at, t.rowid",
        )
        .map_err(db)?;
    let rows = stmt.query_map([], |r| r.get(0)).map_err(db)?;
    rows.collect::<Result<_, _>>().map_err(db)
}
