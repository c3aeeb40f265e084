//! OpenAI Responses API: the API's error objects, answered with an HTTP status or inside a
//! stream (`error` events, `response.failed`), become typed model errors: rate limits with
//! the wait asked for, context length, and invalid requests naming the parameter.

mod common;

use common::*;
use std::time::Duration;
use toolhost_providers::{
    ChatRole, HttpModel, Model, ModelError, ModelErrorKind, ModelRequest, RetryPolicy,
};

fn ask() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "Weather in Oslo?")],
        tools: vec![weather()],
        ..ModelRequest::default()
    }
}

/// A Responses model at the server that tries once.
fn once(server: &ReplayServer) -> HttpModel {
    let mut c = config("responses", server);
    c.retry = RetryPolicy {
        max_attempts: 1,
        ..c.retry
    };
    HttpModel::new(&c, env).expect("model")
}

async fn whole_error(reply: Reply) -> ModelError {
    let server = ReplayServer::start(vec![reply]).await;
    once(&server).complete(&ask()).await.unwrap_err()
}

async fn stream_error(path: &str) -> ModelError {
    let server = ReplayServer::start(vec![Reply::sse(&fixture(path), 40)]).await;
    let sink = |_| {};
    once(&server)
        .complete_streaming(&ask(), &sink)
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_rate_limit_is_typed_with_the_wait_the_server_asked_for() {
    let error = whole_error(
        Reply::json(429, &fixture("responses/error_rate_limit.json"))
            .with_header("retry-after-ms", "210"),
    )
    .await;
    assert_eq!(error.kind(), ModelErrorKind::RateLimit);
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.retry_after(), Some(Duration::from_millis(210)));
    assert!(error
        .to_string()
        .starts_with("OpenAI Responses: HTTP 429: Rate limit reached"));
}

#[tokio::test]
async fn a_long_input_is_a_context_length_error() {
    let error = whole_error(Reply::json(
        400,
        &fixture("responses/error_context_length.json"),
    ))
    .await;
    assert_eq!(error.kind(), ModelErrorKind::ContextLength);
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn an_invalid_request_names_its_parameter() {
    let error = whole_error(Reply::json(
        400,
        &fixture("responses/error_invalid_parameter.json"),
    ))
    .await;
    assert_eq!(error.kind(), ModelErrorKind::BadRequest);
    assert_eq!(
        error.to_string(),
        "OpenAI Responses: HTTP 400: Unsupported parameter: 'temperature' is not supported with this model. (invalid_request_error) [parameter temperature]"
    );
}

#[tokio::test]
async fn errors_inside_a_stream_are_typed_by_their_code() {
    let failed = stream_error("responses/stream_failed.sse").await;
    assert_eq!(failed.kind(), ModelErrorKind::RateLimit);
    assert_eq!(failed.status(), None);
    assert!(failed.message().contains("Rate limit reached"), "{failed}");
    let event = stream_error("responses/stream_error.sse").await;
    assert_eq!(event.kind(), ModelErrorKind::ContextLength);
    assert_eq!(
        event.message(),
        "error in the stream: Your input exceeds the context window of this model. (context_length_exceeded) [parameter input]"
    );
}

#[tokio::test]
async fn a_stream_cut_before_its_last_event_is_transient() {
    let text = fixture("responses/stream_function_calls.sse");
    let keep = text.find("event: response.completed").expect("last event");
    let server = ReplayServer::start(vec![Reply::cut_sse(&text, keep)]).await;
    let sink = |_| {};
    let error = once(&server)
        .complete_streaming(&ask(), &sink)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ModelErrorKind::Transient);
}

#[tokio::test]
async fn a_whole_answer_whose_status_is_failed_is_typed_by_its_error() {
    // A 200 whose response failed: typed by its `error` like `response.failed` in a stream,
    // never taken for a malformed answer.
    let failed = r#"{"id":"resp_1","object":"response","status":"failed","output":[],"error":{"code":"server_error","message":"The model had an internal error."}}"#;
    let error = whole_error(Reply::json(200, failed)).await;
    assert_eq!(error.kind(), ModelErrorKind::Transient);
    assert!(error.is_retryable());
    assert!(
        error
            .to_string()
            .contains("the response failed: The model had an internal error."),
        "{error}"
    );
    let limited = r#"{"id":"resp_2","object":"response","status":"failed","output":[],"error":{"code":"rate_limit_exceeded","message":"Rate limit reached."}}"#;
    assert_eq!(
        whole_error(Reply::json(200, limited)).await.kind(),
        ModelErrorKind::RateLimit
    );
}
