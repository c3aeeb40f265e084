//! An integer past 64 bits from a model is never turned into a nearby float: arguments that hold
//! one are answered with an error naming the argument and the number (the tool does not run),
//! an answer that carries one inside its JSON fails with the place named, and a tool result that
//! holds one goes back to the model exactly as the tool wrote it. Real HTTP on loopback, a real
//! SQLite file.

mod common;

use common::{fixture, replay_server, Project};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_providers::{model_from_config, ModelConfig};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{Role, SqliteStore, Store};

const BIG: &str = "123456789012345678901234567890";

/// `pay` takes an amount in minor units; it counts its runs and answers with `answer`.
fn pay(runs: Arc<AtomicUsize>, answer: String) -> toolhost_core::AnyTool {
    DynamicTool::new("pay", "Pays an amount in minor units.")
        .parameters(json!({"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}))
        .handler(move |_args: Value, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            async move { Ok::<_, ToolError>(answer) }
        })
        .build()
        .unwrap()
}

fn project() -> Project {
    Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
        ),
        (
            "agents/prompts/p.json",
            r#"{"toolDescription": "x", "prompt": "Be brief.", "model": "wire", "tools": ["pay"]}"#,
        ),
    ])
}

/// A runtime on `provider` at the replay server on `port`, with `pay` registered.
async fn runtime(
    project: &Project,
    provider: &str,
    port: u16,
    tool: toolhost_core::AnyTool,
) -> (Runtime, Arc<dyn Store>) {
    runtime_with(project, ModelConfig::new(provider, "m"), port, tool).await
}

async fn runtime_with(
    project: &Project,
    mut config: ModelConfig,
    port: u16,
    tool: toolhost_core::AnyTool,
) -> (Runtime, Arc<dyn Store>) {
    // These payloads are chat completions; `openai` alone speaks the Responses API.
    if config.provider == "openai" {
        config.api = Some("chat".into());
    }
    let provider = config.provider.clone();
    config.base_url = Some(match provider.as_str() {
        "openai" => format!("http://127.0.0.1:{port}/v1"),
        _ => format!("http://127.0.0.1:{port}"),
    });
    config.api_key_env = Some("WIRE_TEST_KEY".to_owned());
    config.retry.max_attempts = 1;
    let model = model_from_config(&config, |_| Some("sk-wire-test".to_owned())).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    rt.register_model("wire", model);
    rt.register_tool(tool);
    (rt, store)
}

/// An OpenAI chat completion whose one call to `pay` has `arguments` (JSON text).
fn openai_call(arguments: &str) -> String {
    json!({"id": "c1", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_w1", "type": "function",
        "function": {"name": "pay", "arguments": arguments}}]}}]})
    .to_string()
}

fn openai_text(text: &str) -> String {
    json!({"id": "c2", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}]})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_with_an_integer_past_64_bits_are_refused_naming_path_and_number() {
    refused_on_openai(false).await;
}

/// Strict mode reads the arguments back to drop its added nulls; that must not round either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_mode_keeps_such_arguments_as_written_and_refuses_them_too() {
    refused_on_openai(true).await;
}

async fn refused_on_openai(strict: bool) {
    let (port, seen) = replay_server(vec![
        (
            "application/json",
            openai_call(&format!("{{\"amount\": {BIG}}}")),
        ),
        ("application/json", openai_text("I could not pay.")),
    ])
    .await;
    let project = project();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut config = ModelConfig::new("openai", "m");
    config.strict = strict;
    let (rt, store) = runtime_with(&project, config, port, pay(runs.clone(), "paid".into())).await;
    let thread = rt.start_thread("a", "Pay it.").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool never ran");
    let messages = store.messages(&thread.id).unwrap();
    // The reply is stored with the arguments exactly as the model wrote them.
    let reply = messages.iter().find(|m| m.role == Role::Assistant).unwrap();
    assert!(
        reply.tool_calls[0].arguments.contains(BIG),
        "{:?}",
        reply.tool_calls[0]
    );
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    let text = result.content.as_deref().unwrap();
    let expected = format!("at /amount: the integer {BIG} does not fit in 64 bits");
    assert!(text.contains(&expected), "{text}");
    assert!(
        text.contains("hold a number that cannot be kept exactly"),
        "{text}"
    );
    // The model is told, and asked to call again.
    let requests = seen.lock().unwrap();
    let sent = requests[1]["messages"].as_array().unwrap();
    let tool_message = sent.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap()
            .contains(&expected),
        "{tool_message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_gemini_call_with_an_integer_past_64_bits_fails_naming_where() {
    let stream = fixture("gemini/stream_function_calls.sse")
        .replace(
            r#""args": {"location": "Oslo"}"#,
            &format!(r#""args": {{"amount": {BIG}}}"#),
        )
        .replace(r#""name": "get_weather""#, r#""name": "pay""#);
    assert!(stream.contains(BIG));
    let (port, _) = replay_server(vec![("text/event-stream", stream)]).await;
    let project = project();
    let runs = Arc::new(AtomicUsize::new(0));
    let (rt, store) = runtime(&project, "gemini", port, pay(runs.clone(), "paid".into())).await;
    let thread = rt.start_thread("a", "Pay it.").await.unwrap();
    let err = rt.run(&thread.id).await.unwrap_err().to_string();
    assert!(
        err.contains(&format!(
            "at /candidates/0/content/parts/0/functionCall/args/amount: the integer {BIG} does not fit in 64 bits"
        )),
        "{err}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    let messages = store.messages(&thread.id).unwrap();
    assert!(
        messages.iter().all(|m| m.role != Role::Assistant),
        "no reply with a rounded number was stored: {messages:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_result_holding_an_integer_past_64_bits_goes_back_to_gemini_exactly() {
    let stream = fixture("gemini/stream_function_calls.sse")
        .replace(
            r#""args": {"location": "Oslo"}"#,
            r#""args": {"amount": 5}"#,
        )
        .replace(
            r#""args": {"location": "Lima"}"#,
            r#""args": {"amount": 6}"#,
        )
        .replace(r#""name": "get_weather""#, r#""name": "pay""#);
    let (port, seen) = replay_server(vec![
        ("text/event-stream", stream),
        ("application/json", fixture("gemini/text_no_usage.json")),
    ])
    .await;
    let project = project();
    let runs = Arc::new(AtomicUsize::new(0));
    let answer = format!("{{\"receipt\": {BIG}}}");
    let (rt, _store) = runtime(&project, "gemini", port, pay(runs.clone(), answer.clone())).await;
    let thread = rt.start_thread("a", "Pay them.").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let requests = seen.lock().unwrap();
    let results = requests[1]["contents"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let response = &results["parts"][0]["functionResponse"]["response"];
    // Not {"receipt": 1.2345678901234568e29}: the text as the tool wrote it.
    assert_eq!(response, &json!({"result": answer}), "{results}");
}
