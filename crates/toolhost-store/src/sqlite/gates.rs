//! What a thread waits on: approval requests and their decisions, variables and variable
//! requests.

use super::{corrupt, db, exec, query_one};
use crate::error::StoreResult;
use crate::model::*;
use crate::rules::check_decision;
use rusqlite::{params, Connection, OptionalExtension};

pub(super) fn request_approval(
    tx: &Connection,
    thread: &str,
    request: ApprovalRequest,
    now: Millis,
) -> StoreResult<()> {
    let text = serde_json::to_string(&request).map_err(corrupt)?;
    exec(
        tx,
        "INSERT INTO approvals (thread, call_id, request, requested_at, seq)
         VALUES (?1, ?2, ?3, ?4, (SELECT COUNT(*) FROM approvals WHERE thread = ?1))
         ON CONFLICT (thread, call_id) DO NOTHING",
        params![thread, request.call_id, text, now],
    )
    .map_err(db)?;
    Ok(())
}

pub(super) fn decide_approval(
    tx: &Connection,
    thread: &str,
    call_id: &str,
    decision: ApprovalDecision,
    now: Millis,
) -> StoreResult<()> {
    let row: Option<(String, Option<String>)> = query_one(
        tx,
        "SELECT request, decision FROM approvals WHERE thread = ?1 AND call_id = ?2",
        params![thread, call_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
    .map_err(db)?;
    let (request, decided) = match row {
        Some((request, decided)) => (
            Some(serde_json::from_str::<ApprovalRequest>(&request).map_err(corrupt)?),
            decided.is_some(),
        ),
        None => (None, false),
    };
    check_decision(call_id, request.as_ref(), decided, &decision)?;
    let text = serde_json::to_string(&decision).map_err(corrupt)?;
    exec(
        tx,
        "UPDATE approvals SET decision = ?3, decided_at = ?4 WHERE thread = ?1 AND call_id = ?2",
        params![thread, call_id, text, now],
    )
    .map_err(db)?;
    Ok(())
}

pub(super) fn approvals(conn: &Connection, thread: &str) -> StoreResult<Vec<ApprovalRecord>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT request, decision, requested_at, decided_at FROM approvals
             WHERE thread = ?1 ORDER BY seq",
        )
        .map_err(db)?;
    let rows = stmt
        .query_map([thread], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .map_err(db)?;
    rows.map(|row| {
        let (request, decision, requested_at, decided_at) = row.map_err(db)?;
        Ok(ApprovalRecord {
            request: serde_json::from_str(&request).map_err(corrupt)?,
            decision: decision
                .map(|d| serde_json::from_str(&d).map_err(corrupt))
                .transpose()?,
            requested_at,
            decided_at,
        })
    })
    .collect()
}

pub(super) fn set_variable(
    tx: &Connection,
    thread: &str,
    variable: StoredVariable,
    now: Millis,
) -> StoreResult<()> {
    exec(
        tx,
        "INSERT INTO variables (thread, name, secret, value, set_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (thread, name) DO UPDATE SET secret = ?3, value = ?4, set_at = ?5",
        params![thread, variable.name, variable.secret, variable.value, now],
    )
    .map_err(db)?;
    Ok(())
}

pub(super) fn variables(conn: &Connection, thread: &str) -> StoreResult<Vec<StoredVariable>> {
    let mut stmt = conn
        .prepare_cached("SELECT name, secret, value FROM variables WHERE thread = ?1 ORDER BY name")
        .map_err(db)?;
    let rows = stmt
        .query_map([thread], |r| {
            Ok(StoredVariable {
                name: r.get(0)?,
                secret: r.get(1)?,
                value: r.get(2)?,
            })
        })
        .map_err(db)?;
    rows.map(|r| r.map_err(db)).collect()
}

pub(super) fn request_variables(
    tx: &Connection,
    thread: &str,
    id: &str,
    names: &[String],
    now: Millis,
) -> StoreResult<()> {
    let text = serde_json::to_string(names).map_err(corrupt)?;
    exec(
        tx,
        "INSERT INTO variable_requests (thread, id, names, requested_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (thread, id) DO NOTHING",
        params![thread, id, text, now],
    )
    .map_err(db)?;
    Ok(())
}

pub(super) fn answer_variables(
    tx: &Connection,
    thread: &str,
    id: &str,
    now: Millis,
) -> StoreResult<()> {
    exec(
        tx,
        "UPDATE variable_requests SET answered_at = ?3
         WHERE thread = ?1 AND id = ?2 AND answered_at IS NULL",
        params![thread, id, now],
    )
    .map_err(db)?;
    Ok(())
}

pub(super) fn variable_requests(
    conn: &Connection,
    thread: &str,
) -> StoreResult<Vec<VariableRequest>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, names, requested_at, answered_at FROM variable_requests
             WHERE thread = ?1 ORDER BY requested_at, rowid",
        )
        .map_err(db)?;
    let rows = stmt
        .query_map([thread], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .map_err(db)?;
    rows.map(|row| {
        let (id, names, requested_at, answered_at) = row.map_err(db)?;
        Ok(VariableRequest {
            id,
            names: serde_json::from_str(&names).map_err(corrupt)?,
            requested_at,
            answered_at,
        })
    })
    .collect()
}
