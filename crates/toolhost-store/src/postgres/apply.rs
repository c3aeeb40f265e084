//! Atomic batches of writes, inside the writer's transaction.

use super::conn::{col, Conn};
use super::{corrupt, gates};
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::rows::{decode_message, status_name, MessageRow, MESSAGE_COLUMNS};
use crate::EventKind;
use postgres::types::ToSql;
use postgres::Row;
use serde_json::Value;

/// Applies `writes` to a thread inside the writer's transaction.
pub(super) fn apply_in(
    tx: &mut Conn,
    thread: &str,
    writes: Vec<Write>,
    now: Millis,
) -> StoreResult<Applied> {
    tx.touch(thread);
    // The thread's time is set first: the same statement says whether the thread exists.
    if tx.exec(
        "UPDATE threads SET updated_at = $2 WHERE id = $1",
        &[&thread, &now],
    )? == 0
    {
        return Err(StoreError::ThreadNotFound(thread.to_owned()));
    }
    let mut applied = Applied::default();
    for write in writes {
        match write {
            Write::CheckOwner(owner) => super::leases::check_owner(tx, thread, &owner)?,
            Write::CheckUsage(limits) => check_usage(tx, thread, &limits)?,
            Write::AppendMessage(m) => applied.messages.push(append_message(tx, thread, m, now)?),
            Write::DeleteMessage(id) => delete_message(tx, thread, &id)?,
            Write::RecordIntent(intent) => record_intent(tx, thread, intent, now)?,
            Write::CompleteCall { call_id, result } => applied
                .messages
                .push(complete_call(tx, thread, &call_id, result, now)?),
            Write::SetValue { key, value } => set_value(tx, thread, &key, value)?,
            Write::Enqueue(item) => applied.queued.extend(enqueue(tx, thread, None, &item)?),
            Write::EnqueueOnce { key, item } => {
                applied
                    .queued
                    .extend(enqueue(tx, thread, Some(&key), &item)?)
            }
            Write::Dequeue { through } => {
                tx.exec(
                    "DELETE FROM queue WHERE thread = $1 AND seq <= $2",
                    &[&thread, &through],
                )?;
            }
            Write::SetStatus(status) => {
                tx.exec(
                    "UPDATE threads SET status = $2 WHERE id = $1",
                    &[&thread, &status.as_str()],
                )?;
            }
            Write::SetAgent(agent) => {
                tx.exec(
                    "UPDATE threads SET agent = $2 WHERE id = $1",
                    &[&thread, &agent],
                )?;
            }
            Write::Event { kind, data } => applied
                .events
                .push(append_event(tx, thread, &kind, &data, now)?),
            Write::WriteFile {
                path,
                bytes,
                mime_type,
                message_id,
            } => super::files::write(
                tx,
                thread,
                &path,
                &bytes,
                mime_type.as_deref(),
                message_id.as_deref(),
                now,
            )?,
            Write::Unlink(path) => super::files::unlink(tx, thread, &path)?,
            Write::Mkdir(path) => super::files::mkdir(tx, thread, &path, now)?,
            Write::Rmdir(path) => super::files::rmdir(tx, thread, &path)?,
            Write::RequestApproval(request) => gates::request_approval(tx, thread, request, now)?,
            Write::DecideApproval { call_id, decision } => {
                gates::decide_approval(tx, thread, &call_id, decision, now)?
            }
            Write::SetVariable(variable) => gates::set_variable(tx, thread, variable, now)?,
            Write::RequestVariables { id, names } => {
                gates::request_variables(tx, thread, &id, &names, now)?
            }
            Write::AnswerVariables { id } => gates::answer_variables(tx, thread, &id, now)?,
        }
    }
    Ok(applied)
}

/// Queues `item` for the thread; with a `key`, only if no item of that key was ever queued.
/// Returns the item's position, if it was queued.
fn enqueue(
    tx: &mut Conn,
    thread: &str,
    key: Option<&str>,
    item: &QueueItem,
) -> StoreResult<Option<i64>> {
    if let Some(key) = key {
        let fresh = tx.exec(
            "INSERT INTO queue_keys (thread, key) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&thread, &key],
        )?;
        if fresh != 1 {
            return Ok(None);
        }
    }
    let text = serde_json::to_string(item).map_err(corrupt)?;
    let row = tx.one(
        "INSERT INTO queue (thread, item) VALUES ($1, $2) RETURNING seq",
        &[&thread, &text],
    )?;
    Ok(Some(col(&row, 0)?))
}

