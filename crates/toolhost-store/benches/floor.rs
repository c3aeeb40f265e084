//! The floor under the engine's durable cycle: what this disk and SQLite cost before any engine
//! runs, so the engine's own benches (`toolhost-runtime`'s `durable_cycle` and `throughput`)
//! can be read against what no engine on this store could beat. A plain program
//! (`harness = false`): every sample is a disk flush.
//!
//! Run: `cargo bench -p toolhost-store --bench floor`.
//!
//! What it measures, in a data folder on disk (`TOOLHOST_BENCH_DIR`, default the target
//! folder's `tmp/`):
//! - **fdatasync**: 4 KiB appended then `sync_data`, and 4 KiB rewritten in place then
//!   `sync_data`: the raw flush the durable-cycle target is a multiple of.
//! - **bare SQLite commit**: `BEGIN IMMEDIATE; INSERT one small row; COMMIT` with rusqlite on the
//!   SQLite this workspace builds, WAL and `synchronous=FULL`, nothing of toolhost in between;
//!   and **two of them back to back**, the least a tool-call cycle can commit (the call's intent
//!   before the tool runs, its result before the model is asked again).
//! - **the store's cycle alone**: the two batches the engine commits per cycle (the assistant's
//!   reply with the intent of its call; the call's result) through [`Store::apply`], one
//!   thread after another: the store's part of a cycle, without the engine, the model or the
//!   tool.
//! - **the store's ceiling under many threads**: `TOOLHOST_BENCH_THREADS` (100) tasks at once,
//!   each doing `TOOLHOST_BENCH_THREAD_CYCLES` (200) such cycles through [`AsyncStore`] as the
//!   engine does (writes handed to the writer, group commit): cycles per second the store can
//!   take when nothing else runs. The engine's durable throughput cannot pass it.
//!
//! Knobs: `TOOLHOST_BENCH_DIR`, `TOOLHOST_BENCH_SAMPLES` (400), `TOOLHOST_BENCH_THREADS`,
//! `TOOLHOST_BENCH_THREAD_CYCLES`. Output: a table, then one JSON line starting with
//! `{"fdatasync_appended_p50_us":`.

use rusqlite::Connection;
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_store::{
    new_id, AsyncStore, CallIntent, NewMessage, NewThread, Role, SqliteStore, Store,
    ToolCallRecord, Write,
};

/// A whole-number setting from the environment, or `default`.
fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Nearest-rank percentile of samples, in microseconds.
fn percentile(samples: &[Duration], p: f64) -> f64 {
    let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * us.len() as f64).ceil().max(1.0) as usize;
    us[rank.min(us.len()) - 1]
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// `samples` timings of `step`, after a warm-up of a tenth as many.
fn sample(samples: usize, mut step: impl FnMut(usize)) -> Vec<Duration> {
    let warmup = samples / 10;
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples + warmup {
        let start = Instant::now();
        step(i);
        if i >= warmup {
            out.push(start.elapsed());
        }
    }
    out
}

/// 4 KiB flushed with `sync_data`, appended (the file grows) or in place.
fn flushes(dir: &Path, samples: usize, appended: bool) -> Vec<Duration> {
    let path = dir.join(if appended {
        "append.bin"
    } else {
        "inplace.bin"
    });
    let mut file: File = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .expect("open the flush file");
    let block = vec![0x5au8; 4096];
    file.write_all(&block).expect("write");
    file.sync_all().expect("flush");
    let out = sample(samples, |_| {
        if appended {
            file.write_all(&block).expect("write");
        } else {
            file.write_all_at(&block, 0).expect("write");
        }
        file.sync_data().expect("flush");
    });
    let _ = std::fs::remove_file(path);
    out
}

