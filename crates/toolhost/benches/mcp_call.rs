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
//! - **served over HTTP**: the same through `/mcp` of a `toolhost serve` on loopback (bearer
//!   token, streamable HTTP), the client's requests carried by toolhost's own HTTP client.
//! - **imported over stdio / HTTP**: a second project imports that `toolhost mcp` (or the `/mcp`
//!   of that server) as its MCP server and calls `serving.think` as a direct call of its own:
//!   two journaled calls (the importing thread's and the serving one's) plus the protocol, so
//!   compare it with twice the direct one.
//!
//! - **growth**: for the two series on one thread (direct, and served over stdio), the p50 of
//!   the last tenth of the calls over that of the first tenth: how a call's cost grows with
//!   the thread it is added to (1.0 when it does not; run with 1,000 calls to compare calls
//!   1-100 with calls 901-1,000).
//!
//! Data folders are on disk under `TOOLHOST_BENCH_DIR` (default the target folder's `tmp/`).
//! Knob: `TOOLHOST_BENCH_RUNS` (300 calls of each, interleaved). Output: a table on stdout, then
//! one JSON line starting with `{"direct_p50_us":`.

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_mcp_client::http::FetcherClient;
use toolhost_providers::fetch::{Fetcher, HttpFetcher};
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

/// The HTTP client toolhost uses (the environment's proxies apply; loopback is not proxied).
fn http_client() -> Arc<dyn Fetcher> {
    let network = toolhost_providers::Network::from_env().unwrap();
    Arc::new(HttpFetcher::new(&network, Duration::from_secs(60), 16 * 1024 * 1024).unwrap())
}

/// `toolhost serve` of `project` with `/mcp` serving agent `main` on a free loopback port, and a
/// token that may run it; killed when the bench ends.
fn serve_over_http(
    toolhost: &str,
    project: &Path,
    data: &Path,
) -> (std::process::Child, String, String) {
    let made = std::process::Command::new(toolhost)
        .args([
            "tokens", "create", "bench", "--scope", "run", "--json", "--data",
        ])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let made: Value = serde_json::from_slice(&made.stdout).unwrap();
    let token = made["token"].as_str().unwrap().to_owned();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(toolhost)
        .arg("serve")
        .arg(project)
        .arg("--data")
        .arg(data)
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--mcp-agent",
            "main",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "toolhost serve did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, format!("http://127.0.0.1:{port}/mcp"), token)
}

/// One call of `think` by an MCP client; its time.
async fn call_think(client: &RunningService<RoleClient, ()>) -> Duration {
    let args: serde_json::Map<String, Value> =
        serde_json::from_value(json!({"thought": "x"})).unwrap();
    let started = Instant::now();
    let result = client
        .call_tool(CallToolRequestParams::new("think").with_arguments(args))
        .await
        .unwrap();
    let took = started.elapsed();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    took
}

