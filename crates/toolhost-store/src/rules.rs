//! What every backend decides the same way, as plain functions over what it read: how a claim
//! changes a thread's lease, whether an approval decision may be stored, which tables hold a
//! thread's rows. The backends read, call these, and write what they say.

use crate::error::{StoreError, StoreResult};
use crate::lease::{Lease, LeaseClaim};
use crate::model::{ApprovalDecision, ApprovalRequest, Millis};

/// Every table that holds rows of a thread in a `thread` column, in the order a deletion
/// empties them (the thread's own row goes after all of them).
pub(crate) const THREAD_TABLES: &[&str] = &[
    "file_chunks",
    "files",
    "calls",
    "approvals",
    "variables",
    "variable_requests",
    "queue",
    "queue_keys",
    "events",
    "kv",
    "messages",
    "leases",
    "work_offers",
];

/// The threads that have work no run may be doing (see [`crate::Store::threads_with_work`]),
/// oldest first; `tiebreak` is the column that orders threads created in the same millisecond
/// (SQLite: `rowid`; PostgreSQL: `ord`). The work is looked for itself, whatever the thread's
/// status says, so that a crash between accepting work and running it loses nothing.
pub(crate) fn threads_with_work_sql(tiebreak: &str) -> String {
    work_sql(tiebreak, "")
}

/// Those of [`threads_with_work_sql`] that no lease live at `now` (an SQL expression of the
/// store's clock) holds (see [`crate::Store::threads_with_unowned_work`]).
pub(crate) fn threads_with_unowned_work_sql(tiebreak: &str, now: &str) -> String {
    work_sql(tiebreak, &unowned(now))
}

/// Whether the thread `thread` (an SQL expression) has work no lease live at `now` holds: a
/// query that returns it or nothing (an offer whose work was taken up another way is stale).
pub(crate) fn has_unowned_work_sql(thread: &str, now: &str) -> String {
    work_sql("id", &format!("AND t.id = {thread} {}", unowned(now)))
}

fn unowned(now: &str) -> String {
    format!(
        "AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.thread = t.id AND l.expires_at > {now})"
    )
}

fn work_sql(tiebreak: &str, and: &str) -> String {
    format!(
        "SELECT t.id FROM threads t
         WHERE (t.status = 'running'
            OR (t.status <> 'paused'
                AND EXISTS (SELECT 1 FROM queue q WHERE q.thread = t.id))
            OR (t.status = 'idle'
                AND (SELECT m.role FROM messages m WHERE m.thread = t.id
                     ORDER BY m.seq DESC LIMIT 1) = 'user')
            OR (t.status = 'paused'
                AND NOT EXISTS (SELECT 1 FROM approvals a
                                WHERE a.thread = t.id AND a.decision IS NULL)
                AND NOT EXISTS (SELECT 1 FROM variable_requests v
                                WHERE v.thread = t.id AND v.answered_at IS NULL)))
         {and}
         ORDER BY t.created_at, t.{tiebreak}"
    )
}

/// What a claim does to the thread's lease row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClaimStep {
    /// Nobody holds it: a new row, this lease.
    Insert(Lease),
    /// The claimant holds it already: a renewal, to this expiry.
    Extend(Lease),
    /// Its owner's lease expired, or its owner is the dead one the claim names: the claimant
    /// takes it over with this lease.
    TakeOver(Lease),
}

/// How `claim` changes the lease `held` (if any) at the store's time `now`, or
/// [`StoreError::ThreadOwned`] when another live owner holds it.
pub(crate) fn claim_step(
    thread: &str,
    held: Option<Lease>,
    claim: &LeaseClaim,
    now: Millis,
) -> StoreResult<ClaimStep> {
    let expires_at = now.saturating_add(claim.ttl_ms.max(1));
    let fresh = Lease {
        owner: claim.owner.clone(),
        since: now,
        expires_at,
        stop_requested: false,
    };
    match held {
        None => Ok(ClaimStep::Insert(fresh)),
        Some(held) if held.owner == claim.owner => {
            Ok(ClaimStep::Extend(Lease { expires_at, ..held }))
        }
        Some(held) if held.expires_at <= now || claim.replacing.as_deref() == Some(&held.owner) => {
            Ok(ClaimStep::TakeOver(fresh))
        }
        Some(held) => Err(StoreError::ThreadOwned {
            thread: thread.to_owned(),
            lease: held,
        }),
    }
}

/// The error of a write fenced by an owner that no longer holds the thread.
pub(crate) fn lease_lost(thread: &str, owner: &str) -> StoreError {
    StoreError::LeaseLost {
        thread: thread.to_owned(),
        owner: owner.to_owned(),
    }
}

/// Whether `decision` may be stored for the call `call_id` that waits with `request` (`None`:
/// no call waits under this id), given whether it was `decided` already.
pub(crate) fn check_decision(
    call_id: &str,
    request: Option<&ApprovalRequest>,
    decided: bool,
    decision: &ApprovalDecision,
) -> StoreResult<()> {
    let refused = |reason: &str| StoreError::DecisionRefused {
        call_id: call_id.to_owned(),
        reason: reason.to_owned(),
    };
    let Some(request) = request else {
        return Err(refused(
            "no call of this thread waits for approval under this id",
        ));
    };
    if decided {
        return Err(refused("the call was already decided"));
    }
    if request.args_hash != decision.args_hash {
        return Err(refused(
            "it was made for other arguments than the call waits with",
        ));
    }
    if request.tool_fingerprint != decision.tool_fingerprint {
        return Err(refused(
            "it was made for another definition of the tool than the call waits with",
        ));
    }
    Ok(())
}
