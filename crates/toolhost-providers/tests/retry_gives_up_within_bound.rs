//! Retries stop at the policy's bound with one clear line; refusals are never retried.

mod common;

use common::*;
use toolhost_providers::{ChatRole, ModelApi, ModelErrorKind, ModelRequest};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "hi")],
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn gives_up_after_the_last_attempt_naming_api_status_and_message() {
    let overloaded = Reply::json(529, &fixture("anthropic/error_overloaded.json"));
    let server = ReplayServer::start(vec![
        overloaded.clone(),
        overloaded.clone(),
        overloaded.clone(),
        overloaded,
    ])
    .await;
    let error = dyn_model("anthropic", &server)
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(server.seen().len(), 3, "max_attempts is 3");
    assert_eq!(error.kind(), ModelErrorKind::Overloaded, "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(
            "Anthropic Messages: HTTP 529: Overloaded (overloaded_error); gave up after 3 attempts"
        ),
        "{message}"
    );
    assert!(!message.contains('\n'));
}

#[tokio::test]
async fn a_retry_after_beyond_the_budget_ends_the_retries_at_once() {
    let server = ReplayServer::start(vec![
        Reply::json(429, &fixture("gemini/error_resource_exhausted.json"))
            .with_header("retry-after", "3600"),
        Reply::json(200, &fixture("gemini/text_no_usage.json")),
    ])
    .await;
    // No clock is read: that the request was not sent again, and the error says why, is the
    // proof that the hour was not waited.
    let error = dyn_model("gemini", &server)
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(server.seen().len(), 1);
    let text = error.to_string();
    assert!(
        text.contains("Gemini generateContent: HTTP 429: Resource has been exhausted"),
        "{text}"
    );
    assert!(text.contains("would pass the retry budget"), "{text}");
}

#[tokio::test]
async fn a_refused_request_is_not_retried() {
    let server = ReplayServer::start(vec![
        Reply::json(400, &fixture("gemini/error_invalid_argument.json")),
        Reply::json(200, &fixture("gemini/text_no_usage.json")),
    ])
    .await;
    let error = dyn_model("gemini", &server)
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(server.seen().len(), 1);
    assert_eq!(error.kind(), ModelErrorKind::BadRequest);
    assert_eq!(
        error.to_string(),
        "Gemini generateContent: HTTP 400: Invalid JSON payload received. Unknown name \"foo\" at 'generation_config': Cannot find field. (INVALID_ARGUMENT)"
    );
}

#[tokio::test]
async fn a_refused_connection_is_transient_and_bounded() {
    // Bind then drop a listener: its port now refuses connections.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let mut config = toolhost_providers::ModelConfig::new("openai-compatible", "m");
    config.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    config.retry.max_attempts = 2;
    config.retry.initial_backoff_ms = 10;
    let model = toolhost_providers::model_from_config(&config, |_| None).expect("model");
    let error = model.complete(&request()).await.unwrap_err();
    assert_eq!(
        (error.api(), error.kind(), error.status()),
        (ModelApi::OpenAiChat, ModelErrorKind::Transient, None),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("OpenAI chat completions: connection failed"),
        "{message}"
    );
    assert!(message.contains("gave up after 2 attempts"), "{message}");
}
