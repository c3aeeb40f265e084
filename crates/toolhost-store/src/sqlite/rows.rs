//! Rows as the SQLite backend reads them, and their decoding into the store's types: one place
//! for each table's columns.

use super::db;
use crate::error::StoreResult;
use crate::model::*;
pub(crate) use crate::rows::*;
use rusqlite::{Connection, Row};

pub(super) fn thread_row(r: &Row<'_>) -> rusqlite::Result<ThreadRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

pub(super) fn message_row(r: &Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
    ))
}

pub(super) fn load_messages(
    conn: &Connection,
    sql_tail: &str,
    args: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<Message>> {
    let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages {sql_tail}");
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let rows = stmt.query_map(args, message_row).map_err(db)?;
    rows.map(|r| r.map_err(db).and_then(decode_message))
        .collect()
}

pub(super) fn event_row(r: &Row<'_>) -> rusqlite::Result<EventRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

pub(super) fn call_row(r: &Row<'_>) -> rusqlite::Result<CallRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
    ))
}