/// Bare SQLite: `per_sample` commits of one small row each, per sample.
fn bare_commits(dir: &Path, samples: usize, per_sample: usize) -> Vec<Duration> {
    let path = dir.join(format!("bare-{per_sample}.db"));
    let conn = Connection::open(&path).expect("open a bare database");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE m (seq INTEGER PRIMARY KEY, thread TEXT NOT NULL, body TEXT NOT NULL);
         CREATE INDEX m_by_thread ON m(thread, seq);",
    )
    .expect("set up a bare database");
    let insert = |i: usize| {
        conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
        conn.execute(
            "INSERT INTO m (thread, body) VALUES ('t', ?1)",
            [format!("message {i}")],
        )
        .expect("insert");
        conn.execute_batch("COMMIT").expect("commit");
    };
    // The log is reused in place once it has been checkpointed: warm it past that first.
    for i in 0..3_000 {
        insert(i);
    }
    let out = sample(samples, |i| {
        for k in 0..per_sample {
            insert(i * per_sample + k);
        }
    });
    drop(conn);
    remove_database(&path);
    out
}

fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// The two batches of a tool-call cycle, numbered `i` on its thread.
fn cycle_writes(i: usize) -> (Vec<Write>, String, Write) {
    let call_id = format!("call-{i}");
    let message_id = new_id();
    let reply = vec![
        Write::AppendMessage(NewMessage {
            id: Some(message_id.clone()),
            role: Some(Role::Assistant),
            tool_calls: vec![ToolCallRecord {
                id: call_id.clone(),
                name: "count".into(),
                arguments: "{}".into(),
            }],
            ..NewMessage::default()
        }),
        Write::RecordIntent(CallIntent {
            call_id: call_id.clone(),
            tool: "count".into(),
            arguments: "{}".into(),
            message_id: Some(message_id),
        }),
    ];
    let result = Write::CompleteCall {
        call_id: call_id.clone(),
        result: NewMessage {
            content: Some(format!("{i}")),
            ..NewMessage::default()
        },
    };
    (reply, call_id, result)
}

fn new_thread(store: &dyn Store) -> String {
    store
        .create_thread(NewThread {
            agent: "bench".into(),
            ..NewThread::default()
        })
        .expect("create a thread")
        .id
}

/// The store's part of `samples` cycles on one thread, one after another.
fn store_cycles(dir: &Path, samples: usize) -> Vec<Duration> {
    let path = dir.join("store-cycle.db");
    let store = SqliteStore::open(&path).expect("open the store");
    let thread = new_thread(&store);
    // As for bare SQLite: a log that has reached its checkpoint size once, reused in place.
    let warm = knob("TOOLHOST_BENCH_STORE_WARMUP", 3_000);
    for i in 0..warm {
        let (reply, _, result) = cycle_writes(i);
        store.apply(&thread, reply).expect("the reply commits");
        store
            .apply(&thread, vec![result])
            .expect("the result commits");
    }
    let out = sample(samples, |i| {
        let (reply, _, result) = cycle_writes(warm + i);
        store.apply(&thread, reply).expect("the reply commits");
        store
            .apply(&thread, vec![result])
            .expect("the result commits");
    });
    drop(store);
    remove_database(&path);
    out
}

/// Cycles per second of `threads` tasks at once, each doing `cycles` store cycles, with the
/// commits and bytes written per cycle.
fn store_ceiling(dir: &Path, threads: usize, cycles: usize) -> Ceiling {
    let path = dir.join("store-ceiling.db");
    let sqlite = Arc::new(SqliteStore::open(&path).expect("open the store"));
    let store = AsyncStore::new(sqlite.clone());
    let ids: Vec<String> = (0..threads).map(|_| new_thread(&*sqlite)).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let commits_before = sqlite.write_stats().commits;
    let written_before = bytes_written();
    let start = Instant::now();
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for thread in ids {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..cycles {
                    let (reply, _, result) = cycle_writes(i);
                    store
                        .apply(&thread, reply)
                        .await
                        .expect("the reply commits");
                    store
                        .apply(&thread, vec![result])
                        .await
                        .expect("the result commits");
                }
            }));
        }
        for task in tasks {
            task.await.expect("a task ends");
        }
    });
    let took = start.elapsed();
    let total = (threads * cycles) as f64;
    let commits = (sqlite.write_stats().commits - commits_before) as f64;
    let written = bytes_written()
        .zip(written_before)
        .map(|(a, b)| (a - b) as f64 / total);
    drop(store);
    drop(sqlite);
    remove_database(&path);
    Ceiling {
        cycles_per_s: total / took.as_secs_f64(),
        commits_per_cycle: commits / total,
        bytes_per_cycle: written,
    }
}

