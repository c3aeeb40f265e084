//! OpenAI Responses API: the reasoning items of turn N are stored in the reply's continuity and
//! sent back in turn N+1, in the reply's order, each before the function call it led to, under
//! the wire's call ids whatever ids the runtime gave the calls; a model built anew (a restart)
//! sends the same, since nothing is cached. A turn of reasoning alone is left out.
//! `previous_response_id` is an opt-in.

mod common;

use common::*;
use serde_json::{json, Value};
use toolhost_providers::{ChatRole, HttpModel, Model, ModelRequest, ModelResponse};

fn ask() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "Weather in Oslo and Lima?")],
        tools: vec![weather()],
        ..ModelRequest::default()
    }
}

/// The next turn's conversation: the reply as stored (runtime ids, JSON round trip), a result
/// per call.
fn next_turn(answer: &ModelResponse) -> ModelRequest {
    let reply = stored_reply(answer);
    let mut messages = ask().messages;
    let results: Vec<_> = reply
        .tool_calls
        .iter()
        .zip(["12 C", "19 C"])
        .map(|(c, t)| result(&c.id, t))
        .collect();
    messages.push(reply);
    messages.extend(results);
    ModelRequest { messages, ..ask() }
}

fn output_of(path: &str) -> Vec<Value> {
    let whole: Value = serde_json::from_str(&fixture(path)).expect("json");
    whole["output"].as_array().expect("output").clone()
}

/// What the model must see of turn 1's reply in turn 2, for a reply with `output`.
fn expected_input(output: &[Value]) -> Value {
    let call = |item: &Value| {
        json!({"type": "function_call", "call_id": item["call_id"], "name": "get_weather",
               "arguments": item["arguments"], "id": item["id"]})
    };
    json!([
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo and Lima?"}]},
        output[0], call(&output[1]), output[2], call(&output[3]),
        {"type": "function_call_output", "call_id": output[1]["call_id"], "output": "12 C"},
        {"type": "function_call_output", "call_id": output[3]["call_id"], "output": "19 C"}
    ])
}

#[tokio::test]
async fn reasoning_items_lead_their_calls_in_the_next_turn_even_after_a_restart() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("responses/reasoning_function_calls.json")),
        Reply::json(200, &fixture("responses/text.json")),
    ])
    .await;
    let answer = dyn_model("responses", &server)
        .complete(&ask())
        .await
        .expect("answer");
    let turn_two = next_turn(&answer);
    // The runtime's own ids, not the wire's, are what the conversation carries.
    assert_eq!(turn_two.messages[1].tool_calls[0].id, "rt_call_0");
    // A model built anew, as after a restart: only the stored reply carries the items.
    let restarted = HttpModel::new(&config("responses", &server), env).expect("model");
    let last = restarted.complete(&turn_two).await.expect("answer");
    assert_eq!(last.text.as_deref(), Some("Oslo 12 C, Lima 19 C."));
    let body = &server.seen()[1].body;
    let output = output_of("responses/reasoning_function_calls.json");
    assert_eq!(body["input"], expected_input(&output));
    assert_eq!(body["store"], false);
    assert!(body.get("previous_response_id").is_none());
}

