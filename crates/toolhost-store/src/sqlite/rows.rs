//! Rows as the SQLite backend reads them, and their decoding into the store's types: one place
//! for each table's columns.

use super::{corrupt, db};
use crate::error::StoreResult;
use crate::model::*;
use crate::EventKind;
use rusqlite::{Connection, Row};

/// The columns of a thread row, in select order.
pub(super) type ThreadRow = (String, String, Option<String>, String, String, i64, i64);

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

pub(super) fn decode_thread(
    (id, agent, parent, tags, status, created_at, updated_at): ThreadRow,
) -> StoreResult<Thread> {
    Ok(Thread {
        tags: serde_json::from_str(&tags).map_err(corrupt)?,
        status: ThreadStatus::parse(&status)
            .ok_or_else(|| corrupt(format!("thread status {status:?}")))?,
        id,
        agent,
        parent,
        created_at,
        updated_at,
    })
}

pub(super) const MESSAGE_COLUMNS: &str =
    "seq, id, role, content, name, tool_calls, tool_call_id, created_at, parent_id, depth, silent, metadata, status";

pub(super) type MessageRow = (
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    i64,
    Option<String>,
    u32,
    bool,
    String,
    Option<String>,
);

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

pub(super) fn decode_message(row: MessageRow) -> StoreResult<Message> {
    let (
        seq,
        id,
        role,
        content,
        name,
        tool_calls,
        tool_call_id,
        created_at,
        parent_id,
        depth,
        silent,
        metadata,
        status,
    ) = row;
    Ok(Message {
        seq,
        role: Role::parse(&role).ok_or_else(|| corrupt(format!("message role {role:?}")))?,
        tool_calls: serde_json::from_str(&tool_calls).map_err(corrupt)?,
        metadata: serde_json::from_str(&metadata).map_err(corrupt)?,
        id,
        content,
        name,
        tool_call_id,
        created_at,
        parent_id,
        depth,
        silent,
        status: status.map(|s| parse_status(&s)).transpose()?,
    })
}

/// A stored tool status (`success` or `error`).
pub(super) fn parse_status(text: &str) -> StoreResult<ToolStatus> {
    match text {
        "success" => Ok(ToolStatus::Success),
        "error" => Ok(ToolStatus::Error),
        other => Err(corrupt(format!("tool status {other:?}"))),
    }
}

/// The stored name of a tool status.
pub(super) fn status_name(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Success => "success",
        ToolStatus::Error => "error",
    }
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

pub(super) type EventRow = (String, i64, String, String, i64);

pub(super) fn event_row(r: &Row<'_>) -> rusqlite::Result<EventRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

pub(super) fn decode_event(
    (thread, seq, kind, data, at): EventRow,
) -> StoreResult<(String, Event)> {
    Ok((
        thread,
        Event {
            seq,
            kind: EventKind::parse(&kind),
            data: serde_json::from_str(&data).map_err(corrupt)?,
            at,
        },
    ))
}

pub(super) type CallRow = (
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    i64,
    Option<i64>,
);

pub(super) fn decode_call(
    (call_id, tool, arguments, message_id, state, result_message_id, intent_at, completed_at): CallRow,
) -> StoreResult<CallRecord> {
    let state = match state.as_str() {
        "intent" => CallState::Intent,
        "completed" => CallState::Completed,
        other => return Err(corrupt(format!("call state {other:?}"))),
    };
    Ok(CallRecord {
        call_id,
        tool,
        arguments,
        message_id,
        state,
        result_message_id,
        intent_at,
        completed_at,
    })
}

pub(super) const CALL_COLUMNS: &str =
    "call_id, tool, arguments, message_id, state, result_message_id, intent_at, completed_at";

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
