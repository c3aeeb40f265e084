//! The threads that have work no run is doing, found with one query rather than by reading
//! every thread: what a server takes up when it starts; and work offered to any process with
//! room for it.

use super::{db, require_thread};
use crate::error::StoreResult;
use crate::rules::{has_unowned_work_sql, threads_with_unowned_work_sql, threads_with_work_sql};
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

/// Takes up to `limit` offers, oldest first (one writer at a time: nothing to skip); of those,
/// returns the threads that still have work no live lease holds (the others' offers were
/// stale: their work was taken up another way).
pub(super) fn take(tx: &Connection, limit: usize) -> StoreResult<Vec<String>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let offered: Vec<String> = {
        let mut stmt = tx
            .prepare_cached("SELECT thread FROM work_offers ORDER BY rowid LIMIT ?1")
            .map_err(db)?;
        let rows = stmt.query_map([limit], |r| r.get(0)).map_err(db)?;
        rows.collect::<Result<_, _>>().map_err(db)?
    };
    let mut taken = Vec::with_capacity(offered.len());
    for thread in offered {
        tx.prepare_cached("DELETE FROM work_offers WHERE thread = ?1")
            .and_then(|mut stmt| stmt.execute([&thread]))
            .map_err(db)?;
        let has_work = tx
            .prepare_cached(&has_unowned_work_sql("?1", "?2"))
            .and_then(|mut stmt| stmt.exists(rusqlite::params![thread, crate::now_millis()]))
            .map_err(db)?;
        if has_work {
            taken.push(thread);
        }
    }
    Ok(taken)
}
