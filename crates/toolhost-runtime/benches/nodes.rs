//! Cycles per second of durable threads with 1, 2 and 3 nodes on one PostgreSQL database, and
//! one node on a SQLite file beside them: a plain program (`harness = false`).
//!
//! Run (a PostgreSQL server must be reachable; the test command's throwaway one does):
//! `TOOLHOST_TEST_POSTGRES=postgresql://postgres@%2Ftmp%2Fpg cargo bench -p toolhost-runtime --bench nodes`.
//!
//! A node is a [`Runtime`] with a store of its own: its own connections to the database, its
//! own writer and its own group commit, as a `toolhost serve` process has. The nodes run in one
//! process here (one tokio runtime, a worker per core), so they share the machine's cores as
//! processes on one machine would; the database server runs on the same machine too. `T`
//! threads (split evenly over the nodes) each run `C` cycles of the scripted model calling a
//! trivial Rust tool, all at once. For each setup: cycles per second (tool runs over the time
//! from the first run's start to the last one's end), commits per cycle (the nodes' writers'
//! commits, summed, over the cycles: the group commit of each node) and writes per commit. The
//! ratios are each setup's cycles per second over the SQLite node's.
//!
//! Knobs: `TOOLHOST_BENCH_THREADS` (60), `TOOLHOST_BENCH_THREAD_CYCLES` (50),
//! `TOOLHOST_BENCH_RUNS` (3; medians are reported), `TOOLHOST_BENCH_DIR`.
//!
//! Output: a table on stdout, then one JSON line starting with `{"nodes":`.

mod common;

use common::{knob, round1, round3, write_counting_project};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::conformance::fresh_database::FreshDatabase;
use toolhost_store::{SqliteStore, Store, WriteStats};

