//! Anthropic Messages: headers, system, merged tool results with image blocks, tool_choice and
//! parallel switch; tool_use, thinking and usage read back.

mod common;

use common::*;
use serde_json::json;
use toolhost_providers::{
    ChatRole, FinishReason, ImageAttachment, ModelRequest, ToolChoice, Usage,
};

fn request() -> ModelRequest {
    let mut with_image = result("toolu_prev2", "radar attached");
    with_image.images.push(ImageAttachment {
        name: "radar.png".into(),
        mime_type: "image/png".into(),
        data_base64: "iVBORw0KGgo=".into(),
    });
    ModelRequest {
        messages: vec![
            msg(ChatRole::System, "Be brief."),
            msg(ChatRole::User, "Weather in Oslo and Lima?"),
            calls(&[
                ("toolu_prev1", "get_weather", "{\"location\":\"Oslo\"}"),
                ("toolu_prev2", "get_weather", "{\"location\":\"Lima\"}"),
            ]),
            result("toolu_prev1", "12 C"),
            with_image,
        ],
        tools: vec![
            weather(),
            tool(
                "has.dot",
                json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            ),
        ],
        tool_choice: Some(ToolChoice::Required),
        parallel_tool_calls: Some(false),
        response_format: None,
    }
}

#[tokio::test]
async fn sends_the_messages_request() {
    let server =
        ReplayServer::start(vec![Reply::json(200, &fixture("anthropic/tool_use.json"))]).await;
    dyn_model("anthropic", &server)
        .complete(&request())
        .await
        .expect("answer");
    let seen = &server.seen()[0];
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.header("x-api-key"), Some(KEY));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(seen.header("authorization"), None);
    let body = &seen.body;
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    assert_eq!(body["tools"][0]["name"], "get_weather");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["location"])
    );
    assert_eq!(body["tools"][1]["name"], "has_dot");
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_prev2", "name": "get_weather", "input": {"location": "Lima"}})
    );
    // Both results travel in one user turn; the image goes as an image block.
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_prev1", "content": "12 C"},
            {"type": "tool_result", "tool_use_id": "toolu_prev2", "content": [
                {"type": "text", "text": "radar attached"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
            ]}
        ])
    );
}

#[tokio::test]
async fn reads_tool_use_thinking_and_usage() {
    let server =
        ReplayServer::start(vec![Reply::json(200, &fixture("anthropic/tool_use.json"))]).await;
    let answer = dyn_model("anthropic", &server)
        .complete(&request())
        .await
        .expect("answer");
    assert_eq!(answer.text.as_deref(), Some("I will look up both cities."));
    assert_eq!(
        answer.reasoning.as_deref(),
        Some("Two cities, so two lookups.")
    );
    assert_eq!(answer.finish, FinishReason::ToolCalls);
    let calls: Vec<(&str, &str, &str)> = answer
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("toolu_01Xa7", "get_weather", "{\"location\":\"Oslo\"}"),
            ("toolu_01Yb8", "has.dot", "{\"q\":\"fjords\"}")
        ]
    );
    // Input counts fresh and cached tokens together.
    assert_eq!(
        answer.usage,
        Usage {
            input_tokens: Some(612),
            output_tokens: Some(73)
        }
    );
}

#[tokio::test]
async fn a_named_tool_and_settings_map_to_the_api_s_fields() {
    let server =
        ReplayServer::start(vec![Reply::json(200, &fixture("anthropic/tool_use.json"))]).await;
    let mut config = config("anthropic", &server);
    config.settings.insert("max_tokens".into(), json!(1000));
    config.settings.insert("temperature".into(), json!(0.5));
    let model = toolhost_providers::model_from_config(&config, env).expect("model");
    let mut req = request();
    req.tool_choice = Some(ToolChoice::Tool("has.dot".into()));
    req.parallel_tool_calls = None;
    model.complete(&req).await.expect("answer");
    let body = &server.seen()[0].body;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "has_dot"})
    );
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["temperature"], 0.5);
}
