//! Throughput of durable threads in one process: a plain program (`harness = false`).
//!
//! Run: `cargo bench -p toolhost-runtime --bench throughput`.
//!
//! One process, one tokio multi-thread runtime (a worker per core), one [`Runtime`], one
//! SQLite file (WAL, `synchronous=FULL`) in the data folder (`TOOLHOST_BENCH_DIR`, default the
//! target folder's `tmp/`). Every thread runs the scripted `test` model whose script is N
//! tool-call turns of a trivial Rust tool, then a final text; each thread is one
//! [`Runtime::run`]. The bench runs one thread alone, then T threads at once (each its own
//! task), and reports for each:
//! - **cycles per second**: tool runs of all threads divided by the time from the first run's
//!   start to the last one's end;
//! - **commits per cycle**: commits of the store's writer ([`SqliteStore::write_stats`]) over
//!   the phase, divided by its cycles. With WAL and `synchronous=FULL` a commit is one fsync of
//!   the WAL (a checkpoint adds a few, about once every thousand pages), so this is the fsyncs
//!   per cycle; writes per commit shows how many writes shared each one;
//! - **cycle p50 / p90**: the time from one run of the tool to the next in the same thread.
//!
//! The targets: T threads make at least 12,000 cycles per second on the durable store, and at
//! least 15x the cycles per second of one thread (for 100 threads). The same phases on [`SqliteStore::in_memory`] follow, as the ceiling the engine
//! allows when no commit waits for a disk.
//!
//! Knobs (environment variables): `TOOLHOST_BENCH_DIR`, `TOOLHOST_BENCH_THREADS` (100),
//! `TOOLHOST_BENCH_THREAD_CYCLES` (100, per thread), `TOOLHOST_BENCH_RUNS` (3, of each phase;
//! medians are reported), `TOOLHOST_BENCH_MEMORY` (1; 0 skips the in-memory phases).
//!
//! Output: a table on stdout, then one JSON line starting with `{"throughput_threads":`.

mod common;

use common::{knob, round1, round3, write_counting_project};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{SqliteStore, WriteStats};

struct Settings {
    dir: PathBuf,
    threads: usize,
    cycles: usize,
    runs: usize,
    memory: bool,
}

