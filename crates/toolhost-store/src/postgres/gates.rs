//! What a thread waits on: approval requests and their decisions, variables and variable
//! requests.

use super::conn::{col, Conn};
use super::corrupt;
use crate::error::StoreResult;
use crate::model::*;
use crate::rules::check_decision;

pub(super) fn request_approval(
    tx: &mut Conn,
    thread: &str,
    request: ApprovalRequest,
    now: Millis,
) -> StoreResult<()> {
    let text = serde_json::to_string(&request).map_err(corrupt)?;
    tx.exec(
        "INSERT INTO approvals (thread, call_id, request, requested_at, seq)
         VALUES ($1, $2, $3, $4, (SELECT COUNT(*) FROM approvals WHERE thread = $1))
         ON CONFLICT (thread, call_id) DO NOTHING",
        &[&thread, &request.call_id, &text, &now],
    )?;
    Ok(())
}

pub(super) fn decide_approval(
    tx: &mut Conn,
    thread: &str,
    call_id: &str,
    decision: ApprovalDecision,
    now: Millis,
) -> StoreResult<()> {
    let row = tx.opt(
        "SELECT request, decision FROM approvals WHERE thread = $1 AND call_id = $2",
        &[&thread, &call_id],
    )?;
    let (request, decided) = match row {
        Some(row) => {
            let request: String = col(&row, 0)?;
            let decided: Option<String> = col(&row, 1)?;
            (
                Some(serde_json::from_str::<ApprovalRequest>(&request).map_err(corrupt)?),
                decided.is_some(),
            )
        }
        None => (None, false),
    };
    check_decision(call_id, request.as_ref(), decided, &decision)?;
    let text = serde_json::to_string(&decision).map_err(corrupt)?;
    tx.exec(
        "UPDATE approvals SET decision = $3, decided_at = $4 WHERE thread = $1 AND call_id = $2",
        &[&thread, &call_id, &text, &now],
    )?;
    Ok(())
}

pub(super) fn approvals(conn: &mut Conn, thread: &str) -> StoreResult<Vec<ApprovalRecord>> {
    let rows = conn.rows(
        "SELECT request, decision, requested_at, decided_at FROM approvals
         WHERE thread = $1 ORDER BY seq",
        &[&thread],
    )?;
    rows.iter()
        .map(|row| {
            let request: String = col(row, 0)?;
            let decision: Option<String> = col(row, 1)?;
            Ok(ApprovalRecord {
                request: serde_json::from_str(&request).map_err(corrupt)?,
                decision: decision
                    .map(|d| serde_json::from_str(&d).map_err(corrupt))
                    .transpose()?,
                requested_at: col(row, 2)?,
                decided_at: col(row, 3)?,
            })
        })
        .collect()
}

pub(super) fn set_variable(
    tx: &mut Conn,
    thread: &str,
    variable: StoredVariable,
    now: Millis,
) -> StoreResult<()> {
    tx.exec(
        "INSERT INTO variables (thread, name, secret, value, set_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (thread, name) DO UPDATE SET secret = $3, value = $4, set_at = $5",
        &[
            &thread,
            &variable.name,
            &variable.secret,
            &variable.value,
            &now,
        ],
    )?;
    Ok(())
}

pub(super) fn variables(conn: &mut Conn, thread: &str) -> StoreResult<Vec<StoredVariable>> {
    let rows = conn.rows(
        "SELECT name, secret, value FROM variables WHERE thread = $1 ORDER BY name COLLATE \"C\"",
        &[&thread],
    )?;
    rows.iter()
        .map(|row| {
            Ok(StoredVariable {
                name: col(row, 0)?,
                secret: col(row, 1)?,
                value: col(row, 2)?,
            })
        })
        .collect()
}

pub(super) fn request_variables(
    tx: &mut Conn,
    thread: &str,
    id: &str,
    names: &[String],
    now: Millis,
) -> StoreResult<()> {
    let text = serde_json::to_string(names).map_err(corrupt)?;
    tx.exec(
        "INSERT INTO variable_requests (thread, id, names, requested_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (thread, id) DO NOTHING",
        &[&thread, &id, &text, &now],
    )?;
    Ok(())
}

pub(super) fn answer_variables(
    tx: &mut Conn,
    thread: &str,
    id: &str,
    now: Millis,
) -> StoreResult<()> {
    tx.exec(
        "UPDATE variable_requests SET answered_at = $3
         WHERE thread = $1 AND id = $2 AND answered_at IS NULL",
        &[&thread, &id, &now],
    )?;
    Ok(())
}

pub(super) fn variable_requests(
    conn: &mut Conn,
    thread: &str,
) -> StoreResult<Vec<VariableRequest>> {
    let rows = conn.rows(
        "SELECT id, names, requested_at, answered_at FROM variable_requests
         WHERE thread = $1 ORDER BY requested_at, ord",
        &[&thread],
    )?;
    rows.iter()
        .map(|row| {
            let names: String = col(row, 1)?;
            Ok(VariableRequest {
                id: col(row, 0)?,
                names: serde_json::from_str(&names).map_err(corrupt)?,
                requested_at: col(row, 2)?,
                answered_at: col(row, 3)?,
            })
        })
        .collect()
}
