//! Rows as every backend reads them (each column in its plain Rust type, in select order) and
//! their decoding into the store's types: one place for each table's columns, whatever the
//! database.

use crate::error::{corrupt, StoreResult};
use crate::model::*;
use crate::EventKind;

/// The columns of a thread row, in select order.
pub(crate) type ThreadRow = (String, String, Option<String>, String, String, i64, i64);

pub(crate) fn decode_thread(
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

pub(crate) type MessageRow = (
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

pub(crate) fn decode_message(row: MessageRow) -> StoreResult<Message> {
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
pub(crate) fn parse_status(text: &str) -> StoreResult<ToolStatus> {
    match text {
        "success" => Ok(ToolStatus::Success),
        "error" => Ok(ToolStatus::Error),
        other => Err(corrupt(format!("tool status {other:?}"))),
    }
}

/// The stored name of a tool status.
pub(crate) fn status_name(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Success => "success",
        ToolStatus::Error => "error",
    }
}

pub(crate) type EventRow = (String, i64, String, String, i64);

pub(crate) fn decode_event(
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

pub(crate) type CallRow = (
    String,
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    i64,
    Option<i64>,
);

pub(crate) fn decode_call(
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

/// The columns of a message row, in the order its row type holds them.
pub(crate) const MESSAGE_COLUMNS: &str =
    "seq, id, role, content, name, tool_calls, tool_call_id, created_at, parent_id, depth, silent, metadata, status";

/// The columns of a journal row, in the order its row type holds them.
pub(crate) const CALL_COLUMNS: &str =
    "call_id, tool, arguments, message_id, state, result_message_id, intent_at, completed_at";