/// The trivial tool: counts its runs.
fn count_tool(runs: Arc<AtomicU64>) -> toolhost_core::AnyTool {
    DynamicTool::new("count", "Counts.")
        .parameters(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .handler(move |args: Value, _ctx| {
            runs.fetch_add(1, Ordering::Relaxed);
            async move { Ok::<_, ToolError>(format!("counted {}", args["n"])) }
        })
        .build()
        .expect("the count tool")
}

/// What one run of a setup did.
struct Phase {
    cycles: u64,
    took: Duration,
    stats: WriteStats,
}

/// Runs `threads` threads spread over the nodes on `stores`, all at once.
async fn phase(project: &Path, stores: Vec<Arc<dyn Store>>, threads: usize) -> Phase {
    let runs = Arc::new(AtomicU64::new(0));
    let mut nodes = Vec::new();
    for store in &stores {
        let mut runtime = Runtime::load(project, store.clone())
            .await
            .expect("load the project");
        runtime.register_tool(count_tool(runs.clone()));
        nodes.push(Arc::new(runtime));
    }
    let mut ids = Vec::with_capacity(threads);
    for i in 0..threads {
        let node = &nodes[i % nodes.len()];
        let thread = node
            .start_thread("bench", "count for me")
            .await
            .expect("start a thread");
        ids.push((node.clone(), thread.id));
    }
    let before: Vec<WriteStats> = stores.iter().map(|s| stats(s.as_ref())).collect();
    let started = Instant::now();
    let tasks: Vec<_> = ids
        .into_iter()
        .map(|(node, id)| tokio::spawn(async move { node.run(&id).await }))
        .collect();
    for task in tasks {
        let outcome = task.await.expect("the task").expect("the run");
        assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
    }
    let took = started.elapsed();
    let mut total = WriteStats {
        writes: 0,
        commits: 0,
    };
    for (store, before) in stores.iter().zip(before) {
        let after = stats(store.as_ref());
        total.writes += after.writes - before.writes;
        total.commits += after.commits - before.commits;
    }
    Phase {
        cycles: runs.load(Ordering::Relaxed),
        took,
        stats: total,
    }
}

fn stats(store: &dyn Store) -> WriteStats {
    store
        .write_stats()
        .expect("both backends count their writes")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Row {
    label: String,
    nodes: usize,
    cycles_per_s: f64,
    commits_per_cycle: f64,
    writes_per_commit: f64,
}

fn main() {
    let threads = knob("TOOLHOST_BENCH_THREADS", 60).max(1);
    let cycles = knob("TOOLHOST_BENCH_THREAD_CYCLES", 50).max(3);
    let repeat = knob("TOOLHOST_BENCH_RUNS", 3).max(1);
    let base = std::env::var_os("TOOLHOST_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let dir = base.join(format!("nodes-{}", std::process::id()));
    let project = dir.join("project");
    write_counting_project(&project, cycles);
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("nodes: toolhost durable threads on one PostgreSQL database, and on one SQLite file");
    println!("{threads} threads of {cycles} cycles each, all at once; {repeat} runs of each setup");
    println!();

    let mut setups: Vec<(String, usize)> = vec![("SQLite file (WAL, FULL)".into(), 1)];
    setups.extend((1..=3).map(|n| (format!("PostgreSQL, {n} node(s)"), n)));
    let mut rows = Vec::new();
    for (label, nodes) in setups {
        let mut rates = Vec::new();
        let mut commits = Vec::new();
        let mut writes = Vec::new();
        for r in 0..repeat {
            eprintln!("{label}: run {} of {repeat}", r + 1);
            // A fresh database for each run, so every run starts from the same size.
            let (stores, _database): (Vec<Arc<dyn Store>>, Option<FreshDatabase>) =
                if label.starts_with("SQLite") {
                    std::fs::create_dir_all(&dir).unwrap();
                    let file = dir.join(format!("run{r}.db"));
                    let store = SqliteStore::open(&file).expect("open the SQLite store");
                    (vec![Arc::new(store)], None)
                } else {
                    let database = FreshDatabase::new();
                    let stores = (0..nodes)
                        .map(|_| Arc::new(database.store()) as Arc<dyn Store>)
                        .collect();
                    (stores, Some(database))
                };
            let done = tokio_rt.block_on(phase(&project, stores, threads));
            rates.push(done.cycles as f64 / done.took.as_secs_f64());
            commits.push(done.stats.commits as f64 / done.cycles as f64);
            writes.push(done.stats.writes as f64 / done.stats.commits.max(1) as f64);
        }
        rows.push(Row {
            label,
            nodes,
            cycles_per_s: median(rates),
            commits_per_cycle: median(commits),
            writes_per_commit: median(writes),
        });
    }
    drop(tokio_rt);
    let _ = std::fs::remove_dir_all(&dir);

    let sqlite = rows[0].cycles_per_s;
    println!(
        "{:<28} {:>6} {:>10} {:>10} {:>10} {:>14}",
        "store", "nodes", "cycles/s", "commits/c", "writes/c.", "vs SQLite node"
    );
    println!("{}", "-".repeat(84));
    for row in &rows {
        println!(
            "{:<28} {:>6} {:>10.0} {:>10.3} {:>10.1} {:>13.2}x",
            row.label,
            row.nodes,
            row.cycles_per_s,
            row.commits_per_cycle,
            row.writes_per_commit,
            row.cycles_per_s / sqlite
        );
    }
    println!("(commits/c = commits per cycle over all nodes; writes/c. = writes per commit)");
    let line = json!({
        "nodes": rows.iter().map(|r| json!({
            "store": r.label,
            "nodes": r.nodes,
            "cycles_per_s": round1(r.cycles_per_s),
            "commits_per_cycle": round3(r.commits_per_cycle),
            "writes_per_commit": round1(r.writes_per_commit),
            "vs_sqlite_node": round3(r.cycles_per_s / sqlite),
        })).collect::<Vec<_>>(),
    });
    println!("{line}");
}
