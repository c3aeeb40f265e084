//! Gemini generateContent: `thoughtSignature`s of a reply are kept in its continuity, by the
//! call's position, whole or streamed, and put back on the matching parts of that model turn.

mod common;

use common::*;
use serde_json::json;
use toolhost_providers::{ChatRole, ModelRequest, ModelResponse};

fn ask() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "Weather in Oslo and Lima?")],
        tools: vec![weather()],
        ..ModelRequest::default()
    }
}

/// The next turn: the reply as stored, then one result per call.
fn next_turn(answer: &ModelResponse) -> ModelRequest {
    let reply = stored_reply(answer);
    let results: Vec<_> = reply
        .tool_calls
        .iter()
        .map(|c| result(&c.id, "{\"temp\": 12}"))
        .collect();
    let mut messages = vec![msg(ChatRole::User, "Weather in Oslo and Lima?"), reply];
    messages.extend(results);
    ModelRequest { messages, ..ask() }
}

#[tokio::test]
async fn a_signed_function_call_gets_its_signature_back_by_position() {
    let server = ReplayServer::start(vec![
        Reply::json(200, &fixture("gemini/thought_signatures.json")),
        Reply::json(200, &fixture("gemini/text_no_usage.json")),
    ])
    .await;
    let model = dyn_model("gemini", &server);
    let answer = model.complete(&ask()).await.expect("answer");
    let first = "CiQB0e2Kb8Jx2mQYcGFyYWxsZWwtY2FsbC1vbmUtc2lnbmF0dXJl";
    // Only the first of the parallel calls is signed; the list ends at the last signed call.
    assert_eq!(
        answer.continuity,
        Some(json!({"gemini": {"calls": [first]}}))
    );
    assert_eq!(answer.reasoning.as_deref(), Some("Both cities at once."));
    assert_eq!(answer.tool_calls.len(), 2);

    model.complete(&next_turn(&answer)).await.expect("answer");
    let contents = &server.seen()[1].body["contents"];
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"location": "Oslo"}, "id": "rt_call_0"},
             "thoughtSignature": first},
            {"functionCall": {"name": "get_weather", "args": {"location": "Lima"}, "id": "rt_call_1"}}
        ]})
    );
}

#[tokio::test]
async fn signatures_arriving_in_later_chunks_are_kept_by_call_position() {
    let expected = json!({"gemini": {"calls": [
        "CiQB0e2Kb3N0cmVhbWVkLWZpcnN0LWNhbGw=",
        "CiQB0e2Kb3N0cmVhbWVkLXNlY29uZC1jYWxs"
    ]}});
    for piece in [9, 80, 4096] {
        let server = ReplayServer::start(vec![
            Reply::sse(&fixture("gemini/stream_thought_signatures.sse"), piece),
            Reply::json(200, &fixture("gemini/text_no_usage.json")),
        ])
        .await;
        let model = dyn_model("gemini", &server);
        let (answer, _) = streamed(model.as_ref(), &ask()).await;
        assert_eq!(answer.continuity.as_ref(), Some(&expected), "piece {piece}");
        assert_eq!(answer.text.as_deref(), Some("Checking two cities."));

        model.complete(&next_turn(&answer)).await.expect("answer");
        let parts = &server.seen()[1].body["contents"][1]["parts"];
        // The text had no signature of its own.
        assert_eq!(parts[0], json!({"text": "Checking two cities."}));
        assert_eq!(parts[1]["functionCall"]["args"]["location"], "Oslo");
        assert_eq!(parts[1]["thoughtSignature"], expected["gemini"]["calls"][0]);
        assert_eq!(parts[2]["functionCall"]["args"]["location"], "Lima");
        assert_eq!(parts[2]["thoughtSignature"], expected["gemini"]["calls"][1]);
    }
}

#[tokio::test]
async fn a_text_signature_from_the_last_chunk_goes_back_on_the_text() {
    let server = ReplayServer::start(vec![
        Reply::sse(&fixture("gemini/stream_text_signature.sse"), 33),
        Reply::json(200, &fixture("gemini/text_no_usage.json")),
    ])
    .await;
    let model = dyn_model("gemini", &server);
    let (answer, _) = streamed(model.as_ref(), &ask()).await;
    let signature = "CiQB0e2Kb3RleHQtc2lnbmF0dXJlLWxhc3QtY2h1bms=";
    assert_eq!(
        answer.continuity,
        Some(json!({"gemini": {"text": signature}}))
    );
    assert_eq!(answer.text.as_deref(), Some("Oslo is 12 C and clear."));

    let mut request = next_turn(&answer);
    request.messages.push(msg(ChatRole::User, "And tomorrow?"));
    model.complete(&request).await.expect("answer");
    assert_eq!(
        server.seen()[1].body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Oslo is 12 C and clear.", "thoughtSignature": signature}
        ]})
    );
}

#[tokio::test]
async fn another_api_s_continuity_puts_no_signature_on_the_parts() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("gemini/text_no_usage.json"),
    )])
    .await;
    let mut reply = calls(&[("rt_call_0", "get_weather", "{\"location\":\"Oslo\"}")]);
    reply.content = Some("Looking.".into());
    reply.continuity = Some(json!({"anthropic": {"blocks": [
        {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"}
    ]}}));
    let request = ModelRequest {
        messages: vec![
            msg(ChatRole::User, "Weather in Oslo?"),
            reply,
            result("rt_call_0", "{\"temp\": 12}"),
        ],
        ..ask()
    };
    dyn_model("gemini", &server)
        .complete(&request)
        .await
        .expect("answer");
    assert_eq!(
        server.seen()[0].body["contents"][1]["parts"],
        json!([
            {"text": "Looking."},
            {"functionCall": {"name": "get_weather", "args": {"location": "Oslo"}, "id": "rt_call_0"}}
        ])
    );
}
