//! OpenAI chat completions: what toolhost sends (path, auth, lowered tools, tool_choice,
//! parallel_tool_calls, image placeholders, wire names) and what it reads back.

mod common;

use common::*;
use serde_json::json;
use toolhost_providers::{
    ChatRole, FinishReason, ImageAttachment, ModelRequest, ToolChoice, Usage,
};

fn request() -> ModelRequest {
    let mut tool_result = result("call_prev1", "{\"temp\": 12}");
    tool_result.images.push(ImageAttachment {
        name: "radar.png".into(),
        mime_type: "image/png".into(),
        data_base64: "iVBORw0KGgo=".into(),
    });
    ModelRequest {
        messages: vec![
            msg(ChatRole::System, "Be brief."),
            msg(ChatRole::User, "Weather in Oslo and fjords?"),
            calls(&[("call_prev1", "get_weather", "{\"location\":\"Oslo\"}")]),
            tool_result,
        ],
        tools: vec![
            weather(),
            tool(
                "has.dot",
                json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            ),
        ],
        tool_choice: Some(ToolChoice::Required),
        parallel_tool_calls: Some(true),
        response_format: None,
    }
}

#[tokio::test]
async fn sends_the_chat_completions_request() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/parallel_tool_calls.json"),
    )])
    .await;
    let model = dyn_model("openai", &server);
    model.complete(&request()).await.expect("answer");
    let seen = &server.seen()[0];
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path, "/chat/completions");
    assert_eq!(
        seen.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &seen.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["parallel_tool_calls"], true);
    assert!(body.get("stream").is_none());
    let tools = body["tools"].as_array().expect("tools");
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "get_weather");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["location"])
    );
    // A name OpenAI refuses goes out under its safe wire name.
    assert_eq!(tools[1]["function"]["name"], "has_dot");
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_prev1");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["arguments"],
        "{\"location\":\"Oslo\"}"
    );
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_prev1");
    assert_eq!(
        messages[3]["content"],
        "{\"temp\": 12}\n[image attachment radar.png (image/png) not shown: this API takes no images in tool results]"
    );
}

#[tokio::test]
async fn reads_parallel_tool_calls_usage_and_maps_names_back() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/parallel_tool_calls.json"),
    )])
    .await;
    let answer = dyn_model("openai", &server)
        .complete(&request())
        .await
        .expect("answer");
    assert_eq!(answer.text, None);
    assert_eq!(answer.finish, FinishReason::ToolCalls);
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(answer.tool_calls[0].id, "call_Nq4uT0xa");
    assert_eq!(answer.tool_calls[0].name, "get_weather");
    assert_eq!(
        answer.tool_calls[0].arguments,
        "{\"location\": \"Oslo\", \"units\": \"celsius\"}"
    );
    assert_eq!(answer.tool_calls[1].name, "has.dot");
    assert_eq!(
        answer.usage,
        Usage {
            input_tokens: Some(142),
            output_tokens: Some(51)
        }
    );
}

#[tokio::test]
async fn a_named_tool_choice_uses_the_wire_name_and_strict_lowering_is_lifted() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/parallel_tool_calls.json"),
    )])
    .await;
    let mut config = config("openai", &server);
    config.strict = true;
    let model = toolhost_providers::model_from_config(&config, env).expect("model");
    let mut req = request();
    req.tool_choice = Some(ToolChoice::Tool("has.dot".into()));
    req.parallel_tool_calls = Some(false);
    let answer = model.complete(&req).await.expect("answer");
    let body = &server.seen()[0].body;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "has_dot"}})
    );
    assert_eq!(body["parallel_tool_calls"], false);
    let weather = &body["tools"][0]["function"];
    assert_eq!(weather["strict"], true);
    assert_eq!(
        weather["parameters"]["required"],
        json!(["location", "units"])
    );
    // Strict mode's "null for absent" never reaches the tool: lifted back (here nothing to lift).
    assert_eq!(
        answer.tool_calls[0].arguments,
        "{\"location\":\"Oslo\",\"units\":\"celsius\"}"
    );
}

#[tokio::test]
async fn an_openai_compatible_server_needs_no_key_and_gives_reasoning() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/text_no_usage.json"),
    )])
    .await;
    let mut config = config("openai-compatible", &server);
    config.api_key_env = None;
    config.settings.insert("temperature".into(), json!(0.1));
    config.settings.insert("top_k".into(), json!(20));
    let model = toolhost_providers::model_from_config(&config, |_| None).expect("model");
    let answer = model
        .complete(&ModelRequest {
            messages: vec![msg(ChatRole::User, "hi")],
            ..ModelRequest::default()
        })
        .await
        .expect("answer");
    let seen = &server.seen()[0];
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(seen.body["temperature"], 0.1);
    assert_eq!(seen.body["top_k"], 20);
    assert!(seen.body.get("tools").is_none());
    assert!(seen.body.get("parallel_tool_calls").is_none());
    assert_eq!(answer.text.as_deref(), Some("It is 12 degrees in Oslo."));
    assert_eq!(answer.reasoning.as_deref(), Some("The tool said 12."));
    assert_eq!(answer.finish, FinishReason::Stop);
}
