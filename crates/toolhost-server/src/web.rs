//! The web page: a single-page app served from files built into the binary (nothing fetched
//! from elsewhere, at build or at run time), at `/` with its script and style under `/ui/`.
//!
//! The page itself holds no data, so it is served without a token; everything it shows comes
//! from the API with the token a person enters (kept in the tab's session storage). It is
//! served with a content security policy that allows only its own script, style and API, so
//! that text from a model or a tool can never run as script in it.

use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// The page's files: path under `/ui/`, content type, content.
const ASSETS: [(&str, &str, &str); 6] = [
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../web/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../web/app.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../web/api.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../web/dom.js"),
    ),
    (
        "thread.js",
        "text/javascript; charset=utf-8",
        include_str!("../web/thread.js"),
    ),
    (
        "transcript.js",
        "text/javascript; charset=utf-8",
        include_str!("../web/transcript.js"),
    ),
];

const INDEX: &str = include_str!("../web/index.html");

/// Only the page's own files and API; images from tool results come as `data:` or `blob:` URLs.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// The page's routes, to be merged into the API's router.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new().route(
        "/",
        get(|| async { page("text/html; charset=utf-8", INDEX) }),
    );
    for (path, content_type, body) in ASSETS {
        router = router.route(
            &format!("/ui/{path}"),
            get(move || async move { page(content_type, body) }),
        );
    }
    router
}

fn page(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // A new binary may bring a new page: always ask.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
