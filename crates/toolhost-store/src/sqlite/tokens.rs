//! API tokens: created, found by id, listed and revoked. The secret's hash is all that is kept.
//! And the project's credentials, written by compare-and-set.

use super::{db, exec, query_one};
use crate::error::{StoreError, StoreResult};
use crate::model::now_millis;
use crate::token::{ApiToken, Credential};
use rusqlite::{params, Connection, OptionalExtension, Row};

const COLUMNS: &str = "id, name, secret_hash, scopes, agents, created_at, revoked_at, expires_at";

fn row(r: &Row<'_>) -> rusqlite::Result<(ApiTokenRow, String, Option<String>)> {
    Ok((
        ApiTokenRow {
            id: r.get(0)?,
            name: r.get(1)?,
            secret_hash: r.get(2)?,
            created_at: r.get(5)?,
            revoked_at: r.get(6)?,
            expires_at: r.get(7)?,
        },
        r.get(3)?,
        r.get(4)?,
    ))
}

struct ApiTokenRow {
    id: String,
    name: String,
    secret_hash: String,
    created_at: i64,
    revoked_at: Option<i64>,
    expires_at: Option<i64>,
}

fn decode((t, scopes, agents): (ApiTokenRow, String, Option<String>)) -> StoreResult<ApiToken> {
    let corrupt = |what: &str, e: serde_json::Error| {
        StoreError::Corrupt(format!(
            "token {}: its {what} are not a JSON list: {e}",
            t.id
        ))
    };
    Ok(ApiToken {
        scopes: serde_json::from_str(&scopes).map_err(|e| corrupt("scopes", e))?,
        agents: agents
            .map(|a| serde_json::from_str(&a))
            .transpose()
            .map_err(|e| corrupt("agents", e))?,
        id: t.id,
        name: t.name,
        secret_hash: t.secret_hash,
        created_at: t.created_at,
        revoked_at: t.revoked_at,
        expires_at: t.expires_at,
    })
}

/// Stores a new token; an id that exists already is refused.
pub(super) fn create(tx: &Connection, token: &ApiToken) -> StoreResult<()> {
    let exists: Option<i64> =
        query_one(tx, "SELECT 1 FROM tokens WHERE id = ?1", [&token.id], |r| {
            r.get(0)
        })
        .optional()
        .map_err(db)?;
    if exists.is_some() {
        return Err(StoreError::TokenExists(token.id.clone()));
    }
    let encode = |e: serde_json::Error| StoreError::Backend(Box::new(e));
    let scopes = serde_json::to_string(&token.scopes).map_err(encode)?;
    let agents = token
        .agents
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(encode)?;
    exec(
        tx,
        "INSERT INTO tokens (id, name, secret_hash, scopes, agents, created_at, revoked_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            token.id,
            token.name,
            token.secret_hash,
            scopes,
            agents,
            token.created_at,
            token.revoked_at,
            token.expires_at
        ],
    )
    .map_err(db)?;
    Ok(())
}

/// The token with this id, revoked or not.
pub(super) fn find(conn: &Connection, id: &str) -> StoreResult<Option<ApiToken>> {
    query_one(
        conn,
        &format!("SELECT {COLUMNS} FROM tokens WHERE id = ?1"),
        [id],
        row,
    )
    .optional()
    .map_err(db)?
    .map(decode)
    .transpose()
}

/// Every token, oldest first.
pub(super) fn list(conn: &Connection) -> StoreResult<Vec<ApiToken>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tokens ORDER BY created_at, id"
        ))
        .map_err(db)?;
    let rows = stmt.query_map([], row).map_err(db)?;
    rows.map(|r| r.map_err(db).and_then(decode)).collect()
}

/// Marks the token revoked; `false` when there is no such token or it was revoked before.
pub(super) fn revoke(tx: &Connection, id: &str) -> StoreResult<bool> {
    let changed = exec(
        tx,
        "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        params![id, now_millis()],
    )
    .map_err(db)?;
    Ok(changed == 1)
}

/// The credential `name`, if stored (a removed one is kept as an empty value, so that its
/// version goes on growing).
pub(super) fn credential(conn: &Connection, name: &str) -> StoreResult<Option<Credential>> {
    query_one(
        conn,
        "SELECT value, version FROM credentials WHERE name = ?1 AND value != ''",
        [name],
        |r| {
            Ok(Credential {
                value: r.get(0)?,
                version: r.get(1)?,
            })
        },
    )
    .optional()
    .map_err(db)
}

/// Writes credential `name` if its version is still `expected` (`None`: none is stored, or
/// it was removed); the new version.
pub(super) fn put_credential(
    tx: &Connection,
    name: &str,
    value: &str,
    expected: Option<i64>,
) -> StoreResult<Option<i64>> {
    if value.is_empty() {
        return Err(StoreError::Backend(
            "a credential's value may not be empty".into(),
        ));
    }
    let written: Option<i64> = match expected {
        None => query_one(
            tx,
            "INSERT INTO credentials (name, value, version, updated_at) VALUES (?1, ?2, 1, ?3)
                 ON CONFLICT (name) DO UPDATE
                   SET value = excluded.value, version = credentials.version + 1,
                       updated_at = excluded.updated_at
                   WHERE credentials.value = ''
                 RETURNING version",
            params![name, value, now_millis()],
            |r| r.get(0),
        )
        .optional(),
        Some(version) => query_one(
            tx,
            "UPDATE credentials SET value = ?2, version = version + 1, updated_at = ?4
                 WHERE name = ?1 AND version = ?3 AND value != ''
                 RETURNING version",
            params![name, value, version, now_millis()],
            |r| r.get(0),
        )
        .optional(),
    }
    .map_err(db)?;
    Ok(written)
}

/// Removes credential `name`, keeping its version growing.
pub(super) fn delete_credential(tx: &Connection, name: &str) -> StoreResult<bool> {
    let changed = exec(
        tx,
        "UPDATE credentials SET value = '', version = version + 1, updated_at = ?2
         WHERE name = ?1 AND value != ''",
        params![name, now_millis()],
    )
    .map_err(db)?;
    Ok(changed == 1)
}
