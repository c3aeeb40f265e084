//! Taking work up. Offered work (see [`crate::runs`]) is taken as soon as this node has room
//! for it: when another node's offer is heard (PostgreSQL's `LISTEN/NOTIFY`), when a run of this
//! node ends while offers may wait, and at every sweep.
//!
//! Every [`ServerConfig::takeover_interval`](crate::ServerConfig) the server also sweeps: it
//! looks in the store for threads that have work no live run holds and starts their runs, as
//! many as it has room for. Work is stored before any run is tried, and a run that finds the
//! thread owned elsewhere ends at once (its owner takes up what was stored); the sweep is what
//! takes up the rest: the threads of a node that died (once their leases expired), work that
//! arrived while an owner was letting go, and offers that were lost. With several servers on
//! one database, whichever claims a thread first runs it; the others' runs end at once.
//!
//! A thread that is still there sweep after sweep (its run fails before it changes anything: an
//! agent the project no longer has, say) is tried again less and less often, so that it cannot
//! keep a node busy or fill its own history with failed runs.

use crate::state::AppState;
use std::collections::HashMap;
use std::time::Duration;
use std::time::Instant;

/// The longest a thread that keeps coming back waits for its next try.
const LONGEST_WAIT: Duration = Duration::from_secs(600);

/// When each thread the sweep started may be started again, and how long it waited last.
#[derive(Default)]
struct Tries(HashMap<String, (Instant, Duration)>);

impl Tries {
    /// Whether `thread` may be started at `now`; if so, its next try waits twice as long.
    fn start_now(&mut self, thread: &str, every: Duration, now: Instant) -> bool {
        match self.0.get_mut(thread) {
            Some((next, _)) if *next > now => false,
            Some((next, wait)) => {
                *wait = (*wait * 2).min(LONGEST_WAIT);
                *next = now + *wait;
                true
            }
            None => {
                self.0.insert(thread.to_owned(), (now + every, every));
                true
            }
        }
    }

    /// Forgets the threads that are not free now (their work is done, or a live run holds
    /// them): they start from the first try again.
    fn keep_only(&mut self, free: &[String]) {
        self.0.retain(|thread, _| free.contains(thread));
    }
}

/// Takes offers and sweeps until the task is aborted (the server stopping).
pub(crate) async fn keep_taking_over(state: AppState) {
    let every = state.config.takeover_interval;
    let mut tries = Tries::default();
    let mut offers = state.db.blocking().work_offers();
    let mut ended = state.runs.subscribe();
    let mut sweep = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = sweep.tick() => {
                // A notice of a shared store may have been missed; alone, this node knows
                // whether it offered anything (and the sweep finds the work regardless).
                if offers.is_some() || state.runs.offers_may_wait() {
                    take_offers(&state).await;
                }
                take_over(&state, &mut tries, every).await;
            }
            heard = offered(&mut offers) => {
                if heard {
                    state.runs.offers_heard();
                    take_offers(&state).await;
                } else {
                    // The store no longer tells: offers are found by looking.
                    offers = None;
                }
            }
            () = state.runs.offered() => take_offers(&state).await,
            _ = ended.recv() => {
                if state.runs.offers_may_wait() {
                    take_offers(&state).await;
                }
            }
        }
    }
}

/// Waits until an offer is heard (`true`), or the store stops telling (`false`); never, for a
/// store that does not tell.
async fn offered(offers: &mut Option<tokio::sync::watch::Receiver<u64>>) -> bool {
    match offers {
        Some(offers) => offers.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// Takes as many offers as this node has room for and starts their runs.
async fn take_offers(state: &AppState) {
    let room = state.runs.room();
    if room == 0 {
        return;
    }
    match state
        .db
        .run_blocking(move |s| s.take_offered_work(room))
        .await
    {
        Ok(taken) => {
            if taken.len() < room {
                state.runs.offers_taken();
            }
            for thread in taken {
                state.runs.start(state.runtime(), thread);
            }
        }
        Err(e) => tracing::warn!(error = %e, "offered work could not be taken"),
    }
}

/// Starts a run for each thread with work that neither this node runs nor a live lease holds,
/// as many as this node has room for.
async fn take_over(state: &AppState, tries: &mut Tries, every: Duration) {
    // One query: the work, less what a live lease (on the store's clock) holds. A claim still
    // decides for certain; this spares the claims that are sure to fail.
    let free = match state
        .db
        .run_blocking(|store| store.threads_with_unowned_work())
        .await
    {
        Ok(free) => free,
        Err(e) => {
            tracing::warn!(error = %e, "the threads to take over could not be listed");
            return;
        }
    };
    tries.keep_only(&free);
    // Past this node's room the rest is left to the other nodes' sweeps, or to the next one.
    let mut room = state.runs.room();
    for thread in free {
        if room == 0 {
            break;
        }
        if !state.runs.is_running(&thread) && tries.start_now(&thread, every, Instant::now()) {
            state.runs.start(state.runtime(), thread);
            room -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_keeps_coming_back_is_tried_less_and_less_often() {
        let every = Duration::from_secs(2);
        let mut tries = Tries::default();
        let mut now = Instant::now();
        assert!(tries.start_now("t", every, now));
        assert!(
            !tries.start_now("t", every, now),
            "not again before its wait"
        );
        let mut waits = Vec::new();
        for _ in 0..12 {
            let started = now;
            while !tries.start_now("t", every, now) {
                now += Duration::from_millis(500);
            }
            waits.push(now - started);
        }
        assert!(waits.windows(2).all(|w| w[0] <= w[1]), "{waits:?}");
        assert!(*waits.last().unwrap() <= LONGEST_WAIT + Duration::from_secs(1));
        assert!(*waits.last().unwrap() >= LONGEST_WAIT / 2);
        // Once its work is done it is forgotten, and starts from the first try again.
        tries.keep_only(&[]);
        assert!(tries.start_now("t", every, now));
    }
}
