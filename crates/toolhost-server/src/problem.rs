//! Errors as RFC 9457 problem details: `application/problem+json` with a type, a title, the
//! status, a `detail` sentence that says what is wrong, and where it helps a JSON `pointer`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use toolhost_runtime::engine::RuntimeError;
use toolhost_store::StoreError;

/// An error answered to a client.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The HTTP status.
    pub status: StatusCode,
    /// A short, stable name of the kind of problem (the last part of its `type`).
    pub kind: &'static str,
    /// What is wrong, in one sentence a person can act on.
    pub detail: String,
    /// Where in the request body, as a JSON pointer, when the body is at fault.
    pub pointer: Option<String>,
}

impl Problem {
    /// A problem of `kind` with `status`.
    pub fn new(status: StatusCode, kind: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            detail: detail.into(),
            pointer: None,
        }
    }

    /// The same problem, pointing at `pointer` in the request body.
    pub fn at(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    /// 400: the request is malformed.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", detail)
    }

    /// 422: the request is well-formed but its content is wrong.
    pub fn invalid(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", detail)
    }

    /// 404: there is no such thing (or the caller may not know of it).
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    /// 500: toolhost failed. What failed (store errors can name files and statements) goes to
    /// the log only, under an id the answer gives, so an operator can find it.
    pub fn internal(detail: impl Into<String>) -> Self {
        let detail = detail.into();
        let id = toolhost_store::random_id();
        let id = &id[..8];
        tracing::error!(%detail, error_id = id, "a request failed inside toolhost");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("toolhost failed inside; its log has the details under error id {id}"),
        )
    }

    fn title(&self) -> &'static str {
        self.status.canonical_reason().unwrap_or("Error")
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut body = json!({
            "type": format!("urn:toolhost:problem:{}", self.kind),
            "title": self.title(),
            "status": self.status.as_u16(),
            "detail": self.detail,
        });
        if let Some(pointer) = &self.pointer {
            body["pointer"] = json!(pointer);
        }
        let mut response = (self.status, body.to_string()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        response
    }
}

impl From<StoreError> for Problem {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::ThreadNotFound(id) => {
                Problem::not_found(format!("there is no thread {id}"))
            }
            StoreError::DecisionRefused { .. } => {
                Problem::new(StatusCode::CONFLICT, "decision-refused", e.to_string())
            }
            StoreError::ThreadOwned { .. } => {
                Problem::new(StatusCode::CONFLICT, "thread-busy", e.to_string())
            }
            _ => Problem::internal(e.to_string()),
        }
    }
}

impl From<RuntimeError> for Problem {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Store(e) => e.into(),
            RuntimeError::UnknownAgent { .. } => Problem::invalid(e.to_string()).at("/agent"),
            RuntimeError::Model { .. } => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "model-unusable",
                e.to_string(),
            ),
            RuntimeError::ThreadBusy { .. } => {
                Problem::new(StatusCode::CONFLICT, "thread-busy", e.to_string())
            }
            // The agent's definitions are not sound: nothing was run or stored.
            RuntimeError::Unsound { .. } => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "definitions-unsound",
                e.to_string(),
            ),
            RuntimeError::MissingVariables { .. } => {
                Problem::invalid(e.to_string()).at("/variables")
            }
            RuntimeError::UndeclaredVariables { .. } => {
                Problem::invalid(e.to_string()).at("/variables")
            }
            other => Problem::internal(other.to_string()),
        }
    }
}
