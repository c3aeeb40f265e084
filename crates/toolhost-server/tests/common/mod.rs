//! A real server on loopback over the example project and a fresh SQLite file, and a real
//! HTTP/1 client that can send any bytes and read event streams as they arrive.

#![allow(dead_code)]

mod ports;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
#[allow(unused_imports)] // not every test file starts a program on a port
pub use ports::free_port;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolhost_runtime::engine::Runtime;
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_server::auth::{mint, Scope};
use toolhost_server::{Server, ServerConfig};
use toolhost_store::{Millis, SqliteStore, Store};

/// How long a test waits for an answer, an event or a socket before it fails instead of
/// hanging: a hang must fail the test, not stall CI until it is cut. Far beyond what anything
/// takes on a slow machine, so it never fails a test that works.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(600);

/// Awaits `wait`, failing the test with a message naming `what` it waited for when it has not
/// ended after [`GIVE_UP_AFTER`].
pub async fn within<T>(what: &str, wait: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GIVE_UP_AFTER, wait)
        .await
        .unwrap_or_else(|_| panic!("{what} did not come within {GIVE_UP_AFTER:?}"))
}

/// The example project of the repository.
pub fn quickstart() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../examples/quickstart")
}

/// The example project the MCP conformance suite's scenarios call.
pub fn mcp_example() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../examples/mcp-conformance")
}

/// A copy of the MCP example in a new folder, for a test that changes its files.
pub fn mcp_example_copy() -> PathBuf {
    let root = temp_dir();
    copy_folder(&mcp_example(), &root);
    root
}

