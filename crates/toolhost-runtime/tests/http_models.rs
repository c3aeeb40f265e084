//! A project's model definition of an OpenAI-compatible server runs a thread over real HTTP on
//! loopback, its model built by the providers' factory: the calls the server's replies make run
//! as tools, their results go back under the ids the server issued, and a definition whose key
//! is missing names the variable. Without a factory such a definition loads but is unavailable.
//! `openai` speaks the Responses API, its reasoning items stored with the reply and sent back;
//! an unknown `api` is a problem of the model's file.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{Role, SqliteStore, Store};

/// Serves `replies` in order as chat-completion bodies and keeps each request body.
async fn replay_server(replies: Vec<Value>) -> (u16, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        for reply in replies {
            let (mut socket, _) = listener.accept().await.unwrap();
            let body = common::read_body(&mut socket).await;
            log.lock()
                .unwrap()
                .push(serde_json::from_slice::<Value>(&body).unwrap());
            let text = reply.to_string();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
            socket.shutdown().await.ok();
        }
    });
    (port, seen)
}

fn project(model: Value) -> Project {
    Project::with_files(&[
        ("agents/agents/a.json", r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#.to_owned()),
        ("agents/prompts/p.json", r#"{"toolDescription": "x", "prompt": "Be brief.", "model": "local", "tools": ["lookup"]}"#.to_owned()),
        ("agents/models/local.json", model.to_string()),
    ])
}

fn lookup() -> toolhost_core::AnyTool {
    DynamicTool::new("lookup", "Looks a word up.")
        .parameters(json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}))
        .handler(|args: Value, _| async move {
            Ok::<_, ToolError>(format!("{} means hello", args["word"].as_str().unwrap_or("")))
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_runs_on_an_openai_compatible_server() {
    let (port, seen) = replay_server(vec![
        json!({"id": "c1", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_wire_1", "type": "function",
            "function": {"name": "lookup", "arguments": "{\"word\": \"hei\"}"}}]}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}),
        json!({"id": "c2", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "It means hello."}}]}),
    ])
    .await;
    let project = project(
        json!({"provider": "openai-compatible", "model": "m", "baseUrl": format!("http://127.0.0.1:{port}/v1")}),
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load_with(
        &project.root,
        store.clone(),
        &toolhost_providers::model_from_env,
    )
    .await
    .unwrap();
    rt.register_tool(lookup());
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("a", "What does hei mean?").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let messages = store.messages(&thread.id).unwrap();
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.content.as_deref(), Some("hei means hello"));
    assert_eq!(
        messages.last().unwrap().content.as_deref(),
        Some("It means hello.")
    );
    let requests = seen.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], "m");
    assert_eq!(requests[0]["tools"][0]["function"]["name"], "lookup");
    assert_eq!(requests[0]["messages"][0]["role"], "system");
    // The result goes back under the id the call is stored with.
    let call_id = messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap()
        .tool_calls[0]
        .id
        .clone();
    let tool_message = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool_message["tool_call_id"], call_id.as_str());
    assert_eq!(tool_message["content"], "hei means hello");
}

#[tokio::test]
async fn a_model_whose_key_is_missing_names_the_variable() {
    let project = project(
        json!({"provider": "openai", "model": "gpt-4.1-mini", "apiKeyEnv": "TOOLHOST_TEST_KEY_THAT_IS_NOT_SET"}),
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load_with(
        &project.root,
        store.clone(),
        &toolhost_providers::model_from_env,
    )
    .await
    .unwrap();
    rt.register_tool(lookup());
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let err = rt.override_model("local").unwrap_err();
    assert!(
        err.to_string()
            .contains("TOOLHOST_TEST_KEY_THAT_IS_NOT_SET"),
        "{err}"
    );
    // A thread on it fails at its start, before anything is stored.
    let err = rt.start_thread("a", "hi").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("TOOLHOST_TEST_KEY_THAT_IS_NOT_SET"),
        "{err}"
    );
    assert!(store.threads(None).unwrap().is_empty());
}

#[tokio::test]
async fn a_factory_reads_keys_where_it_likes() {
    let project = project(
        json!({"provider": "anthropic", "model": "claude-x", "apiKeyEnv": "FROM_THE_VAULT"}),
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let factory = move |config: &toolhost_providers::ModelConfig| {
        log.lock().unwrap().push(config.clone());
        toolhost_providers::model_from_config(config, |name| {
            (name == "FROM_THE_VAULT").then(|| "sk-vault".to_owned())
        })
    };
    let mut rt = Runtime::load_with(&project.root, store, &factory)
        .await
        .unwrap();
    rt.override_model("local").unwrap();
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].provider, "anthropic");
    assert_eq!(asked[0].model, "claude-x");
    assert_eq!(asked[0].api_key_env.as_deref(), Some("FROM_THE_VAULT"));
}

