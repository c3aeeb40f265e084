//! The middleware that counts every request by its route template, and keeps each event
//! stream counted as open until its body is dropped (the client went away or the stream
//! ended). A request's duration is the time until its answer's head: an event stream's length
//! is how long the client stays, not how fast the server was.

use super::{Metrics, UNMATCHED};
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Instant;

/// Counts the request and, for an event stream, holds its place among the open streams.
pub(crate) async fn track(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    metrics.observe(
        route.as_deref().unwrap_or(UNMATCHED),
        &method,
        response.status(),
        started.elapsed(),
    );
    if !is_event_stream(&response) {
        return response;
    }
    let guard = metrics.stream_opened();
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}
