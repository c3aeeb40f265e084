//! A server's wait is clamped to `MAX_SERVER_WAIT` in every form it can be asked for
//! (`Retry-After` seconds or HTTP date, `retry-after-ms`, Gemini's `RetryInfo`): an absurd one
//! ends the retries with an error naming the limit, never a panic or an overflowed clock.

mod common;

use common::*;
use toolhost_providers::{ChatRole, ModelErrorKind, ModelRequest, MAX_SERVER_WAIT};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "hi")],
        ..ModelRequest::default()
    }
}

const LIMIT: &str = "clamped to the 86400 s limit";

#[tokio::test]
async fn a_wait_past_every_clock_after_a_first_retry_is_clamped() {
    // The first failure is waited out by backoff, so time has been spent when the absurd wait
    // arrives: adding the two used to overflow.
    let server = ReplayServer::start(vec![
        Reply::json(500, "{\"error\":{\"message\":\"oops\"}}"),
        Reply::json(429, &fixture("openai/error_rate_limit.json"))
            .with_header("retry-after", "18446744073709551615"),
        Reply::json(200, &fixture("openai/text_no_usage.json")),
    ])
    .await;
    let error = dyn_model("openai", &server)
        .complete(&request())
        .await
        .unwrap_err();
    assert_eq!(server.seen().len(), 2);
    assert_eq!(error.kind(), ModelErrorKind::RateLimit);
    assert_eq!(error.retry_after(), Some(MAX_SERVER_WAIT));
    let text = error.to_string();
    assert!(text.contains(LIMIT), "{text}");
    assert!(
        text.contains("would pass the retry budget of 5.0 s"),
        "{text}"
    );
}

#[tokio::test]
async fn every_form_of_an_absurd_wait_names_the_limit() {
    let gemini_body = r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"quota","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1e20s"}]}}"#;
    let cases = [
        (
            "anthropic",
            Reply::json(529, &fixture("anthropic/error_overloaded.json"))
                .with_header("retry-after", "1e20"),
        ),
        (
            "openai",
            Reply::json(429, &fixture("openai/error_rate_limit.json"))
                .with_header("retry-after-ms", "1e400"),
        ),
        ("gemini", Reply::json(429, gemini_body)),
        // The asctime form of an HTTP date, far in the future.
        (
            "anthropic",
            Reply::json(529, &fixture("anthropic/error_overloaded.json"))
                .with_header("retry-after", "Fri Dec 31 23:59:59 9999"),
        ),
    ];
    for (provider, reply) in cases {
        let server = ReplayServer::start(vec![reply, Reply::json(500, "{}")]).await;
        let error = dyn_model(provider, &server)
            .complete(&request())
            .await
            .unwrap_err();
        assert_eq!(server.seen().len(), 1, "{provider}: {error}");
        assert!(error.is_retryable(), "{error:?}");
        assert_eq!(error.retry_after(), Some(MAX_SERVER_WAIT), "{error:?}");
        let text = error.to_string();
        assert!(text.contains(LIMIT), "{text}");
        assert!(text.contains("gave up after 1 attempt:"), "{text}");
    }
}

#[tokio::test]
async fn an_rfc_850_date_in_the_past_means_try_again_now() {
    let server = ReplayServer::start(vec![
        Reply::json(503, "{\"error\":{\"message\":\"busy\"}}")
            .with_header("retry-after", "Sunday, 06-Nov-94 08:49:37 GMT"),
        Reply::json(200, &fixture("openai/text_no_usage.json")),
    ])
    .await;
    let answer = dyn_model("openai", &server)
        .complete(&request())
        .await
        .expect("answer");
    assert_eq!(answer.text.as_deref(), Some("It is 12 degrees in Oslo."));
    assert_eq!(server.seen().len(), 2);
}
