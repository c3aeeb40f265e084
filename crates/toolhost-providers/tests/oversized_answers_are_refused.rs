//! A model server cannot grow memory without bound: a whole body, one line or event of a
//! stream, all the bytes of a stream, and the reply put together from it each have a limit
//! (`limits` of the definition). Past one, the answer fails with a `TooLarge` error that names
//! the limit and its field, and it is not retried.

mod common;

use common::*;
use std::sync::{Arc, Mutex};
use toolhost_providers::{
    ChatRole, HttpModel, Limits, Model, ModelError, ModelErrorKind, ModelRequest, StreamDelta,
};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "hi")],
        ..ModelRequest::default()
    }
}

fn limited(provider: &str, server: &ReplayServer, limits: Limits) -> HttpModel {
    let mut c = config(provider, server);
    c.limits = limits;
    HttpModel::new(&c, env).expect("model")
}

async fn streamed_error(model: &HttpModel) -> (ModelError, Vec<StreamDelta>) {
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let log = deltas.clone();
    let sink = move |d: StreamDelta| log.lock().expect("lock").push(d);
    let error = model
        .complete_streaming(&request(), &sink)
        .await
        .unwrap_err();
    let deltas = deltas.lock().expect("lock").clone();
    (error, deltas)
}

/// A stream of OpenAI chunks, each adding `piece` to the text.
fn text_chunks(piece: &str, count: usize) -> String {
    let chunk = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{piece}\"}},\"finish_reason\":null}}]}}\n\n"
    );
    chunk.repeat(count) + "data: [DONE]\n\n"
}

#[tokio::test]
async fn a_body_past_the_limit_is_refused_with_or_without_a_length() {
    let big = format!(
        "{{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}],\"stop_reason\":\"end_turn\"}}",
        "x".repeat(4096)
    );
    let chunked = Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: Body::Pieces(vec![big.as_bytes().to_vec(); 64]),
    };
    // An error status would be retried; its oversized body is not.
    let error_body = Reply::json(500, &big);
    for reply in [Reply::json(200, &big), chunked, error_body] {
        let server = ReplayServer::start(vec![reply, Reply::json(200, "{}")]).await;
        let limits = Limits {
            max_body_bytes: 1024,
            ..Limits::default()
        };
        let error = limited("anthropic", &server, limits)
            .complete(&request())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ModelErrorKind::TooLarge, "{error:?}");
        assert!(!error.is_retryable());
        assert_eq!(server.seen().len(), 1, "not retried");
        assert_eq!(
            error.to_string(),
            "Anthropic Messages: the answer's body passed the limit of 1024 bytes (limits.maxBodyBytes)"
        );
    }
}

#[tokio::test]
async fn a_stream_line_that_never_ends_is_refused() {
    let endless = format!("data: {}", "y".repeat(64 * 1024));
    let server =
        ReplayServer::start(vec![Reply::sse(&endless, 1000), Reply::json(200, "{}")]).await;
    let limits = Limits {
        max_event_bytes: 4096,
        ..Limits::default()
    };
    let (error, _) = streamed_error(&limited("openai", &server, limits)).await;
    assert_eq!(error.kind(), ModelErrorKind::TooLarge, "{error:?}");
    assert_eq!(server.seen().len(), 1);
    assert_eq!(
        error.to_string(),
        "OpenAI chat completions: one line of the streamed answer passed the limit of 4096 bytes (limits.maxEventBytes)"
    );
}

#[tokio::test]
async fn an_event_of_many_short_lines_is_refused() {
    let event = "data: 0123456789\n".repeat(1000) + "\n";
    let server = ReplayServer::start(vec![Reply::sse(&event, 500)]).await;
    let limits = Limits {
        max_event_bytes: 4096,
        ..Limits::default()
    };
    let (error, _) = streamed_error(&limited("openai", &server, limits)).await;
    assert_eq!(
        error.to_string(),
        "OpenAI chat completions: one event of the streamed answer passed the limit of 4096 bytes (limits.maxEventBytes)"
    );
}

#[tokio::test]
async fn endless_keep_alives_are_bounded_like_text() {
    let pings = ": keep-alive\n\n".repeat(2000);
    let server = ReplayServer::start(vec![Reply::sse(&pings, 700)]).await;
    let limits = Limits {
        max_body_bytes: 8192,
        ..Limits::default()
    };
    let (error, _) = streamed_error(&limited("openai", &server, limits)).await;
    assert_eq!(error.kind(), ModelErrorKind::TooLarge, "{error:?}");
    assert_eq!(
        error.to_string(),
        "OpenAI chat completions: the streamed answer passed the limit of 8192 bytes (limits.maxBodyBytes)"
    );
}

#[tokio::test]
async fn a_reply_assembled_past_the_limit_is_refused() {
    let server = ReplayServer::start(vec![Reply::sse(&text_chunks("abcdefghij", 500), 900)]).await;
    let limits = Limits {
        max_answer_bytes: 2048,
        ..Limits::default()
    };
    let (error, deltas) = streamed_error(&limited("openai", &server, limits)).await;
    assert_eq!(error.kind(), ModelErrorKind::TooLarge, "{error:?}");
    assert_eq!(server.seen().len(), 1);
    assert_eq!(
        error.to_string(),
        "OpenAI chat completions: the reply put together from the answer passed the limit of 2048 bytes (limits.maxAnswerBytes)"
    );
    // It stopped at the limit rather than reading the rest.
    let text: usize = deltas
        .iter()
        .map(|d| match d {
            StreamDelta::Text(t) => t.len(),
            _ => 0,
        })
        .sum();
    assert!((2048..2048 + 10 + 1).contains(&text), "{text}");

    // The same answer within the limits is read whole.
    let server = ReplayServer::start(vec![Reply::sse(&text_chunks("abcdefghij", 500), 900)]).await;
    let answer = limited("openai", &server, Limits::default())
        .complete_streaming(&request(), &|_| {})
        .await
        .expect("answer");
    assert_eq!(answer.text.map(|t| t.len()), Some(5000));
}