fn main() {
    let runs = knob("TOOLHOST_BENCH_RUNS", 300).max(5);
    let base = std::env::var_os("TOOLHOST_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    let dir = base.join(format!("mcp-call-{}", std::process::id()));
    let serving = dir.join("serving");
    let (importing, importing_http) = (dir.join("importing"), dir.join("importing-http"));
    write_project(&serving, "think");
    write_project(&importing, "serving.think");
    write_project(&importing_http, "serving.think");
    let toolhost = env!("CARGO_BIN_EXE_toolhost");
    write(
        &importing,
        "agents/mcp/serving.json",
        &json!({"command": [toolhost, "mcp", serving, "--agent", "main",
            "--data", dir.join("data-imported")], "trusted": true})
        .to_string(),
    );
    let (mut server, url, token) = serve_over_http(toolhost, &serving, &dir.join("data-http"));
    write(
        &importing_http,
        "agents/mcp/serving.json",
        &json!({"url": url, "headers": {"Authorization": format!("Bearer {token}")}, "trusted": true})
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
    let direct = exec
        .block_on(Runtime::load(&serving, store("data-direct")))
        .unwrap();
    let factory = &toolhost_providers::model_from_env;
    let mut imported = exec
        .block_on(Runtime::load(&importing, store("data-importing")))
        .unwrap();
    let mut imported_http = exec
        .block_on(Runtime::load_networked(
            &importing_http,
            store("data-importing-http"),
            factory,
            http_client(),
            None,
        ))
        .unwrap();
    for rt in [&mut imported, &mut imported_http] {
        rt.set_approval_handler(Arc::new(Approve));
        assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    }

    let mut series: [Vec<Duration>; 6] = Default::default();
    let mut session_thread = None;
    exec.block_on(async {
        let mut command = tokio::process::Command::new(toolhost);
        command
            .arg("mcp")
            .arg(&serving)
            .args(["--agent", "main", "--data"])
            .arg(dir.join("data-served"));
        let over_stdio = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(token);
        let transport =
            StreamableHttpClientTransport::with_client(FetcherClient::new(http_client()), config);
        let over_http = ().serve(transport).await.unwrap();
        // Warm-up, then interleaved so all of them see the same moments of the disk.
        direct_call(&direct, "think").await;
        session_call(&direct, &mut session_thread).await;
        call_think(&over_stdio).await;
        call_think(&over_http).await;
        direct_call(&imported, "serving.think").await;
        direct_call(&imported_http, "serving.think").await;
        for _ in 0..runs {
            series[0].push(direct_call(&direct, "think").await);
            series[1].push(session_call(&direct, &mut session_thread).await);
            series[2].push(call_think(&over_stdio).await);
            series[3].push(call_think(&over_http).await);
            series[4].push(direct_call(&imported, "serving.think").await);
            series[5].push(direct_call(&imported_http, "serving.think").await);
        }
        let _ = over_stdio.cancel().await;
        let _ = over_http.cancel().await;
    });
    // Calls in the order they were made, first tenth against last tenth.
    let growth = |calls: &[Duration]| {
        let tenth = (calls.len() / 10).max(1);
        let mut first = calls[..tenth].to_vec();
        let mut last = calls[calls.len() - tenth..].to_vec();
        first.sort();
        last.sort();
        (percentile(&first, 0.5), percentile(&last, 0.5))
    };
    let (session_first, session_last) = growth(&series[1]);
    let (stdio_first, stdio_last) = growth(&series[2]);
    for v in &mut series {
        v.sort();
    }
    let p50 = |v: &[Duration]| percentile(v, 0.5);
    let names = [
        "direct (a thread each)",
        "direct, one thread",
        "served by toolhost mcp (stdio)",
        "served at /mcp (HTTP)",
        "imported from toolhost mcp",
        "imported from /mcp",
    ];
    println!("{runs} calls of each, on SQLite under {}", dir.display());
    println!("{:<34}{:>12}{:>12}", "", "p50 (µs)", "p90 (µs)");
    for (name, v) in names.iter().zip(&series) {
        println!("{name:<34}{:>12}{:>12}", us(p50(v)), us(percentile(v, 0.9)));
    }
    let ratio =
        |a: Duration, b: Duration| (a.as_secs_f64() / b.as_secs_f64() * 1000.0).round() / 1000.0;
    let [plain, session, stdio, http, via_stdio, via_http] = series.each_ref().map(|v| p50(v));
    println!(
        "served / direct on one thread (p50): stdio {:.2}x, HTTP {:.2}x; imported / (2 x direct): stdio {:.2}x, HTTP {:.2}x",
        ratio(stdio, session),
        ratio(http, session),
        ratio(via_stdio, plain * 2),
        ratio(via_http, plain * 2)
    );
    println!(
        "growth on one thread (p50 of the last tenth of the calls / the first tenth): direct {:.0} / {:.0} µs = {:.2}x, served over stdio {:.0} / {:.0} µs = {:.2}x",
        us(session_last),
        us(session_first),
        ratio(session_last, session_first),
        us(stdio_last),
        us(stdio_first),
        ratio(stdio_last, stdio_first)
    );
    println!(
        "{}",
        json!({
            "direct_one_thread_growth": ratio(session_last, session_first),
            "served_stdio_growth": ratio(stdio_last, stdio_first),
            "direct_p50_us": us(plain),
            "direct_one_thread_p50_us": us(session),
            "served_stdio_p50_us": us(stdio),
            "served_http_p50_us": us(http),
            "imported_stdio_p50_us": us(via_stdio),
            "imported_http_p50_us": us(via_http),
            "served_stdio_over_direct_one_thread": ratio(stdio, session),
            "served_http_over_direct_one_thread": ratio(http, session),
            "imported_stdio_over_two_direct": ratio(via_stdio, plain * 2),
            "imported_http_over_two_direct": ratio(via_http, plain * 2),
            "runs": runs,
        })
    );
    drop(direct);
    drop(imported);
    drop(imported_http);
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
