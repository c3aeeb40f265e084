//! A replay server on loopback: answers each request with the next scripted reply and records
//! what it was sent. Stands in for the vendors' clouds only.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolhost_core::tool::ExecutionMode;
use toolhost_core::ToolDefinition;
use toolhost_providers::{
    model_from_config, ChatMessage, ChatRole, HttpModel, Model, ModelConfig, ModelRequest,
    ModelResponse, ModelToolCall, RetryPolicy, StreamDelta,
};

/// The key every test model is given.
pub const KEY: &str = "sk-test-0123456789abcdefXYZ";

/// How a reply's body is written.
#[derive(Debug, Clone)]
pub enum Body {
    /// With a content length.
    Whole(Vec<u8>),
    /// Chunked, one write per piece, ended properly.
    Pieces(Vec<Vec<u8>>),
    /// Chunked, then the connection is closed before the last chunk: a cut stream.
    Cut(Vec<Vec<u8>>),
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Reply {
    /// A JSON reply.
    pub fn json(status: u16, body: &str) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Body::Whole(body.as_bytes().to_vec()),
        }
    }

    /// An event stream written in pieces of `size` bytes.
    pub fn sse(text: &str, size: usize) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: Body::Pieces(pieces(text.as_bytes(), size)),
        }
    }

    /// An event stream cut after `keep` bytes.
    pub fn cut_sse(text: &str, keep: usize) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: Body::Cut(pieces(&text.as_bytes()[..keep], 50)),
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

fn pieces(bytes: &[u8], size: usize) -> Vec<Vec<u8>> {
    bytes.chunks(size.max(1)).map(<[u8]>::to_vec).collect()
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// When the server had read it whole (before it answered).
    pub at: std::time::Instant,
}

impl Seen {
    /// A header's value (names compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The server.
pub struct ReplayServer {
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl ReplayServer {
    /// Listens on a free loopback port and plays `replies` in order (then answers 599).
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            let mut replies = replies.into_iter();
            while let Ok((stream, _)) = listener.accept().await {
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::json(599, "{\"error\":{\"message\":\"no more replies\"}}")
                });
                let log = log.clone();
                tokio::spawn(async move {
                    serve(stream, reply, log).await;
                });
            }
        });
        ReplayServer { base, seen }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

