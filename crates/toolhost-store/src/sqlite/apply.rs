//! Atomic batches of writes.

use super::gates;
use super::rows::load_messages;
use super::{corrupt, db, exec, query_one, require_thread};
use crate::error::{StoreError, StoreResult};
use crate::model::*;
use crate::EventKind;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

/// Applies `writes` to a thread inside a transaction the caller commits.
pub(super) fn apply_in(
    tx: &Connection,
    thread: &str,
    writes: Vec<Write>,
    now: Millis,
) -> StoreResult<Applied> {
    require_thread(tx, thread)?;
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
                exec(
                    tx,
                    "DELETE FROM queue WHERE thread = ?1 AND seq <= ?2",
                    params![thread, through],
                )
                .map_err(db)?;
            }
            Write::SetStatus(status) => {
                exec(
                    tx,
                    "UPDATE threads SET status = ?2 WHERE id = ?1",
                    params![thread, status.as_str()],
                )
                .map_err(db)?;
            }
            Write::SetAgent(agent) => {
                exec(
                    tx,
                    "UPDATE threads SET agent = ?2 WHERE id = ?1",
                    params![thread, agent],
                )
                .map_err(db)?;
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
    exec(
        tx,
        "UPDATE threads SET updated_at = ?2 WHERE id = ?1",
        params![thread, now],
    )
    .map_err(db)?;
    Ok(applied)
}

/// Queues `item` for the thread; with a `key`, only if no item of that key was ever queued.
/// Returns the item's position, if it was queued.
fn enqueue(
    tx: &Connection,
    thread: &str,
    key: Option<&str>,
    item: &QueueItem,
) -> StoreResult<Option<i64>> {
    if let Some(key) = key {
        let fresh = exec(
            tx,
            "INSERT OR IGNORE INTO queue_keys (thread, key) VALUES (?1, ?2)",
            params![thread, key],
        )
        .map_err(db)?;
        if fresh != 1 {
            return Ok(None);
        }
    }
    let text = serde_json::to_string(item).map_err(corrupt)?;
    exec(
        tx,
        "INSERT INTO queue (thread, item) VALUES (?1, ?2)",
        params![thread, text],
    )
    .map_err(db)?;
    Ok(Some(tx.last_insert_rowid()))
}

/// Stores an event of the thread (a reserved name is toolhost's alone); returns its position.
fn append_event(
    tx: &Connection,
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
    };
    exec(
        tx,
        "INSERT INTO events (thread, kind, data, at, bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![thread, kind.as_str(), text, now, bytes as i64],
    )
    .map_err(db)?;
    Ok(tx.last_insert_rowid())
}

fn append_message(
    tx: &Connection,
    thread: &str,
    m: NewMessage,
    now: Millis,
) -> StoreResult<Message> {
    let id = m.id.unwrap_or_else(new_id);
    let role = m.role.unwrap_or(Role::User);
    let tool_calls = serde_json::to_string(&m.tool_calls).map_err(corrupt)?;
    let metadata = serde_json::to_string(&m.metadata).map_err(corrupt)?;
    exec(tx,
        "INSERT INTO messages (id, thread, role, content, name, tool_calls, tool_call_id, created_at, parent_id, depth, silent, metadata, status)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![id, thread, role.as_str(), m.content, m.name, tool_calls, m.tool_call_id, now, m.parent_id, m.depth, m.silent, metadata, m.status.map(super::rows::status_name)],
    )
    .map_err(db)?;
    let seq = tx.last_insert_rowid();
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

fn delete_message(tx: &Connection, thread: &str, id: &str) -> StoreResult<()> {
    let found = load_messages(tx, "WHERE thread = ?1 AND id = ?2", &[&thread, &id])?;
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
            "WHERE thread = ?1 AND (tool_call_id = ?2 OR parent_id = ?2)",
            &[&thread, &call],
        )?;
        for m in under {
            calls.extend(m.tool_calls.iter().map(|c| c.id.clone()));
            doomed.push(m.id);
        }
        exec(
            tx,
            "DELETE FROM calls WHERE thread = ?1 AND call_id = ?2",
            params![thread, call],
        )
        .map_err(db)?;
    }
    for mid in &doomed {
        let paths: Vec<String> = {
            let mut stmt = tx
                .prepare_cached("SELECT path FROM files WHERE thread = ?1 AND message_id = ?2 AND is_folder = 0")
                .map_err(db)?;
            let rows = stmt
                .query_map(params![thread, mid], |r| r.get(0))
                .map_err(db)?;
            rows.collect::<Result<_, _>>().map_err(db)?
        };
        for path in paths {
            exec(
                tx,
                "DELETE FROM file_chunks WHERE thread = ?1 AND path = ?2",
                params![thread, path],
            )
            .map_err(db)?;
            exec(
                tx,
                "DELETE FROM files WHERE thread = ?1 AND path = ?2",
                params![thread, path],
            )
            .map_err(db)?;
        }
        exec(
            tx,
            "DELETE FROM messages WHERE thread = ?1 AND id = ?2",
            params![thread, mid],
        )
        .map_err(db)?;
    }
    Ok(())
}

