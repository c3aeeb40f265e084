//! Threads run on each HTTP API against a loopback server that replays vendor-shaped wire
//! payloads (the streams of two parallel calls in `toolhost-providers/tests/fixtures`), checking
//! what toolhost stores, what it publishes while the answer streams in, and what it sends back.

mod common;

use common::{fixture, replay_server, Project};
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_providers::{model_from_config, ModelConfig};
use toolhost_runtime::engine::LiveKind;
use toolhost_runtime::engine::{LiveEvent, RunOutcome, Runtime, StopReason};
use toolhost_store::{Message, Role, SqliteStore, Store};

/// `get_weather` knows Oslo; for any other place its station is offline (an error result).
fn get_weather() -> toolhost_core::AnyTool {
    DynamicTool::new("get_weather", "Current weather of a place.")
        .parameters(json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}))
        .handler(|args: Value, _| async move {
            match args["location"].as_str() {
                Some("Oslo") => Ok("12 degrees, rain".to_owned()),
                _ => Err(ToolError::new("station offline")),
            }
        })
        .build()
        .unwrap()
}

struct Run {
    thread_id: String,
    messages: Vec<Message>,
    live: Vec<LiveEvent>,
    requests: Vec<Value>,
}

/// Runs one thread on `provider` whose first answer is the stream `stream` and whose second is
/// the whole answer `text`.
async fn run_on(provider: &str, stream: &str, text: &str) -> Run {
    let (port, seen) = replay_server(vec![
        ("text/event-stream", fixture(stream)),
        ("application/json", fixture(text)),
    ])
    .await;
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
        ),
        (
            "agents/prompts/p.json",
            r#"{"toolDescription": "x", "prompt": "Be brief.", "model": "wire", "tools": ["get_weather"]}"#,
        ),
    ]);
    let base = match provider {
        "openai" => format!("http://127.0.0.1:{port}/v1"),
        _ => format!("http://127.0.0.1:{port}"),
    };
    let mut config = ModelConfig::new(provider, "m");
    // These payloads are chat completions; `openai` alone speaks the Responses API.
    if config.provider == "openai" {
        config.api = Some("chat".into());
    }
    config.base_url = Some(base);
    config.api_key_env = Some("WIRE_TEST_KEY".to_owned());
    let model = model_from_config(&config, |_| Some("sk-wire-test".to_owned())).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    rt.register_model("wire", model);
    rt.register_tool(get_weather());
    let mut live = rt.subscribe();
    let thread = rt
        .start_thread("a", "Weather in Oslo and Lima?")
        .await
        .unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let mut events = Vec::new();
    while let Ok(e) = live.try_recv() {
        events.push(e);
    }
    let requests = seen.lock().unwrap().clone();
    Run {
        messages: store.messages(&thread.id).unwrap(),
        thread_id: thread.id,
        live: events,
        requests,
    }
}