async fn serve(mut stream: TcpStream, reply: Reply, log: Arc<Mutex<Vec<Seen>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let first: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    log.lock().expect("lock").push(Seen {
        method: first.first().copied().unwrap_or_default().to_owned(),
        path: first.get(1).copied().unwrap_or_default().to_owned(),
        headers,
        body,
        at: std::time::Instant::now(),
    });
    let mut out = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", reply.status);
    for (n, v) in &reply.headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    match reply.body {
        Body::Whole(bytes) => {
            out.push_str(&format!("content-length: {}\r\n\r\n", bytes.len()));
            let _ = stream.write_all(out.as_bytes()).await;
            let _ = stream.write_all(&bytes).await;
        }
        Body::Pieces(pieces) => {
            out.push_str("transfer-encoding: chunked\r\n\r\n");
            let _ = stream.write_all(out.as_bytes()).await;
            for p in pieces {
                write_chunk(&mut stream, &p).await;
            }
            let _ = stream.write_all(b"0\r\n\r\n").await;
        }
        Body::Cut(pieces) => {
            out.push_str("transfer-encoding: chunked\r\n\r\n");
            let _ = stream.write_all(out.as_bytes()).await;
            for p in pieces {
                write_chunk(&mut stream, &p).await;
            }
        }
    }
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

async fn write_chunk(stream: &mut TcpStream, piece: &[u8]) {
    let _ = stream
        .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
        .await;
    let _ = stream.write_all(piece).await;
    let _ = stream.write_all(b"\r\n").await;
    let _ = stream.flush().await;
    tokio::time::sleep(Duration::from_micros(200)).await;
}

/// A fixture file's text.
pub fn fixture(path: &str) -> String {
    // The folder cargo runs the test from, so a binary reused from another checkout's build
    // cache still reads this checkout's fixtures.
    let crate_dir =
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into());
    let full = format!("{crate_dir}/tests/fixtures/{path}");
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// A definition for `provider` at the server, key from `TEST_KEY`, fast retries. `openai` is
/// OpenAI chat completions here (`api: "chat"`), and `responses` the Responses API (`openai`
/// with no `api`, its default).
pub fn config(provider: &str, server: &ReplayServer) -> ModelConfig {
    let mut c = match provider {
        "responses" => ModelConfig::new("openai", "test-model"),
        "openai" => {
            let mut c = ModelConfig::new("openai", "test-model");
            c.api = Some("chat".into());
            c
        }
        other => ModelConfig::new(other, "test-model"),
    };
    c.base_url = Some(server.base.clone());
    c.api_key_env = Some("TEST_KEY".into());
    c.retry = RetryPolicy {
        max_attempts: 3,
        initial_backoff_ms: 10,
        max_backoff_ms: 40,
        max_total_wait_ms: 5_000,
    };
    c
}

/// The environment the test models read.
pub fn env(name: &str) -> Option<String> {
    (name == "TEST_KEY").then(|| KEY.to_owned())
}

/// A model for `provider` at the server.
pub fn model(provider: &str, server: &ReplayServer) -> HttpModel {
    HttpModel::new(&config(provider, server), env).expect("model")
}

/// The same, as the runtime gets it.
pub fn dyn_model(
    provider: &str,
    server: &ReplayServer,
) -> std::sync::Arc<dyn toolhost_providers::Model> {
    model_from_config(&config(provider, server), env).expect("model")
}

/// A streamed answer from `model`, with the deltas it reported.
pub async fn streamed(
    model: &dyn Model,
    request: &ModelRequest,
) -> (ModelResponse, Vec<StreamDelta>) {
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let log = deltas.clone();
    let sink = move |d: StreamDelta| log.lock().expect("lock").push(d);
    let answer = model
        .complete_streaming(request, &sink)
        .await
        .expect("answer");
    let deltas = deltas.lock().expect("lock").clone();
    (answer, deltas)
}

/// A reply as the runtime gives it back in a later turn: its calls under ids of the runtime's
/// own, in the same order; its continuity unchanged; the message through a JSON round trip.
pub fn stored_reply(answer: &ModelResponse) -> ChatMessage {
    let message = ChatMessage {
        role: ChatRole::Assistant,
        content: answer.text.clone(),
        tool_calls: answer
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| ModelToolCall {
                id: format!("rt_call_{i}"),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect(),
        continuity: answer.continuity.clone(),
        ..ChatMessage::default()
    };
    let stored = serde_json::to_string(&message).expect("to json");
    serde_json::from_str(&stored).expect("from json")
}

/// A local tool.
pub fn tool(name: &str, parameters: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters,
        output_schema: None,
        execution_mode: ExecutionMode::Local,
        execution_provider: None,
        variables: Vec::new(),
        idempotent: false,
        hints: Default::default(),
    }
}

/// A provider-mode tool.
pub fn hosted_tool(name: &str, provider: &str) -> ToolDefinition {
    ToolDefinition {
        execution_mode: ExecutionMode::Provider,
        execution_provider: Some(provider.into()),
        ..tool(name, json!({"type": "object", "properties": {}}))
    }
}

/// The weather tool of the examples.
pub fn weather() -> ToolDefinition {
    tool(
        "get_weather",
        json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name"},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["location"],
            "additionalProperties": false
        }),
    )
}

/// A message.
pub fn msg(role: ChatRole, text: &str) -> ChatMessage {
    ChatMessage {
        role,
        content: Some(text.into()),
        ..ChatMessage::default()
    }
}

/// An assistant message with calls `(id, name, arguments)`.
pub fn calls(list: &[(&str, &str, &str)]) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Assistant,
        tool_calls: list
            .iter()
            .map(|(id, name, args)| ModelToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect(),
        ..ChatMessage::default()
    }
}

/// A tool result.
pub fn result(id: &str, text: &str) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Tool,
        content: Some(text.into()),
        tool_call_id: Some(id.into()),
        ..ChatMessage::default()
    }
}
