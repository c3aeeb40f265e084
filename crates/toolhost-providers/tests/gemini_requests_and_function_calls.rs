//! Gemini generateContent: path, key header, declarations, toolConfig, function responses
//! named after their calls, inline images; functionCall parts, thoughts and usage read back.

mod common;

use common::*;
use serde_json::json;
use toolhost_providers::{
    ChatRole, FinishReason, ImageAttachment, ModelRequest, ToolChoice, Usage,
};

fn request() -> ModelRequest {
    let mut with_image = result("call_th1_0", "{\"temp\": 12}");
    with_image.images.push(ImageAttachment {
        name: "radar.png".into(),
        mime_type: "image/png".into(),
        data_base64: "iVBORw0KGgo=".into(),
    });
    ModelRequest {
        messages: vec![
            msg(ChatRole::System, "Be brief."),
            msg(ChatRole::User, "Weather in Oslo?"),
            calls(&[
                ("call_th1_0", "get_weather", "{\"location\":\"Oslo\"}"),
                ("fc_77", "has/slash", "{}"),
            ]),
            with_image,
            result("fc_77", "nothing"),
        ],
        tools: vec![
            weather(),
            tool(
                "has/slash",
                json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            ),
        ],
        tool_choice: Some(ToolChoice::Tool("get_weather".into())),
        parallel_tool_calls: Some(true),
        response_format: None,
    }
}

#[tokio::test]
async fn sends_the_generate_content_request() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("gemini/function_calls.json"),
    )])
    .await;
    dyn_model("gemini", &server)
        .complete(&request())
        .await
        .expect("answer");
    let seen = &server.seen()[0];
    assert_eq!(seen.path, "/models/test-model:generateContent");
    assert_eq!(seen.header("x-goog-api-key"), Some(KEY));
    assert!(!seen.path.contains(KEY));
    let body = &seen.body;
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    let declarations = &body["tools"][0]["functionDeclarations"];
    assert_eq!(declarations[0]["name"], "get_weather");
    assert_eq!(
        declarations[0]["parameters"]["properties"]["location"]["type"],
        "string"
    );
    assert_eq!(declarations[1]["name"], "has_slash");
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
    );
    let contents = body["contents"].as_array().expect("contents");
    assert_eq!(contents.len(), 3);
    assert_eq!(contents[1]["role"], "model");
    // A made-up id is not sent back; an id Gemini issued is.
    assert_eq!(
        contents[1]["parts"],
        json!([
            {"functionCall": {"name": "get_weather", "args": {"location": "Oslo"}}},
            {"functionCall": {"name": "has_slash", "args": {}, "id": "fc_77"}}
        ])
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"temp": 12}}},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
            {"functionResponse": {"name": "has_slash", "response": {"result": "nothing"}, "id": "fc_77"}}
        ]})
    );
}

#[tokio::test]
async fn reads_function_calls_thoughts_and_usage() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("gemini/function_calls.json"),
    )])
    .await;
    let mut req = request();
    req.tools
        .push(tool("has.dot", json!({"type": "object", "properties": {}})));
    let answer = dyn_model("gemini", &server)
        .complete(&req)
        .await
        .expect("answer");
    assert_eq!(answer.text, None);
    assert_eq!(answer.reasoning.as_deref(), Some("Two lookups first."));
    assert_eq!(answer.finish, FinishReason::ToolCalls);
    assert_eq!(answer.tool_calls.len(), 2);
    assert_eq!(answer.tool_calls[0].name, "get_weather");
    assert_eq!(answer.tool_calls[0].arguments, "{\"location\":\"Oslo\"}");
    assert_eq!(answer.tool_calls[1].name, "has.dot");
    assert!(answer
        .tool_calls
        .iter()
        .all(|c| c.id.starts_with("call_th")));
    assert_ne!(answer.tool_calls[0].id, answer.tool_calls[1].id);
    assert_eq!(
        answer.usage,
        Usage {
            input_tokens: Some(230),
            output_tokens: Some(40)
        }
    );
}
