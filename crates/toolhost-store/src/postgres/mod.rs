//! The PostgreSQL backend: many toolhost nodes on one database.
//!
//! Every connection lives on a thread of its own (the blocking client drives its connection
//! there), so a call into the store blocks its caller on a channel and never on an async
//! executor's thread, as SQLite's writer does. One **writer** connection applies this node's
//! writes, those that arrive together in one transaction (group commit: each write in a savepoint
//! of its own, so one that fails fails alone); a few **reader** connections answer reads, each
//! read one snapshot (a read-only, repeatable-read transaction).
//!
//! Across nodes, every write transaction first takes one transaction-scoped advisory lock, so
//! writes commit one group at a time, cluster-wide: positions (`seq`) are handed out in commit
//! order (a follower reading "after position N" can never miss a row that commits later with a
//! smaller position), a compare-and-set (a lease claim, a credential) reads what the last commit
//! left, and no two groups can deadlock. Times that decide ownership (leases) are the database
//! server's clock, read once per group under that lock, never a node's.

mod apply;
mod conn;
mod files;
mod gates;
mod leases;
mod listener;
mod read;
mod schema;
pub(crate) mod text;
mod threads;
mod tls;
mod tokens;
mod work;
mod writer;

pub(crate) use crate::error::corrupt;
use crate::error::{StoreError, StoreResult};
use crate::model::Millis;
pub(crate) use conn::{pg, Conn};
use postgres::NoTls;
use std::str::FromStr;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use writer::{writer_session, Job, Reply, TypedJob};

/// How long connecting, and a connection that gets no answer, may take before it is given up.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many notices of commits a follower may fall behind before it is told to read everything.
const COMMIT_NOTICES: usize = 1024;

/// How many read connections a node opens beside its writer.
const READERS: usize = 4;

