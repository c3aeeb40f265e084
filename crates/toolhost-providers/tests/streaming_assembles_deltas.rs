//! Streaming over server-sent events: each API's stream, cut into pieces of any size, gives the
//! same deltas and the same assembled answer.

mod common;

use common::*;
use std::sync::{Arc, Mutex};
use toolhost_providers::{ChatRole, FinishReason, ModelRequest, ModelResponse, StreamDelta, Usage};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "Weather in Oslo and Lima?")],
        tools: vec![weather()],
        ..ModelRequest::default()
    }
}

async fn stream(
    provider: &str,
    fixture_path: &str,
    piece: usize,
) -> (ModelResponse, Vec<StreamDelta>, Seen) {
    let server = ReplayServer::start(vec![Reply::sse(&fixture(fixture_path), piece)]).await;
    let model = dyn_model(provider, &server);
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let log = deltas.clone();
    let sink = move |d: StreamDelta| log.lock().expect("lock").push(d);
    let answer = model
        .complete_streaming(&request(), &sink)
        .await
        .expect("answer");
    let deltas = deltas.lock().expect("lock").clone();
    (answer, deltas, server.seen().remove(0))
}

/// Text deltas joined, and each call's argument fragments joined, by index.
fn joined(deltas: &[StreamDelta]) -> (String, Vec<(usize, String, String, String)>) {
    let mut text = String::new();
    let mut calls: Vec<(usize, String, String, String)> = Vec::new();
    for d in deltas {
        match d {
            StreamDelta::Text(t) => text.push_str(t),
            StreamDelta::ToolCallStarted { index, id, name } => {
                calls.push((*index, id.clone(), name.clone(), String::new()))
            }
            StreamDelta::ToolCallArguments {
                index,
                id,
                fragment,
            } => {
                let call = calls
                    .iter_mut()
                    .find(|c| c.0 == *index)
                    .expect("started first");
                assert_eq!(&call.1, id);
                call.3.push_str(fragment);
            }
            _ => {}
        }
    }
    (text, calls)
}

fn check(answer: &ModelResponse, deltas: &[StreamDelta], usage: Usage) {
    assert_eq!(answer.text.as_deref(), Some("Checking two cities."));
    assert_eq!(answer.finish, FinishReason::ToolCalls);
    assert_eq!(answer.usage, usage);
    let args: Vec<String> = answer
        .tool_calls
        .iter()
        .map(|c| {
            serde_json::from_str::<serde_json::Value>(&c.arguments).expect("json")["location"]
                .to_string()
        })
        .collect();
    assert_eq!(args, vec!["\"Oslo\"", "\"Lima\""]);
    let (text, calls) = joined(deltas);
    assert_eq!(text, "Checking two cities.");
    assert_eq!(calls.len(), 2);
    for (i, call) in calls.iter().enumerate() {
        assert_eq!(call.0, i);
        assert_eq!(call.1, answer.tool_calls[i].id);
        assert_eq!(call.2, "get_weather");
        assert_eq!(call.3, answer.tool_calls[i].arguments);
    }
}

#[tokio::test]
async fn openai_chunks_with_tool_call_argument_deltas() {
    for piece in [1, 7, 64, 100_000] {
        let (answer, deltas, seen) = stream("openai", "openai/stream_tool_calls.sse", piece).await;
        assert_eq!(seen.body["stream"], true);
        assert_eq!(seen.body["stream_options"]["include_usage"], true);
        check(
            &answer,
            &deltas,
            Usage {
                input_tokens: Some(88),
                output_tokens: Some(40),
            },
        );
        assert_eq!(answer.tool_calls[0].id, "call_Aa11");
        assert_eq!(answer.tool_calls[1].id, "call_Bb22");
    }
}

#[tokio::test]
async fn anthropic_events_with_input_json_deltas() {
    for piece in [1, 7, 64, 100_000] {
        let (answer, deltas, seen) =
            stream("anthropic", "anthropic/stream_tool_use.sse", piece).await;
        assert_eq!(seen.body["stream"], true);
        check(
            &answer,
            &deltas,
            Usage {
                input_tokens: Some(410),
                output_tokens: Some(40),
            },
        );
        assert_eq!(answer.reasoning.as_deref(), Some("Need the weather."));
        assert!(deltas.contains(&StreamDelta::Reasoning("Need the weather.".into())));
        assert_eq!(answer.tool_calls[0].id, "toolu_01Aa");
    }
}

#[tokio::test]
async fn gemini_sse_chunks_with_function_calls() {
    for piece in [1, 7, 64, 100_000] {
        let (answer, deltas, seen) =
            stream("gemini", "gemini/stream_function_calls.sse", piece).await;
        assert_eq!(
            seen.path,
            "/models/test-model:streamGenerateContent?alt=sse"
        );
        check(
            &answer,
            &deltas,
            Usage {
                input_tokens: Some(70),
                output_tokens: Some(40),
            },
        );
    }
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_as_a_whole_answer() {
    let server = ReplayServer::start(vec![Reply::json(
        200,
        &fixture("openai/text_no_usage.json"),
    )])
    .await;
    let model = dyn_model("openai", &server);
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let log = deltas.clone();
    let sink = move |d: StreamDelta| log.lock().expect("lock").push(d);
    let answer = model
        .complete_streaming(&request(), &sink)
        .await
        .expect("answer");
    assert_eq!(answer.text.as_deref(), Some("It is 12 degrees in Oslo."));
    assert_eq!(
        deltas.lock().expect("lock").as_slice(),
        &[StreamDelta::Text("It is 12 degrees in Oslo.".into())]
    );
}
