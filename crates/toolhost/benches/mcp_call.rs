//! What MCP adds to a tool call, both ways: a plain program (`harness = false`) timing whole
//! calls of the built-in `think` tool.
//!
//! Run: `cargo bench -p toolhost --bench mcp_call`.
//!
//! - **direct**: the call as `/mcp` and the HTTP API make it: a scratch thread holding one call,
//!   run by the runtime (validated, journaled, result stored) on SQLite on disk.
//! - **direct, one thread**: the same calls added one after another to one scratch thread, as
//!   an MCP session's calls are (the thread grows by two messages a call).
//! - **served over stdio**: an MCP client (the official Rust SDK) calls the tool through a
//!   `toolhost mcp` process over standard input and output: the direct calls on one thread
//!   plus the protocol, two pipes and JSON-RPC framing.
//! - **imported over stdio**: a second project imports that `toolhost mcp` as its MCP server
//!   and calls `serving.think` as a direct call of its own: two journaled calls (the importing
//!   thread's and the serving one's) plus the protocol, so compare it with twice the direct one.
//!
//! Data folders are on disk under `TOOLHOST_BENCH_DIR` (default the target folder's `tmp/`).
//! Knob: `TOOLHOST_BENCH_RUNS` (300 calls of each, interleaved). Output: a table on stdout, then
//! one JSON line starting with `{"direct_p50_us":`. Over HTTP is not measured here.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_runtime::engine::{
    ApprovalHandler, RunOutcome, Runtime, ScratchCall, StopReason, Verdict, VerdictFuture,
};
use toolhost_store::{ApprovalRequest, SqliteStore, Store};

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name} must be a whole number, not {v:?}"))
        })
        .unwrap_or(default)
}

fn write(root: &Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project whose agent `main` offers `tool` (its model is never asked: calls are direct).
fn write_project(root: &Path, tool: &str) {
    write(
        root,
        "agents/agents/main.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "main"}}"#,
    );
    write(
        root,
        "agents/prompts/main.json",
        &json!({"toolDescription": "x", "prompt": "Think.", "model": "scripted", "tools": [tool]})
            .to_string(),
    );
    write(
        root,
        "agents/models/scripted.json",
        r#"{"provider": "test", "script": "script.json"}"#,
    );
    write(root, "script.json", r#"[{"text": "done"}]"#);
}

/// Approves every call: the imported tool is an MCP server's, which needs approval.
struct Approve;

impl ApprovalHandler for Approve {
    fn decide<'a>(&'a self, _thread: &'a str, _request: &'a ApprovalRequest) -> VerdictFuture<'a> {
        Box::pin(async { Some(Verdict::approve("bench")) })
    }
}