/// The database's clock in milliseconds, as SQL: lease times are on it.
pub(crate) const DB_NOW: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The key of the advisory lock every write transaction takes first (see the module's page).
pub(crate) const WRITE_LOCK: i64 = 0x7468_7374_5752_4954; // "thstWRIT"
/// The key of the session advisory lock migrations run under.
const MIGRATION_LOCK: i64 = 0x7468_7374_4d49_4752; // "thstMIGR"

/// A store in a PostgreSQL database, shared by every node that opens it.
pub struct PostgresStore {
    writes: Option<Sender<Box<dyn Job>>>,
    reads: Option<Sender<ReadJob>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    counters: Arc<writer::Counters>,
    /// Notices of every node's commits (see [`listener`]).
    commits: tokio::sync::broadcast::Sender<Arc<crate::Committed>>,
    /// The count of offers of work heard from every node (see [`work`]).
    offers: tokio::sync::watch::Sender<u64>,
    /// Tells the listener to end (it is not waited for: it ends within one wait).
    stopping: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

/// A read waiting for a reader connection (or for the error that kept it from one). It answers
/// its caller and returns `true`, or returns `false` without answering when it failed because
/// the server had closed the connection (a restart: only known once used) and may run again on
/// a new one; the second argument says there will be no other try.
type ReadJob = Box<dyn FnMut(StoreResult<&mut Conn>, bool) -> bool + Send>;

/// How to reach the database: the parsed address, and a description of it without its
/// password, for errors.
#[derive(Clone)]
struct Target {
    config: postgres::Config,
    /// TLS as the address asks (none: `sslmode=disable`).
    tls: Option<tls::Tls>,
    shown: String,
}

impl Target {
    fn parse(url: &str) -> StoreResult<Self> {
        let (url, tls_options) = tls::take_options(url);
        let mut config = postgres::Config::from_str(&url).map_err(|e| {
            StoreError::Backend(
                format!("the store address is not a PostgreSQL connection string: {e}").into(),
            )
        })?;
        let hosts: Vec<String> = config
            .get_hosts()
            .iter()
            .map(|h| match h {
                postgres::config::Host::Tcp(name) => name.clone(),
                postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .collect();
        let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
        let shown = format!(
            "{}{}{}/{}",
            config
                .get_user()
                .map(|u| format!("{u}@"))
                .unwrap_or_default(),
            if hosts.is_empty() {
                "localhost".to_owned()
            } else {
                hosts.join(",")
            },
            if ports.is_empty() {
                String::new()
            } else {
                format!(":{}", ports.join(","))
            },
            config.get_dbname().unwrap_or("(the user's database)"),
        );
        // A server that stops answering (a partition, a machine that froze) is given up on
        // instead of being waited for as long as the operating system's defaults would.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.keepalives_idle(CONNECT_TIMEOUT);
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(CONNECT_TIMEOUT);
        }
        // A Unix socket is never encrypted, whatever the mode says (as libpq does).
        let only_sockets = config
            .get_hosts()
            .iter()
            .all(|h| matches!(h, postgres::config::Host::Unix(_)))
            && !config.get_hosts().is_empty();
        if only_sockets {
            config.ssl_mode(postgres::config::SslMode::Disable);
        }
        let tls = match config.get_ssl_mode() {
            postgres::config::SslMode::Disable => None,
            _ => Some(tls::Tls::new(&tls_options)?),
        };
        Ok(Self { config, tls, shown })
    }

    fn connect(&self) -> StoreResult<Conn> {
        self.client().map(Conn::new)
    }

    /// A client of the database, over TLS as the address asks.
    fn client(&self) -> StoreResult<postgres::Client> {
        let client = match &self.tls {
            Some(tls) => self.config.connect(tls.clone()),
            None => self.config.connect(NoTls),
        };
        client.map_err(|e| {
            let cause = cause(&e);
            let hint = if cause.contains("certificate") {
                " (name the authority that signs the server's certificate with sslrootcert=FILE \
                 in the address)"
            } else {
                ""
            };
            StoreError::Backend(
                format!(
                    "could not connect to PostgreSQL at {}: {cause}{hint}",
                    self.shown
                )
                .into(),
            )
        })
    }
}

/// The innermost cause of a client error, which names what went wrong (a refused connection,
/// a wrong password) where the outer one only says "error connecting to server".
fn cause(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_owned();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        text = inner.to_string();
        source = inner.source();
    }
    text
}

/// A client of the database at `url` (as [`PostgresStore::connect`] reads it: TLS as it
/// asks), for work beside a store (a copy into it).
pub(crate) fn client_for(url: &str) -> StoreResult<postgres::Client> {
    Target::parse(url)?.client()
}

impl PostgresStore {
    /// What toolhost reads of the database address `url` (user, hosts, ports, database), for
    /// output and errors: never its password, wherever the address put it.
    pub fn address_shown(url: &str) -> String {
        Target::parse(url).map_or_else(
            |_| "(an address that is not a PostgreSQL connection string)".to_owned(),
            |target| target.shown,
        )
    }

    /// Connects to the database at `url` (a `postgres://` URL or a `key=value` connection
    /// string), brings its schema up to date under an advisory lock (so that many nodes started
    /// together on a new database all come up) and opens this node's connections. A database
    /// written by a newer toolhost is refused and left as it is.
    pub fn connect(url: &str) -> StoreResult<Self> {
        let target = Target::parse(url)?;
        let mut first = writer_session(target.connect())?;
        schema::migrate(&mut first)?;
        let counters = Arc::new(writer::Counters::default());
        let (writes, jobs) = mpsc::channel::<Box<dyn Job>>();
        let mut threads = Vec::with_capacity(READERS + 1);
        {
            let (target, counters) = (target.clone(), counters.clone());
            threads.push(spawn("toolhost-pg-writer", move || {
                writer::run_writer(first, &target, jobs, &counters)
            })?);
        }
        let (reads, waiting) = mpsc::channel::<ReadJob>();
        let waiting = Arc::new(Mutex::new(waiting));
        for _ in 0..READERS {
            let conn = target.connect()?;
            let (target, waiting) = (target.clone(), waiting.clone());
            threads.push(spawn("toolhost-pg-reader", move || {
                run_reader(conn, &target, &waiting)
            })?);
        }
        let hearers = listener::Hearers {
            commits: tokio::sync::broadcast::channel(COMMIT_NOTICES).0,
            offers: tokio::sync::watch::channel(0).0,
        };
        let (commits, offers) = (hearers.commits.clone(), hearers.offers.clone());
        let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let listening = listener::listen_on(target.connect()?)?;
        {
            let stopping = stopping.clone();
            spawn("toolhost-pg-listener", move || {
                listener::run(listening, &target, &hearers, &stopping)
            })?;
        }
        Ok(Self {
            writes: Some(writes),
            reads: Some(reads),
            threads,
            counters,
            commits,
            offers,
            stopping,
        })
    }

    /// Runs `work` in the writer's next group (a transaction under the cluster's write lock;
    /// `now` is the database's clock) and returns its result once the group is committed.
    pub(crate) fn write<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn, Millis) -> StoreResult<T> + Send + 'static,
    {
        let (reply, outcome) = mpsc::sync_channel(1);
        self.send(Box::new(TypedJob::new(work, Reply::Blocking(reply))))?;
        outcome.recv().map_err(|_| gone())?
    }

    /// Like [`PostgresStore::write`], without blocking: the future resolves once the group is
    /// committed.
    pub(crate) fn write_async<T, F>(
        &self,
        work: F,
    ) -> impl std::future::Future<Output = StoreResult<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(&mut Conn, Millis) -> StoreResult<T> + Send + 'static,
    {
        let (reply, outcome) = tokio::sync::oneshot::channel();
        let sent = self.send(Box::new(TypedJob::new(work, Reply::Async(reply))));
        async move {
            sent?;
            outcome.await.map_err(|_| gone())?
        }
    }

    fn send(&self, job: Box<dyn Job>) -> StoreResult<()> {
        self.writes
            .as_ref()
            .ok_or_else(gone)?
            .send(job)
            .map_err(|_| gone())
    }

    /// Runs `work` on a reader connection, inside one read-only snapshot.
    pub(crate) fn read<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&mut Conn) -> StoreResult<T> + Send + 'static,
    {
        self.on_reader(move |conn| snapshot(conn, &work), true)
    }

    /// Runs `work`, which makes one query (a statement is its own snapshot), on a reader
    /// connection without a transaction around it: two round trips fewer than [`Self::read`].
    pub(crate) fn read_one<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&mut Conn) -> StoreResult<T> + Send + 'static,
    {
        self.on_reader(work, true)
    }

    /// Runs `work`, one statement that writes but needs neither the cluster's write lock nor
    /// the writer (taking offers), on a reader connection. It is not run again after a lost
    /// connection: it may have committed.
    pub(crate) fn write_on_reader<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&mut Conn) -> StoreResult<T> + Send + 'static,
    {
        self.on_reader(work, false)
    }

    fn on_reader<T, F>(&self, work: F, may_retry: bool) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&mut Conn) -> StoreResult<T> + Send + 'static,
    {
        let (reply, outcome) = mpsc::sync_channel(1);
        let job: ReadJob = Box::new(move |conn: StoreResult<&mut Conn>, last_try| {
            let result = match conn {
                Ok(conn) => {
                    let result = work(conn);
                    if result.is_err() && conn.is_closed() && !last_try && may_retry {
                        return false;
                    }
                    result
                }
                Err(e) => Err(e),
            };
            let _ = reply.send(result);
            true
        });
        self.reads
            .as_ref()
            .ok_or_else(gone)?
            .send(job)
            .map_err(|_| gone())?;
        outcome.recv().map_err(|_| gone())?
    }

    /// How many writes were applied in how many commits since the store was opened.
    pub fn write_stats(&self) -> crate::WriteStats {
        crate::WriteStats {
            writes: self
                .counters
                .writes
                .load(std::sync::atomic::Ordering::Relaxed),
            commits: self
                .counters
                .commits
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// Runs `work` in a read-only, repeatable-read transaction: every query it makes sees one state
/// of the database.
fn snapshot<T>(conn: &mut Conn, work: impl FnOnce(&mut Conn) -> StoreResult<T>) -> StoreResult<T> {
    conn.batch("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
    let result = work(conn);
    // Nothing was written: ending it either way is the same, and a failed query left the
    // transaction aborted, which only a rollback ends.
    let ended = conn.batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" });
    let value = result?;
    ended?;
    Ok(value)
}

fn spawn(
    name: &str,
    body: impl FnOnce() + Send + 'static,
) -> StoreResult<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(body)
        .map_err(|e| StoreError::Backend(Box::new(e)))
}

/// Answers reads until the store is dropped, replacing its connection when the server closed it.
fn run_reader(mut conn: Conn, target: &Target, waiting: &Mutex<Receiver<ReadJob>>) {
    loop {
        let mut job = {
            let waiting = waiting.lock().unwrap_or_else(|p| p.into_inner());
            match waiting.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        // A read that met a connection the server had closed runs once more on a new one.
        for last_try in [false, true] {
            if conn.is_closed() {
                match target.connect() {
                    Ok(fresh) => conn = fresh,
                    // This read fails with the reason; the next one tries again.
                    Err(e) => {
                        job(Err(e), true);
                        break;
                    }
                }
            }
            // A read that panics fails alone (its caller hears the store stopped answering
            // it); the reader goes on.
            let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                job(Ok(&mut conn), last_try)
            }));
            if !matches!(answered, Ok(false)) {
                break;
            }
        }
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // The threads end when their channels close, after the work already sent; the
        // listener at its next wait.
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        drop(self.writes.take());
        drop(self.reads.take());
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn gone() -> StoreError {
    StoreError::Backend("the store's connections to PostgreSQL have stopped".into())
}

/// Fails with [`StoreError::ThreadNotFound`] unless the thread exists.
pub(crate) fn require_thread(conn: &mut Conn, thread: &str) -> StoreResult<()> {
    match conn.opt("SELECT 1 FROM threads WHERE id = $1", &[&thread])? {
        Some(_) => Ok(()),
        None => Err(StoreError::ThreadNotFound(thread.to_owned())),
    }
}