/// Stores an event of the thread (a reserved name is toolhost's alone); returns its position.
fn append_event(
    tx: &mut Conn,
    thread: &str,
    kind: &EventKind,
    data: &Value,
    now: Millis,
) -> StoreResult<i64> {
    if let EventKind::Custom(name) = kind {
        if EventKind::RESERVED.contains(&name.as_str()) {
            return Err(StoreError::ReservedEventName(name.clone()));
        }
    }
    let text = serde_json::to_string(data).map_err(corrupt)?;
    // Only a tool's own events count against its thread's limit.
    let bytes = match kind {
        EventKind::Custom(name) => name.len() + text.len(),
        _ => 0,
    } as i64;
    let row = tx.one(
        "INSERT INTO events (thread, kind, data, at, bytes) VALUES ($1, $2, $3, $4, $5)
         RETURNING seq",
        &[&thread, &kind.as_str(), &text, &now, &bytes],
    )?;
    col(&row, 0)
}

fn append_message(tx: &mut Conn, thread: &str, m: NewMessage, now: Millis) -> StoreResult<Message> {
    let id = m.id.unwrap_or_else(new_id);
    let role = m.role.unwrap_or(Role::User);
    let tool_calls = serde_json::to_string(&m.tool_calls).map_err(corrupt)?;
    let metadata = serde_json::to_string(&m.metadata).map_err(corrupt)?;
    let depth = i64::from(m.depth);
    let status = m.status.map(status_name);
    let params: [&(dyn ToSql + Sync); 13] = [
        &id,
        &thread,
        &role.as_str(),
        &m.content,
        &m.name,
        &tool_calls,
        &m.tool_call_id,
        &now,
        &m.parent_id,
        &depth,
        &m.silent,
        &metadata,
        &status,
    ];
    let row = tx.one(
        "INSERT INTO messages (id, thread, role, content, name, tool_calls, tool_call_id,
             created_at, parent_id, depth, silent, metadata, status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING seq",
        &params,
    )?;
    let seq = col(&row, 0)?;
    Ok(Message {
        id,
        seq,
        role,
        content: m.content,
        name: m.name,
        tool_calls: m.tool_calls,
        tool_call_id: m.tool_call_id,
        created_at: now,
        parent_id: m.parent_id,
        depth: m.depth,
        silent: m.silent,
        metadata: m.metadata,
        status: m.status,
    })
}

/// A message row selected with [`MESSAGE_COLUMNS`] from column `at` on.
pub(super) fn message_row_at(row: &Row, at: usize) -> StoreResult<MessageRow> {
    let depth: i64 = col(row, at + 9)?;
    Ok((
        col(row, at)?,
        col(row, at + 1)?,
        col(row, at + 2)?,
        col(row, at + 3)?,
        col(row, at + 4)?,
        col(row, at + 5)?,
        col(row, at + 6)?,
        col(row, at + 7)?,
        col(row, at + 8)?,
        u32::try_from(depth).map_err(|_| corrupt(format!("message depth {depth}")))?,
        col(row, at + 10)?,
        col(row, at + 11)?,
        col(row, at + 12)?,
    ))
}

/// The messages that `sql_tail` (a `WHERE` clause and an order) selects.
pub(super) fn load_messages(
    conn: &mut Conn,
    sql_tail: &str,
    params: &[&(dyn ToSql + Sync)],
) -> StoreResult<Vec<Message>> {
    let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages {sql_tail}");
    conn.rows(&sql, params)?
        .iter()
        .map(|row| decode_message(message_row_at(row, 0)?))
        .collect()
}

fn delete_message(tx: &mut Conn, thread: &str, id: &str) -> StoreResult<()> {
    let found = load_messages(tx, "WHERE thread = $1 AND id = $2", &[&thread, &id])?;
    let message = found
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::MessageNotFound(id.to_owned()))?;
    let mut doomed = vec![message.id.clone()];
    // A call takes its results with it, and the messages nested under it (a sub-prompt's),
    // whose own calls do the same.
    let mut calls: Vec<String> = message.tool_calls.iter().map(|c| c.id.clone()).collect();
    while let Some(call) = calls.pop() {
        let under = load_messages(
            tx,
            "WHERE thread = $1 AND (tool_call_id = $2 OR parent_id = $2)",
            &[&thread, &call],
        )?;
        for m in under {
            calls.extend(m.tool_calls.iter().map(|c| c.id.clone()));
            doomed.push(m.id);
        }
        tx.exec(
            "DELETE FROM calls WHERE thread = $1 AND call_id = $2",
            &[&thread, &call],
        )?;
    }
    for mid in &doomed {
        // A message takes its attachments with it.
        tx.exec(
            "DELETE FROM file_chunks c USING files f
             WHERE f.thread = $1 AND f.message_id = $2 AND NOT f.is_folder
               AND c.thread = f.thread AND c.path = f.path",
            &[&thread, mid],
        )?;
        tx.exec(
            "DELETE FROM files WHERE thread = $1 AND message_id = $2 AND NOT is_folder",
            &[&thread, mid],
        )?;
        tx.exec(
            "DELETE FROM messages WHERE thread = $1 AND id = $2",
            &[&thread, mid],
        )?;
    }
    Ok(())
}

