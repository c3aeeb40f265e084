//! Load on `toolhost serve`'s API over loopback: a plain program (`harness = false`).
//!
//! Run: `cargo bench -p toolhost-server --bench load`.
//!
//! 1. **Conversations**: `TOOLHOST_LOAD_CLIENTS` (64) clients, each with its own keep-alive
//!    connection, for `TOOLHOST_LOAD_SECS` (60) seconds: create a thread (`POST /v1/threads`),
//!    follow its event stream until the run ends, send a second message, follow it to its end,
//!    and again. The agent's scripted model calls a trivial Rust tool, then answers, on a SQLite
//!    file (WAL, `synchronous=FULL`). The loop stops itself when the time is up; then every
//!    thread is checked: finished, every message stored once, nothing answered 5xx.
//!    Printed: requests per second, latency percentiles of the POSTs, and the time from a POST
//!    to the turn's answer on the event stream (p50, p99).
//! 2. **A trivial endpoint against bare axum**: the same clients hammer toolhost's `/health`
//!    and then a bare axum handler that answers the same JSON, each for `TOOLHOST_LOAD_PING_SECS`
//!    (10) seconds, in this process. Target: toolhost at least 0.8x the bare handler's requests
//!    per second.
//!
//! A turn's time is measured from its POST to its answer seen on the thread's event stream.
//!
//! Output: a table, then one JSON line starting with `{"load_rps":`.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::Runtime;
use toolhost_server::auth::{mint, Scope};
use toolhost_server::{Server, ServerConfig};
use toolhost_store::{SqliteStore, Store};

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A project whose agent calls `noop` once per message, then answers.
fn project(root: &std::path::Path) {
    let files = [
        (
            "agents/agents/load.json",
            r#"{"type": "ai_human", "sideA": {"label": "load", "prompt": "load", "stopOnResponse": true}}"#,
        ),
        (
            "agents/prompts/load.json",
            r#"{"toolDescription": "Load.", "prompt": "You answer.", "model": "load_test", "tools": ["noop"], "includeChat": true, "includePastTools": true}"#,
        ),
        (
            "agents/models/load_test.json",
            r#"{"provider": "test", "script": "scripts/load.json"}"#,
        ),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    // Turn n is the number of assistant messages sent: call, answer, call, answer, ...
    let turns: Vec<Value> = (0..400)
        .map(|i| {
            if i % 2 == 0 {
                json!({"toolCalls": [{"name": "noop", "arguments": {}}]})
            } else {
                json!({"text": "ok"})
            }
        })
        .collect();
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::write(
        root.join("scripts/load.json"),
        Value::Array(turns).to_string(),
    )
    .unwrap();
}

async fn connect(addr: SocketAddr) -> SendRequest<Full<Bytes>> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

fn request(method: &str, path: &str, token: &str, body: Option<Value>) -> Request<Full<Bytes>> {
    let mut r = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "bench")
        .header("authorization", format!("Bearer {token}"));
    if body.is_some() {
        r = r.header("content-type", "application/json");
    }
    r.body(Full::new(Bytes::from(
        body.map(|b| b.to_string()).unwrap_or_default(),
    )))
    .unwrap()
}

#[derive(Default)]
struct Tally {
    posts: Mutex<Vec<Duration>>,
    turns: Mutex<Vec<Duration>>,
    requests: AtomicU64,
    server_errors: AtomicU64,
    threads: Mutex<Vec<(String, Vec<String>)>>,
}

