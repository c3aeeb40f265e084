//! A 429 with `Retry-After` is waited out and the request then succeeds.

mod common;

use common::*;
use std::time::Duration;
use toolhost_providers::{ChatRole, ModelRequest};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![msg(ChatRole::User, "hi")],
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn waits_the_seconds_the_server_asks_then_succeeds() {
    let server = ReplayServer::start(vec![
        Reply::json(429, &fixture("openai/error_rate_limit.json")).with_header("retry-after", "1"),
        Reply::json(200, &fixture("openai/text_no_usage.json")),
    ])
    .await;
    let answer = dyn_model("openai", &server)
        .complete(&request())
        .await
        .expect("answer");
    assert_eq!(answer.text.as_deref(), Some("It is 12 degrees in Oslo."));
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    // The policy's own backoff is 10 ms; only the server's Retry-After explains a second
    // between the request it refused and the next.
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_millis(950), "{gap:?}");
}

#[tokio::test]
async fn an_http_date_and_a_millisecond_hint_are_honoured_too() {
    let server = ReplayServer::start(vec![
        Reply::json(529, &fixture("anthropic/error_overloaded.json"))
            .with_header("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT"),
        Reply::json(503, "{\"error\":{\"message\":\"busy\"}}")
            .with_header("retry-after-ms", "1000"),
        Reply::json(200, &fixture("anthropic/text_no_usage.json")),
    ])
    .await;
    let answer = dyn_model("anthropic", &server)
        .complete(&request())
        .await
        .expect("answer");
    assert_eq!(answer.text.as_deref(), Some("Done."));
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    // The date is past: the second request follows the first. The millisecond hint, not the
    // policy's 10 ms backoff, explains a second between the second request and the third (read
    // as seconds it would pass the retry budget and end the retries).
    let gap = seen[2].at - seen[1].at;
    assert!(gap >= Duration::from_millis(990), "{gap:?}");
}
