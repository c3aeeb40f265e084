//! Origins: cross-origin requests from web pages, refused unless their origin is configured;
//! and the origin a request was sent to, where this server's pages are.

use axum::http::{header, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// An allowed origin as a header value: a scheme and a host (and port), nothing else.
pub(crate) fn origin(text: &str) -> Result<HeaderValue, String> {
    let bad = |why: &str| format!("allowed origin \"{text}\" {why}");
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or_else(|| bad("must start with https:// or http://"))?;
    if rest.is_empty() || rest.contains(['/', '?', '#', '*', ' ']) {
        return Err(bad(
            "must be a scheme and a host, optionally a port, with no path (https://app.example.com)",
        ));
    }
    HeaderValue::from_str(text).map_err(|_| bad("is not a valid header value"))
}

/// The CORS layer for `origins`, or `None` when there are none (no CORS headers at all: a
/// browser then refuses every cross-origin call).
pub(crate) fn layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allowed: Vec<HeaderValue> = origins.iter().filter_map(|o| origin(o).ok()).collect();
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(allowed))
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::HeaderName::from_static("last-event-id"),
            ])
            .max_age(std::time::Duration::from_secs(600)),
    )
}

/// The origin (`scheme://host`) a request with `headers` was sent to, as its client named it
/// (`X-Forwarded-Proto` names the scheme behind a proxy): where a page of this server is.
pub(crate) fn request_origin(headers: &axum::http::HeaderMap) -> Option<String> {
    let host = headers.get("host")?.to_str().ok()?;
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .filter(|s| matches!(*s, "http" | "https"))
        .unwrap_or("http");
    Some(format!("{scheme}://{host}"))
}
