//! Benchmark of the durable tool-call cycle: a plain program (`harness = false`), because these
//! are long, I/O-bound measurements where every sample is a disk flush.
//!
//! Run: `cargo bench -p toolhost-runtime --bench durable_cycle`.
//!
//! What it measures, in a data folder on disk (`TOOLHOST_BENCH_DIR`, default the target
//! folder's `tmp/`, so the same disk as the build):
//! - **cycle**: a thread of the scripted `test` model whose script is N tool-call turns of a
//!   trivial Rust tool, then a final text, on [`SqliteStore`] (WAL, `synchronous=FULL`). One
//!   cycle = model step + the reply committed with the intent of its call + tool run + result
//!   committed: two commits. Each cycle is timed on its own: the tool stamps the time it runs,
//!   and the time from one run of the tool to the next is exactly one cycle. The store is
//!   wrapped to time each of its calls (writes through the same non-blocking path the engine
//!   takes with a bare `SqliteStore`), which splits a cycle into its commits, its reads and the
//!   rest (engine, model, tool). The whole run divided by N is reported too, per run.
//!   Target: cycle p50 <= 2.5 x fdatasync p50 (appended).
//! - **ephemeral cycle**: the same on [`SqliteStore::in_memory`] (nothing on disk).
//! - **fdatasync**: 4 KiB written then `File::sync_data()`, appended (the file grows, as a new
//!   WAL does) and in place (the file keeps its size, as a WAL that was reset after a checkpoint
//!   does); sampled in slices just before each durable run, so the ratio compares the same
//!   moments of a disk whose latency drifts.
//! - **commit**: one `Store::apply` batch of one small message, for reference.
//! - **step 20 vs step 2,000**: one thread of 2,100 cycles; the median cycle of cycles 10-30
//!   against that of cycles 1,990-2,010 (history is appended, never rewritten), for reference.
//!
//! Knobs (environment variables): `TOOLHOST_BENCH_DIR`, `TOOLHOST_BENCH_CYCLES` (200),
//! `TOOLHOST_BENCH_RUNS` (5), `TOOLHOST_BENCH_LONG` (2100), `TOOLHOST_BENCH_LONG_RUNS` (2),
//! `TOOLHOST_BENCH_SAMPLES` (500, for fdatasync and commit).
//!
//! Output: a table on stdout, then one JSON line starting with `{"cycle_p50_us":`.

mod common;

use common::{knob, round1, round3, write_counting_project};
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::path::FsPath;
use toolhost_store::{
    ApiToken, Applied, ApprovalRecord, CallRecord, Event, FileStat, GrepMatch, HeldLease, Lease,
    LeaseClaim, Message, Millis, NewMessage, NewThread, PendingApply, Queued, Role, SqliteStore,
    Store, StoreResult, StoredVariable, Thread, ThreadQuery, VariableRequest, Write,
};

// ---------------------------------------------------------------------------------------------
// Settings

/// Picks one measured part out of a cycle.
type CyclePart = fn(&Cycle) -> Duration;

struct Settings {
    dir: PathBuf,
    cycles: usize,
    runs: usize,
    long: usize,
    long_runs: usize,
    samples: usize,
}

