//! Helpers shared by the engine's behaviour tests: a throw-away project folder, a model that
//! answers from a list, and a one-agent project that runs on it.

#![allow(dead_code)]

pub mod subprompts;
pub mod traces;

use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::AnyTool;
use toolhost_providers::{
    ChatMessage, Model, ModelApi, ModelError, ModelErrorKind, ModelFuture, ModelRequest,
    ModelResponse, ModelToolCall,
};
use toolhost_runtime::engine::Runtime;
use toolhost_store::{SqliteStore, Store};

/// How long a test waits for something another task should do (a tool to start, a run to end)
/// before it fails instead of hanging: a hang must fail the test, not stall CI until it is cut.
/// Far beyond what anything takes on a slow machine, so it never fails a test that works.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(600);

/// Awaits `wait`, failing the test with a message saying that `what` never happened when it
/// has not ended after [`GIVE_UP_AFTER`].
pub async fn within<T>(what: &str, wait: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GIVE_UP_AFTER, wait)
        .await
        .unwrap_or_else(|_| panic!("{what} never happened within {GIVE_UP_AFTER:?}"))
}

/// A project folder under the system's temporary folder, removed when dropped.
pub struct Project {
    pub root: PathBuf,
}

impl Project {
    /// A project holding `files` (paths relative to its root) and an `agents/tools/` folder.
    pub fn with_files<T: AsRef<str>>(files: &[(&str, T)]) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "toolhost-engine-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("agents/tools")).unwrap();
        for (file, text) in files {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text.as_ref()).unwrap();
        }
        Self { root }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A model that answers from a list, in order, and keeps every request it was sent.
pub struct ListModel {
    answers: Vec<Result<ModelResponse, ModelError>>,
    seen: Mutex<Vec<Vec<ChatMessage>>>,
    whole: Mutex<Vec<ModelRequest>>,
}

impl ListModel {
    pub fn new(answers: Vec<Result<ModelResponse, ModelError>>) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            answers,
            seen: Mutex::new(Vec::new()),
            whole: Mutex::new(Vec::new()),
        })
    }

    /// The requests it was sent whole (tools and response format too), oldest first.
    pub fn whole_requests(&self) -> Vec<ModelRequest> {
        self.whole.lock().unwrap().clone()
    }

    /// The conversations it was sent, oldest first.
    pub fn requests(&self) -> Vec<Vec<ChatMessage>> {
        self.seen.lock().unwrap().clone()
    }
}

impl Model for ListModel {
    fn name(&self) -> &str {
        "list"
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        Box::pin(async move {
            self.whole.lock().unwrap().push(request.clone());
            let mut seen = self.seen.lock().unwrap();
            seen.push(request.messages.clone());
            self.answers
                .get(seen.len() - 1)
                .cloned()
                .unwrap_or_else(|| {
                    Err(ModelError::new(
                        ModelApi::Scripted,
                        ModelErrorKind::Script,
                        "no more answers",
                    ))
                })
        })
    }
}

/// A project with one `ai_human` agent `a` whose prompt `p` runs on the model `list`, offers
/// `tools` and declares the optional secret `TOKEN` (which the tests of redaction give a
/// thread).
pub fn one_prompt_project(tools: &[&str]) -> Project {
    let prompt = serde_json::json!({
        "toolDescription": "x", "prompt": "Be brief.", "model": "list", "tools": tools,
        "variables": [{"name": "TOKEN", "type": "secret", "required": false}]
    });
    Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#.to_owned(),
        ),
        ("agents/prompts/p.json", prompt.to_string()),
    ])
}

/// The project's runtime on a new SQLite file in it, with `model` registered as `list`.
pub async fn runtime_on(project: &Project, model: Arc<ListModel>) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    rt.register_model("list", model);
    (rt, store)
}

