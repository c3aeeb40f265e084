//! Paged reads: threads newest first and a thread's messages, one page at a time, each a single
//! query bounded by its `LIMIT`.

use super::rows::{decode_thread, load_messages, thread_row};
use super::{db, query_one, require_thread};
use crate::error::{StoreError, StoreResult};
use crate::model::{Message, Thread};
use crate::page::ThreadQuery;
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

/// One page of threads, newest first (the order of [`crate::Store::threads`]).
pub(super) fn threads(conn: &Connection, query: &ThreadQuery) -> StoreResult<Vec<Thread>> {
    let mut sql = String::from(
        "SELECT id, agent, parent, tags, status, created_at, updated_at FROM threads WHERE 1 = 1",
    );
    let mut args: Vec<SqlValue> = Vec::new();
    if let Some(agents) = &query.agents {
        if agents.is_empty() {
            return Ok(Vec::new());
        }
        sql.push_str(" AND agent IN (");
        for (i, agent) in agents.iter().enumerate() {
            sql.push_str(if i == 0 { "?" } else { ", ?" });
            args.push(SqlValue::Text(agent.clone()));
        }
        sql.push(')');
    }
    if let Some(status) = query.status {
        sql.push_str(" AND status = ?");
        args.push(SqlValue::Text(status.as_str().to_owned()));
    }
    if let Some(parent) = &query.parent {
        sql.push_str(" AND parent = ?");
        args.push(SqlValue::Text(parent.clone()));
    }
    if let Some(after) = &query.after {
        let (created_at, rowid): (i64, i64) = query_one(
            conn,
            "SELECT created_at, rowid FROM threads WHERE id = ?1",
            [after],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => StoreError::ThreadNotFound(after.clone()),
            other => db(other),
        })?;
        sql.push_str(" AND (created_at < ? OR (created_at = ? AND rowid < ?))");
        args.extend([
            SqlValue::Integer(created_at),
            SqlValue::Integer(created_at),
            SqlValue::Integer(rowid),
        ]);
    }
    sql.push_str(" ORDER BY created_at DESC, rowid DESC LIMIT ?");
    args.push(SqlValue::Integer(
        i64::try_from(query.limit).unwrap_or(i64::MAX),
    ));
    let mut stmt = conn.prepare(&sql).map_err(db)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args), thread_row)
        .map_err(db)?;
    rows.map(|r| r.map_err(db).and_then(decode_thread))
        .collect()
}

/// At most `limit` messages of `thread` after position `after`, in order.
pub(super) fn messages(
    conn: &Connection,
    thread: &str,
    after: i64,
    limit: usize,
) -> StoreResult<Vec<Message>> {
    require_thread(conn, thread)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    load_messages(
        conn,
        "WHERE thread = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        &[&thread, &after, &limit],
    )
}
