//! Taking over: every [`ServerConfig::takeover_interval`](crate::ServerConfig), a server looks
//! in the store for threads that have work no live run holds and starts their runs. Work is
//! stored before any run is tried, and a run that finds the thread owned elsewhere ends at once
//! (its owner takes up what was stored); this sweep is what takes up the rest: the threads of a
//! node that died (once their leases expired), and work that arrived while an owner was letting
//! go. With several servers on one database, whichever claims a thread first runs it; the
//! others' runs end at once.

use crate::state::AppState;
use toolhost_store::now_millis;

/// Sweeps until the task is aborted (the server stopping).
pub(crate) async fn keep_taking_over(state: AppState) {
    let every = state.config.takeover_interval;
    loop {
        tokio::time::sleep(every).await;
        take_over(&state).await;
    }
}

/// Starts a run for each thread with work that neither this node runs nor a live lease holds.
async fn take_over(state: &AppState) {
    let found = state
        .db
        .run_blocking(|store| {
            let mut free = Vec::new();
            for thread in store.threads_with_work()? {
                // The lease's time is the store's clock; a claim decides for certain, this only
                // spares the claims that are sure to fail.
                let held = store
                    .lease(&thread)?
                    .is_some_and(|lease| lease.is_live(now_millis()));
                if !held {
                    free.push(thread);
                }
            }
            Ok(free)
        })
        .await;
    let threads = match found {
        Ok(threads) => threads,
        Err(e) => {
            tracing::warn!(error = %e, "the threads to take over could not be listed");
            return;
        }
    };
    for thread in threads {
        if !state.runs.is_running(&thread) {
            state.runs.start(state.runtime(), thread);
        }
    }
}