impl Settings {
    fn from_env() -> Self {
        let base = std::env::var_os("TOOLHOST_BENCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
        let dir = base.join(format!("throughput-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the bench data folder");
        Self {
            dir,
            threads: knob("TOOLHOST_BENCH_THREADS", 100).max(1),
            cycles: knob("TOOLHOST_BENCH_THREAD_CYCLES", 100).max(3),
            runs: knob("TOOLHOST_BENCH_RUNS", 3).max(1),
            memory: knob("TOOLHOST_BENCH_MEMORY", 1) != 0,
        }
    }
}

/// Nearest-rank percentile of unsorted samples.
fn pct(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// When the tool ran, by thread.
type Stamps = Arc<Mutex<HashMap<String, Vec<Instant>>>>;

/// The trivial tool: stamps the time it ran in its thread's list, answers a short text.
fn count_tool(stamps: Stamps) -> toolhost_core::AnyTool {
    DynamicTool::new("count", "Counts.")
        .parameters(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .handler(move |args: Value, ctx| {
            let now = Instant::now();
            let thread = ctx.thread_id().unwrap_or_default().to_owned();
            stamps.lock().unwrap().entry(thread).or_default().push(now);
            async move { Ok::<_, ToolError>(format!("counted {}", args["n"])) }
        })
        .build()
        .expect("the count tool")
}

/// What one phase (some threads at once) did.
struct Phase {
    threads: usize,
    cycles: usize,
    took: Duration,
    stats: WriteStats,
    /// Tool-to-tool times within each thread, in microseconds.
    cycle_us: Vec<f64>,
}

impl Phase {
    fn per_second(&self) -> f64 {
        self.cycles as f64 / self.took.as_secs_f64()
    }
    fn commits_per_cycle(&self) -> f64 {
        self.stats.commits as f64 / self.cycles as f64
    }
    fn writes_per_commit(&self) -> f64 {
        self.stats.writes as f64 / self.stats.commits.max(1) as f64
    }
}

/// A store, the project's runtime on it, and where the tool stamps its runs.
struct Bench {
    store: Arc<SqliteStore>,
    runtime: Arc<Runtime>,
    stamps: Stamps,
}

impl Bench {
    async fn new(project: &Path, store: SqliteStore) -> Self {
        let store = Arc::new(store);
        let stamps: Stamps = Arc::default();
        let mut runtime = Runtime::load(project, store.clone())
            .await
            .expect("load the project");
        runtime.register_tool(count_tool(stamps.clone()));
        assert!(runtime.problems().is_empty(), "{:?}", runtime.problems());
        Self {
            store,
            runtime: Arc::new(runtime),
            stamps,
        }
    }

    /// Creates `threads` threads, then runs them all at once, each in a task of its own.
    async fn phase(&self, threads: usize, cycles: usize) -> Phase {
        let mut ids = Vec::with_capacity(threads);
        for _ in 0..threads {
            let thread = self
                .runtime
                .start_thread("bench", "count for me")
                .await
                .expect("start a thread");
            ids.push(thread.id);
        }
        self.stamps.lock().unwrap().clear();
        let before = self.store.write_stats();
        let started = Instant::now();
        let tasks: Vec<_> = ids
            .iter()
            .map(|id| {
                let (runtime, id) = (self.runtime.clone(), id.clone());
                tokio::spawn(async move { runtime.run(&id).await })
            })
            .collect();
        for task in tasks {
            let outcome = task.await.expect("the task").expect("the run");
            assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
        }
        let took = started.elapsed();
        let after = self.store.write_stats();
        let stamps = std::mem::take(&mut *self.stamps.lock().unwrap());
        assert_eq!(stamps.len(), threads, "every thread ran its tool");
        let mut cycle_us = Vec::with_capacity(threads * cycles);
        for times in stamps.values() {
            assert_eq!(times.len(), cycles, "every scripted call ran once");
            cycle_us.extend(times.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e6));
        }
        Phase {
            threads,
            cycles: threads * cycles,
            took,
            stats: WriteStats {
                writes: after.writes - before.writes,
                commits: after.commits - before.commits,
            },
            cycle_us,
        }
    }
}

/// The medians of `runs` phases of `threads` threads.
struct Summary {
    threads: usize,
    cycles_per_s: f64,
    per_run: Vec<f64>,
    commits_per_cycle: f64,
    writes_per_commit: f64,
    cycle_p50_us: f64,
    cycle_p90_us: f64,
}

fn summarize(phases: &[Phase]) -> Summary {
    let rates: Vec<f64> = phases.iter().map(Phase::per_second).collect();
    let cycles: Vec<f64> = phases.iter().flat_map(|p| p.cycle_us.clone()).collect();
    Summary {
        threads: phases[0].threads,
        cycles_per_s: pct(&rates, 0.5),
        per_run: rates,
        commits_per_cycle: pct(
            &phases
                .iter()
                .map(Phase::commits_per_cycle)
                .collect::<Vec<_>>(),
            0.5,
        ),
        writes_per_commit: pct(
            &phases
                .iter()
                .map(Phase::writes_per_commit)
                .collect::<Vec<_>>(),
            0.5,
        ),
        cycle_p50_us: pct(&cycles, 0.5),
        cycle_p90_us: pct(&cycles, 0.9),
    }
}

fn print_row(label: &str, s: &Summary) {
    println!(
        "{label:<34} {:>7} {:>11.0} {:>10.2} {:>10.1} {:>10.0} {:>10.0}   per run: {}",
        s.threads,
        s.cycles_per_s,
        s.commits_per_cycle,
        s.writes_per_commit,
        s.cycle_p50_us,
        s.cycle_p90_us,
        s.per_run
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

fn summary_json(s: &Summary) -> Value {
    json!({
        "threads": s.threads,
        "cycles_per_s": round1(s.cycles_per_s),
        "cycles_per_s_per_run": s.per_run.iter().map(|r| round1(*r)).collect::<Vec<_>>(),
        "commits_per_cycle": round3(s.commits_per_cycle),
        "writes_per_commit": round1(s.writes_per_commit),
        "cycle_p50_us": round1(s.cycle_p50_us),
        "cycle_p90_us": round1(s.cycle_p90_us),
    })
}

/// Target: T threads at once make at least this many times one thread's cycles per second.
const SPEEDUP: f64 = 15.0;
/// Cycles per second the threads at once make on the durable store, at least.
const CYCLES_PER_S: f64 = 12_000.0;

/// One thread alone, then `s.threads` at once, `s.runs` times each, on stores `open` makes.
fn measure(
    tokio_rt: &tokio::runtime::Runtime,
    s: &Settings,
    project: &Path,
    open: &dyn Fn(usize) -> SqliteStore,
) -> (Summary, Summary) {
    let mut one = Vec::new();
    let mut many = Vec::new();
    for r in 0..s.runs {
        // A fresh store for each run, so every run starts from the same database size.
        let bench = tokio_rt.block_on(Bench::new(project, open(r)));
        if r == 0 {
            // A warm-up thread.
            tokio_rt.block_on(bench.phase(1, s.cycles));
        }
        one.push(tokio_rt.block_on(bench.phase(1, s.cycles)));
        many.push(tokio_rt.block_on(bench.phase(s.threads, s.cycles)));
    }
    (summarize(&one), summarize(&many))
}

fn main() {
    let s = Settings::from_env();
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("throughput: toolhost durable threads at once in one process");
    println!("data folder: {}", s.dir.display());
    println!(
        "{} threads of {} cycles each, against one thread of {} cycles; {} runs of each; tokio multi-thread runtime, {workers} workers",
        s.threads, s.cycles, s.cycles, s.runs
    );
    println!();

    let project = s.dir.join("project");
    write_counting_project(&project, s.cycles);
    let dir = s.dir.clone();
    let (file_one, file_many) = measure(&tokio_rt, &s, &project, &|r| {
        let store = SqliteStore::open(&dir.join(format!("run{r}.db"))).expect("open the store");
        let (mode, sync) = store.durability_settings().unwrap();
        assert_eq!(
            (mode.as_str(), sync),
            ("wal", 2),
            "the store must run WAL with synchronous=FULL"
        );
        store
    });
    let memory = s.memory.then(|| {
        measure(&tokio_rt, &s, &project, &|_| {
            SqliteStore::in_memory().expect("open the ephemeral store")
        })
    });
    drop(tokio_rt);
    let _ = std::fs::remove_dir_all(&s.dir);

    println!(
        "{:<34} {:>7} {:>11} {:>10} {:>10} {:>10} {:>10}",
        "store", "threads", "cycles/s", "commits/c", "writes/c.", "cycle p50", "cycle p90"
    );
    println!("{}", "-".repeat(100));
    print_row("SqliteStore (WAL, FULL)", &file_one);
    print_row("SqliteStore (WAL, FULL)", &file_many);
    if let Some((one, many)) = &memory {
        print_row("SqliteStore::in_memory", one);
        print_row("SqliteStore::in_memory", many);
    }
    println!(
        "(commits/c = commits per cycle, about one fsync each; writes/c. = writes per commit; cycle = tool-to-tool time in one thread, microseconds)"
    );
    let ratio = file_many.cycles_per_s / file_one.cycles_per_s;
    println!();
    println!(
        "{} threads / 1 thread, cycles per second: {ratio:.2}x (target >= {SPEEDUP}x: {})",
        s.threads,
        if ratio >= SPEEDUP { "met" } else { "NOT met" }
    );
    println!(
        "{} threads, cycles per second: {:.0} (target >= {CYCLES_PER_S}: {})",
        s.threads,
        file_many.cycles_per_s,
        if file_many.cycles_per_s >= CYCLES_PER_S {
            "met"
        } else {
            "NOT met"
        }
    );
    if let Some((one, many)) = &memory {
        println!(
            "in memory: {} threads / 1 thread: {:.2}x; durable {} threads / in-memory {} threads: {:.2}",
            s.threads,
            many.cycles_per_s / one.cycles_per_s,
            s.threads,
            s.threads,
            file_many.cycles_per_s / many.cycles_per_s
        );
    }
    println!();
    let summary = json!({
        "throughput_threads": s.threads,
        "thread_cycles": s.cycles,
        "runs": s.runs,
        "workers": workers,
        "one": summary_json(&file_one),
        "many": summary_json(&file_many),
        "many_over_one": round3(ratio),
        "memory_one": memory.as_ref().map(|(one, _)| summary_json(one)),
        "memory_many": memory.as_ref().map(|(_, many)| summary_json(many)),
    });
    println!("{summary}");
}
