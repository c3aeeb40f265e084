//! Every error answer is a problem: what axum answers by itself (a method a route does not take,
//! a path segment that does not decode) is turned into `application/problem+json` too. It wraps
//! the API and the web page only: `/mcp` answers in JSON-RPC (see `routes`).

use crate::problem::Problem;
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The most of a plain error's text kept as the problem's detail.
const DETAIL_BYTES: usize = 4096;

/// Rewrites an error answer that is not a problem yet; headers such as `Allow` are kept.
pub(crate) async fn as_problem(request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = next.run(request).await;
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"));
    if is_problem || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, DETAIL_BYTES)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_owned();
    let detail = if status == StatusCode::METHOD_NOT_ALLOWED {
        let allowed = parts
            .headers
            .get(header::ALLOW)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        format!("{path} does not take {method} (it takes: {allowed})")
    } else if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let kind = match status {
        StatusCode::METHOD_NOT_ALLOWED => "method-not-allowed",
        s if s.is_server_error() => "internal",
        _ => "bad-request",
    };
    let mut answer = Problem::new(status, kind, detail).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().insert(name.clone(), value.clone());
        }
    }
    answer
}
