//! The one writer: a thread of its own that owns the write connection and applies every write
//! the store is asked for. Writes that arrive while a commit is under way wait in the channel
//! and then go together: one transaction, one commit, one fsync for the whole group (group
//! commit). Each write runs inside a savepoint of the group's transaction, so one that fails is
//! undone alone and fails alone; the others still commit. A caller hears of its write only once
//! the group's commit is durable. Once a group commits, the writer tells the store's listeners
//! which threads it wrote to ([`Told::commits`]), so that followers in this process read again
//! at once instead of at their next poll.

use super::{db, exec, lock_conn};
use crate::error::{StoreError, StoreResult};
pub(crate) use crate::reply::{Counters, Reply};
use crate::Committed;
use rusqlite::Connection;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// How many commit notices a listener may fall behind before it misses some (it then reads
/// everything it follows again).
const NOTICES: usize = 256;

/// What the writer tells besides each caller's own outcome.
pub(super) struct Told {
    /// Writes applied and commits made.
    pub(super) counters: Counters,
    /// A notice per committed group that wrote to threads, naming them.
    pub(super) commits: broadcast::Sender<Arc<Committed>>,
}

impl Default for Told {
    fn default() -> Self {
        Self {
            counters: Counters::default(),
            commits: broadcast::channel(NOTICES).0,
        }
    }
}

impl Told {
    /// Tells the listeners (if any) that a group writing to `threads` committed.
    fn committed<'a>(&self, threads: impl Iterator<Item = Option<&'a str>>) {
        if self.commits.receiver_count() == 0 {
            return;
        }
        let mut touched: Vec<String> = Vec::new();
        for thread in threads.flatten() {
            if !touched.iter().any(|t| t == thread) {
                touched.push(thread.to_owned());
            }
        }
        if !touched.is_empty() {
            let _ = self.commits.send(Arc::new(Committed {
                threads: Some(touched),
            }));
        }
    }
}

/// The most writes that share one commit: bounds how long the first of them waits.
const MAX_GROUP: usize = 256;

/// A write waiting for the writer: it runs once, then hears whether its group committed.
pub(super) trait Job: Send {
    /// Runs the write on the writer's connection, inside a savepoint; returns whether it
    /// succeeded (a failed one is rolled back to its savepoint).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Delivers the outcome once the group's transaction is committed (or failed).
    fn finish(self: Box<Self>, committed: Result<(), String>);
    /// The thread the write changes, for the notice of its commit (`None`: none that a
    /// follower of threads watches, such as tokens and lease renewals).
    fn thread(&self) -> Option<&str>;
}

/// A write with a typed result, delivered to a waiting caller.
pub(super) struct TypedJob<T, F> {
    work: Option<F>,
    result: Option<StoreResult<T>>,
    reply: Reply<T>,
    thread: Option<String>,
}

impl<T, F> TypedJob<T, F> {
    /// A write that changes `thread` (see [`Job::thread`]).
    pub(super) fn new(work: F, reply: Reply<T>, thread: Option<String>) -> Self {
        Self {
            work: Some(work),
            result: None,
            reply,
            thread,
        }
    }
}

impl<T, F> Job for TypedJob<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> StoreResult<T> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let result = match self.work.take() {
            Some(work) => work(conn),
            None => Err(StoreError::Corrupt("a write ran twice".to_owned())),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn finish(self: Box<Self>, committed: Result<(), String>) {
        self.reply.deliver(self.result, committed);
    }

    fn thread(&self) -> Option<&str> {
        self.thread.as_deref()
    }
}

/// Applies groups of writes until every sender is gone.
pub(super) fn run_writer(
    conn: Arc<Mutex<Connection>>,
    jobs: Receiver<Box<dyn Job>>,
    told: Arc<Told>,
) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        apply_group(&lock_conn(&conn), group, &told);
    }
}

/// Applies a group of writes in one transaction and tells each its outcome.
pub(super) fn apply_group(conn: &Connection, group: Vec<Box<dyn Job>>, told: &Told) {
    let counters = &told.counters;
    counters
        .writes
        .fetch_add(group.len() as u64, Ordering::Relaxed);
    counters.commits.fetch_add(1, Ordering::Relaxed);
    // IMMEDIATE: the database's write lock is taken now (waiting for another process's
    // writer up to the busy timeout), so no write of the group can fail for want of it later.
    if let Err(e) = exec(conn, "BEGIN IMMEDIATE", []).map_err(db) {
        let why = e.to_string();
        for job in group {
            job.finish(Err(why.clone()));
        }
        return;
    }
    if group.len() == 1 {
        return apply_alone(conn, group, told);
    }
    let mut ran = Vec::with_capacity(group.len());
    // Which of them changed something (a write undone to its savepoint is not told).
    let mut succeeded = Vec::with_capacity(group.len());
    let mut waiting = group.into_iter();
    while let Some(mut job) = waiting.next() {
        if exec(conn, "SAVEPOINT write", []).is_err() {
            job.finish(Err("the write could not start its savepoint".to_owned()));
            continue;
        }
        // A write that panics is undone and fails alone; the writer goes on.
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run(conn)))
            .unwrap_or(false);
        let closed = if ok {
            exec(conn, "RELEASE write", [])
        } else {
            exec(conn, "ROLLBACK TO write", []).and_then(|_| exec(conn, "RELEASE write", []))
        };
        if let Err(e) = closed {
            // The group's transaction is in an unknown state: give it up whole, and tell every
            // write of the group, run or not.
            let why = format!("a write could not close its savepoint: {e}");
            let _ = exec(conn, "ROLLBACK", []);
            for job in ran.into_iter().chain(std::iter::once(job)).chain(waiting) {
                Job::finish(job, Err(why.clone()));
            }
            return;
        }
        ran.push(job);
        succeeded.push(ok);
    }
    let committed = exec(conn, "COMMIT", []).map(|_| ()).map_err(|e| {
        let _ = exec(conn, "ROLLBACK", []);
        format!("the commit failed: {e}")
    });
    if committed.is_ok() {
        let kept = ran.iter().zip(&succeeded).filter(|(_, ok)| **ok);
        told.committed(kept.map(|(job, _)| job.thread()));
    }
    for job in ran {
        job.finish(committed.clone());
    }
}

/// A group of one write: its transaction is its own, so it needs no savepoint; a write that
/// fails (or panics) rolls the transaction back.
fn apply_alone(conn: &Connection, group: Vec<Box<dyn Job>>, told: &Told) {
    for mut job in group {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run(conn)))
            .unwrap_or(false);
        if !ok {
            let _ = exec(conn, "ROLLBACK", []);
            // The job reports its own failure; nothing was committed.
            job.finish(Ok(()));
            continue;
        }
        let committed = exec(conn, "COMMIT", []).map(|_| ()).map_err(|e| {
            let _ = exec(conn, "ROLLBACK", []);
            format!("the commit failed: {e}")
        });
        if committed.is_ok() {
            told.committed(std::iter::once(job.thread()));
        }
        job.finish(committed);
    }
}