/// Follows a thread's event stream until its `answers`-th answer is stored (each turn ends on
/// the text answer "ok"). Stored messages come first on a new stream, so a turn that ended
/// before the stream opened is seen too.
async fn until_answered(addr: SocketAddr, token: &str, thread: &str, answers: usize) {
    let mut sender: SendRequest<Empty<Bytes>> = {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (s, c) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(c);
        s
    };
    let response = sender
        .send_request(
            Request::builder()
                .uri(format!("/v1/threads/{thread}/events"))
                .header("host", "bench")
                .header("authorization", format!("Bearer {token}"))
                .body(Empty::new())
                .unwrap(),
        )
        .await
        .unwrap();
    let mut body = response.into_body();
    let mut text = String::new();
    let mut seen = 0;
    loop {
        let frame = body.frame().await.unwrap().unwrap();
        if let Some(bytes) = frame.data_ref() {
            text.push_str(std::str::from_utf8(bytes).unwrap());
        }
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            if !block.starts_with("event: message") {
                continue;
            }
            let data = block
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap();
            let message: Value = serde_json::from_str(data).unwrap();
            if message["role"] == "assistant" && message["content"] == "ok" {
                seen += 1;
                if seen == answers {
                    return;
                }
            }
        }
    }
}

async fn client(addr: SocketAddr, token: String, until: Instant, n: usize, tally: Arc<Tally>) {
    let mut sender = connect(addr).await;
    let mut turn = 0;
    // Each thread takes two messages: a new one every other turn.
    let mut thread_id = String::new();
    while Instant::now() < until {
        let message = format!("client {n} turn {turn}");
        let started = Instant::now();
        let (path, body) = if turn % 2 == 0 {
            (
                "/v1/threads".to_owned(),
                json!({"agent": "load", "message": message}),
            )
        } else {
            (
                format!("/v1/threads/{thread_id}/messages"),
                json!({"message": message}),
            )
        };
        let r = sender
            .send_request(request("POST", &path, &token, Some(body)))
            .await
            .unwrap();
        let status = r.status().as_u16();
        let answer = r.into_body().collect().await.unwrap().to_bytes();
        tally.requests.fetch_add(1, Ordering::Relaxed);
        if status >= 500 {
            tally.server_errors.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        assert!(
            status < 300,
            "{status}: {}",
            String::from_utf8_lossy(&answer)
        );
        tally.posts.lock().unwrap().push(started.elapsed());
        if turn % 2 == 0 {
            let created: Value = serde_json::from_slice(&answer).unwrap();
            thread_id = created["thread"]["id"].as_str().unwrap().to_owned();
        }
        record(&tally, &thread_id, message);
        until_answered(addr, &token, &thread_id, turn % 2 + 1).await;
        tally.turns.lock().unwrap().push(started.elapsed());
        turn += 1;
    }
}

/// Notes that `message` was sent to `thread`.
fn record(tally: &Tally, thread: &str, message: String) {
    let mut threads = tally.threads.lock().unwrap();
    match threads.iter_mut().find(|(id, _)| id == thread) {
        Some(t) => t.1.push(message),
        None => threads.push((thread.to_owned(), vec![message])),
    }
}

fn pct(samples: &mut [Duration], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i].as_secs_f64() * 1e6
}

