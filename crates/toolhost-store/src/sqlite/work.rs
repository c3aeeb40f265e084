//! The threads that have work no run is doing, found with one query rather than by reading
//! every thread: what a server takes up when it starts; and work offered to any process with
//! room for it.

use super::{db, require_thread};
use crate::error::StoreResult;
use crate::rules::{threads_with_unowned_work_sql, threads_with_work_sql};
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

/// Those no lease live on this machine's clock holds.
pub(super) fn threads_with_unowned_work(conn: &Connection) -> StoreResult<Vec<String>> {
    let mut stmt = conn
        .prepare_cached(&threads_with_unowned_work_sql("rowid", "?1"))
        .map_err(db)?;
    let rows = stmt
        .query_map([crate::now_millis()], |r| r.get(0))
        .map_err(db)?;
    rows.collect::<Result<_, _>>().map_err(db)
}

/// Offers `thread`'s work (see [`crate::Store::offer_work`]).
pub(super) fn offer(tx: &Connection, thread: &str, now: i64) -> StoreResult<()> {
    require_thread(tx, thread)?;
    tx.prepare_cached(
        "INSERT INTO work_offers (thread, offered_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )
    .and_then(|mut stmt| stmt.execute(rusqlite::params![thread, now]))
    .map_err(db)?;
    Ok(())
}

/// Takes up to `limit` offers, oldest first (one writer at a time: nothing to skip).
pub(super) fn take(tx: &Connection, limit: usize) -> StoreResult<Vec<String>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = tx
        .prepare_cached(
            "DELETE FROM work_offers WHERE thread IN
                (SELECT thread FROM work_offers ORDER BY rowid LIMIT ?1)
             RETURNING thread",
        )
        .map_err(db)?;
    let rows = stmt.query_map([limit], |r| r.get(0)).map_err(db)?;
    rows.collect::<Result<_, _>>().map_err(db)
}
