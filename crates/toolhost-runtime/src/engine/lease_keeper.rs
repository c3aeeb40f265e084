//! One keeper per runtime holds the leases of every thread its runs own: a task on the async
//! runtime's timers (no thread of its own per run) that, every tick, renews in one store call
//! the leases that are due and reads the others, raising a run's abort signal when a stop was
//! requested (by another process) or when its lease was lost. With no lease held, the task ends;
//! the next claim starts it again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::time::Instant;
use toolhost_core::tool::AbortSignal;
use toolhost_store::{AsyncStore, HeldLease, Lease};

/// How often the keeper looks for stop requests between renewals.
const STOP_POLL: Duration = Duration::from_millis(250);

/// How long a keeper may go without looking before a new lease starts another.
const STALLED: Duration = Duration::from_secs(2);

/// One run's lease, as the keeper holds it.
struct Held {
    owner: String,
    ttl: Duration,
    abort: AbortSignal,
    lost: Arc<AtomicBool>,
    renewed: Instant,
}

#[derive(Default)]
struct Leases {
    held: HashMap<String, Held>,
    /// The keeper's task while it runs: it ends (setting this to `None`, under the same lock)
    /// when it finds nothing held, so a lease added after that starts a new one; so does one
    /// added after the async runtime it ran on shut down.
    keeping: Option<tokio::task::JoinHandle<()>>,
    /// When a keeper last looked (or was started). A keeper that has not looked for a while
    /// runs on an async runtime that is idle or blocked (one `Runtime` used from several): a
    /// lease added then starts another keeper on the caller's runtime. Two keepers only renew
    /// twice.
    looked: Option<Instant>,
}

/// The leases this runtime's runs hold; cheap to clone.
#[derive(Clone)]
pub(super) struct LeaseKeeper {
    store: AsyncStore,
    leases: Arc<Mutex<Leases>>,
}

impl LeaseKeeper {
    pub fn new(store: AsyncStore) -> Self {
        Self {
            store,
            leases: Arc::default(),
        }
    }

    /// Keeps the lease `owner` claimed on `thread` (just now) until [`LeaseKeeper::forget`]:
    /// renewed every third of `ttl`, `abort` raised on a stop request or a loss, and `lost` set
    /// on a loss. Must be called inside a tokio runtime.
    pub fn keep(
        &self,
        thread: &str,
        owner: &str,
        ttl: Duration,
        abort: AbortSignal,
        lost: Arc<AtomicBool>,
    ) {
        let mut leases = self.lock();
        let earlier = leases.held.insert(
            thread.to_owned(),
            Held {
                owner: owner.to_owned(),
                ttl,
                abort,
                lost,
                renewed: Instant::now(),
            },
        );
        // A run of this process whose lease was taken over (it lapsed): the claim just made
        // proves it lost the thread.
        if let Some(earlier) = earlier.filter(|e| e.owner != owner) {
            lose(thread, &earlier);
        }
        let stalled = leases.looked.is_none_or(|at| at.elapsed() > STALLED);
        let ended = leases
            .keeping
            .as_ref()
            .is_none_or(|task| task.is_finished());
        if stalled || ended {
            let (store, weak) = (self.store.clone(), Arc::downgrade(&self.leases));
            leases.keeping = Some(tokio::spawn(keep_all(store, weak)));
            leases.looked = Some(Instant::now());
        }
    }

    /// Stops keeping `owner`'s lease of `thread` (a later owner's entry is left alone). Called
    /// before the lease is released, so that the release is not taken for a loss.
    pub fn forget(&self, thread: &str, owner: &str) {
        let mut leases = self.lock();
        if leases.held.get(thread).is_some_and(|h| h.owner == owner) {
            leases.held.remove(thread);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Leases> {
        lock(&self.leases)
    }
}

fn lock(leases: &Mutex<Leases>) -> std::sync::MutexGuard<'_, Leases> {
    leases.lock().unwrap_or_else(|p| p.into_inner())
}

/// The keeper's task: ticks until nothing is held or the runtime is gone.
async fn keep_all(store: AsyncStore, leases: Weak<Mutex<Leases>>) {
    loop {
        let Some(tick) = next_tick(&leases) else {
            return;
        };
        tokio::time::sleep(tick).await;
        let Some(batch) = due(&leases) else {
            return;
        };
        let seen = store.keep_leases(batch.clone()).await;
        let Some(shared) = leases.upgrade() else {
            return;
        };
        let mut leases = lock(&shared);
        let seen = match seen {
            Ok(seen) => seen,
            // A busy or failing store: tried again at the next tick; the fence at the head of
            // every batch keeps the run's writes safe meanwhile.
            Err(e) => {
                tracing::warn!(error = %e, "the threads' leases were not renewed");
                continue;
            }
        };
        let now = Instant::now();
        for (asked, lease) in batch.iter().zip(seen) {
            // Only the run that was asked about: it may have let go meanwhile.
            let Some(held) = leases
                .held
                .get_mut(&asked.thread)
                .filter(|h| h.owner == asked.owner)
            else {
                continue;
            };
            match lease {
                Some(Lease { stop_requested, .. }) => {
                    if asked.ttl_ms.is_some() {
                        held.renewed = now;
                    }
                    if stop_requested {
                        held.abort.abort();
                    }
                }
                None => {
                    lose(&asked.thread, held);
                    leases.held.remove(&asked.thread);
                }
            }
        }
    }
}

/// Tells a run that it lost its thread: it stops (its next write would fail anyway).
fn lose(thread: &str, held: &Held) {
    tracing::warn!(thread, "the run lost its thread's lease; it stops");
    held.lost.store(true, Ordering::SeqCst);
    held.abort.abort();
}

/// How long to wait before the next look: a third of the shortest lease at most. `None` (and
/// the keeper marked as ended) when nothing is held or the runtime is gone.
fn next_tick(leases: &Weak<Mutex<Leases>>) -> Option<Duration> {
    let shared = leases.upgrade()?;
    let mut leases = lock(&shared);
    let shortest = leases.held.values().map(|h| h.ttl).min();
    if shortest.is_none() {
        leases.keeping = None;
    }
    Some(STOP_POLL.min(shortest? / 3))
}

/// Every held lease, with a time to live where it is due for renewal (a third of its life has
/// passed).
fn due(leases: &Weak<Mutex<Leases>>) -> Option<Vec<HeldLease>> {
    let shared = leases.upgrade()?;
    let mut leases = lock(&shared);
    if leases.held.is_empty() {
        leases.keeping = None;
        return None;
    }
    let now = Instant::now();
    leases.looked = Some(now);
    Some(
        leases
            .held
            .iter()
            .map(|(thread, h)| HeldLease {
                thread: thread.clone(),
                owner: h.owner.clone(),
                ttl_ms: (now.duration_since(h.renewed) >= h.ttl / 3)
                    .then_some(h.ttl.as_millis() as i64),
            })
            .collect(),
    )
}
