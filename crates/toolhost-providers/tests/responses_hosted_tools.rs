//! OpenAI Responses API: provider-mode tools are sent as the API's hosted tools (`web_search`,
//! `file_search`, `code_interpreter`, remote `mcp`, configured by the setting `hosted_tools`);
//! their items come back as provider results, are kept in the reply's continuity with items of
//! types not known here, and are sent back as they came.

mod common;

use common::*;
use serde_json::{json, Value};
use toolhost_providers::{ChatRole, HttpModel, Model, ModelRequest};

fn ask() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "How many fjords? Double it.")],
        tools: vec![
            weather(),
            hosted_tool("web_search", "openai"),
            hosted_tool("file_search", "openai"),
            hosted_tool("code_interpreter", "openai"),
            hosted_tool("mcp", "openai"),
            hosted_tool("google_search", "gemini"),
        ],
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn hosted_tools_are_declared_read_as_provider_results_and_sent_back() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("responses/hosted_tools.json")),
        Reply::json(200, &fixture("responses/text.json")),
    ])
    .await;
    let mut c = config("responses", &server);
    c.settings.insert(
        "hosted_tools".into(),
        json!({
            "file_search": {"vector_store_ids": ["vs_fjords"]},
            "mcp": [{"server_label": "maps", "server_url": "https://maps.example.org/mcp",
                     "require_approval": "never"}]
        }),
    );
    let model = HttpModel::new(&c, env).expect("model");
    let answer = model.complete(&ask()).await.expect("answer");

    let tools = &server.seen()[0].body["tools"];
    assert_eq!(tools[0]["name"], "get_weather");
    assert_eq!(
        tools.as_array().expect("tools")[1..],
        [
            json!({"type": "web_search"}),
            json!({"type": "file_search", "vector_store_ids": ["vs_fjords"]}),
            json!({"type": "code_interpreter", "container": {"type": "auto"}}),
            json!({"type": "mcp", "server_label": "maps",
                   "server_url": "https://maps.example.org/mcp", "require_approval": "never"}),
        ]
    );
    // No setting of ours leaks into the body.
    assert!(server.seen()[0].body.get("hosted_tools").is_none());

    assert_eq!(
        answer.text.as_deref(),
        Some("Norway has about 1,190 fjords; twice that is 2380.")
    );
    let output: Value =
        serde_json::from_str(&fixture("responses/hosted_tools.json")).expect("json");
    let output = &output["output"];
    let results: Vec<(&str, Option<&str>, Option<Value>, bool)> = answer
        .provider_results
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                r.call_id.as_deref(),
                r.input.clone(),
                r.failed,
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            (
                "web_search",
                output[0]["id"].as_str(),
                Some(json!({"type": "search", "query": "fjords Norway facts"})),
                false
            ),
            (
                "code_interpreter",
                output[1]["id"].as_str(),
                Some(json!("print(1190 * 2)")),
                false
            ),
        ]
    );
    assert_eq!(answer.provider_results[1].output, output[1]);

    model
        .complete(&ModelRequest {
            messages: vec![
                msg(ChatRole::User, "How many fjords? Double it."),
                stored_reply(&answer),
                msg(ChatRole::User, "Thanks."),
            ],
            ..ask()
        })
        .await
        .expect("answer");
    let input = &server.seen()[1].body["input"];
    // The hosted tools' items, and the item of a type not known here, go back as they came,
    // in the reply's order around its text.
    assert_eq!(input[1], output[0]);
    assert_eq!(input[2], output[1]);
    assert_eq!(
        input[3],
        json!({"role": "assistant",
               "content": "Norway has about 1,190 fjords; twice that is 2380."})
    );
    assert_eq!(input[4], output[3]);
    assert_eq!(input[5]["content"][0]["text"], "Thanks.");
}