fn record_intent(tx: &mut Conn, thread: &str, intent: CallIntent, now: Millis) -> StoreResult<()> {
    tx.exec(
        "INSERT INTO calls (thread, call_id, tool, arguments, message_id, state, intent_at, position)
         VALUES ($1, $2, $3, $4, $5, 'intent', $6,
                 (SELECT COALESCE(MAX(position), 0) + 1 FROM calls WHERE thread = $1))
         ON CONFLICT (thread, call_id) DO NOTHING",
        &[
            &thread,
            &intent.call_id,
            &intent.tool,
            &intent.arguments,
            &intent.message_id,
            &now,
        ],
    )?;
    Ok(())
}

fn complete_call(
    tx: &mut Conn,
    thread: &str,
    call_id: &str,
    mut result: NewMessage,
    now: Millis,
) -> StoreResult<Message> {
    let state: Option<String> = tx
        .opt(
            "SELECT state FROM calls WHERE thread = $1 AND call_id = $2",
            &[&thread, &call_id],
        )?
        .map(|row| col(&row, 0))
        .transpose()?;
    match state.as_deref() {
        None => return Err(StoreError::CallNotJournaled(call_id.to_owned())),
        Some("completed") => return Err(StoreError::CallAlreadyCompleted(call_id.to_owned())),
        Some(_) => {}
    }
    result.role = Some(Role::Tool);
    result.tool_call_id = Some(call_id.to_owned());
    let message = append_message(tx, thread, result, now)?;
    tx.exec(
        "UPDATE calls SET state = 'completed', result_message_id = $3, completed_at = $4
         WHERE thread = $1 AND call_id = $2",
        &[&thread, &call_id, &message.id, &now],
    )?;
    Ok(message)
}

fn set_value(tx: &mut Conn, thread: &str, key: &str, value: Option<Value>) -> StoreResult<()> {
    match value {
        None | Some(Value::Null) => {
            tx.exec(
                "DELETE FROM kv WHERE thread = $1 AND key = $2",
                &[&thread, &key],
            )?;
        }
        Some(v) => {
            let text = serde_json::to_string(&v).map_err(corrupt)?;
            let bytes = (key.len() + text.len()) as i64;
            tx.exec(
                "INSERT INTO kv (thread, key, value, bytes) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (thread, key) DO UPDATE SET value = excluded.value, bytes = excluded.bytes",
                &[&thread, &key, &text, &bytes],
            )?;
        }
    }
    Ok(())
}

/// Fails with [`StoreError::OverLimit`] when the thread holds more than `limits` allow; each
/// measure is read only when it is limited.
fn check_usage(tx: &mut Conn, thread: &str, limits: &UsageLimits) -> StoreResult<()> {
    let measures = [
        (
            Usage::FileBytes,
            limits.file_bytes,
            "SELECT COALESCE(SUM(size), 0)::bigint FROM files WHERE thread = $1 AND NOT is_folder",
        ),
        (
            Usage::ValueBytes,
            limits.value_bytes,
            "SELECT COALESCE(SUM(bytes), 0)::bigint FROM kv WHERE thread = $1",
        ),
        (
            Usage::EventBytes,
            limits.event_bytes,
            "SELECT COALESCE(SUM(bytes), 0)::bigint FROM events WHERE thread = $1 AND bytes > 0",
        ),
    ];
    for (usage, limit, query) in measures {
        let Some(limit) = limit else { continue };
        let held: i64 = col(&tx.one(query, &[&thread])?, 0)?;
        let held = u64::try_from(held).unwrap_or(0);
        if held > limit {
            return Err(StoreError::OverLimit {
                usage,
                limit,
                reached: held,
            });
        }
    }
    Ok(())
}
