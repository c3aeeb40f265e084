//! A structured reply (spec 004's combined request): each API is asked for a JSON document of
//! the request's schema in its own way, and whichever way it answers, `structured()` gives the
//! document's text. The answers are replayed payloads in each API's documented shape.

mod common;

use common::*;
use serde_json::{json, Value};
use toolhost_providers::{ChatRole, ModelRequest, ResponseFormat};

fn format() -> ResponseFormat {
    ResponseFormat {
        name: "reply".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "meta": {"type": "object"},
                "output": {"type": ["string", "null"]},
                "calls": {"type": "array", "items": {"type": "object"}}
            },
            "required": ["meta", "calls", "output"]
        }),
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "Say hello to Ada.")],
        response_format: Some(format()),
        ..ModelRequest::default()
    }
}

/// The request `provider` sends and the document it reads back from `fixture`.
async fn ask(provider: &str, fixture_path: &str) -> (Value, Value) {
    let server = ReplayServer::start(vec![Reply::json(200, &fixture(fixture_path))]).await;
    let answer = dyn_model(provider, &server)
        .complete(&request())
        .await
        .expect("answer");
    let text = answer.structured(&format()).expect("a structured reply");
    let body = server.seen()[0].body.clone();
    (body, serde_json::from_str(&text).expect("JSON"))
}

fn greeting() -> Value {
    json!({"meta": {}, "output": null, "calls": [{"_tool": "greetUser", "userName": "Ada"}]})
}

#[tokio::test]
async fn openai_chat_asks_with_a_json_schema_response_format() {
    let (body, reply) = ask("openai", "openai/structured_reply.json").await;
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": format().schema, "strict": false}})
    );
    assert!(body.get("tools").is_none());
    assert_eq!(reply, greeting());
}

#[tokio::test]
async fn responses_asks_with_a_json_schema_text_format() {
    let (body, reply) = ask("responses", "responses/structured_reply.json").await;
    assert_eq!(
        body["text"],
        json!({"format": {"type": "json_schema", "name": "reply", "schema": format().schema, "strict": false}})
    );
    assert!(body.get("tools").is_none());
    assert_eq!(reply, greeting());
}

#[tokio::test]
async fn gemini_asks_for_json_of_the_schema() {
    let (body, reply) = ask("gemini", "gemini/structured_reply.json").await;
    let generation = &body["generationConfig"];
    assert_eq!(generation["responseMimeType"], "application/json");
    assert_eq!(generation["responseJsonSchema"], format().schema);
    assert!(body.get("tools").is_none());
    assert_eq!(reply, greeting());
}

#[tokio::test]
async fn anthropic_forces_a_tool_whose_input_is_the_reply() {
    let (body, reply) = ask("anthropic", "anthropic/structured_reply.json").await;
    assert_eq!(
        body["tools"],
        json!([{
            "name": "reply",
            "description": "Give your whole reply as this tool's input.",
            "input_schema": format().schema
        }])
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "reply"})
    );
    assert_eq!(reply, greeting());
}

#[tokio::test]
async fn a_strict_openai_model_is_sent_the_schema_in_strict_mode_and_its_nulls_are_lifted() {
    let format = ResponseFormat {
        name: "reply".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "meta": {"type": "object", "properties": {"version": {"type": "string"}}},
                "output": {"type": ["string", "null"]},
                "calls": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"_tool": {"const": "greetUser"}, "userName": {"type": "string"}},
                    "required": ["_tool", "userName"]
                }}
            },
            "required": ["meta", "calls", "output"]
        }),
    };
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/structured_reply_strict.json"),
    )])
    .await;
    let mut config = config("openai", &server);
    config.strict = true;
    let model = toolhost_providers::model_from_config(&config, env).expect("model");
    let answer = model
        .complete(&ModelRequest {
            messages: vec![msg(ChatRole::User, "Say hello to Ada.")],
            response_format: Some(format.clone()),
            ..ModelRequest::default()
        })
        .await
        .expect("answer");
    let body = &server.seen()[0].body;
    let sent = &body["response_format"]["json_schema"];
    assert_eq!(sent["strict"], true);
    // Strict mode: every property required, the optional one nullable, no others allowed.
    let meta = &sent["schema"]["properties"]["meta"];
    assert_eq!(meta["required"], json!(["version"]));
    assert_eq!(meta["additionalProperties"], false);
    // The null strict mode forced for the absent optional `version` is gone again.
    let reply: Value = serde_json::from_str(&answer.structured(&format).unwrap()).unwrap();
    assert_eq!(
        reply,
        json!({"meta": {}, "output": "done", "calls": [{"_tool": "greetUser", "userName": "Ada"}]})
    );
}
