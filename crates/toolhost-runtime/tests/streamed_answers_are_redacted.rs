//! A model's answer that holds a thread's secret, split across streamed deltas, is redacted
//! before any live event shows it and before the reply is stored: its text and its call's
//! arguments. The model is the OpenAI adapter over real HTTP on loopback, the server replaying
//! chat-completion chunks in the API's wire format.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::variables::VariableDecl;
use toolhost_providers::{model_from_config, ModelConfig};
use toolhost_runtime::engine::{LiveKind, RunOutcome, Runtime};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, SqliteStore, Store};

const SECRET: &str = "sk-live-Q7fX9mZ2pL4wR8tY";

/// Serves `replies` (content type, body) in order, one per connection.
async fn replay_server(replies: Vec<(&'static str, String)>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        for (kind, body) in replies {
            let (mut socket, _) = listener.accept().await.unwrap();
            common::read_body(&mut socket).await;
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
            socket.shutdown().await.ok();
        }
    });
    port
}

/// A chat-completion chunk with `delta`, as the API streams it.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-R1", "object": "chat.completion.chunk", "created": 1760000400,
        "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {body}\n\n")
}

/// The answer: text with the secret cut in three, then a call whose arguments carry it cut in
/// two.
fn leaking_stream() -> String {
    let (a, rest) = SECRET.split_at(5);
    let (b, c) = rest.split_at(9);
    let args = format!("{{\"text\": \"{SECRET}\"}}");
    let (args_1, args_2) = args.split_at(16);
    let mut sse = String::new();
    sse.push_str(&chunk(
        json!({"role": "assistant", "content": "Your key is "}),
        None,
    ));
    for piece in [a, b, c, "; noting it."] {
        sse.push_str(&chunk(json!({"content": piece}), None));
    }
    sse.push_str(&chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_W1", "type": "function",
            "function": {"name": "note", "arguments": ""}}]}),
        None,
    ));
    for piece in [args_1, args_2] {
        sse.push_str(&chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            None,
        ));
    }
    sse.push_str(&chunk(json!({}), Some("tool_calls")));
    sse.push_str("data: [DONE]\n\n");
    sse
}

fn note_tool() -> toolhost_core::AnyTool {
    DynamicTool::new("note", "Notes a text.")
        .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
        .variable(VariableDecl::secret("TOKEN"))
        .handler(|args: Value, _| async move {
            Ok::<_, ToolError>(format!("noted {} characters", args["text"].as_str().unwrap_or("").len()))
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_split_across_deltas_is_redacted_from_live_events_and_the_stored_reply() {
    let done = json!({"id": "c2", "object": "chat.completion", "model": "m", "choices": [{"index": 0,
        "finish_reason": "stop", "message": {"role": "assistant", "content": "Noted."}}]});
    let port = replay_server(vec![
        ("text/event-stream", leaking_stream()),
        ("application/json", done.to_string()),
    ])
    .await;
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
        ),
        (
            "agents/prompts/p.json",
            r#"{"toolDescription": "x", "prompt": "Be brief.", "model": "wire", "tools": ["note"]}"#,
        ),
    ]);
    let mut config = ModelConfig::new("openai", "m");
    // These payloads are chat completions; `openai` alone speaks the Responses API.
    if config.provider == "openai" {
        config.api = Some("chat".into());
    }
    config.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    config.api_key_env = Some("WIRE_TEST_KEY".to_owned());
    let model = model_from_config(&config, |_| Some("sk-wire-test".to_owned())).unwrap();
    let db = project.root.join("t.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    rt.register_model("wire", model);
    rt.register_tool(note_tool());
    rt.set_secret_key(SecretKey::generate().unwrap());
    let mut live = rt.subscribe();
    let thread = rt
        .start_thread_with(
            "a",
            "Note my key.",
            vec![VariableValue::secret("TOKEN", SECRET)],
        )
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert!(matches!(outcome, RunOutcome::Done(_)), "{outcome:?}");

    let mut events = Vec::new();
    while let Ok(event) = live.try_recv() {
        events.push(event);
    }
    let joined = |kind: LiveKind, field: &str| -> String {
        events
            .iter()
            .filter(|e| e.kind == kind)
            .filter_map(|e| e.data[field].as_str())
            .collect()
    };
    // Shown whole and in order, with the secret replaced, though it never came in one delta.
    assert_eq!(
        joined(LiveKind::TextDelta, "text"),
        "Your key is [redacted TOKEN]; noting it.Noted."
    );
    assert_eq!(
        joined(LiveKind::ToolCallArgumentsDelta, "fragment"),
        "{\"text\": \"[redacted TOKEN]\"}"
    );
    for event in &events {
        let shown = event.data.to_string();
        for piece in SECRET.as_bytes().windows(5) {
            let piece = std::str::from_utf8(piece).unwrap();
            assert!(!shown.contains(piece), "{piece:?} in {shown}");
        }
    }

    let messages = store.messages(&thread.id).unwrap();
    let reply = messages.iter().find(|m| m.role == Role::Assistant).unwrap();
    assert_eq!(
        reply.content.as_deref(),
        Some("Your key is [redacted TOKEN]; noting it.")
    );
    assert_eq!(
        reply.tool_calls[0].arguments,
        "{\"text\": \"[redacted TOKEN]\"}"
    );
    for suffix in ["", "-wal"] {
        let path = PathBuf::from(format!("{}{suffix}", db.display()));
        if let Ok(bytes) = std::fs::read(&path) {
            for piece in SECRET.as_bytes().windows(6) {
                assert!(
                    !bytes.windows(6).any(|w| w == piece),
                    "{:?} is in {}",
                    String::from_utf8_lossy(piece),
                    path.display()
                );
            }
        }
    }
}
