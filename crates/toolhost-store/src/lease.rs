//! Thread ownership: at most one run moves a thread at a time.
//!
//! A run claims its thread before it reads or writes anything and holds a [`Lease`] that it
//! renews while it runs. Anyone else who wants the thread to move (a second process, an HTTP
//! request, another node) writes what it has (a queued message, a decision, variables) and leaves
//! the running to the owner. A lease whose owner died is taken over once it expires, or at once by
//! a claim that names the dead owner in [`LeaseClaim::replacing`] (the runtime does this when it
//! can see that the owner's process is gone). Every batch a run writes starts with
//! [`crate::Write::CheckOwner`], so a run that lost its lease cannot write another word.

use crate::model::Millis;
use serde::{Deserialize, Serialize};

/// Who owns a thread, since when and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The owning run's id (opaque to the store).
    pub owner: String,
    /// When this owner claimed the thread (renewals keep it).
    pub since: Millis,
    /// When the lease runs out unless it is renewed.
    pub expires_at: Millis,
    /// Whether someone asked the owner to stop ([`crate::Store::request_stop`]).
    pub stop_requested: bool,
}

impl Lease {
    /// Whether the lease still holds at `now`: an expired one is a dead owner's, which the next
    /// claim takes over, and nobody's to show as the thread's owner.
    pub fn is_live(&self, now: Millis) -> bool {
        self.expires_at > now
    }
}

/// A request to own a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseClaim {
    /// The claiming run's id.
    pub owner: String,
    /// How long the lease lasts from now unless it is renewed, in milliseconds.
    pub ttl_ms: Millis,
    /// An owner known to be dead: its lease is taken over even before it expires.
    pub replacing: Option<String>,
}

/// A lease a process holds, as [`crate::Store::keep_leases`] takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLease {
    /// The thread.
    pub thread: String,
    /// The owning run's id.
    pub owner: String,
    /// Renew it to this many milliseconds from now; `None` only reads it.
    pub ttl_ms: Option<Millis>,
}
