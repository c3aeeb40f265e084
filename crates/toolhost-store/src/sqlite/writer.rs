//! The one writer: a thread of its own that owns the write connection and applies every write
//! the store is asked for. Writes that arrive while a commit is under way wait in the channel
//! and then go together: one transaction, one commit, one fsync for the whole group (group
//! commit). Each write runs inside a savepoint of the group's transaction, so one that fails is
//! undone alone and fails alone; the others still commit. A caller hears of its write only once
//! the group's commit is durable.

use super::{db, exec, lock_conn};
use crate::error::{StoreError, StoreResult};
pub(crate) use crate::reply::{Counters, Reply};
use rusqlite::Connection;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

/// The most writes that share one commit: bounds how long the first of them waits.
const MAX_GROUP: usize = 256;

/// A write waiting for the writer: it runs once, then hears whether its group committed.
pub(super) trait Job: Send {
    /// Runs the write on the writer's connection, inside a savepoint; returns whether it
    /// succeeded (a failed one is rolled back to its savepoint).
    fn run(&mut self, conn: &Connection) -> bool;
    /// Delivers the outcome once the group's transaction is committed (or failed).
    fn finish(self: Box<Self>, committed: Result<(), String>);
}

/// A write with a typed result, delivered to a waiting caller.
pub(super) struct TypedJob<T, F> {
    work: Option<F>,
    result: Option<StoreResult<T>>,
    reply: Reply<T>,
}

impl<T, F> TypedJob<T, F> {
    pub(super) fn new(work: F, reply: Reply<T>) -> Self {
        Self {
            work: Some(work),
            result: None,
            reply,
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
}

/// Applies groups of writes until every sender is gone.
pub(super) fn run_writer(
    conn: Arc<Mutex<Connection>>,
    jobs: Receiver<Box<dyn Job>>,
    counters: Arc<Counters>,
) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        apply_group(&lock_conn(&conn), group, &counters);
    }
}

/// Applies a group of writes in one transaction and tells each its outcome.
pub(super) fn apply_group(conn: &Connection, group: Vec<Box<dyn Job>>, counters: &Counters) {
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
        return apply_alone(conn, group);
    }
    let mut ran = Vec::with_capacity(group.len());
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
    }
    let committed = exec(conn, "COMMIT", []).map(|_| ()).map_err(|e| {
        let _ = exec(conn, "ROLLBACK", []);
        format!("the commit failed: {e}")
    });
    for job in ran {
        job.finish(committed.clone());
    }
}

/// A group of one write: its transaction is its own, so it needs no savepoint; a write that
/// fails (or panics) rolls the transaction back.
fn apply_alone(conn: &Connection, group: Vec<Box<dyn Job>>) {
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
        job.finish(committed);
    }
}