/// Copies the folder `from` into `to`, whole.
pub fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs the official SDK's Python client `script` (under `tests/mcp/`) with `args`; what it
/// printed, as JSON. `./scripts/test` installs the SDK and names its Python in
/// `TOOLHOST_TEST_PYTHON`; without it this fails and says so, it never skips.
pub async fn python_client(script: &str, args: &[&str]) -> Value {
    let python = std::env::var("TOOLHOST_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLHOST_TEST_PYTHON does not name a Python with the mcp package: run the tests with ./scripts/test, which installs it")
    });
    let script = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("tests/mcp")
        .join(script);
    // Killed when the wait is given up (the future dropped).
    let out = within(
        &format!("the end of the Python client {}", script.display()),
        tokio::process::Command::new(python)
            .arg(script)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

pub fn temp_dir() -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "toolhost-server-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub store: Arc<dyn Store>,
    pub data: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// Serves `project` on a fresh data folder.
    pub async fn start_on(project: &Path) -> Self {
        Self::start_with(project, |_| {}).await
    }

    /// Serves `project` with the test configuration changed by `change`.
    pub async fn start_with(project: &Path, change: impl FnOnce(&mut ServerConfig)) -> Self {
        Self::serve(project, temp_dir(), change).await
    }

    /// Serves `project` with the configuration changed by `change`, which is told the address
    /// the server will listen at (for settings that name the server's own URL).
    pub async fn start_at(
        project: &Path,
        change: impl FnOnce(&mut ServerConfig, SocketAddr),
    ) -> Self {
        Self::serve_with(project, temp_dir(), change, false).await
    }

    /// Serves `project` on the data folder `data` (kept from an earlier server).
    pub async fn restart(project: &Path, data: PathBuf) -> Self {
        Self::serve(project, data, |_| {}).await
    }

    /// Serves `project` with the test configuration changed by `change`, loading the project
    /// again when its files change (looked at every 100 ms).
    pub async fn start_watching(project: &Path, change: impl FnOnce(&mut ServerConfig)) -> Self {
        Self::serve_with(project, temp_dir(), |c, _| change(c), true).await
    }

    async fn serve(project: &Path, data: PathBuf, change: impl FnOnce(&mut ServerConfig)) -> Self {
        Self::serve_with(project, data, |c, _| change(c), false).await
    }

    async fn serve_with(
        project: &Path,
        data: PathBuf,
        change: impl FnOnce(&mut ServerConfig, SocketAddr),
        watching: bool,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&data.join("toolhost.db")).unwrap());
        // Models as the binary builds them, so an HTTP model on loopback works as a real one.
        let load = {
            let (project, store, data) = (project.to_owned(), store.clone(), data.clone());
            move || {
                let (project, store, data) = (project.clone(), store.clone(), data.clone());
                async move {
                    let mut runtime =
                        Runtime::load_with(&project, store, &toolhost_providers::model_from_env)
                            .await
                            .ok()?;
                    runtime.set_secret_key(SecretKey::load_or_create(&data).unwrap());
                    Some(runtime)
                }
            }
        };
        let runtime = load().await.unwrap();
        let mut config = ServerConfig {
            poll_interval: Duration::from_millis(50),
            max_body_bytes: 64 * 1024,
            ..ServerConfig::default()
        };
        change(&mut config, addr);
        let server = Server::new(Arc::new(runtime), config);
        if watching {
            server.reload_on_change(project.to_owned(), Duration::from_millis(100), load);
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(server.run(listener, async {
            let _ = stopped.await;
        }));
        Self {
            addr,
            store,
            data,
            stop: Some(stop),
            served: Some(served),
        }
    }

    pub async fn start() -> Self {
        Self::start_on(&quickstart()).await
    }

    /// A new token with `scopes`, limited to `agents` when given.
    pub fn token(&self, scopes: &[Scope], agents: Option<Vec<&str>>) -> String {
        let minted = mint(
            "test",
            scopes,
            agents.map(|a| a.into_iter().map(String::from).collect()),
            None,
        )
        .unwrap();
        self.store.create_token(&minted.record).unwrap();
        minted.token
    }

    /// A new token with `scopes` that expires at `expires_at`, which may be past already:
    /// stored as it is, so no test waits for a token to expire.
    pub fn token_expiring_at(&self, scopes: &[Scope], expires_at: Millis) -> String {
        let mut minted = mint("expiring", scopes, None, None).unwrap();
        minted.record.expires_at = Some(expires_at);
        self.store.create_token(&minted.record).unwrap();
        minted.token
    }

    pub fn admin(&self) -> String {
        self.token(&[Scope::Admin], None)
    }

    async fn connect(&self) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
        let stream = within("a connection to the server", TcpStream::connect(self.addr))
            .await
            .unwrap();
        let (sender, connection) = within(
            "an HTTP/1 handshake with the server",
            hyper::client::conn::http1::handshake(TokioIo::new(stream)),
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        sender
    }

    fn build(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Request<Full<Bytes>> {
        let mut request = Request::builder().method(method).uri(path);
        // The server's own address, unless the test names another host.
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            request = request.header("host", self.addr.to_string());
        }
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(Full::new(Bytes::from(body))).unwrap()
    }

    /// Sends a request with raw body bytes and reads the whole answer.
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Answer {
        let (status, headers, bytes) = self.exchange(method, path, token, headers, body).await;
        let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
        let content_type = header("content-type").unwrap_or_default();
        let allow_origin = header("access-control-allow-origin");
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            content_type,
            allow_origin,
            text: String::from_utf8_lossy(&bytes).into_owned(),
            json,
        }
    }

    /// Sends a request on a connection of its own and reads the answer's status, headers and
    /// whole body as bytes.
    pub async fn exchange(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, hyper::HeaderMap, Bytes) {
        let mut sender = self.connect().await;
        let response = within(
            &format!("the head of the answer to {method} {path}"),
            sender.send_request(self.build(method, path, token, headers, body)),
        )
        .await
        .unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = within(
            &format!("the whole body of the answer to {method} {path}"),
            response.into_body().collect(),
        )
        .await
        .unwrap()
        .to_bytes();
        (status, headers, bytes)
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.raw("GET", path, token, &[], Vec::new()).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Answer {
        self.raw(
            "POST",
            path,
            token,
            &[("content-type", "application/json")],
            body.to_string().into_bytes(),
        )
        .await
    }

    /// Opens the stream of every thread the token may reach.
    pub async fn events_all(&self, token: &str, last_id: Option<&str>) -> EventStream {
        self.stream("/v1/events", token, last_id).await
    }

    /// Opens a thread's event stream.
    pub async fn events(&self, thread: &str, token: &str, last_id: Option<&str>) -> EventStream {
        self.stream(&format!("/v1/threads/{thread}/events"), token, last_id)
            .await
    }

    async fn stream(&self, path: &str, token: &str, last_id: Option<&str>) -> EventStream {
        let mut sender = self.connect().await;
        let mut headers = vec![("accept", "text/event-stream")];
        if let Some(id) = last_id {
            headers.push(("last-event-id", id));
        }
        let response = within(
            &format!("the head of the event stream {path}"),
            sender.send_request(self.build("GET", path, Some(token), &headers, Vec::new())),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), 200);
        EventStream {
            body: response.into_body(),
            buffer: String::new(),
            _sender: sender,
        }
    }

    /// Creates a thread and returns its id.
    pub async fn create(&self, token: &str, body: Value) -> String {
        let answer = self.post("/v1/threads", Some(token), &body).await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        answer.json["thread"]["id"].as_str().unwrap().to_owned()
    }

    /// Stops the server gracefully and waits until it has (failing the test if it has not
    /// after [`GIVE_UP_AFTER`]).
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        let _ = self.stop.take().unwrap().send(());
        within(
            "the end of a graceful shutdown",
            self.served.take().unwrap(),
        )
        .await
        .unwrap()
    }

    /// Stops the server like [`TestServer::shutdown`] and keeps its data folder for another.
    pub async fn shutdown_keeping_data(mut self) -> PathBuf {
        let data = std::mem::take(&mut self.data);
        self.shutdown().await.expect("a clean shutdown");
        data
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if !self.data.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.data);
        }
    }
}

