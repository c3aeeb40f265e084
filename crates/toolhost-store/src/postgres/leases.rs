//! Thread leases: claimed, renewed, released and checked with compare-and-set inside the
//! writer's transaction, which holds the cluster's write lock; `now` is the database's clock.

use super::conn::{col, Conn};
use super::require_thread;
use crate::error::{StoreError, StoreResult};
use crate::lease::{HeldLease, Lease, LeaseClaim};
use crate::model::Millis;
use crate::rules::{claim_step, lease_lost, ClaimStep};

/// The lease row of a thread, if any.
pub(super) fn lease(conn: &mut Conn, thread: &str) -> StoreResult<Option<Lease>> {
    conn.opt(
        "SELECT owner, since, expires_at, stop_requested FROM leases WHERE thread = $1",
        &[&thread],
    )?
    .map(|row| {
        Ok(Lease {
            owner: col(&row, 0)?,
            since: col(&row, 1)?,
            expires_at: col(&row, 2)?,
            stop_requested: col(&row, 3)?,
        })
    })
    .transpose()
}

pub(super) fn claim(
    tx: &mut Conn,
    thread: &str,
    claim: &LeaseClaim,
    now: Millis,
) -> StoreResult<Lease> {
    require_thread(tx, thread)?;
    let held = lease(tx, thread)?;
    Ok(match claim_step(thread, held, claim, now)? {
        ClaimStep::Insert(fresh) => {
            tx.exec(
                "INSERT INTO leases (thread, owner, since, expires_at, stop_requested)
                 VALUES ($1, $2, $3, $4, false)",
                &[&thread, &fresh.owner, &fresh.since, &fresh.expires_at],
            )?;
            fresh
        }
        ClaimStep::Extend(renewed) => {
            tx.exec(
                "UPDATE leases SET expires_at = $2 WHERE thread = $1",
                &[&thread, &renewed.expires_at],
            )?;
            renewed
        }
        ClaimStep::TakeOver(fresh) => {
            tx.exec(
                "UPDATE leases SET owner = $2, since = $3, expires_at = $4, stop_requested = false
                 WHERE thread = $1",
                &[&thread, &fresh.owner, &fresh.since, &fresh.expires_at],
            )?;
            fresh
        }
    })
}

pub(super) fn renew(
    tx: &mut Conn,
    thread: &str,
    owner: &str,
    ttl_ms: Millis,
    now: Millis,
) -> StoreResult<Lease> {
    let expires_at = now.saturating_add(ttl_ms.max(1));
    let row = tx.opt(
        "UPDATE leases SET expires_at = $3 WHERE thread = $1 AND owner = $2
         RETURNING owner, since, expires_at, stop_requested",
        &[&thread, &owner, &expires_at],
    )?;
    let Some(row) = row else {
        return Err(lease_lost(thread, owner));
    };
    Ok(Lease {
        owner: col(&row, 0)?,
        since: col(&row, 1)?,
        expires_at: col(&row, 2)?,
        stop_requested: col(&row, 3)?,
    })
}

/// Renews the leases that carry a time to live and reads the others (see
/// [`crate::Store::keep_leases`]).
pub(super) fn keep(
    conn: &mut Conn,
    held: &[HeldLease],
    now: Option<Millis>,
) -> StoreResult<Vec<Option<Lease>>> {
    held.iter()
        .map(|h| match (h.ttl_ms, now) {
            (Some(ttl), Some(now)) => match renew(conn, &h.thread, &h.owner, ttl, now) {
                Ok(lease) => Ok(Some(lease)),
                Err(StoreError::LeaseLost { .. }) => Ok(None),
                Err(e) => Err(e),
            },
            _ => Ok(lease(conn, &h.thread)?.filter(|l| l.owner == h.owner)),
        })
        .collect()
}

pub(super) fn release(tx: &mut Conn, thread: &str, owner: &str) -> StoreResult<bool> {
    let changed = tx.exec(
        "DELETE FROM leases WHERE thread = $1 AND owner = $2",
        &[&thread, &owner],
    )?;
    Ok(changed > 0)
}

pub(super) fn request_stop(tx: &mut Conn, thread: &str, now: Millis) -> StoreResult<bool> {
    require_thread(tx, thread)?;
    // Heard by the node whose run holds the lease: it stops at once instead of at its next look.
    tx.touch(thread);
    let changed = tx.exec(
        "UPDATE leases SET stop_requested = true WHERE thread = $1 AND expires_at > $2",
        &[&thread, &now],
    )?;
    Ok(changed > 0)
}

/// Fails unless `owner` holds the thread's lease (the fence at the head of a run's batches).
pub(super) fn check_owner(conn: &mut Conn, thread: &str, owner: &str) -> StoreResult<()> {
    match lease(conn, thread)? {
        Some(held) if held.owner == owner => Ok(()),
        _ => Err(lease_lost(thread, owner)),
    }
}