async fn direct_call(rt: &Runtime, tool: &str) -> Duration {
    let started = Instant::now();
    let ScratchCall { thread, .. } = rt
        .start_scratch_call("main", tool, r#"{"thought": "x"}"#, Vec::new())
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    let took = started.elapsed();
    assert!(
        matches!(outcome, RunOutcome::Done(StopReason::MaxSteps(_))),
        "{outcome:?}"
    );
    took
}

/// One more call on the scratch thread `thread` (the first call makes it).
async fn session_call(rt: &Runtime, thread: &mut Option<String>) -> Duration {
    let started = Instant::now();
    let call = match thread.as_deref() {
        Some(id) => {
            rt.add_scratch_call(id, "think", r#"{"thought": "x"}"#)
                .await
        }
        None => {
            rt.start_scratch_call("main", "think", r#"{"thought": "x"}"#, Vec::new())
                .await
        }
    }
    .unwrap();
    rt.run(&call.thread.id).await.unwrap();
    *thread = Some(call.thread.id);
    started.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn us(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e7).round() / 10.0
}

fn main() {
    let runs = knob("TOOLHOST_BENCH_RUNS", 300).max(5);
    let base = std::env::var_os("TOOLHOST_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let dir = base.join(format!("mcp-call-{}", std::process::id()));
    let (serving, importing) = (dir.join("serving"), dir.join("importing"));
    write_project(&serving, "think");
    write_project(&importing, "serving.think");
    let toolhost = env!("CARGO_BIN_EXE_toolhost");
    write(
        &importing,
        "agents/mcp/serving.json",
        &json!({"command": [toolhost, "mcp", serving, "--agent", "main",
            "--data", dir.join("data-imported")], "trusted": true})
        .to_string(),
    );

    let exec = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let store = |name: &str| -> Arc<dyn Store> {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        Arc::new(SqliteStore::open(&dir.join(name).join("toolhost.db")).unwrap())
    };
    let direct = Runtime::load(&serving, store("data-direct")).unwrap();
    let mut imported = Runtime::load(&importing, store("data-importing")).unwrap();
    imported.set_approval_handler(Arc::new(Approve));
    assert!(imported.problems().is_empty(), "{:?}", imported.problems());

    let (mut plain, mut served, mut via) = (Vec::new(), Vec::new(), Vec::new());
    let mut session = Vec::new();
    let mut session_thread = None;
    exec.block_on(async {
        let mut command = tokio::process::Command::new(toolhost);
        command
            .arg("mcp")
            .arg(&serving)
            .args(["--agent", "main", "--data"])
            .arg(dir.join("data-served"));
        let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
        let args: serde_json::Map<String, Value> =
            serde_json::from_value(json!({"thought": "x"})).unwrap();
        let call_served = || async {
            let started = Instant::now();
            let result = client
                .call_tool(CallToolRequestParams::new("think").with_arguments(args.clone()))
                .await
                .unwrap();
            let took = started.elapsed();
            assert_ne!(result.is_error, Some(true), "{result:?}");
            took
        };
        // Warm-up, then interleaved so all three see the same moments of the disk.
        direct_call(&direct, "think").await;
        session_call(&direct, &mut session_thread).await;
        call_served().await;
        direct_call(&imported, "serving.think").await;
        for _ in 0..runs {
            plain.push(direct_call(&direct, "think").await);
            session.push(session_call(&direct, &mut session_thread).await);
            served.push(call_served().await);
            via.push(direct_call(&imported, "serving.think").await);
        }
        let _ = client.cancel().await;
    });
    for v in [&mut plain, &mut session, &mut served, &mut via] {
        v.sort();
    }
    let p50 = |v: &[Duration]| percentile(v, 0.5);
    println!("{runs} calls of each, on SQLite under {}", dir.display());
    println!("{:<34}{:>12}{:>12}", "", "p50 (µs)", "p90 (µs)");
    for (name, v) in [
        ("direct (a thread each)", &plain),
        ("direct, one thread", &session),
        ("served by toolhost mcp (stdio)", &served),
        ("imported from toolhost mcp", &via),
    ] {
        println!("{name:<34}{:>12}{:>12}", us(p50(v)), us(percentile(v, 0.9)));
    }
    let ratio =
        |a: Duration, b: Duration| (a.as_secs_f64() / b.as_secs_f64() * 1000.0).round() / 1000.0;
    println!(
        "served / direct on one thread (p50): {:.2}x; imported / (2 x direct): {:.2}x",
        ratio(p50(&served), p50(&session)),
        ratio(p50(&via), p50(&plain) * 2)
    );
    println!(
        "{}",
        json!({
            "direct_p50_us": us(p50(&plain)),
            "direct_one_thread_p50_us": us(p50(&session)),
            "served_stdio_p50_us": us(p50(&served)),
            "imported_stdio_p50_us": us(p50(&via)),
            "served_over_direct_one_thread": ratio(p50(&served), p50(&session)),
            "imported_over_two_direct": ratio(p50(&via), p50(&plain) * 2),
            "runs": runs,
        })
    );
    drop(direct);
    drop(imported);
    let _ = std::fs::remove_dir_all(&dir);
}