#[tokio::test]
async fn streamed_reasoning_items_go_back_the_same_way() {
    let server = ReplayServer::start(vec![
        Reply::sse(&fixture("responses/stream_function_calls.sse"), 29),
        Reply::json(200, &fixture("responses/text.json")),
    ])
    .await;
    let model = dyn_model("responses", &server);
    let (answer, _) = streamed(model.as_ref(), &ask()).await;
    model.complete(&next_turn(&answer)).await.expect("answer");
    let input = server.seen()[1].body["input"].clone();
    let kinds: Vec<&str> = input
        .as_array()
        .expect("input")
        .iter()
        .map(|i| i["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    assert_eq!(
        input[1]["encrypted_content"],
        "gAAAAABoocExU3RyZWFtZWQtcmVhc29uaW5n"
    );
    assert_eq!(
        input[2],
        json!({"role": "assistant", "content": "Checking two cities."})
    );
    assert_eq!(input[3]["call_id"], "call_Ab12Cd34Ef56Gh78Ij90Kl12");
    assert_eq!(input[6]["call_id"], "call_Mn34Op56Qr78St90Uv12Wx34");
}

#[tokio::test]
async fn previous_response_id_is_an_opt_in_that_sends_only_what_followed() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("responses/reasoning_function_calls.json")),
        Reply::json(200, &fixture("responses/text.json")),
    ])
    .await;
    let mut c = config("responses", &server);
    c.settings
        .insert("previous_response_id".into(), Value::Bool(true));
    let model = HttpModel::new(&c, env).expect("model");
    let answer = model.complete(&ask()).await.expect("answer");
    model.complete(&next_turn(&answer)).await.expect("answer");
    let seen = server.seen();
    assert_eq!(seen[0].body["store"], true);
    assert!(seen[0].body.get("previous_response_id").is_none());
    let body = &seen[1].body;
    assert_eq!(body["store"], true);
    assert_eq!(
        body["previous_response_id"],
        "resp_68a1c0e2f4b88190a1b2c3d4e5f60718"
    );
    assert_eq!(
        body["input"],
        json!([
            {"type": "function_call_output", "call_id": "call_Xq3Rk9Wm2Lp8Tz4Vb7Nc1Yd0", "output": "12 C"},
            {"type": "function_call_output", "call_id": "call_Pm5Hs8Jk1Qw4Er7Ty2Ui9Op3", "output": "19 C"}
        ])
    );
    // The opt-in must be a switch, not anything else.
    c.settings
        .insert("previous_response_id".into(), Value::from("yes"));
    let error = HttpModel::new(&c, env).unwrap_err().to_string();
    assert!(error.contains("setting previous_response_id"), "{error}");
}

#[tokio::test]
async fn a_reply_of_another_api_goes_back_as_text_and_calls_under_its_own_ids() {
    let server = ReplayServer::start(vec![Reply::json(200, &fixture("responses/text.json"))]).await;
    let mut reply = calls(&[("toolu_01", "get_weather", "{\"location\":\"Oslo\"}")]);
    reply.content = Some("Looking.".into());
    reply.continuity = Some(json!({"anthropic": {"blocks": [
        {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"}
    ]}}));
    let request = ModelRequest {
        messages: vec![
            msg(ChatRole::User, "Weather in Oslo?"),
            reply,
            result("toolu_01", "12 C"),
        ],
        ..ask()
    };
    dyn_model("responses", &server)
        .complete(&request)
        .await
        .expect("answer");
    assert_eq!(
        server.seen()[0].body["input"],
        json!([
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo?"}]},
            {"role": "assistant", "content": "Looking."},
            {"type": "function_call", "call_id": "toolu_01", "name": "get_weather",
             "arguments": "{\"location\":\"Oslo\"}"},
            {"type": "function_call_output", "call_id": "toolu_01", "output": "12 C"}
        ])
    );
}

#[tokio::test]
async fn a_turn_of_reasoning_alone_is_left_out() {
    let server = ReplayServer::start(vec![Reply::json(200, &fixture("responses/text.json"))]).await;
    let mut cut = msg(ChatRole::Assistant, "");
    cut.content = None;
    cut.continuity = Some(json!({"responses": {"output": [
        {"id": "rs_cut", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAABcut"}
    ]}}));
    let request = ModelRequest {
        messages: vec![
            msg(ChatRole::User, "Weather in Oslo?"),
            cut,
            msg(ChatRole::User, "Go on."),
        ],
        ..ask()
    };
    dyn_model("responses", &server)
        .complete(&request)
        .await
        .expect("answer");
    let input = server.seen()[0].body["input"].clone();
    assert_eq!(input.as_array().map(Vec::len), Some(2), "{input}");
    assert_eq!(input[1]["content"][0]["text"], "Go on.");
}