#[tokio::test]
async fn without_a_factory_an_http_model_loads_but_cannot_be_used() {
    let project = project(
        json!({"provider": "openai-compatible", "model": "m", "baseUrl": "http://127.0.0.1:9/v1"}),
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    rt.register_tool(lookup());
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let err = rt.start_thread("a", "hi").await.unwrap_err();
    assert!(err.to_string().contains("model factory"), "{err}");
    assert!(store.threads(None).unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_with_a_nameless_call_are_asked_again_within_the_retry_bound_then_fail() {
    let nameless = json!({"id": "c1", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_wire_1", "type": "function",
        "function": {"name": "", "arguments": "{\"word\": \"hei\"}"}}]}}]});
    let (port, seen) = replay_server(vec![nameless.clone(), nameless]).await;
    let project = project(json!({"provider": "openai-compatible", "model": "m",
        "baseUrl": format!("http://127.0.0.1:{port}/v1"), "retry": {"maxAttempts": 2}}));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load_with(
        &project.root,
        store.clone(),
        &toolhost_providers::model_from_env,
    )
    .await
    .unwrap();
    rt.register_tool(lookup());
    let thread = rt.start_thread("a", "What does hei mean?").await.unwrap();
    let err = rt.run(&thread.id).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("malformed output 2 time(s) in a row"),
        "{text}"
    );
    assert!(text.contains("call 1"), "{text}");
    assert!(text.contains("has no tool name"), "{text}");
    // The model definition's bound: two requests, the same each time.
    let requests = seen.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["messages"], requests[1]["messages"]);
    // Nothing of the answers was stored, and the thread is marked failed.
    let messages = store.messages(&thread.id).unwrap();
    assert!(messages
        .iter()
        .all(|m| m.role != Role::Assistant && m.role != Role::Tool));
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        toolhost_store::ThreadStatus::Failed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_speaks_responses_and_its_stored_reasoning_goes_back_before_the_call() {
    let reasoning = json!({"id": "rs_1", "type": "reasoning", "summary": [],
                           "encrypted_content": "gAAAAABenc0ded"});
    let (port, seen) = replay_server(vec![
        json!({"id": "resp_1", "object": "response", "status": "completed", "output": [
            reasoning,
            {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_wire_1",
             "name": "lookup", "arguments": "{\"word\": \"hei\"}"}],
            "usage": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}}),
        json!({"id": "resp_2", "object": "response", "status": "completed", "output": [
            {"id": "msg_2", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "It means hello.", "annotations": []}]}]}),
    ])
    .await;
    let project = project(json!({"provider": "openai", "model": "gpt-5-mini",
        "baseUrl": format!("http://127.0.0.1:{port}/v1"), "apiKeyEnv": "FROM_THE_VAULT"}));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let factory = |config: &toolhost_providers::ModelConfig| {
        toolhost_providers::model_from_config(config, |_| Some("sk-vault".to_owned()))
    };
    let mut rt = Runtime::load_with(&project.root, store.clone(), &factory)
        .await
        .unwrap();
    rt.register_tool(lookup());
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("a", "What does hei mean?").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let messages = store.messages(&thread.id).unwrap();
    assert_eq!(
        messages.last().unwrap().content.as_deref(),
        Some("It means hello.")
    );
    let requests = seen.lock().unwrap();
    assert_eq!(requests[0]["store"], false);
    assert_eq!(requests[0]["instructions"], "Be brief.");
    // The reasoning item came back from the stored reply, right before its call, and the call
    // and its output carry the wire's call id whatever id the runtime gave the call.
    let input = requests[1]["input"].as_array().unwrap();
    let at = input
        .iter()
        .position(|i| i == &reasoning)
        .expect("reasoning sent back");
    assert_eq!(input[at + 1]["type"], "function_call");
    assert_eq!(input[at + 1]["call_id"], "call_wire_1");
    assert_eq!(input[at + 2]["type"], "function_call_output");
    assert_eq!(input[at + 2]["call_id"], "call_wire_1");
    assert_eq!(input[at + 2]["output"], "hei means hello");
}

#[tokio::test]
async fn an_unknown_api_is_a_problem_naming_the_file_and_the_field() {
    let project = project(json!({"provider": "openai", "model": "m", "api": "completions"}));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let factory = |config: &toolhost_providers::ModelConfig| {
        toolhost_providers::model_from_config(config, |_| Some("sk".to_owned()))
    };
    let rt = Runtime::load_with(&project.root, store, &factory)
        .await
        .unwrap();
    let problem = rt
        .problems()
        .into_iter()
        .find(|p| p.path.ends_with("agents/models/local.json"))
        .expect("a problem with the model's file");
    assert!(
        problem.message.contains("field `api`"),
        "{}",
        problem.message
    );
    assert!(
        problem.message.contains("\"completions\""),
        "{}",
        problem.message
    );
}
