//! A stream cut before its end is a transient failure: tried again, and the consumer is told
//! to drop the partial deltas.

mod common;

use common::*;
use std::sync::{Arc, Mutex};
use toolhost_providers::{ChatRole, ModelError, ModelErrorKind, ModelRequest, StreamDelta};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "Weather in Oslo and Lima?")],
        tools: vec![weather()],
        ..ModelRequest::default()
    }
}

async fn run(
    provider: &str,
    path: &str,
    keep: usize,
    replies_after: usize,
) -> (
    Result<toolhost_providers::ModelResponse, ModelError>,
    Vec<StreamDelta>,
    usize,
) {
    let text = fixture(path);
    let mut replies = vec![Reply::cut_sse(&text, keep)];
    replies.extend(std::iter::repeat_n(Reply::sse(&text, 64), replies_after));
    let server = ReplayServer::start(replies).await;
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let log = deltas.clone();
    let sink = move |d: StreamDelta| log.lock().expect("lock").push(d);
    let result = dyn_model(provider, &server)
        .complete_streaming(&request(), &sink)
        .await;
    let deltas = deltas.lock().expect("lock").clone();
    (result, deltas, server.seen().len())
}

#[tokio::test]
async fn each_api_s_cut_stream_is_retried_and_then_whole() {
    for (provider, path) in [
        ("openai", "openai/stream_tool_calls.sse"),
        ("anthropic", "anthropic/stream_tool_use.sse"),
        ("gemini", "gemini/stream_function_calls.sse"),
    ] {
        let keep = fixture(path).len() * 2 / 3;
        let (result, deltas, requests) = run(provider, path, keep, 1).await;
        let answer = result.unwrap_or_else(|e| panic!("{provider}: {e}"));
        assert_eq!(requests, 2, "{provider}");
        assert_eq!(answer.tool_calls.len(), 2, "{provider}");
        let restart = deltas
            .iter()
            .position(|d| matches!(d, StreamDelta::Restarted { attempt: 2, .. }))
            .unwrap_or_else(|| panic!("{provider}: no restart in {deltas:?}"));
        // After the restart the whole answer is reported again from its start.
        let after: String = deltas[restart..]
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(after, "Checking two cities.", "{provider}");
    }
}

#[tokio::test]
async fn a_stream_cut_every_time_gives_up_with_a_clear_error() {
    let (result, _, requests) = run("anthropic", "anthropic/stream_tool_use.sse", 300, 0).await;
    assert_eq!(requests, 3);
    let error = result.unwrap_err();
    let text = error.to_string();
    assert_eq!(error.kind(), ModelErrorKind::Transient);
    assert!(text.starts_with("Anthropic Messages: "), "{text}");
    assert!(text.contains("gave up after 3 attempts"), "{text}");
}
