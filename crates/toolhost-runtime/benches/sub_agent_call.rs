//! The cost of a blocking sub-agent call over a plain tool call: a plain program (`harness =
//! false`), timing whole thread runs.
//!
//! Run: `cargo bench -p toolhost-runtime --bench sub_agent_call`.
//!
//! Both threads are one turn of a scripted `test` model on SQLite in a data folder on disk
//! (`TOOLHOST_BENCH_DIR`, default the target folder's `tmp/`):
//! - **plain**: the model calls a trivial Rust tool `echo`, then answers.
//! - **sub-agent**: the model calls the `dual_ai` agent `research` as a blocking agent tool:
//!   the engine creates a child thread, whose side A answers the call's message and whose side B
//!   calls the session-ending `report` (the same trivial tool), and returns the session result;
//!   then the model answers.
//!
//! The extra cost is everything a sub-agent is: a child thread created in one transaction, its
//! own lease, two more model steps and one more journaled call in the child, the result read
//! back. Knobs: `TOOLHOST_BENCH_RUNS` (200 threads of each, interleaved).
//!
//! Output: a table on stdout, then one JSON line starting with `{"plain_p50_us":`.

mod common;

use common::{knob, round1, round3};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{SqliteStore, Store};

fn write_project(root: &Path) {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let files = [
        ("agents/agents/plain.json", json!({"type": "ai_human", "sideA": {"prompt": "plain"}}).to_string()),
        ("agents/agents/lead.json", json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string()),
        ("agents/agents/research.json", json!({
            "type": "dual_ai", "description": "Researches.", "maxSessionTurns": 4,
            "sideA": {"prompt": "asker"},
            "sideB": {"prompt": "finder", "sessionStop": {"name": "report", "messageProperty": "text"}}
        }).to_string()),
        ("agents/prompts/plain.json", prompt("plain", json!(["echo"]))),
        ("agents/prompts/lead.json", prompt("lead", json!(["research"]))),
        ("agents/prompts/asker.json", prompt("asker", json!([]))),
        ("agents/prompts/finder.json", prompt("finder", json!(["report"]))),
        ("agents/models/plain.json", model("plain.json")),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/asker.json", model("asker.json")),
        ("agents/models/finder.json", model("finder.json")),
        ("plain.json", json!([
            {"toolCalls": [{"name": "echo", "arguments": {"text": "what is it?"}}]},
            {"text": "done"}
        ]).to_string()),
        ("lead.json", json!([
            {"toolCalls": [{"name": "research", "arguments": {"message": "what is it?"}}]},
            {"text": "done"}
        ]).to_string()),
        ("asker.json", json!([{"text": "please find it"}]).to_string()),
        ("finder.json", json!([
            {"toolCalls": [{"name": "report", "arguments": {"text": "the answer is 42"}}]}
        ]).to_string()),
    ];
    for (file, text) in files {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn trivial(name: &str) -> toolhost_core::AnyTool {
    DynamicTool::new(name, "Returns its text.")
        .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
        .handler(|args: Value, _| async move {
            Ok::<_, ToolError>(args["text"].as_str().unwrap_or_default().to_owned())
        })
        .build()
        .unwrap()
}

async fn one_thread(rt: &Runtime, agent: &str) -> Duration {
    let started = Instant::now();
    let thread = rt.start_thread(agent, "go").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    let took = started.elapsed();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
    took
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let runs = knob("TOOLHOST_BENCH_RUNS", 200).max(5);
    let base = std::env::var_os("TOOLHOST_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let dir = base.join(format!("sub-agent-call-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    write_project(&dir);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.join("toolhost.db")).unwrap());
    let exec = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rt = exec.block_on(Runtime::load(&dir, store)).unwrap();
    rt.register_tool(trivial("echo"));
    rt.register_tool(trivial("report"));
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let (mut plain, mut sub) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    exec.block_on(async {
        // Warm-up, then interleaved so both see the same moments of the disk.
        one_thread(&rt, "plain").await;
        one_thread(&rt, "lead").await;
        for _ in 0..runs {
            plain.push(one_thread(&rt, "plain").await);
            sub.push(one_thread(&rt, "lead").await);
        }
    });
    plain.sort();
    sub.sort();
    let us = |d: Duration| round1(d.as_secs_f64() * 1e6);
    let (p50, s50) = (percentile(&plain, 0.5), percentile(&sub, 0.5));
    println!("{runs} threads of each, on SQLite in {}", dir.display());
    println!("{:<28}{:>12}{:>12}", "", "p50 (µs)", "p90 (µs)");
    println!(
        "{:<28}{:>12}{:>12}",
        "plain tool call",
        us(p50),
        us(percentile(&plain, 0.9))
    );
    println!(
        "{:<28}{:>12}{:>12}",
        "blocking sub-agent call",
        us(s50),
        us(percentile(&sub, 0.9))
    );
    let ratio = s50.as_secs_f64() / p50.as_secs_f64();
    println!(
        "sub-agent / plain (p50): {:.2}x; extra per call: {} µs",
        ratio,
        us(s50.saturating_sub(p50))
    );
    println!(
        "{}",
        json!({
            "plain_p50_us": us(p50),
            "sub_agent_p50_us": us(s50),
            "ratio_p50": round3(ratio),
            "extra_p50_us": us(s50.saturating_sub(p50)),
            "runs": runs,
        })
    );
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}
