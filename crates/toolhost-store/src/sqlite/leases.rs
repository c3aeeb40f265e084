//! Thread leases: claimed, renewed, released and checked with compare-and-set in one
//! transaction each.

use super::{db, exec, query_one, require_thread};
use crate::error::{StoreError, StoreResult};
use crate::lease::{HeldLease, Lease, LeaseClaim};
use crate::model::{now_millis, Millis};
use rusqlite::{params, Connection, OptionalExtension};

/// The lease row of a thread, if any.
pub(super) fn lease(conn: &Connection, thread: &str) -> StoreResult<Option<Lease>> {
    query_one(
        conn,
        "SELECT owner, since, expires_at, stop_requested FROM leases WHERE thread = ?1",
        [thread],
        |r| {
            Ok(Lease {
                owner: r.get(0)?,
                since: r.get(1)?,
                expires_at: r.get(2)?,
                stop_requested: r.get(3)?,
            })
        },
    )
    .optional()
    .map_err(db)
}

/// Runs inside the writer's transaction: the read and the update are one compare-and-set.
pub(super) fn claim(tx: &Connection, thread: &str, claim: &LeaseClaim) -> StoreResult<Lease> {
    require_thread(tx, thread)?;
    let now = now_millis();
    let expires_at = now.saturating_add(claim.ttl_ms.max(1));
    let lease = match lease(tx, thread)? {
        None => {
            exec(
                tx,
                "INSERT INTO leases (thread, owner, since, expires_at, stop_requested)
                 VALUES (?1, ?2, ?3, ?4, 0)",
                params![thread, claim.owner, now, expires_at],
            )
            .map_err(db)?;
            fresh(&claim.owner, now, expires_at)
        }
        Some(held) if held.owner == claim.owner => {
            exec(
                tx,
                "UPDATE leases SET expires_at = ?2 WHERE thread = ?1",
                params![thread, expires_at],
            )
            .map_err(db)?;
            Lease { expires_at, ..held }
        }
        Some(held) if held.expires_at <= now || claim.replacing.as_deref() == Some(&held.owner) => {
            exec(
                tx,
                "UPDATE leases SET owner = ?2, since = ?3, expires_at = ?4, stop_requested = 0
                 WHERE thread = ?1",
                params![thread, claim.owner, now, expires_at],
            )
            .map_err(db)?;
            fresh(&claim.owner, now, expires_at)
        }
        Some(held) => {
            return Err(StoreError::ThreadOwned {
                thread: thread.to_owned(),
                lease: held,
            })
        }
    };
    Ok(lease)
}

fn fresh(owner: &str, since: Millis, expires_at: Millis) -> Lease {
    Lease {
        owner: owner.to_owned(),
        since,
        expires_at,
        stop_requested: false,
    }
}

pub(super) fn renew(
    conn: &Connection,
    thread: &str,
    owner: &str,
    ttl_ms: Millis,
) -> StoreResult<Lease> {
    let expires_at = now_millis().saturating_add(ttl_ms.max(1));
    let changed = exec(
        conn,
        "UPDATE leases SET expires_at = ?3 WHERE thread = ?1 AND owner = ?2",
        params![thread, owner, expires_at],
    )
    .map_err(db)?;
    if changed == 0 {
        return Err(lost(thread, owner));
    }
    lease(conn, thread)?.ok_or_else(|| lost(thread, owner))
}

/// Renews the leases that carry a time to live and reads the others (see
/// [`crate::Store::keep_leases`]); inside the writer's transaction when any is renewed.
pub(super) fn keep(conn: &Connection, held: &[HeldLease]) -> StoreResult<Vec<Option<Lease>>> {
    held.iter()
        .map(|h| match h.ttl_ms {
            Some(ttl) => match renew(conn, &h.thread, &h.owner, ttl) {
                Ok(lease) => Ok(Some(lease)),
                Err(StoreError::LeaseLost { .. }) => Ok(None),
                Err(e) => Err(e),
            },
            None => Ok(lease(conn, &h.thread)?.filter(|l| l.owner == h.owner)),
        })
        .collect()
}

pub(super) fn release(conn: &Connection, thread: &str, owner: &str) -> StoreResult<bool> {
    let changed = exec(
        conn,
        "DELETE FROM leases WHERE thread = ?1 AND owner = ?2",
        params![thread, owner],
    )
    .map_err(db)?;
    Ok(changed > 0)
}

pub(super) fn request_stop(conn: &Connection, thread: &str) -> StoreResult<bool> {
    require_thread(conn, thread)?;
    let changed = exec(
        conn,
        "UPDATE leases SET stop_requested = 1 WHERE thread = ?1 AND expires_at > ?2",
        params![thread, now_millis()],
    )
    .map_err(db)?;
    Ok(changed > 0)
}

/// Fails unless `owner` holds the thread's lease (the fence at the head of a run's batches).
pub(super) fn check_owner(conn: &Connection, thread: &str, owner: &str) -> StoreResult<()> {
    match lease(conn, thread)? {
        Some(held) if held.owner == owner => Ok(()),
        _ => Err(lost(thread, owner)),
    }
}

fn lost(thread: &str, owner: &str) -> StoreError {
    StoreError::LeaseLost {
        thread: thread.to_owned(),
        owner: owner.to_owned(),
    }
}
