//! Provider-mode tools go out as the provider's hosted tools, and what the provider ran comes
//! back as provider results, never as calls for toolhost to execute.

mod common;

use common::*;
use serde_json::json;
use toolhost_providers::{ChatRole, ModelRequest};

fn request(provider: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "When does the ferry leave?")],
        tools: vec![
            weather(),
            hosted_tool("web_search", provider),
            hosted_tool("code_execution", "someone-else"),
        ],
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn anthropic_server_tools() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("anthropic/web_search.json"),
    )])
    .await;
    let answer = dyn_model("anthropic", &server)
        .complete(&request("anthropic"))
        .await
        .expect("answer");
    let tools = server.seen()[0].body["tools"].clone();
    assert_eq!(tools.as_array().map(Vec::len), Some(2), "{tools}");
    assert_eq!(
        tools[1],
        json!({"type": "web_search_20250305", "name": "web_search"})
    );
    assert!(answer.tool_calls.is_empty());
    assert_eq!(
        answer.text.as_deref(),
        Some("Let me search.The ferry leaves at 09:15.")
    );
    let r = &answer.provider_results[0];
    assert_eq!(r.name, "web_search");
    assert_eq!(r.call_id.as_deref(), Some("srvtoolu_01Qr"));
    assert_eq!(r.input, Some(json!({"query": "ferry timetable"})));
    assert_eq!(r.output[0]["url"], "https://ferry.example/timetable");
    assert!(!r.failed);
    // A search the provider reports as failed comes back marked so.
    let failed = &answer.provider_results[1];
    assert_eq!(failed.call_id.as_deref(), Some("srvtoolu_01Rs"));
    assert_eq!(failed.output["error_code"], "max_uses_exceeded");
    assert!(failed.failed);
}

#[tokio::test]
async fn gemini_google_search() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("gemini/google_search.json"),
    )])
    .await;
    let answer = dyn_model("gemini", &server)
        .complete(&request("gemini"))
        .await
        .expect("answer");
    let tools = server.seen()[0].body["tools"].clone();
    assert_eq!(tools[1], json!({"google_search": {}}), "{tools}");
    assert_eq!(tools.as_array().map(Vec::len), Some(2));
    let r = &answer.provider_results[0];
    assert_eq!(r.name, "web_search");
    assert_eq!(r.input, Some(json!(["ferry timetable"])));
    assert_eq!(
        r.output["groundingChunks"][0]["web"]["uri"],
        "https://ferry.example/timetable"
    );
}

#[tokio::test]
async fn openai_web_search_options_and_citations() {
    let server =
        ReplayServer::start(vec![Reply::json(200, &fixture("openai/web_search.json"))]).await;
    let answer = dyn_model("openai", &server)
        .complete(&request("openai"))
        .await
        .expect("answer");
    let body = &server.seen()[0].body;
    assert_eq!(body["web_search_options"], json!({}));
    assert_eq!(body["tools"].as_array().map(Vec::len), Some(1));
    let r = &answer.provider_results[0];
    assert_eq!(r.name, "web_search");
    assert_eq!(
        r.output[0]["url_citation"]["url"],
        "https://ferry.example/timetable"
    );
}

#[tokio::test]
async fn gemini_code_execution_outcomes() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("gemini/code_execution.json"),
    )])
    .await;
    let request = ModelRequest {
        messages: vec![msg(ChatRole::User, "Sum 0 to 9.")],
        tools: vec![hosted_tool("code_execution", "gemini")],
        ..ModelRequest::default()
    };
    let answer = dyn_model("gemini", &server)
        .complete(&request)
        .await
        .expect("answer");
    let runs: Vec<(&str, bool)> = answer
        .provider_results
        .iter()
        .map(|r| {
            (
                r.input.as_ref().unwrap()["code"].as_str().unwrap(),
                r.failed,
            )
        })
        .collect();
    // Each piece of code is paired with its result; one that ran out of time failed.
    assert_eq!(
        runs,
        [("print(sum(range(10)))", false), ("while True: pass", true)]
    );
    assert_eq!(answer.provider_results[0].output["output"], "45\n");
    assert!(answer.tool_calls.is_empty());
}