#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub content_type: String,
    pub allow_origin: Option<String>,
    pub text: String,
    pub json: Value,
}

impl Answer {
    /// The value of the header `name`, as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts a problem+json answer with `status`, and returns its detail.
    pub fn problem(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(
            self.content_type, "application/problem+json",
            "{}",
            self.text
        );
        assert_eq!(self.json["status"], status);
        assert!(self.json["type"]
            .as_str()
            .unwrap()
            .starts_with("urn:toolhost:problem:"));
        self.json["detail"].as_str().unwrap().to_owned()
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct Sse {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

pub struct EventStream {
    body: hyper::body::Incoming,
    buffer: String,
    _sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

impl EventStream {
    /// The next event (comments skipped); `None` when the stream ends.
    pub async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = Sse {
                    event: "message".into(),
                    id: None,
                    data: Value::Null,
                };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        event.event = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("id: ") {
                        event.id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                event.data = serde_json::from_str(&data).unwrap();
                return Some(event);
            }
            let frame = self.body.frame().await?.ok()?;
            if let Some(bytes) = frame.data_ref() {
                self.buffer.push_str(std::str::from_utf8(bytes).unwrap());
            }
        }
    }

    /// [`EventStream::next`], failing the test with a message naming `what` it waited for when
    /// neither an event nor the stream's end came after [`GIVE_UP_AFTER`].
    pub async fn next_within(&mut self, what: &str) -> Option<Sse> {
        within(what, self.next()).await
    }

    /// Events until a `run_ended` whose status is `status` arrives (it included).
    pub async fn until_ended(&mut self, status: &str, patience: Duration) -> Vec<Sse> {
        let mut seen = Vec::new();
        loop {
            let more = self.until("run_ended", patience).await;
            let done = more.last().unwrap().data["status"] == status;
            seen.extend(more);
            if done {
                return seen;
            }
        }
    }

    /// Events until one named `event` arrives (it included). Gives up after `patience`: a guard
    /// against a hang, not a measure of speed.
    pub async fn until(&mut self, event: &str, patience: Duration) -> Vec<Sse> {
        let mut seen = Vec::new();
        let found = tokio::time::timeout(patience, async {
            while let Some(e) = self.next().await {
                let done = e.event == event;
                seen.push(e);
                if done {
                    return true;
                }
            }
            false
        })
        .await;
        assert!(
            matches!(found, Ok(true)),
            "no {event} event came; saw {seen:#?}"
        );
        seen
    }
}

/// Writes a project of `files` (path, text) into a new temporary folder.
pub fn write_project(files: &[(&str, &str)]) -> PathBuf {
    let root = temp_dir();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

/// An `ai_human` agent `echo` whose scripted model answers each message with one text turn.
pub fn echo_project(script: &str) -> PathBuf {
    write_project(&[
        (
            "agents/agents/echo.json",
            r#"{"type": "ai_human", "sideA": {"label": "echo", "prompt": "echo", "stopOnResponse": true}}"#,
        ),
        (
            "agents/prompts/echo.json",
            r#"{"toolDescription": "Echoes.", "prompt": "You echo.", "model": "echo_test", "tools": [], "includeChat": true}"#,
        ),
        (
            "agents/models/echo_test.json",
            r#"{"provider": "test", "script": "scripts/echo.jsonl"}"#,
        ),
        ("scripts/echo.jsonl", script),
    ])
}

/// An `ai_human` agent `slow` whose scripted model calls `nap` once, then answers "rested";
/// `nap` runs the shell command `nap` in the project folder, which prints the call's result.
pub fn napping_project(nap: &str) -> PathBuf {
    let activity = serde_json::json!({
        "command": ["sh", "-c", nap],
        "timeoutMs": 600_000,
        "env": ["PATH"],
    })
    .to_string();
    write_project(&[
        (
            "agents/agents/slow.json",
            r#"{"type": "ai_human", "sideA": {"label": "slow", "prompt": "slow", "stopOnResponse": true}}"#,
        ),
        (
            "agents/prompts/slow.json",
            r#"{"toolDescription": "Slow.", "prompt": "You wait.", "model": "slow_test", "tools": ["nap"]}"#,
        ),
        (
            "agents/models/slow_test.json",
            r#"{"provider": "test", "script": "scripts/slow.jsonl"}"#,
        ),
        (
            "scripts/slow.jsonl",
            "{\"toolCalls\": [{\"name\": \"nap\", \"arguments\": {}}]}\n{\"text\": \"rested\"}\n",
        ),
        (
            "agents/tools/nap.json",
            r#"{"type": "object", "description": "Naps a moment.", "properties": {"_activity": {"type": "string", "const": "nap"}}, "additionalProperties": false}"#,
        ),
        ("agents/activities/nap.json", &activity),
    ])
}

/// An `ai_human` agent `main` offering `notes.add`, a tool of the MCP server `notes` (the
/// official Python SDK's server of toolhost's own tests, trusted), whose scripted model calls it
/// in each of three turns (1+1, 2+2, 3+3). `./scripts/test` names the Python with the SDK in
/// `TOOLHOST_TEST_PYTHON`; without it this fails and says so, it never skips.
pub fn notes_project() -> PathBuf {
    let python = std::env::var("TOOLHOST_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLHOST_TEST_PYTHON does not name a Python with the mcp package: run the tests with ./scripts/test, which installs it")
    });
    let server = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../toolhost/tests/mcp/notes_server.py");
    let mcp = json!({"command": [python, server], "trusted": true}).to_string();
    write_project(&[
        ("agents/mcp/notes.json", &mcp),
        (
            "agents/agents/main.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "main", "stopOnResponse": true}}"#,
        ),
        (
            "agents/prompts/main.json",
            r#"{"toolDescription": "x", "prompt": "Add.", "model": "m", "includeChat": true,
                "includePastTools": true, "tools": ["notes.add"]}"#,
        ),
        ("agents/models/m.json", r#"{"provider": "test", "script": "m.jsonl"}"#),
        (
            "m.jsonl",
            "{\"toolCalls\": [{\"name\": \"notes.add\", \"arguments\": {\"a\": 1, \"b\": 1}}]}\n{\"text\": \"2.\"}\n\
             {\"toolCalls\": [{\"name\": \"notes.add\", \"arguments\": {\"a\": 2, \"b\": 2}}]}\n{\"text\": \"refused\"}\n\
             {\"toolCalls\": [{\"name\": \"notes.add\", \"arguments\": {\"a\": 3, \"b\": 3}}]}\n{\"text\": \"6.\"}\n",
        ),
    ])
}

/// One stateless (2026-07-28) request to `/mcp` about `name` (its `Mcp-Name`), with
/// `extra_headers`: its JSON-RPC answer.
pub async fn mcp_request(
    server: &TestServer,
    token: &str,
    extra_headers: &[(&str, &str)],
    method: &str,
    name: &str,
    params: Value,
) -> Value {
    let mut params = params;
    // A request that brings its own `_meta` (other capabilities) keeps it.
    if params.get("_meta").is_none() {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name),
    ];
    headers.extend_from_slice(extra_headers);
    let answer = server
        .raw(
            "POST",
            "/mcp",
            Some(token),
            &headers,
            body.to_string().into_bytes(),
        )
        .await;
    let text = answer.text.trim();
    // An SSE answer carries the JSON in its `data:` line.
    let json_text = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("data:")
                .map(str::trim)
                .filter(|d| d.starts_with('{'))
        })
        .unwrap_or(text);
    serde_json::from_str(json_text).unwrap_or_else(|e| panic!("{e}: {}", answer.text))
}
