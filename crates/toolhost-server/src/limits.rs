//! A time limit on every request until its answer starts.

use crate::problem::Problem;
use axum::body::{Body, BodyDataStream, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Answers when the handler has not answered within `limit`: 408 when the request promised a
/// body that had not all arrived (the client is at fault), else 503. Only the time to the
/// answer's head counts, so an event stream, which answers at once, runs on. What a handler
/// stored before it was abandoned stays: every write is one atomic batch.
pub(crate) async fn time_limit(
    State(limit): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let promised = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
        || request.headers().contains_key(header::TRANSFER_ENCODING);
    let arrived = Arc::new(AtomicBool::new(!promised));
    let request = if promised {
        let (parts, body) = request.into_parts();
        let watched = Watched {
            inner: body.into_data_stream(),
            ended: arrived.clone(),
        };
        Request::from_parts(parts, Body::from_stream(watched))
    } else {
        request
    };
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) if !arrived.load(Ordering::SeqCst) => Problem::new(
            StatusCode::REQUEST_TIMEOUT,
            "body-timeout",
            format!(
                "the request's body did not all arrive within {} ms; it was abandoned",
                limit.as_millis()
            ),
        )
        .into_response(),
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

/// A request body that says when it has been read to its end.
struct Watched {
    inner: BodyDataStream,
    ended: Arc<AtomicBool>,
}

impl Stream for Watched {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        if let Poll::Ready(None) = polled {
            self.ended.store(true, Ordering::SeqCst);
        }
        polled
    }
}
