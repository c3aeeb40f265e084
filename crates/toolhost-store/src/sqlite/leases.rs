//! Thread leases: claimed, renewed, released and checked with compare-and-set in one
//! transaction each.

use super::{db, exec, query_one, require_thread};
use crate::error::{StoreError, StoreResult};
use crate::lease::{HeldLease, Lease, LeaseClaim};
use crate::model::{now_millis, Millis};
use crate::rules::{claim_step, lease_lost, ClaimStep};
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
    Ok(
        match claim_step(thread, lease(tx, thread)?, claim, now_millis())? {
            ClaimStep::Insert(fresh) => {
                exec(
                    tx,
                    "INSERT INTO leases (thread, owner, since, expires_at, stop_requested)
                 VALUES (?1, ?2, ?3, ?4, 0)",
                    params![thread, fresh.owner, fresh.since, fresh.expires_at],
                )
                .map_err(db)?;
                fresh
            }
            ClaimStep::Extend(renewed) => {
                exec(
                    tx,
                    "UPDATE leases SET expires_at = ?2 WHERE thread = ?1",
                    params![thread, renewed.expires_at],
                )
                .map_err(db)?;
                renewed
            }
            ClaimStep::TakeOver(fresh) => {
                exec(
                    tx,
                    "UPDATE leases SET owner = ?2, since = ?3, expires_at = ?4, stop_requested = 0
                 WHERE thread = ?1",
                    params![thread, fresh.owner, fresh.since, fresh.expires_at],
                )
                .map_err(db)?;
                fresh
            }
        },
    )
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
        return Err(lease_lost(thread, owner));
    }
    lease(conn, thread)?.ok_or_else(|| lease_lost(thread, owner))
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
        _ => Err(lease_lost(thread, owner)),
    }
}
