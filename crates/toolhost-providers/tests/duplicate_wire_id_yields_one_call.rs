//! A response that repeats a call id yields that call once (the first wins), and an id that
//! repeats one of the conversation is made unique, so an id names one call in a thread.

mod common;

use common::*;
use toolhost_providers::{ChatRole, ModelRequest};

#[tokio::test]
async fn a_repeated_id_is_one_call_and_ids_from_history_are_not_reused() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/duplicate_ids.json"),
    )])
    .await;
    let request = ModelRequest {
        messages: vec![
            msg(ChatRole::User, "Weather?"),
            // A server that numbers calls anew each turn issued call_1 before.
            calls(&[("call_1", "get_weather", "{\"location\":\"Oslo\"}")]),
            result("call_1", "12 C"),
        ],
        tools: vec![weather()],
        ..ModelRequest::default()
    };
    let answer = dyn_model("openai-compatible", &server)
        .complete(&request)
        .await
        .expect("answer");
    let ids: Vec<&str> = answer.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, vec!["call_0", "call_1_2"]);
    assert_eq!(answer.tool_calls[0].arguments, "{\"location\": \"Bergen\"}");
    assert_eq!(answer.tool_calls[1].arguments, "{\"location\": \"Tromso\"}");
}