fn record_intent(
    tx: &Connection,
    thread: &str,
    intent: CallIntent,
    now: Millis,
) -> StoreResult<()> {
    let position: i64 = query_one(
        tx,
        "SELECT COALESCE(MAX(position), 0) + 1 FROM calls WHERE thread = ?1",
        [thread],
        |r| r.get(0),
    )
    .map_err(db)?;
    exec(tx,
        "INSERT INTO calls (thread, call_id, tool, arguments, message_id, state, intent_at, position)
         VALUES (?1, ?2, ?3, ?4, ?5, 'intent', ?6, ?7) ON CONFLICT (thread, call_id) DO NOTHING",
        params![thread, intent.call_id, intent.tool, intent.arguments, intent.message_id, now, position],
    )
    .map_err(db)?;
    Ok(())
}

fn complete_call(
    tx: &Connection,
    thread: &str,
    call_id: &str,
    mut result: NewMessage,
    now: Millis,
) -> StoreResult<Message> {
    let state: Option<String> = query_one(
        tx,
        "SELECT state FROM calls WHERE thread = ?1 AND call_id = ?2",
        [thread, call_id],
        |r| r.get(0),
    )
    .optional()
    .map_err(db)?;
    match state.as_deref() {
        None => return Err(StoreError::CallNotJournaled(call_id.to_owned())),
        Some("completed") => return Err(StoreError::CallAlreadyCompleted(call_id.to_owned())),
        Some(_) => {}
    }
    result.role = Some(Role::Tool);
    result.tool_call_id = Some(call_id.to_owned());
    let message = append_message(tx, thread, result, now)?;
    exec(tx,
        "UPDATE calls SET state = 'completed', result_message_id = ?3, completed_at = ?4 WHERE thread = ?1 AND call_id = ?2",
        params![thread, call_id, message.id, now],
    )
    .map_err(db)?;
    Ok(message)
}

fn set_value(
    tx: &Connection,
    thread: &str,
    key: &str,
    value: Option<serde_json::Value>,
) -> StoreResult<()> {
    match value {
        None | Some(serde_json::Value::Null) => {
            exec(
                tx,
                "DELETE FROM kv WHERE thread = ?1 AND key = ?2",
                params![thread, key],
            )
            .map_err(db)?;
        }
        Some(v) => {
            let text = serde_json::to_string(&v).map_err(corrupt)?;
            exec(
                tx,
                "INSERT INTO kv (thread, key, value, bytes) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (thread, key) DO UPDATE SET value = excluded.value, bytes = excluded.bytes",
                params![thread, key, text, (key.len() + text.len()) as i64],
            )
            .map_err(db)?;
        }
    }
    Ok(())
}

/// Fails with [`StoreError::OverLimit`] when the thread holds more than `limits` allow; each
/// measure is read only when it is limited, from columns and indexes that hold sizes (never the
/// data itself).
fn check_usage(tx: &Connection, thread: &str, limits: &UsageLimits) -> StoreResult<()> {
    let measures = [
        (
            Usage::FileBytes,
            limits.file_bytes,
            "SELECT COALESCE(SUM(size), 0) FROM files WHERE thread = ?1 AND is_folder = 0",
        ),
        (
            Usage::ValueBytes,
            limits.value_bytes,
            "SELECT COALESCE(SUM(bytes), 0) FROM kv WHERE thread = ?1",
        ),
        (
            Usage::EventBytes,
            limits.event_bytes,
            "SELECT COALESCE(SUM(bytes), 0) FROM events WHERE thread = ?1 AND bytes > 0",
        ),
    ];
    for (usage, limit, query) in measures {
        let Some(limit) = limit else { continue };
        let held: i64 = query_one(tx, query, params![thread], |row| row.get(0)).map_err(db)?;
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