/// Requests per second of `GET path` from `clients` keep-alive connections for `secs`.
async fn hammer(addr: SocketAddr, path: &'static str, clients: usize, secs: u64) -> f64 {
    let count = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(secs);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let count = count.clone();
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(addr).await;
            while Instant::now() < until {
                let r = sender
                    .send_request(request("GET", path, "none", None))
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                let _ = r.into_body().collect().await.unwrap();
                count.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    count.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

async fn bare_axum() -> SocketAddr {
    async fn health() -> axum::Json<Value> {
        axum::Json(json!({"status": "ok"}))
    }
    let app = axum::Router::new().route("/health", axum::routing::get(health));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn main() {
    let clients = knob("TOOLHOST_LOAD_CLIENTS", 64) as usize;
    let secs = knob("TOOLHOST_LOAD_SECS", 60);
    let ping_secs = knob("TOOLHOST_LOAD_PING_SECS", 10);
    let root: PathBuf = std::env::temp_dir().join(format!("toolhost-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    project(&root);
    let threads = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    threads.block_on(async {
        std::fs::create_dir_all(root.join("data")).unwrap();
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(&root.join("data/toolhost.db")).unwrap());
        let mut runtime = Runtime::load(&root, store.clone()).await.unwrap();
        runtime.register_tool(
            DynamicTool::new("noop", "Does nothing.")
                .parameters(json!({"type": "object", "properties": {}}))
                .handler(|_: Value, _| async move { Ok::<_, ToolError>("done") })
                .build()
                .unwrap(),
        );
        let minted = mint("load", &[Scope::Admin], None, None).unwrap();
        store.create_token(&minted.record).unwrap();
        let token = minted.token;
        let server = Server::new(Arc::new(runtime), ServerConfig::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(server.run(listener, async {
            let _ = stopped.await;
        }));

        println!("load: toolhost-server on loopback, {clients} clients, {secs} s of conversations, {ping_secs} s per trivial endpoint");
        let tally = Arc::new(Tally::default());
        let until = Instant::now() + Duration::from_secs(secs);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for n in 0..clients {
            tasks.push(tokio::spawn(client(addr, token.clone(), until, n, tally.clone())));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let took = started.elapsed().as_secs_f64();

        // Every thread finished, every message stored once.
        let threads = tally.threads.lock().unwrap().clone();
        for (id, sent) in &threads {
            let thread = store.thread(id).unwrap();
            assert_eq!(thread.status.as_str(), "done", "thread {id}");
            let stored: Vec<String> = store
                .messages(id)
                .unwrap()
                .into_iter()
                .filter(|m| m.role == toolhost_store::Role::User)
                .filter_map(|m| m.content)
                .collect();
            assert_eq!(&stored, sent, "thread {id}: each message stored once, in order");
        }
        let requests = tally.requests.load(Ordering::Relaxed);
        let errors = tally.server_errors.load(Ordering::Relaxed);
        assert_eq!(errors, 0, "5xx answers");
        let mut posts = tally.posts.lock().unwrap().clone();
        let mut turns = tally.turns.lock().unwrap().clone();

        let health = hammer(addr, "/health", clients, ping_secs).await;
        let bare_addr = bare_axum().await;
        let bare = hammer(bare_addr, "/health", clients, ping_secs).await;
        let _ = stop.send(());
        served.await.unwrap().unwrap();

        let rps = requests as f64 / took;
        println!();
        println!("{:<52} {:>12}", "measure", "value");
        println!("{}", "-".repeat(66));
        println!("{:<52} {:>12}", "threads created and finished", threads.len());
        println!("{:<52} {:>12}", "POSTs (create thread or send message)", requests);
        println!("{:<52} {:>12.1}", "POSTs per second", rps);
        println!("{:<52} {:>12.0}", "POST latency p50 (us)", pct(&mut posts, 0.5));
        println!("{:<52} {:>12.0}", "POST latency p99 (us)", pct(&mut posts, 0.99));
        println!("{:<52} {:>12.0}", "POST to answer p50 (us): one tool-call turn", pct(&mut turns, 0.5));
        println!("{:<52} {:>12.0}", "POST to answer p99 (us)", pct(&mut turns, 0.99));
        println!("{:<52} {:>12}", "5xx answers", errors);
        println!("{:<52} {:>12.0}", "GET /health, toolhost (req/s)", health);
        println!("{:<52} {:>12.0}", "GET /health, bare axum handler (req/s)", bare);
        let ratio = health / bare;
        println!(
            "{:<52} {:>12.2}   target >= 0.8: {}",
            "toolhost / bare axum",
            ratio,
            if ratio >= 0.8 { "met" } else { "NOT met" }
        );
        println!(
            "{}",
            json!({
                "load_rps": rps,
                "threads": threads.len(),
                "posts": requests,
                "post_p50_us": pct(&mut posts, 0.5),
                "post_p99_us": pct(&mut posts, 0.99),
                "turn_p50_us": pct(&mut turns, 0.5),
                "turn_p99_us": pct(&mut turns, 0.99),
                "server_errors": errors,
                "health_rps": health,
                "bare_axum_rps": bare,
                "health_over_bare": ratio,
            })
        );
    });
    let _ = std::fs::remove_dir_all(&root);
}
