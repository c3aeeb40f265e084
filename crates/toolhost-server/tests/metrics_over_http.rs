//! `GET /metrics` in the Prometheus text format: requests counted by route template (never by
//! raw path), their durations, runs by outcome, event streams open, and the store's writes.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;
use toolhost_server::auth::Scope;

const PATIENCE: Duration = Duration::from_secs(60);

/// The value of the sample line `name{labels}` (or `name` alone), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Reads the metrics until `check` holds. Gives up after `patience`: a guard against a hang,
/// not a measure of speed.
async fn metrics_until(server: &TestServer, token: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let text = server.get("/metrics", Some(token)).await.text;
        if check(&text) {
            return text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the metrics never got there:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_counted_by_route_template_and_status_class() {
    let server = TestServer::start().await;
    let reader = server.token(&[Scope::Read], None);
    for id in ["first-missing-thread", "second-missing-thread"] {
        let missing = server
            .get(&format!("/v1/threads/{id}"), Some(&reader))
            .await;
        missing.problem(404);
    }
    assert_eq!(server.get("/v1/tools", Some(&reader)).await.status, 200);
    server
        .get("/no/such/place", Some(&reader))
        .await
        .problem(404);

    let answer = server.get("/metrics", Some(&reader)).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(
        answer.content_type.starts_with("text/plain; version=0.0.4"),
        "{}",
        answer.content_type
    );
    let text = answer.text;
    let route = r#"route="/v1/threads/{id}",method="GET""#;
    assert_eq!(
        sample(
            &text,
            &format!("toolhost_http_requests_total{{{route},status=\"4xx\"}}")
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!("toolhost_http_request_duration_seconds_count{{{route}}}")
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            &format!("toolhost_http_request_duration_seconds_bucket{{{route},le=\"+Inf\"}}")
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"toolhost_http_requests_total{route="/v1/tools",method="GET",status="2xx"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"toolhost_http_requests_total{route="unmatched",method="GET",status="4xx"}"#
        ),
        Some(1.0)
    );
    assert!(text.contains("# TYPE toolhost_http_request_duration_seconds histogram"));
    // Templates only: no raw path, no id.
    assert!(!text.contains("missing-thread"), "{text}");
    assert!(!text.contains("/no/such/place"), "{text}");

    // Like every endpoint but health, it needs a token.
    server.get("/metrics", None).await.problem(401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_streams_and_store_writes_are_counted() {
    let server = TestServer::start().await;
    let token = server.admin();
    let before = server.get("/metrics", Some(&token)).await.text;
    assert_eq!(sample(&before, "toolhost_runs_started_total"), Some(0.0));
    assert_eq!(sample(&before, "toolhost_event_streams_open"), Some(0.0));
    let writes_before = sample(&before, "toolhost_store_writes_total").expect("write stats");

    let id = server
        .create(
            &token,
            json!({"agent": "assistant", "message": "What is the weather in Oslo?"}),
        )
        .await;
    let mut stream = server.events(&id, &token, None).await;
    let seen = stream.until("run_ended", PATIENCE).await;
    assert_eq!(seen.last().unwrap().data["status"], "done");

    let text = metrics_until(&server, &token, |t| {
        sample(t, "toolhost_runs_under_way") == Some(0.0)
    })
    .await;
    assert_eq!(
        sample(&text, "toolhost_runs_started_total"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"toolhost_runs_ended_total{outcome="done"}"#),
        Some(1.0)
    );
    assert_eq!(sample(&text, "toolhost_event_streams_open"), Some(1.0));
    let writes = sample(&text, "toolhost_store_writes_total").unwrap();
    let commits = sample(&text, "toolhost_store_commits_total").unwrap();
    assert!(writes > writes_before, "{writes} after {writes_before}");
    assert!(
        commits >= 1.0 && commits <= writes,
        "{commits} commits, {writes} writes"
    );

    // A stream counts as open until the client goes away.
    drop(stream);
    metrics_until(&server, &token, |t| {
        sample(t, "toolhost_event_streams_open") == Some(0.0)
    })
    .await;
}