impl Settings {
    fn from_env() -> Self {
        let base = std::env::var_os("TOOLHOST_BENCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
        let dir = base.join(format!("durable-cycle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the bench data folder");
        Self {
            dir,
            cycles: knob("TOOLHOST_BENCH_CYCLES", 200).max(3),
            runs: knob("TOOLHOST_BENCH_RUNS", 5).max(1),
            long: knob("TOOLHOST_BENCH_LONG", 2100).max(3),
            long_runs: knob("TOOLHOST_BENCH_LONG_RUNS", 2),
            samples: knob("TOOLHOST_BENCH_SAMPLES", 500).max(10),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics

/// Nearest-rank percentile of unsorted samples, in microseconds.
fn pct(samples: &[Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut v: Vec<Duration> = samples.to_vec();
    v.sort_unstable();
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1].as_secs_f64() * 1e6
}

fn p50(samples: &[Duration]) -> f64 {
    pct(samples, 0.5)
}

fn p90(samples: &[Duration]) -> f64 {
    pct(samples, 0.9)
}

// ---------------------------------------------------------------------------------------------
// A store that times each of its calls

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A batch with an assistant message (the model's reply, with the intent of the call that
    /// starts at once).
    CommitReply,
    /// A batch journaling a call's intent on its own (none is expected in this workload).
    CommitIntent,
    /// A batch storing a call's result.
    CommitResult,
    /// Any other batch (status changes, the user's message).
    CommitOther,
    /// A read.
    Read,
    /// The lease renewer's reads and renewals: on a thread of their own, off the cycle's path.
    Lease,
}

#[derive(Clone, Copy)]
struct Span {
    start: Instant,
    took: Duration,
    kind: Kind,
}

/// Delegates to the real store and records when each call started and how long it took.
/// Writes keep the path the engine takes with a bare [`SqliteStore`]: handed to the writer and
/// awaited ([`Store::apply_nonblocking`]), not run on the blocking pool.
struct TimedStore {
    inner: SqliteStore,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl TimedStore {
    fn new(inner: SqliteStore) -> Self {
        Self {
            inner,
            spans: Arc::new(Mutex::new(Vec::with_capacity(16_384))),
        }
    }

    fn timed<T>(&self, kind: Kind, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        let took = start.elapsed();
        self.spans.lock().unwrap().push(Span { start, took, kind });
        out
    }

    fn take_spans(&self) -> Vec<Span> {
        std::mem::take(&mut *self.spans.lock().unwrap())
    }
}

fn kind_of(writes: &[Write]) -> Kind {
    let mut kind = Kind::CommitOther;
    for w in writes {
        match w {
            Write::AppendMessage(m) if m.role == Some(Role::Assistant) => return Kind::CommitReply,
            Write::RecordIntent(_) => kind = Kind::CommitIntent,
            Write::CompleteCall { .. } => return Kind::CommitResult,
            _ => {}
        }
    }
    kind
}

impl Store for TimedStore {
    fn create_thread(&self, new: NewThread) -> StoreResult<Thread> {
        self.timed(Kind::CommitOther, || self.inner.create_thread(new))
    }
    fn claim(&self, thread: &str, claim: &LeaseClaim) -> StoreResult<Lease> {
        self.timed(Kind::CommitOther, || self.inner.claim(thread, claim))
    }
    fn renew(&self, thread: &str, owner: &str, ttl_ms: Millis) -> StoreResult<Lease> {
        self.timed(Kind::Lease, || self.inner.renew(thread, owner, ttl_ms))
    }
    fn release(&self, thread: &str, owner: &str) -> StoreResult<bool> {
        self.timed(Kind::CommitOther, || self.inner.release(thread, owner))
    }
    fn lease(&self, thread: &str) -> StoreResult<Option<Lease>> {
        self.timed(Kind::Lease, || self.inner.lease(thread))
    }
    fn keep_leases(&self, held: &[HeldLease]) -> StoreResult<Vec<Option<Lease>>> {
        self.timed(Kind::Lease, || self.inner.keep_leases(held))
    }
    fn request_stop(&self, thread: &str) -> StoreResult<bool> {
        self.timed(Kind::CommitOther, || self.inner.request_stop(thread))
    }
    fn file_chunk(
        &self,
        thread: &str,
        path: &FsPath,
        index: u64,
    ) -> StoreResult<(FileStat, Option<Vec<u8>>)> {
        self.inner.file_chunk(thread, path, index)
    }
    fn thread_page(&self, query: &ThreadQuery) -> StoreResult<Vec<Thread>> {
        self.timed(Kind::Read, || self.inner.thread_page(query))
    }
    fn threads_with_work(&self) -> StoreResult<Vec<String>> {
        self.timed(Kind::Read, || self.inner.threads_with_work())
    }
    fn threads_with_unowned_work(&self) -> StoreResult<Vec<String>> {
        self.timed(Kind::Read, || self.inner.threads_with_unowned_work())
    }
    fn offer_work(&self, thread: &str) -> StoreResult<()> {
        self.timed(Kind::CommitOther, || self.inner.offer_work(thread))
    }
    fn take_offered_work(&self, limit: usize) -> StoreResult<Vec<String>> {
        self.timed(Kind::CommitOther, || self.inner.take_offered_work(limit))
    }
    fn message_page(&self, thread: &str, after: i64, limit: usize) -> StoreResult<Vec<Message>> {
        self.timed(Kind::Read, || self.inner.message_page(thread, after, limit))
    }
    fn messages_since(&self, seq: i64, limit: usize) -> StoreResult<Vec<(String, Message)>> {
        self.timed(Kind::Read, || self.inner.messages_since(seq, limit))
    }
    fn events_since(&self, seq: i64, limit: usize) -> StoreResult<Vec<(String, Event)>> {
        self.timed(Kind::Read, || self.inner.events_since(seq, limit))
    }
    fn create_token(&self, token: &ApiToken) -> StoreResult<()> {
        self.inner.create_token(token)
    }
    fn token(&self, id: &str) -> StoreResult<Option<ApiToken>> {
        self.inner.token(id)
    }
    fn tokens(&self) -> StoreResult<Vec<ApiToken>> {
        self.inner.tokens()
    }
    fn revoke_token(&self, id: &str) -> StoreResult<bool> {
        self.inner.revoke_token(id)
    }
    fn credential(&self, name: &str) -> StoreResult<Option<toolhost_store::Credential>> {
        self.inner.credential(name)
    }
    fn put_credential(
        &self,
        name: &str,
        value: &str,
        expected: Option<i64>,
    ) -> StoreResult<Option<i64>> {
        self.inner.put_credential(name, value, expected)
    }
    fn delete_credential(&self, name: &str) -> StoreResult<bool> {
        self.inner.delete_credential(name)
    }
    fn thread(&self, id: &str) -> StoreResult<Thread> {
        self.timed(Kind::Read, || self.inner.thread(id))
    }
    fn threads(&self, parent: Option<&str>) -> StoreResult<Vec<Thread>> {
        self.timed(Kind::Read, || self.inner.threads(parent))
    }
    fn apply(&self, thread: &str, writes: Vec<Write>) -> StoreResult<Applied> {
        let kind = kind_of(&writes);
        self.timed(kind, || self.inner.apply(thread, writes))
    }
    fn delete_thread(&self, id: &str) -> StoreResult<()> {
        self.inner.delete_thread(id)
    }
    fn apply_nonblocking(
        &self,
        thread: &str,
        writes: Vec<Write>,
    ) -> Result<PendingApply, Vec<Write>> {
        let kind = kind_of(&writes);
        let start = Instant::now();
        let pending = self.inner.apply_nonblocking(thread, writes)?;
        let spans = self.spans.clone();
        Ok(Box::pin(async move {
            let out = pending.await;
            let took = start.elapsed();
            spans.lock().unwrap().push(Span { start, took, kind });
            out
        }))
    }
    fn runs_in_place(&self) -> bool {
        self.inner.runs_in_place()
    }
    fn messages(&self, thread: &str) -> StoreResult<Vec<Message>> {
        self.timed(Kind::Read, || self.inner.messages(thread))
    }
    fn messages_after(&self, thread: &str, seq: i64) -> StoreResult<Vec<Message>> {
        self.timed(Kind::Read, || self.inner.messages_after(thread, seq))
    }
    fn message_tally(&self, thread: &str) -> StoreResult<toolhost_store::MessageTally> {
        self.timed(Kind::Read, || self.inner.message_tally(thread))
    }
    fn calls(&self, thread: &str) -> StoreResult<Vec<CallRecord>> {
        self.timed(Kind::Read, || self.inner.calls(thread))
    }
    fn call(&self, thread: &str, call_id: &str) -> StoreResult<Option<CallRecord>> {
        self.timed(Kind::Read, || self.inner.call(thread, call_id))
    }
    fn value(&self, thread: &str, key: &str) -> StoreResult<Option<Value>> {
        self.timed(Kind::Read, || self.inner.value(thread, key))
    }
    fn values(&self, thread: &str) -> StoreResult<Vec<(String, Value)>> {
        self.timed(Kind::Read, || self.inner.values(thread))
    }
    fn queued(&self, thread: &str) -> StoreResult<Vec<Queued>> {
        self.timed(Kind::Read, || self.inner.queued(thread))
    }
    fn events(&self, thread: &str, after: i64) -> StoreResult<Vec<Event>> {
        self.timed(Kind::Read, || self.inner.events(thread, after))
    }
    fn approvals(&self, thread: &str) -> StoreResult<Vec<ApprovalRecord>> {
        self.timed(Kind::Read, || self.inner.approvals(thread))
    }
    fn variables(&self, thread: &str) -> StoreResult<Vec<StoredVariable>> {
        self.timed(Kind::Read, || self.inner.variables(thread))
    }
    fn variable_requests(&self, thread: &str) -> StoreResult<Vec<VariableRequest>> {
        self.timed(Kind::Read, || self.inner.variable_requests(thread))
    }
    fn stat(&self, thread: &str, path: &FsPath) -> StoreResult<Option<FileStat>> {
        self.timed(Kind::Read, || self.inner.stat(thread, path))
    }
    fn read_file(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<u8>> {
        self.timed(Kind::Read, || self.inner.read_file(thread, path))
    }
    fn stream_file(
        &self,
        thread: &str,
        path: &FsPath,
        sink: &mut dyn FnMut(&[u8]),
    ) -> StoreResult<FileStat> {
        self.timed(Kind::Read, || self.inner.stream_file(thread, path, sink))
    }
    fn readdir(&self, thread: &str, path: &FsPath) -> StoreResult<Vec<FileStat>> {
        self.timed(Kind::Read, || self.inner.readdir(thread, path))
    }
    fn find(&self, thread: &str, under: &FsPath, pattern: &str) -> StoreResult<Vec<FileStat>> {
        self.timed(Kind::Read, || self.inner.find(thread, under, pattern))
    }
    fn grep(
        &self,
        thread: &str,
        under: &FsPath,
        needle: &str,
        limit: usize,
    ) -> StoreResult<Vec<GrepMatch>> {
        self.timed(Kind::Read, || self.inner.grep(thread, under, needle, limit))
    }
}

// ---------------------------------------------------------------------------------------------
// The durable cycle

/// A temporary project: one agent, one prompt offering `count`, the scripted model playing
/// `cycles` tool-call turns and then a final text. Removed on drop.
struct Project {
    root: PathBuf,
}

impl Project {
    fn new(base: &Path, label: &str, cycles: usize) -> Self {
        let root = base.join(format!("project-{label}"));
        write_counting_project(&root, cycles);
        Self { root }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The trivial tool: validates `{"n": integer}`, stamps the time it ran, answers a short text.
fn count_tool(stamps: Arc<Mutex<Vec<Instant>>>) -> toolhost_core::AnyTool {
    DynamicTool::new("count", "Counts.")
        .parameters(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .handler(move |args: Value, _ctx| {
            stamps.lock().unwrap().push(Instant::now());
            async move { Ok::<_, ToolError>(format!("counted {}", args["n"])) }
        })
        .build()
        .expect("the count tool")
}

/// One cycle: the time from one run of the tool to the next, and what the store did in it.
#[derive(Clone, Copy, Default)]
struct Cycle {
    total: Duration,
    reply: Duration,
    intent: Duration,
    result: Duration,
    reads: Duration,
    commits: u32,
}

impl Cycle {
    fn store(&self) -> Duration {
        self.reply + self.intent + self.result + self.reads
    }
    fn rest(&self) -> Duration {
        self.total.saturating_sub(self.store())
    }
}

struct ThreadRun {
    cycles: Vec<Cycle>,
    /// `Runtime::run` from start to end, divided by the number of tool calls.
    per_cycle_of_whole: Duration,
}

/// Where a thread's store keeps its data.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// A database file in the data folder (WAL, `synchronous=FULL`).
    File,
    /// [`SqliteStore::in_memory`]: the ephemeral store.
    Memory,
}

/// Runs one thread of `n` tool-call turns in a fresh project and database under `base`.
fn run_thread(base: &Path, label: &str, n: usize, backend: Backend) -> ThreadRun {
    let project = Project::new(base, label, n);
    let db_path = base.join(format!("{label}.db"));
    let inner = match backend {
        Backend::File => SqliteStore::open(&db_path).expect("open the store"),
        Backend::Memory => SqliteStore::in_memory().expect("open the ephemeral store"),
    };
    let store = Arc::new(TimedStore::new(inner));
    if backend == Backend::File {
        let (mode, sync) = store.inner.durability_settings().unwrap();
        assert_eq!(
            (mode.as_str(), sync),
            ("wal", 2),
            "the store must run WAL with synchronous=FULL"
        );
    }
    let stamps = Arc::new(Mutex::new(Vec::with_capacity(n + 1)));
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rt = tokio_rt
        .block_on(Runtime::load(&project.root, store.clone()))
        .expect("load the project");
    rt.register_tool(count_tool(stamps.clone()));
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = tokio_rt
        .block_on(rt.start_thread("bench", "count for me"))
        .unwrap();
    store.take_spans();
    let started = Instant::now();
    let outcome = tokio_rt.block_on(rt.run(&thread.id)).expect("the run");
    let whole = started.elapsed();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
    let spans = store.take_spans();
    let stamps = stamps.lock().unwrap().clone();
    assert_eq!(stamps.len(), n, "every scripted call ran once");

    // Cycle k runs from the k-th run of the tool to the (k+1)-th.
    let mut cycles = vec![Cycle::default(); n - 1];
    for (k, c) in cycles.iter_mut().enumerate() {
        c.total = stamps[k + 1] - stamps[k];
    }
    for s in spans {
        if s.start < stamps[0] {
            continue;
        }
        let k = stamps.partition_point(|t| *t <= s.start) - 1;
        let Some(c) = cycles.get_mut(k) else { continue };
        match s.kind {
            Kind::CommitReply => c.reply += s.took,
            Kind::CommitIntent => c.intent += s.took,
            Kind::CommitResult => c.result += s.took,
            Kind::CommitOther => {}
            Kind::Read => c.reads += s.took,
            Kind::Lease => continue,
        }
        if s.kind != Kind::Read {
            c.commits += 1;
        }
    }
    drop(rt);
    drop(store);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db_path.display()));
    }
    ThreadRun {
        cycles,
        per_cycle_of_whole: whole / n as u32,
    }
}

fn totals(cycles: &[Cycle]) -> Vec<Duration> {
    cycles.iter().map(|c| c.total).collect()
}

fn column(cycles: &[Cycle], f: impl Fn(&Cycle) -> Duration) -> Vec<Duration> {
    cycles.iter().map(f).collect()
}

// ---------------------------------------------------------------------------------------------
// Raw disk flushes and single commits

/// How a raw flush is measured.
#[derive(Clone, Copy)]
enum Flush {
    /// 4 KiB appended, then `sync_data` (`fdatasync`): the file grows, as a new WAL does.
    DataAppended,
    /// The same 4 KiB of an already flushed file rewritten, then `sync_data`.
    DataInPlace,
    /// 4 KiB rewritten in place, then `sync_all` (`fsync`: the file's times too, as SQLite
    /// flushes its WAL when it is built without `HAVE_FDATASYNC`; the workspace builds the
    /// bundled SQLite with it, see `.cargo/config.toml`).
    AllInPlace,
}

/// `samples` raw flushes of 4 KiB, after a warm-up.
fn flush_latency(dir: &Path, samples: usize, how: Flush) -> Vec<Duration> {
    use std::os::unix::fs::FileExt;
    let path = dir.join(match how {
        Flush::DataAppended => "fdatasync-append.bin",
        Flush::DataInPlace => "fdatasync-inplace.bin",
        Flush::AllInPlace => "fsync-inplace.bin",
    });
    let mut file: File = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let block = vec![0x5au8; 4096];
    if !matches!(how, Flush::DataAppended) {
        file.write_all(&block).unwrap();
        file.sync_all().unwrap();
    }
    let warmup = 20;
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples + warmup {
        let start = Instant::now();
        match how {
            Flush::DataAppended => {
                file.write_all(&block).unwrap();
                file.sync_data().unwrap();
            }
            Flush::DataInPlace => {
                file.write_all_at(&block, 0).unwrap();
                file.sync_data().unwrap();
            }
            Flush::AllInPlace => {
                file.write_all_at(&block, 0).unwrap();
                file.sync_all().unwrap();
            }
        }
        if i >= warmup {
            out.push(start.elapsed());
        }
    }
    drop(file);
    let _ = std::fs::remove_file(path);
    out
}

/// One `Store::apply` of one small message, `samples` times.
fn commit_latency(dir: &Path, samples: usize) -> Vec<Duration> {
    let db_path = dir.join("commit.db");
    let store = SqliteStore::open(&db_path).unwrap();
    let thread = store
        .create_thread(NewThread {
            agent: "bench".into(),
            ..NewThread::default()
        })
        .unwrap();
    let warmup = 20;
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples + warmup {
        let write = Write::AppendMessage(NewMessage {
            role: Some(Role::User),
            content: Some(format!("message {i}")),
            ..NewMessage::default()
        });
        let start = Instant::now();
        store.apply(&thread.id, vec![write]).unwrap();
        if i >= warmup {
            out.push(start.elapsed());
        }
    }
    drop(store);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db_path.display()));
    }
    out
}

/// The file system the data folder is on, when it can be told.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // statfs(2), explained at the call
fn filesystem(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return "unknown".into();
    };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; statfs writes only into `st`.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return "unknown".into();
    }
    #[allow(clippy::unnecessary_cast)]
    let magic = st.f_type as i64;
    match magic {
        0xEF53 => "ext4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x0102_1994 => "tmpfs (flushes cost nothing: numbers are not disk numbers)".into(),
        0x794C_7630 => "overlayfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        other => format!("type 0x{other:x}"),
    }
}

#[cfg(not(target_os = "linux"))]
fn filesystem(_dir: &Path) -> String {
    "unknown".into()
}

// ---------------------------------------------------------------------------------------------

/// Target: a cycle p50 at most this many appended-fdatasync p50s.
const CYCLE_OVER_FSYNC: f64 = 2.5;

fn row(name: &str, p50: f64, p90: f64, note: &str) {
    println!("{name:<44} {p50:>10.1} {p90:>10.1}   {note}");
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// The median of the commits each cycle made.
fn median_commits(cycles: &[Cycle]) -> u32 {
    let mut c: Vec<u32> = cycles.iter().map(|c| c.commits).collect();
    c.sort_unstable();
    c[c.len() / 2]
}

/// The runs of one backend: every cycle, and each run's whole time divided by its cycles; for
/// a file, the raw flushes sampled just before each run.
#[derive(Default)]
struct Runs {
    cycles: Vec<Cycle>,
    whole: Vec<Duration>,
    sync_append: Vec<Duration>,
    sync_inplace: Vec<Duration>,
    fsync: Vec<Duration>,
}

fn measure_cycles(s: &Settings, backend: Backend, label: &str) -> Runs {
    // A short warm-up thread, then the measured runs.
    run_thread(&s.dir, &format!("{label}-warmup"), 20, backend);
    let mut runs = Runs::default();
    for r in 0..s.runs {
        if backend == Backend::File {
            // The flushes the cycle is compared with are taken beside its runs, so that a disk
            // whose latency drifts (other programs flushing to it) moves both alike.
            let k = (s.samples / s.runs).max(10);
            runs.sync_append
                .extend(flush_latency(&s.dir, k, Flush::DataAppended));
            runs.sync_inplace
                .extend(flush_latency(&s.dir, k, Flush::DataInPlace));
            runs.fsync
                .extend(flush_latency(&s.dir, k, Flush::AllInPlace));
        }
        let run = run_thread(&s.dir, &format!("{label}-run{r}"), s.cycles, backend);
        runs.whole.push(run.per_cycle_of_whole);
        runs.cycles.extend(run.cycles);
    }
    runs
}

fn per_run(whole: &[Duration]) -> String {
    whole
        .iter()
        .map(|d| format!("{:.0}", d.as_secs_f64() * 1e6))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let s = Settings::from_env();
    println!("durable_cycle: toolhost durable tool-call cycle");
    println!("data folder: {} ({})", s.dir.display(), filesystem(&s.dir));
    println!(
        "store: SqliteStore (WAL, synchronous=FULL), and SqliteStore::in_memory(); {} runs of {} cycles; long thread {} cycles x {}; {} flush/commit samples",
        s.runs, s.cycles, s.long, s.long_runs, s.samples
    );
    println!();

    // c. One small commit.
    let commits = commit_latency(&s.dir, s.samples);

    // a. The cycle, durable (with b, the raw flushes of the data folder, sampled beside its
    //    runs) and ephemeral.
    let durable = measure_cycles(&s, Backend::File, "file");
    let ephemeral = measure_cycles(&s, Backend::Memory, "memory");
    let (sync_append, sync_inplace) = (&durable.sync_append, &durable.sync_inplace);
    let cycles = &durable.cycles;

    // d. Step 20 against step 2,000.
    let (early_at, late_at) = if s.long >= 2012 {
        (10..=30, 1990..=2010)
    } else {
        // A shorter thread (for a quick look): the same windows scaled down.
        let end = s.long - 2;
        (
            1.min(end)..=(end / 100).max(2),
            end.saturating_sub(20)..=end,
        )
    };
    let mut early: Vec<Cycle> = Vec::new();
    let mut late: Vec<Cycle> = Vec::new();
    let mut long_ratios = Vec::new();
    for r in 0..s.long_runs {
        let run = run_thread(&s.dir, &format!("long{r}"), s.long, Backend::File);
        let e = &run.cycles[early_at.clone()];
        let l = &run.cycles[late_at.clone()];
        long_ratios.push(p50(&totals(l)) / p50(&totals(e)));
        early.extend_from_slice(e);
        late.extend_from_slice(l);
    }
    let _ = std::fs::remove_dir_all(&s.dir);

    let cyc = totals(cycles);
    let cycle_p50 = p50(&cyc);
    let cycle_p90 = p90(&cyc);
    let sync_p50 = p50(sync_append);
    let sync_p90 = p90(sync_append);
    let inplace_p50 = p50(sync_inplace);
    let commit_p50 = p50(&commits);
    let commit_p90 = p90(&commits);
    let commit_ratio = commit_p50 / sync_p50;
    let commit_ratio_inplace = commit_p50 / inplace_p50;
    let cycle_ratio = cycle_p50 / sync_p50;
    let cycle_ratio_inplace = cycle_p50 / inplace_p50;
    let commits_per_cycle = median_commits(cycles);
    let separate_intents = cycles.iter().filter(|c| c.intent > Duration::ZERO).count();

    println!(
        "{:<44} {:>10} {:>10}",
        "measure (microseconds)", "p50", "p90"
    );
    println!("{}", "-".repeat(90));
    row(
        "fdatasync, 4 KiB appended",
        sync_p50,
        sync_p90,
        "the file grows (new WAL)",
    );
    row(
        "fdatasync, 4 KiB in place",
        inplace_p50,
        p90(sync_inplace),
        "same size (WAL reused after a checkpoint)",
    );
    let fsync_p50 = p50(&durable.fsync);
    row(
        "fsync, 4 KiB in place",
        fsync_p50,
        p90(&durable.fsync),
        "sync_all: what SQLite calls to flush its WAL when built without HAVE_FDATASYNC",
    );
    row(
        "commit: Store::apply, one small message",
        commit_p50,
        commit_p90,
        &format!("{commit_ratio:.2}x appended fdatasync; {commit_ratio_inplace:.2}x in place"),
    );
    row(
        "cycle (model+reply&intent+tool+result)",
        cycle_p50,
        cycle_p90,
        &format!(
            "{} samples; p99 {:.1}; {commits_per_cycle} commits per cycle",
            cyc.len(),
            pct(&cyc, 0.99)
        ),
    );
    row(
        "  commit of the reply (with the intent)",
        p50(&column(cycles, |c| c.reply)),
        p90(&column(cycles, |c| c.reply)),
        "",
    );
    row(
        "  commit of an intent on its own",
        p50(&column(cycles, |c| c.intent)),
        p90(&column(cycles, |c| c.intent)),
        &format!("in {separate_intents} of {} cycles", cycles.len()),
    );
    row(
        "  commit of the result",
        p50(&column(cycles, |c| c.result)),
        p90(&column(cycles, |c| c.result)),
        "",
    );
    row(
        "  store reads",
        p50(&column(cycles, |c| c.reads)),
        p90(&column(cycles, |c| c.reads)),
        "",
    );
    row(
        "  the rest (engine, model, tool)",
        p50(&column(cycles, Cycle::rest)),
        p90(&column(cycles, Cycle::rest)),
        "",
    );
    let whole_p50 = p50(&durable.whole);
    println!(
        "{:<44} {:>10.1} {:>10}   per run: {}",
        "whole run / N (median of runs)",
        whole_p50,
        "",
        per_run(&durable.whole)
    );
    let mem = totals(&ephemeral.cycles);
    let mem_p50 = p50(&mem);
    let mem_whole_p50 = p50(&ephemeral.whole);
    row(
        "ephemeral cycle (SqliteStore::in_memory)",
        mem_p50,
        p90(&mem),
        &format!(
            "{} samples; {} commits per cycle; rest p50 {:.1}",
            mem.len(),
            median_commits(&ephemeral.cycles),
            p50(&column(&ephemeral.cycles, Cycle::rest))
        ),
    );
    println!(
        "{:<44} {:>10.1} {:>10}   per run: {}",
        "ephemeral whole run / N (median of runs)",
        mem_whole_p50,
        "",
        per_run(&ephemeral.whole)
    );
    println!(
        "{:<44} {:>10.2} {:>10}   target <= {CYCLE_OVER_FSYNC}x: {}; {cycle_ratio_inplace:.2}x in-place fdatasync",
        "cycle p50 / fdatasync p50 (appended)",
        cycle_ratio,
        "",
        verdict(cycle_ratio <= CYCLE_OVER_FSYNC),
    );
    println!(
        "{:<44} {:>10.2} {:>10}",
        "cycle p50 / fsync p50",
        cycle_p50 / fsync_p50,
        ""
    );
    println!(
        "{:<44} {:>10.2} {:>10}   {} commits x fdatasync p50 = {:.1}",
        "cycle p50 / (commits x fdatasync p50)",
        cycle_p50 / (commits_per_cycle as f64 * sync_p50),
        "",
        commits_per_cycle,
        commits_per_cycle as f64 * sync_p50
    );
    println!();

    let early_p50 = p50(&totals(&early));
    let late_p50 = p50(&totals(&late));
    let late_ratio = late_p50 / early_p50;
    if s.long_runs > 0 {
        println!(
            "step {}-{} vs step {}-{} (thread of {} cycles, {} runs)",
            early_at.start(),
            early_at.end(),
            late_at.start(),
            late_at.end(),
            s.long,
            s.long_runs
        );
        println!(
            "{:<44} {:>10} {:>10}",
            "part of the cycle (p50)", "early", "late"
        );
        println!("{}", "-".repeat(90));
        let parts: [(&str, CyclePart); 5] = [
            ("cycle", |c| c.total),
            ("  commit of the reply (with the intent)", |c| c.reply),
            ("  commit of the result", |c| c.result),
            ("  store reads", |c| c.reads),
            ("  the rest (engine, model, tool)", Cycle::rest),
        ];
        for (name, f) in parts {
            let e = p50(&column(&early, f));
            let l = p50(&column(&late, f));
            println!("{name:<44} {e:>10.1} {l:>10.1}   {:.2}x", l / e);
        }
        println!(
            "late / early cycle p50: {late_ratio:.2}x; per run: {}",
            long_ratios
                .iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!();
    }

    let summary = json!({
        "cycle_p50_us": round1(cycle_p50),
        "cycle_p90_us": round1(cycle_p90),
        "cycle_whole_run_us": round1(whole_p50),
        "cycle_cycles": s.cycles,
        "cycle_runs": s.runs,
        "commits_per_cycle": commits_per_cycle,
        "separate_intent_commits": separate_intents,
        "cycle_reply_commit_p50_us": round1(p50(&column(cycles, |c| c.reply))),
        "cycle_result_commit_p50_us": round1(p50(&column(cycles, |c| c.result))),
        "cycle_reads_p50_us": round1(p50(&column(cycles, |c| c.reads))),
        "cycle_rest_p50_us": round1(p50(&column(cycles, Cycle::rest))),
        "cycle_over_fdatasync": round3(cycle_ratio),
        "cycle_over_fdatasync_inplace": round3(cycle_ratio_inplace),
        "memory_cycle_p50_us": round1(mem_p50),
        "memory_cycle_p90_us": round1(p90(&mem)),
        "memory_cycle_whole_run_us": round1(mem_whole_p50),
        "memory_commits_per_cycle": median_commits(&ephemeral.cycles),
        "memory_cycle_rest_p50_us": round1(p50(&column(&ephemeral.cycles, Cycle::rest))),
        "fdatasync_p50_us": round1(sync_p50),
        "fdatasync_p90_us": round1(sync_p90),
        "fdatasync_inplace_p50_us": round1(inplace_p50),
        "fdatasync_inplace_p90_us": round1(p90(sync_inplace)),
        "fsync_p50_us": round1(fsync_p50),
        "cycle_over_fsync": round3(cycle_p50 / fsync_p50),
        "commit_p50_us": round1(commit_p50),
        "commit_p90_us": round1(commit_p90),
        "commit_over_fdatasync": round3(commit_ratio),
        "commit_over_fdatasync_inplace": round3(commit_ratio_inplace),
        "step_early_p50_us": if s.long_runs > 0 { json!(round1(early_p50)) } else { Value::Null },
        "step_late_p50_us": if s.long_runs > 0 { json!(round1(late_p50)) } else { Value::Null },
        "step_late_over_early": if s.long_runs > 0 { json!(round3(late_ratio)) } else { Value::Null },
        "step_late_rest_over_early_rest": if s.long_runs > 0 {
            json!(round3(p50(&column(&late, Cycle::rest)) / p50(&column(&early, Cycle::rest))))
        } else {
            Value::Null
        },
        "long_cycles": s.long,
    });
    println!("{summary}");
}
