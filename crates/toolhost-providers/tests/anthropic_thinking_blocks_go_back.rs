//! Anthropic Messages: `thinking` and `redacted_thinking` blocks are kept in the reply's
//! continuity, whole or streamed, and lead that assistant turn when it is sent again; a tool
//! result marked as an error carries `is_error`.

mod common;

use common::*;
use serde_json::{json, Value};
use toolhost_providers::{ChatMessage, ChatRole, ModelRequest, ModelResponse, StreamDelta};

fn ask() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "Weather in Oslo and Lima?")],
        tools: vec![weather()],
        ..ModelRequest::default()
    }
}

/// The conversation of the next turn: the reply as stored, one result per call; the last
/// result is an error when `last_fails`.
fn next_turn(answer: &ModelResponse, last_fails: bool) -> ModelRequest {
    let reply = stored_reply(answer);
    let mut messages = vec![msg(ChatRole::User, "Weather in Oslo and Lima?")];
    let count = reply.tool_calls.len();
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let mut r = result(&call.id, "12 C");
        if last_fails && i + 1 == count {
            r.content = Some("error: the weather service timed out".into());
            r.is_error = true;
        }
        messages.push(r);
    }
    messages.insert(1, reply);
    ModelRequest { messages, ..ask() }
}

/// The blocks of a fixture's answer that are kept.
fn kept_in(fixture_path: &str) -> Vec<Value> {
    let answer: Value = serde_json::from_str(&fixture(fixture_path)).expect("json");
    answer["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_thinking_block_is_kept_with_its_signature_and_leads_the_next_turn() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("anthropic/thinking_tool_use.json")),
        Reply::json(200, &fixture("anthropic/text_no_usage.json")),
    ])
    .await;
    let model = dyn_model("anthropic", &server);
    let answer = model.complete(&ask()).await.expect("answer");
    let blocks = kept_in("anthropic/thinking_tool_use.json");
    assert_eq!(blocks.len(), 1);
    assert_eq!(
        answer.continuity,
        Some(json!({"anthropic": {"blocks": blocks}}))
    );
    assert_eq!(
        answer.reasoning.as_deref(),
        Some("The user wants the weather in Oslo. I should call get_weather with the city.")
    );

    model
        .complete(&next_turn(&answer, false))
        .await
        .expect("answer");
    let body = &server.seen()[1].body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            blocks[0],
            {"type": "text", "text": "Let me check the weather in Oslo."},
            {"type": "tool_use", "id": "rt_call_0", "name": "get_weather",
             "input": {"location": "Oslo", "units": "celsius"}}
        ]})
    );
    // A result that is not an error has no is_error key at all.
    assert_eq!(
        body["messages"][2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "rt_call_0", "content": "12 C"}])
    );
}

#[tokio::test]
async fn redacted_thinking_is_kept_in_order_and_an_error_result_is_flagged() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("anthropic/redacted_thinking.json")),
        Reply::json(200, &fixture("anthropic/text_no_usage.json")),
    ])
    .await;
    let model = dyn_model("anthropic", &server);
    let answer = model.complete(&ask()).await.expect("answer");
    let blocks = kept_in("anthropic/redacted_thinking.json");
    assert_eq!(blocks[1]["type"], "redacted_thinking");
    assert_eq!(
        answer.continuity,
        Some(json!({"anthropic": {"blocks": blocks}}))
    );
    assert_eq!(
        answer.reasoning.as_deref(),
        Some("Two cities; one lookup each.")
    );
    assert_eq!(answer.tool_calls.len(), 2);

    model
        .complete(&next_turn(&answer, true))
        .await
        .expect("answer");
    let messages = &server.seen()[1].body["messages"];
    let content = messages[1]["content"].as_array().expect("content");
    assert_eq!(&content[..2], &blocks[..]);
    assert_eq!(content[2]["id"], "rt_call_0");
    assert_eq!(content[3]["id"], "rt_call_1");
    assert_eq!(
        messages[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "rt_call_0", "content": "12 C"},
            {"type": "tool_result", "tool_use_id": "rt_call_1",
             "content": "error: the weather service timed out", "is_error": true}
        ])
    );
}

#[tokio::test]
async fn a_streamed_thinking_block_is_rebuilt_from_its_deltas() {
    let expected = json!({"anthropic": {"blocks": [
        {"type": "thinking", "thinking": "Two cities, so two lookups.",
         "signature": "EqQBCkgIARABGAIiQHN0cmVhbWVkLXNpZ25hdHVyZRIM"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgzTcmVkYWN0ZWQtc3RyZWFtZWQtZGF0YQ=="}
    ]}});
    for piece in [7, 61, 4096] {
        let text = fixture("anthropic/stream_thinking.sse");
        let server = ReplayServer::start(vec![
            Reply::sse(&text, piece),
            Reply::json(200, &fixture("anthropic/text_no_usage.json")),
        ])
        .await;
        let model = dyn_model("anthropic", &server);
        let (answer, deltas) = streamed(model.as_ref(), &ask()).await;
        assert_eq!(answer.continuity.as_ref(), Some(&expected), "piece {piece}");
        assert_eq!(
            answer.reasoning.as_deref(),
            Some("Two cities, so two lookups.")
        );
        let reasoning: String = deltas
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Reasoning(r) => Some(r.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reasoning, "Two cities, so two lookups.");
        assert_eq!(answer.text.as_deref(), Some("Checking two cities."));
        assert_eq!(answer.tool_calls.len(), 2);

        model
            .complete(&next_turn(&answer, false))
            .await
            .expect("answer");
        let content = &server.seen()[1].body["messages"][1]["content"];
        assert_eq!(content[0], expected["anthropic"]["blocks"][0]);
        assert_eq!(content[1], expected["anthropic"]["blocks"][1]);
        assert_eq!(content[2]["type"], "text");
        assert_eq!(content[3]["id"], "rt_call_0");
    }
}

#[tokio::test]
async fn another_api_s_continuity_and_a_turn_of_thinking_alone_send_no_blocks() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("anthropic/text_no_usage.json"),
    )])
    .await;
    let mut from_gemini = calls(&[("rt_call_0", "get_weather", "{\"location\":\"Oslo\"}")]);
    from_gemini.continuity = Some(json!({"gemini": {"calls": ["c2ln"]}}));
    let thinking_only = ChatMessage {
        role: ChatRole::Assistant,
        continuity: Some(json!({"anthropic": {"blocks": [
            {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"}
        ]}})),
        ..ChatMessage::default()
    };
    let request = ModelRequest {
        messages: vec![
            msg(ChatRole::User, "Weather in Oslo?"),
            thinking_only,
            msg(ChatRole::User, "Well?"),
            from_gemini,
            result("rt_call_0", "12 C"),
        ],
        ..ask()
    };
    dyn_model("anthropic", &server)
        .complete(&request)
        .await
        .expect("answer");
    let messages = server.seen()[0].body["messages"].clone();
    // The thinking-only turn is left out, so the two user turns merge.
    assert_eq!(
        messages[0]["content"],
        json!([{"type": "text", "text": "Weather in Oslo?"}, {"type": "text", "text": "Well?"}])
    );
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "tool_use", "id": "rt_call_0", "name": "get_weather",
                "input": {"location": "Oslo"}}])
    );
}
