//! API tokens (the secret's hash is all that is kept) and the project's credentials, written by
//! compare-and-set.

use super::conn::{col, Conn};
use crate::error::{StoreError, StoreResult};
use crate::model::Millis;
use crate::token::{ApiToken, Credential};
use postgres::Row;

const COLUMNS: &str = "id, name, secret_hash, scopes, agents, created_at, revoked_at, expires_at";

fn decode(row: &Row) -> StoreResult<ApiToken> {
    let id: String = col(row, 0)?;
    let scopes: String = col(row, 3)?;
    let agents: Option<String> = col(row, 4)?;
    let corrupt = |what: &str, e: serde_json::Error| {
        StoreError::Corrupt(format!("token {id}: its {what} are not a JSON list: {e}"))
    };
    Ok(ApiToken {
        scopes: serde_json::from_str(&scopes).map_err(|e| corrupt("scopes", e))?,
        agents: agents
            .map(|a| serde_json::from_str(&a))
            .transpose()
            .map_err(|e| corrupt("agents", e))?,
        name: col(row, 1)?,
        secret_hash: col(row, 2)?,
        created_at: col(row, 5)?,
        revoked_at: col(row, 6)?,
        expires_at: col(row, 7)?,
        id,
    })
}

/// Stores a new token; an id that exists already is refused.
pub(super) fn create(tx: &mut Conn, token: &ApiToken) -> StoreResult<()> {
    let encode = |e: serde_json::Error| StoreError::Backend(Box::new(e));
    let scopes = serde_json::to_string(&token.scopes).map_err(encode)?;
    let agents = token
        .agents
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(encode)?;
    let stored = tx.exec(
        "INSERT INTO tokens (id, name, secret_hash, scopes, agents, created_at, revoked_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
        &[
            &token.id,
            &token.name,
            &token.secret_hash,
            &scopes,
            &agents,
            &token.created_at,
            &token.revoked_at,
            &token.expires_at,
        ],
    )?;
    if stored == 0 {
        return Err(StoreError::TokenExists(token.id.clone()));
    }
    Ok(())
}

/// The token with this id, revoked or not.
pub(super) fn find(conn: &mut Conn, id: &str) -> StoreResult<Option<ApiToken>> {
    conn.opt(
        &format!("SELECT {COLUMNS} FROM tokens WHERE id = $1"),
        &[&id],
    )?
    .map(|row| decode(&row))
    .transpose()
}

/// Every token, oldest first.
pub(super) fn list(conn: &mut Conn) -> StoreResult<Vec<ApiToken>> {
    conn.rows(
        &format!("SELECT {COLUMNS} FROM tokens ORDER BY created_at, id COLLATE \"C\""),
        &[],
    )?
    .iter()
    .map(decode)
    .collect()
}

/// Marks the token revoked; `false` when there is no such token or it was revoked before.
pub(super) fn revoke(tx: &mut Conn, id: &str, now: Millis) -> StoreResult<bool> {
    let changed = tx.exec(
        "UPDATE tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL",
        &[&id, &now],
    )?;
    Ok(changed == 1)
}

/// The credential `name`, if stored (a removed one is kept as an empty value, so that its
/// version goes on growing).
pub(super) fn credential(conn: &mut Conn, name: &str) -> StoreResult<Option<Credential>> {
    conn.opt(
        "SELECT value, version FROM credentials WHERE name = $1 AND value <> ''",
        &[&name],
    )?
    .map(|row| {
        Ok(Credential {
            value: col(&row, 0)?,
            version: col(&row, 1)?,
        })
    })
    .transpose()
}

/// Writes credential `name` if its version is still `expected` (`None`: none is stored, or it
/// was removed); the new version.
pub(super) fn put_credential(
    tx: &mut Conn,
    name: &str,
    value: &str,
    expected: Option<i64>,
    now: Millis,
) -> StoreResult<Option<i64>> {
    if value.is_empty() {
        return Err(StoreError::Backend(
            "a credential's value may not be empty".into(),
        ));
    }
    let row = match expected {
        None => tx.opt(
            "INSERT INTO credentials (name, value, version, updated_at) VALUES ($1, $2, 1, $3)
             ON CONFLICT (name) DO UPDATE
               SET value = excluded.value, version = credentials.version + 1,
                   updated_at = excluded.updated_at
               WHERE credentials.value = ''
             RETURNING version",
            &[&name, &value, &now],
        )?,
        Some(version) => tx.opt(
            "UPDATE credentials SET value = $2, version = version + 1, updated_at = $4
             WHERE name = $1 AND version = $3 AND value <> ''
             RETURNING version",
            &[&name, &value, &version, &now],
        )?,
    };
    row.map(|row| col(&row, 0)).transpose()
}

/// Removes credential `name`, keeping its version growing.
pub(super) fn delete_credential(tx: &mut Conn, name: &str, now: Millis) -> StoreResult<bool> {
    let changed = tx.exec(
        "UPDATE credentials SET value = '', version = version + 1, updated_at = $2
         WHERE name = $1 AND value <> ''",
        &[&name, &now],
    )?;
    Ok(changed == 1)
}