/// What [`store_ceiling`] measured.
struct Ceiling {
    cycles_per_s: f64,
    commits_per_cycle: f64,
    /// Bytes the process handed to `write` calls per cycle (the log's frames and the
    /// checkpoints' pages), where the system tells it.
    bytes_per_cycle: Option<f64>,
}

/// Bytes this process has handed to `write` calls so far (`wchar` of `/proc/self/io`).
fn bytes_written() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("wchar:"))
        .and_then(|n| n.trim().parse().ok())
}

fn main() {
    let base = std::env::var_os("TOOLHOST_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let dir = base.join(format!("floor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the bench data folder");
    let samples = knob("TOOLHOST_BENCH_SAMPLES", 400).max(10);
    let threads = knob("TOOLHOST_BENCH_THREADS", 100).max(1);
    let cycles = knob("TOOLHOST_BENCH_THREAD_CYCLES", 200).max(1);

    let appended = percentile(&flushes(&dir, samples, true), 50.0);
    let in_place = percentile(&flushes(&dir, samples, false), 50.0);
    let one = percentile(&bare_commits(&dir, samples, 1), 50.0);
    let two = percentile(&bare_commits(&dir, samples, 2), 50.0);
    let store_cycle = percentile(&store_cycles(&dir, samples), 50.0);
    let ceiling = store_ceiling(&dir, threads, cycles);
    let _ = std::fs::remove_dir_all(&dir);

    println!("floor: what the disk and SQLite cost before the engine runs (p50, µs)");
    println!(
        "{:<52} {:>10}",
        "fdatasync 4 KiB, appended",
        round1(appended)
    );
    println!(
        "{:<52} {:>10}",
        "fdatasync 4 KiB, in place",
        round1(in_place)
    );
    println!(
        "{:<52} {:>10}   {:.2}x appended fdatasync",
        "bare SQLite commit (one row, WAL, FULL)",
        round1(one),
        one / appended
    );
    println!(
        "{:<52} {:>10}   {:.2}x appended fdatasync",
        "two bare SQLite commits (a cycle's least)",
        round1(two),
        two / appended
    );
    println!(
        "{:<52} {:>10}   {:.2}x appended fdatasync",
        "the store's two batches of a cycle, one thread",
        round1(store_cycle),
        store_cycle / appended
    );
    let per_cycle = ceiling
        .bytes_per_cycle
        .map_or("unknown".to_owned(), |b| format!("{:.1} KiB", b / 1024.0));
    println!(
        "{:<52} {:>10.0}   cycles/s ({threads} threads x {cycles}; {:.3} commits and {per_cycle} written per cycle)",
        "the store's cycles alone, many threads at once",
        ceiling.cycles_per_s,
        ceiling.commits_per_cycle,
    );
    let summary = json!({
        "fdatasync_appended_p50_us": round1(appended),
        "fdatasync_in_place_p50_us": round1(in_place),
        "bare_commit_p50_us": round1(one),
        "bare_two_commits_p50_us": round1(two),
        "store_cycle_p50_us": round1(store_cycle),
        "store_ceiling_cycles_per_s": ceiling.cycles_per_s.round(),
        "store_ceiling_commits_per_cycle": (ceiling.commits_per_cycle * 1000.0).round() / 1000.0,
        "store_ceiling_bytes_per_cycle": ceiling.bytes_per_cycle.map(f64::round),
        "threads": threads,
    });
    println!("{summary}");
}
