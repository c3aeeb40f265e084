//! Anthropic refuses a request when a property key of a tool's input schema falls outside
//! `^[a-zA-Z0-9_.-]{1,64}$`. Such keys are renamed in the declaration (at every depth, in
//! `required` too) and in earlier calls sent back, and the model's calls, which use the renamed
//! keys, come back with the tool's own keys, whole and streamed. Replayed wire payloads.

mod common;

use common::*;
use serde_json::{json, Value};
use toolhost_core::ToolDefinition;
use toolhost_providers::{ChatRole, ModelRequest};

/// A tool with keys real tool sets have: accents, brackets, a `$`, a nested repeat, a record.
fn find_vehicles() -> ToolDefinition {
    tool(
        "find_vehicles",
        json!({
            "type": "object",
            "properties": {
                "año_vehiculo": {"type": "integer"},
                "filter[id]": {"type": "string"},
                "$top": {"type": "integer"},
                "where": {
                    "type": "object",
                    "properties": {"$top": {"type": "integer"}, "precio máx": {"type": "number"}},
                    "required": ["$top"]
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            },
            "required": ["año_vehiculo", "filter[id]"],
            "additionalProperties": false
        }),
    )
}

/// The call as the tool declares it.
fn original_arguments() -> Value {
    json!({
        "año_vehiculo": 2019,
        "filter[id]": "A-7",
        "$top": 5,
        "where": {"$top": 2, "precio máx": 9000},
        "labels": {"_top": "kept"}
    })
}

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![
            msg(ChatRole::User, "Vehicles of 2019?"),
            calls(&[(
                "toolu_prev",
                "find_vehicles",
                &original_arguments().to_string(),
            )]),
            result("toolu_prev", "none yet"),
            msg(ChatRole::User, "Try again."),
        ],
        tools: vec![find_vehicles()],
        ..ModelRequest::default()
    }
}

fn check_request(body: &Value) {
    let schema = &body["tools"][0]["input_schema"];
    let keys: Vec<&str> = schema["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["ano_vehiculo", "filter_id_", "_top", "where", "labels"]
    );
    assert_eq!(schema["required"], json!(["ano_vehiculo", "filter_id_"]));
    let inner = &schema["properties"]["where"];
    assert_eq!(inner["required"], json!(["_top"]));
    assert!(inner["properties"]["precio_max"].is_object(), "{inner}");
    // The earlier call goes back under the keys the model was shown.
    let earlier = &body["messages"][1]["content"][0];
    assert_eq!(earlier["type"], "tool_use");
    assert_eq!(
        earlier["input"],
        json!({
            "ano_vehiculo": 2019,
            "filter_id_": "A-7",
            "_top": 5,
            "where": {"_top": 2, "precio_max": 9000},
            "labels": {"_top": "kept"}
        })
    );
}

fn arguments(text: &str) -> Value {
    serde_json::from_str(text).expect("arguments are JSON")
}

#[tokio::test]
async fn a_whole_answer_comes_back_with_the_tool_s_own_keys() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("anthropic/tool_use_renamed_keys.json"),
    )])
    .await;
    let answer = dyn_model("anthropic", &server)
        .complete(&request())
        .await
        .expect("answer");
    check_request(&server.seen()[0].body);
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].name, "find_vehicles");
    assert_eq!(
        arguments(&answer.tool_calls[0].arguments),
        original_arguments()
    );
}

#[tokio::test]
async fn a_streamed_answer_comes_back_with_the_tool_s_own_keys() {
    let server = ReplayServer::start(vec![Reply::sse(
        &fixture("anthropic/stream_tool_use_renamed_keys.sse"),
        70,
    )])
    .await;
    let model = dyn_model("anthropic", &server);
    let (answer, _) = streamed(model.as_ref(), &request()).await;
    check_request(&server.seen()[0].body);
    assert_eq!(
        arguments(&answer.tool_calls[0].arguments),
        original_arguments()
    );
}

#[tokio::test]
async fn apis_that_take_any_key_get_the_keys_as_they_are() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/text_no_usage.json"),
    )])
    .await;
    dyn_model("openai", &server)
        .complete(&request())
        .await
        .expect("answer");
    let body = &server.seen()[0].body;
    let parameters = &body["tools"][0]["function"]["parameters"];
    assert!(
        parameters["properties"]["año_vehiculo"].is_object(),
        "{parameters}"
    );
    assert_eq!(
        parameters["required"],
        json!(["año_vehiculo", "filter[id]"])
    );
}