/// What every API's run must have stored and published.
fn check_stored_and_live(run: &Run, thread_text: &str) {
    let m = &run.messages;
    let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    let reply = &m[1];
    assert_eq!(reply.content.as_deref(), Some("Checking two cities."));
    let ids: Vec<&str> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), 2);
    // The runtime owns the ids: none is a wire id of the fixtures.
    assert!(
        ids.iter()
            .all(|id| id.starts_with("call_") && id.len() > 20),
        "{ids:?}"
    );
    let args: Vec<Value> = reply
        .tool_calls
        .iter()
        .map(|c| serde_json::from_str(&c.arguments).unwrap())
        .collect();
    assert_eq!(
        args,
        [json!({"location": "Oslo"}), json!({"location": "Lima"})]
    );
    assert_eq!(reply.metadata.finish.as_ref().unwrap(), "tool_calls");
    // Results, under the stored ids, in call order; the failure is an error result.
    assert_eq!(m[2].tool_call_id.as_deref(), Some(ids[0]));
    assert_eq!(m[2].content.as_deref(), Some("12 degrees, rain"));
    assert_eq!(m[2].status, Some(toolhost_store::ToolStatus::Success));
    assert_eq!(m[3].tool_call_id.as_deref(), Some(ids[1]));
    assert_eq!(m[3].status, Some(toolhost_store::ToolStatus::Error));
    assert_eq!(m[4].content.as_deref(), Some(thread_text));

    // Live: the text as it came, each call under its stored id, its fragments adding up to the
    // stored arguments.
    let text: String = run
        .live
        .iter()
        .filter(|e| e.kind == LiveKind::TextDelta)
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert!(text.starts_with("Checking two cities."), "{text}");
    let started: Vec<&str> = run
        .live
        .iter()
        .filter(|e| e.kind == LiveKind::ToolCallStarted)
        .map(|e| e.data["callId"].as_str().unwrap())
        .collect();
    assert_eq!(started, ids);
    for (id, call) in ids.iter().zip(&reply.tool_calls) {
        let fragments: String = run
            .live
            .iter()
            .filter(|e| e.kind == LiveKind::ToolCallArgumentsDelta && e.data["callId"] == *id)
            .map(|e| e.data["fragment"].as_str().unwrap())
            .collect();
        let streamed: Value = serde_json::from_str(&fragments).unwrap();
        assert_eq!(
            streamed,
            serde_json::from_str::<Value>(&call.arguments).unwrap()
        );
    }
    assert!(run.live.iter().all(|e| e.thread_id == run.thread_id));
    assert_eq!(run.requests.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_stream_of_parallel_calls() {
    let run = run_on(
        "openai",
        "openai/stream_tool_calls.sse",
        "openai/text_no_usage.json",
    )
    .await;
    check_stored_and_live(&run, "It is 12 degrees in Oslo.");
    let reply = &run.messages[1];
    assert_eq!(reply.metadata.usage.as_ref().unwrap()["input_tokens"], 88);
    assert_eq!(reply.metadata.usage.as_ref().unwrap()["output_tokens"], 40);
    // The final answer's usage was not reported: unknown, never zero.
    assert_eq!(
        run.messages[4].metadata.usage.as_ref().unwrap()["input_tokens"],
        Value::Null
    );
    assert_eq!(
        run.messages[4].metadata.reasoning.as_deref(),
        Some("The tool said 12.")
    );
    let sent = run.requests[1]["messages"].as_array().unwrap();
    let call = sent.iter().find(|m| m["tool_calls"].is_array()).unwrap();
    let results: Vec<&Value> = sent.iter().filter(|m| m["role"] == "tool").collect();
    for (k, c) in reply.tool_calls.iter().enumerate() {
        assert_eq!(call["tool_calls"][k]["id"], c.id.as_str());
        assert_eq!(results[k]["tool_call_id"], c.id.as_str());
    }
    assert!(results[1]["content"]
        .as_str()
        .unwrap()
        .contains("station offline"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_stream_with_thinking_and_parallel_calls() {
    let run = run_on(
        "anthropic",
        "anthropic/stream_tool_use.sse",
        "anthropic/text_no_usage.json",
    )
    .await;
    check_stored_and_live(&run, "Done.");
    let reply = &run.messages[1];
    assert_eq!(
        reply.metadata.reasoning.as_deref(),
        Some("Need the weather.")
    );
    assert_eq!(reply.metadata.usage.as_ref().unwrap()["input_tokens"], 410);
    assert_eq!(reply.metadata.usage.as_ref().unwrap()["output_tokens"], 40);
    assert!(run
        .live
        .iter()
        .any(|e| e.kind == LiveKind::ReasoningDelta && e.data["text"] == "Need the weather."));
    // Both results travel in the one user turn after the calls, under the stored ids.
    let sent = run.requests[1]["messages"].as_array().unwrap();
    let results = sent.last().unwrap();
    assert_eq!(results["role"], "user");
    let blocks = results["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    for (block, call) in blocks.iter().zip(&reply.tool_calls) {
        assert_eq!(block["type"], "tool_result");
        assert_eq!(block["tool_use_id"], call.id.as_str());
    }
    // The failed call's result is flagged as an error; the other is not.
    assert_eq!(blocks[1]["is_error"], true);
    assert!(blocks[0].get("is_error").is_none());
    // The thinking block is stored with its signature and leads the assistant turn sent back.
    let kept = &reply.metadata.continuity.as_ref().unwrap()["anthropic"]["blocks"][0];
    assert_eq!(kept["signature"], "c2ln");
    let turn = sent[sent.len() - 2]["content"].as_array().unwrap();
    assert_eq!(turn[0]["type"], "thinking");
    assert_eq!(turn[0]["thinking"], "Need the weather.");
    assert_eq!(turn[0]["signature"], "c2ln");
    let uses: Vec<&Value> = sent[sent.len() - 2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(uses[0]["id"], reply.tool_calls[0].id.as_str());
    assert_eq!(uses[0]["input"], json!({"location": "Oslo"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_stream_of_signed_parallel_calls() {
    let run = run_on(
        "gemini",
        "gemini/stream_thought_signatures.sse",
        "gemini/text_no_usage.json",
    )
    .await;
    check_stored_and_live(&run, "Done.");
    assert_eq!(
        run.messages[1].metadata.usage.as_ref().unwrap()["input_tokens"],
        70
    );
    // Results go back in call order in one user turn, by name and under the stored ids.
    let sent = run.requests[1]["contents"].as_array().unwrap();
    let results = sent.last().unwrap();
    assert_eq!(results["role"], "user");
    let parts = results["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["functionResponse"]["name"], "get_weather");
    let ids: Vec<&Value> = parts.iter().map(|p| &p["functionResponse"]["id"]).collect();
    let stored: Vec<Value> = run.messages[1]
        .tool_calls
        .iter()
        .map(|c| json!(c.id))
        .collect();
    assert_eq!(ids, stored.iter().collect::<Vec<_>>());
    // Each call's thought signature is stored and goes back on its functionCall part.
    let calls = sent[sent.len() - 2]["parts"].as_array().unwrap();
    let signed: Vec<(&Value, &Value)> = calls
        .iter()
        .filter(|p| p.get("functionCall").is_some())
        .map(|p| {
            (
                &p["functionCall"]["args"]["location"],
                &p["thoughtSignature"],
            )
        })
        .collect();
    assert_eq!(
        signed,
        [
            (
                &json!("Oslo"),
                &json!("CiQB0e2Kb3N0cmVhbWVkLWZpcnN0LWNhbGw=")
            ),
            (
                &json!("Lima"),
                &json!("CiQB0e2Kb3N0cmVhbWVkLXNlY29uZC1jYWxs")
            )
        ]
    );
    assert!(parts[1]["functionResponse"]["response"]
        .to_string()
        .contains("station offline"));
}
