//! A time limit on every request until its answer starts.

use crate::problem::Problem;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Duration;

/// Answers 503 when the handler has not answered within `limit`. Only the time to the answer's
/// head counts, so an event stream, which answers at once, runs on. What a handler stored before
/// it was abandoned stays: every write is one atomic batch.
pub(crate) async fn time_limit(
    State(limit): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!(
                "the request took longer than {} ms and was abandoned",
                limit.as_millis()
            ),
        )
        .into_response(),
    }
}
