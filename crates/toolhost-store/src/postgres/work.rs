//! Work offered to any node with room for it (see [`crate::Store::offer_work`]): an offer is
//! written by the writer and announced on the `toolhost_work` channel as it commits; it is taken
//! by whichever node asks first, with `FOR UPDATE SKIP LOCKED`, so nodes taking at once neither
//! take the same thread nor wait for each other.

use super::conn::{col, Conn};
use super::require_thread;
use crate::error::StoreResult;
use crate::model::Millis;
use crate::rules::has_unowned_work_sql;

/// The channel every node listens on for offers.
pub(super) const CHANNEL: &str = "toolhost_work";

/// Offers `thread`'s work at the database's time `now`; the notice goes out with the commit.
pub(super) fn offer(tx: &mut Conn, thread: &str, now: Millis) -> StoreResult<()> {
    require_thread(tx, thread)?;
    tx.exec(
        "INSERT INTO work_offers (thread, offered_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        &[&thread, &now],
    )?;
    tx.exec("SELECT pg_notify($1, '')", &[&CHANNEL])?;
    Ok(())
}

/// Takes up to `limit` offers, oldest first, skipping those another node is taking; of those,
/// returns the threads that still have work no live lease holds (the others' offers were
/// stale: their work was taken up another way).
pub(super) fn take(conn: &mut Conn, limit: usize) -> StoreResult<Vec<String>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let sql = format!(
        "WITH taken AS (
            DELETE FROM work_offers WHERE thread IN
                (SELECT thread FROM work_offers ORDER BY ord LIMIT $1 FOR UPDATE SKIP LOCKED)
            RETURNING thread, ord)
         SELECT k.thread FROM taken k WHERE EXISTS ({}) ORDER BY k.ord",
        has_unowned_work_sql("k.thread", super::DB_NOW)
    );
    conn.rows(&sql, &[&limit])?
        .iter()
        .map(|row| col(row, 0))
        .collect()
}
