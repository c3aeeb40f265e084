//! Turning what went wrong into a one-line [`ModelError`] that names the API, the HTTP status
//! and the API's own message, never the key.

use crate::retry::parse_retry_after;
use crate::secret::ApiKey;
use crate::transport::{is_transient, TransportError};
use crate::ModelError;
use hyper::{HeaderMap, StatusCode};
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// A failed attempt: the error and the wait the server asked for, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// What went wrong.
    pub error: ModelError,
    /// The server's `Retry-After` (or `retry-after-ms`).
    pub retry_after: Option<Duration>,
}

impl Failure {
    /// A failure with no wait asked for.
    pub(crate) fn from_error(error: ModelError) -> Self {
        Failure {
            error,
            retry_after: None,
        }
    }
}

/// The failure an HTTP error status (with its body) stands for.
pub(crate) fn http_failure(
    label: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    key: Option<&ApiKey>,
) -> Failure {
    let message = format!("{label}: HTTP {}: {}", status.as_u16(), api_message(body));
    let message = scrub(&message, key);
    let error = if is_transient(status) {
        ModelError::Transient(message)
    } else {
        ModelError::Rejected(message)
    };
    Failure {
        error,
        retry_after: retry_after(headers),
    }
}

/// The failure of an exchange that got no complete answer.
pub(crate) fn transport_failure(
    label: &str,
    error: &TransportError,
    key: Option<&ApiKey>,
) -> Failure {
    Failure::from_error(ModelError::Transient(scrub(
        &format!("{label}: {error}"),
        key,
    )))
}

/// One line, without the key, at most 400 characters.
pub(crate) fn scrub(text: &str, key: Option<&ApiKey>) -> String {
    let text = key.map_or_else(|| text.to_owned(), |k| k.redact(text));
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 400 {
        let cut: String = line.chars().take(400).collect();
        format!("{cut}...")
    } else {
        line
    }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    text("retry-after").and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// The API's own words: `error.message` (OpenAI, Anthropic, Gemini; Gemini may wrap it in an
/// array) with `error.type` or `error.status` when given, else the start of the body.
pub(crate) fn api_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let root = match &value {
            Value::Array(items) => items.first().unwrap_or(&Value::Null),
            other => other,
        };
        let error = root.get("error").unwrap_or(root);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str());
        if let Some(message) = message {
            let kind = error
                .get("type")
                .or_else(|| error.get("status"))
                .or_else(|| error.get("code"))
                .and_then(Value::as_str);
            return match kind {
                Some(kind) => format!("{message} ({kind})"),
                None => message.to_owned(),
            };
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        "(empty body)".to_owned()
    } else {
        text.chars().take(200).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_vendor_error_shape_gives_its_message() {
        let openai = br#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(api_message(openai), "Rate limit reached (requests)");
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(api_message(anthropic), "Overloaded (overloaded_error)");
        let gemini =
            br#"[{"error":{"code":400,"message":"Bad field","status":"INVALID_ARGUMENT"}}]"#;
        assert_eq!(api_message(gemini), "Bad field (INVALID_ARGUMENT)");
        assert_eq!(
            api_message(b"<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(api_message(b""), "(empty body)");
    }
}
