//! What a process hears of commits (its own on SQLite, every node's on a shared PostgreSQL):
//! for followers of what is stored (event streams, a call waiting for a person's answer, a
//! parent waiting for its children) to read again at once, and only when what they follow
//! changed.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// A group of writes committed on some node of the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The threads it wrote to; `None` when that is not known (too many to say, or a
    /// notification that may have been missed): anything may have changed.
    pub threads: Option<Vec<String>>,
}

impl Committed {
    /// Whether a follower of `thread` should read again.
    pub fn touches(&self, thread: &str) -> bool {
        self.threads
            .as_ref()
            .is_none_or(|threads| threads.iter().any(|t| t == thread))
    }
}

/// A waiter for what is stored for one thread to change: wakes on each commit to the thread
/// that the store tells of ([`crate::Store::commits`]), and otherwise after the time it is
/// given, for writes it cannot hear of (another process's, on SQLite). Subscribes when it is
/// made: a caller makes it, reads, then waits, and misses no commit in between.
pub struct ThreadChanges {
    thread: String,
    commits: Option<broadcast::Receiver<Arc<Committed>>>,
}

impl ThreadChanges {
    /// Waits for changes of `thread` in `store`.
    pub fn new(store: &dyn crate::Store, thread: &str) -> Self {
        Self {
            thread: thread.to_owned(),
            commits: store.commits(),
        }
    }

    /// Forgets the commits heard so far: the caller is about to read what they changed. Call
    /// it before each read, so that a wait after the read wakes only for what came since.
    pub fn mark(&mut self) {
        if let Some(commits) = self.commits.as_mut() {
            while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = commits.try_recv() {}
        }
    }

    /// Returns once a commit to the thread was heard (or notices were missed: anything may
    /// have changed), or once `at_most` passed, whichever comes first. Either way the caller
    /// reads again.
    pub async fn next(&mut self, at_most: Duration) {
        let Some(commits) = self.commits.as_mut() else {
            return tokio::time::sleep(at_most).await;
        };
        let heard = async {
            loop {
                match commits.recv().await {
                    Ok(notice) if notice.touches(&self.thread) => return true,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => return true,
                    Err(broadcast::error::RecvError::Closed) => return false,
                }
            }
        };
        match tokio::time::timeout(at_most, heard).await {
            Ok(true) | Err(_) => {}
            // The store tells no more: wait the time out.
            Ok(false) => {
                self.commits = None;
                tokio::time::sleep(at_most).await;
            }
        }
    }
}
