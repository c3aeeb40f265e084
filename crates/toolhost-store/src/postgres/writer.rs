//! This node's writer: a thread that owns the write connection and applies every write the
//! store is asked for. Writes that arrive while a commit is under way wait in the channel and
//! then go together: one transaction, one commit for the group. The transaction first takes the
//! cluster's write lock and reads the database's clock; each write then runs in a savepoint of
//! its own, so one that fails is undone alone and fails alone. A caller hears of its write only
//! once the group's commit is durable.

use super::{conn::Conn, Target, WRITE_LOCK};
use crate::error::{StoreError, StoreResult};
use crate::model::Millis;
pub(crate) use crate::reply::{Counters, Reply};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;

/// The most a notice of a commit says, in bytes (PostgreSQL takes at most 8,000): a group
/// that wrote to more threads sends an empty notice, which means "anything may have changed".
const NOTICE_BYTES: usize = 7_000;

/// Ends a group: every node listening hears of it, with the threads it wrote to (a notification
/// is sent only if the transaction commits), in the same round trip as the commit.
fn commit_statement(touched: &[String]) -> String {
    let mut notice = super::text::holdable_text(&touched.join("\n")).into_owned();
    if notice.len() > NOTICE_BYTES {
        notice.clear();
    }
    format!(
        "NOTIFY {}, '{}'; COMMIT",
        super::listener::COMMITS,
        notice.replace('\'', "''")
    )
}

/// The most writes that share one commit: bounds how long the first of them waits.
const MAX_GROUP: usize = 256;

/// A write waiting for the writer: it runs once, then hears whether its group committed.
pub(super) trait Job: Send {
    /// Runs the write inside the group's transaction at the database's time `now`; returns
    /// whether it succeeded.
    fn run(&mut self, conn: &mut Conn, now: Millis) -> bool;
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
    F: FnOnce(&mut Conn, Millis) -> StoreResult<T> + Send,
{
    fn run(&mut self, conn: &mut Conn, now: Millis) -> bool {
        let result = match self.work.take() {
            Some(work) => work(conn, now),
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

/// Applies groups of writes until every sender is gone; a connection the server closed is
/// replaced before the next group.
pub(super) fn run_writer(
    mut conn: Conn,
    target: &Target,
    jobs: Receiver<Box<dyn Job>>,
    counters: &Counters,
) {
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        if conn.is_closed() {
            match writer_session(target.connect()) {
                Ok(fresh) => conn = fresh,
                Err(e) => {
                    let why = e.to_string();
                    for job in group {
                        job.finish(Err(why.clone()));
                    }
                    continue;
                }
            }
        }
        apply_group(&mut conn, target, group, counters);
    }
}

/// A connection made the writer's: a transaction it leaves open (its node cut off from the
/// server in the middle of a group) is ended by the server, which frees the cluster's write
/// lock for the other nodes.
pub(super) fn writer_session(conn: StoreResult<Conn>) -> StoreResult<Conn> {
    let mut conn = conn?;
    conn.batch("SET idle_in_transaction_session_timeout = '30s'")?;
    Ok(conn)
}

/// Begins a write transaction: the cluster's write lock, then the database's clock, in one
/// round trip.
fn begin(conn: &mut Conn) -> StoreResult<Millis> {
    let now = conn.simple_value(&format!(
        "BEGIN; SELECT {} FROM (SELECT pg_advisory_xact_lock({WRITE_LOCK})) AS locked",
        super::DB_NOW
    ))?;
    now.parse()
        .map_err(|e| StoreError::Corrupt(format!("the database's clock read {now:?}: {e}")))
}

/// Applies a group of writes in one transaction and tells each its outcome.
fn apply_group(conn: &mut Conn, target: &Target, group: Vec<Box<dyn Job>>, counters: &Counters) {
    counters
        .writes
        .fetch_add(group.len() as u64, Ordering::Relaxed);
    counters.commits.fetch_add(1, Ordering::Relaxed);
    // A connection the server closed (it restarted) is only known to be closed once used: the
    // group, none of whose writes ran yet, begins again on a new one.
    let began = begin(conn).or_else(|e| {
        if !conn.is_closed() {
            return Err(e);
        }
        *conn = writer_session(target.connect())?;
        begin(conn)
    });
    // Nothing a failed group noted is told of.
    conn.take_touched();
    let now = match began {
        Ok(now) => now,
        Err(e) => {
            let _ = conn.batch("ROLLBACK");
            let why = e.to_string();
            for job in group {
                job.finish(Err(why.clone()));
            }
            return;
        }
    };
    let alone = group.len() == 1;
    let mut ran = Vec::with_capacity(group.len());
    let mut waiting = group.into_iter();
    // Each write of a shared group runs in a savepoint; the previous one is released and the
    // next one set in one round trip, and the commit releases the last.
    let mut savepoint_open = false;
    while let Some(mut job) = waiting.next() {
        if alone {
            // Its transaction is its own: a failure rolls it back whole.
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run(conn, now)))
                .unwrap_or(false);
            if !ok {
                let _ = conn.batch("ROLLBACK");
                // The job reports its own failure; nothing was committed.
                job.finish(Ok(()));
                return;
            }
            ran.push(job);
            continue;
        }
        let set = conn.batch(if savepoint_open {
            "RELEASE SAVEPOINT write; SAVEPOINT write"
        } else {
            "SAVEPOINT write"
        });
        if set.is_err() {
            // The transaction is unusable: give the group up whole.
            return give_up(
                conn,
                ran,
                job,
                waiting,
                "the write could not start its savepoint",
            );
        }
        savepoint_open = true;
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job.run(conn, now)))
            .unwrap_or(false);
        if !ok {
            if let Err(e) = conn.batch("ROLLBACK TO SAVEPOINT write") {
                let why = format!("a failed write could not be undone: {e}");
                return give_up(conn, ran, job, waiting, &why);
            }
        }
        ran.push(job);
    }
    let touched = conn.take_touched();
    let committed = conn.batch(&commit_statement(&touched)).map_err(|e| {
        let _ = conn.batch("ROLLBACK");
        // A commit whose answer was lost may have happened: the callers are told it failed,
        // and the runtime's recovery treats such writes as of unknown outcome.
        format!("the commit failed: {e}")
    });
    for job in ran {
        job.finish(committed.clone());
    }
}

/// Rolls the group's transaction back and tells every write of the group, run or not.
fn give_up(
    conn: &mut Conn,
    ran: Vec<Box<dyn Job>>,
    current: Box<dyn Job>,
    waiting: impl Iterator<Item = Box<dyn Job>>,
    why: &str,
) {
    let _ = conn.batch("ROLLBACK");
    for job in ran
        .into_iter()
        .chain(std::iter::once(current))
        .chain(waiting)
    {
        job.finish(Err(why.to_owned()));
    }
}