/// An answer that calls `tool` with `arguments` under the wire id `id`.
pub fn call_answer(id: &str, tool: &str, arguments: &str) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse {
        tool_calls: vec![ModelToolCall {
            id: id.to_owned(),
            name: tool.to_owned(),
            arguments: arguments.to_owned(),
        }],
        ..ModelResponse::default()
    })
}

/// An answer of text alone.
pub fn text_answer(text: &str) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse {
        text: Some(text.to_owned()),
        ..ModelResponse::default()
    })
}

/// A tool without parameters that answers `pong`.
pub fn ping_tool() -> AnyTool {
    DynamicTool::new("ping", "Pings.")
        .parameters(serde_json::json!({"type": "object", "properties": {}}))
        .handler(|_: serde_json::Value, _| async move { Ok::<_, ToolError>("pong".to_owned()) })
        .build()
        .unwrap()
}

/// A fixture of the providers crate, read where cargo runs this test from.
pub fn fixture(path: &str) -> String {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo");
    let path = PathBuf::from(dir)
        .join("../toolhost-providers/tests/fixtures")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Serves `(content type, body)` replies in order, one per connection, and keeps each request
/// body.
pub async fn replay_server(replies: Vec<(&'static str, String)>) -> (u16, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        for (content_type, body) in replies {
            let (mut socket, _) = listener.accept().await.unwrap();
            let request = read_body(&mut socket).await;
            log.lock()
                .unwrap()
                .push(serde_json::from_slice(&request).unwrap());
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await.unwrap();
            socket.write_all(body.as_bytes()).await.unwrap();
            socket.shutdown().await.ok();
        }
    });
    (port, seen)
}

/// The body of the HTTP request read from `socket`: as long as its head's content-length says,
/// or what came of it before the client closed the connection (nothing without a whole head),
/// so that a connection closed early ends the read instead of spinning on it.
pub async fn read_body(socket: &mut tokio::net::TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = socket.read(&mut chunk).await.unwrap();
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            if n == 0 {
                return Vec::new();
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        if buf.len() >= end + 4 + length {
            return buf[end + 4..end + 4 + length].to_vec();
        }
        if n == 0 {
            return buf[end + 4..].to_vec();
        }
    }
}

/// A project whose agent `a` (prompt `p`) offers `offered` and whose scripted model `m` calls
/// each of `calls` in turn, then says "done"; with `tools` (file name, source) under
/// agents/tools/ and `extra` files (path, text) anywhere.
pub fn one_agent_project(
    tools: &[(&str, &str)],
    extra: &[(&str, &str)],
    offered: &[&str],
    calls: &[Value],
) -> Project {
    let mut script: String = calls
        .iter()
        .map(|c| format!("{}\n", serde_json::json!({"toolCalls": [c]})))
        .collect();
    script.push_str("{\"text\": \"done\"}\n");
    let mut files: Vec<(String, String)> = vec![
        (
            "agents/agents/a.json".into(),
            serde_json::json!({"type": "ai_human", "sideA": {"prompt": "p"}}).to_string(),
        ),
        (
            "agents/prompts/p.json".into(),
            serde_json::json!({"toolDescription": "x", "prompt": "Work.", "model": "m",
                "tools": offered, "includeChat": true, "includePastTools": true})
            .to_string(),
        ),
        (
            "agents/models/m.json".into(),
            serde_json::json!({"provider": "test", "script": "m.jsonl"}).to_string(),
        ),
        ("m.jsonl".into(), script),
    ];
    files.extend(
        tools
            .iter()
            .map(|(f, t)| (format!("agents/tools/{f}"), (*t).to_owned())),
    );
    files.extend(
        extra
            .iter()
            .map(|(f, t)| ((*f).to_owned(), (*t).to_owned())),
    );
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    Project::with_files(&files)
}

/// The text of every tool result of `thread`, in order.
pub fn tool_texts(store: &Arc<dyn Store>, thread: &str) -> Vec<String> {
    store
        .messages(thread)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == toolhost_store::Role::Tool)
        .map(|m| m.content.unwrap_or_default())
        .collect()
}
