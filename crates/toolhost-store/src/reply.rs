//! How a backend's writer tells a caller what became of its write, and what the writer counts:
//! the same for every backend whose writes go through a writer thread with group commit.

use crate::error::{StoreError, StoreResult};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::SyncSender;

/// Where a write's outcome goes: a thread that blocks on it, or a task that awaits it.
pub(crate) enum Reply<T> {
    Blocking(SyncSender<StoreResult<T>>),
    Async(tokio::sync::oneshot::Sender<StoreResult<T>>),
}

impl<T> Reply<T> {
    /// Delivers the outcome of a write: its own `result` (`None` when it never finished: it
    /// panicked and was undone) once its group's commit ended with `committed`.
    pub(crate) fn deliver(self, result: Option<StoreResult<T>>, committed: Result<(), String>) {
        let outcome = match (result, committed) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (_, Err(why)) => Err(StoreError::Backend(why.into())),
            (None, Ok(())) => Err(StoreError::Backend(
                "the write failed inside the store and was undone".into(),
            )),
        };
        // The caller may have gone away; its write is committed all the same.
        match self {
            Reply::Blocking(to) => {
                let _ = to.send(outcome);
            }
            Reply::Async(to) => {
                let _ = to.send(outcome);
            }
        }
    }
}

/// What a writer has done so far: writes applied, in how many commits.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub writes: AtomicU64,
    pub commits: AtomicU64,
}
