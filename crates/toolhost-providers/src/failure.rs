//! Turning what went wrong into a [`ModelError`]: the kind from the HTTP status and the
//! vendor's error body, the wait the server asked for, and a one-line message without the key.

use crate::retry::{parse_retry_after, server_wait_secs};
use crate::secret::ApiKey;
use crate::transport::TransportError;
use crate::{ModelApi, ModelError, ModelErrorKind};
use hyper::{HeaderMap, StatusCode};
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// The error an HTTP error status (with its body) stands for.
pub(crate) fn http_error(
    api: ModelApi,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    key: Option<&ApiKey>,
) -> ModelError {
    let status = status.as_u16();
    let by_status = status_kind(api, status);
    // The body names the cause more precisely, but the status decides whether a retry may
    // help: a body that disagrees there is not trusted over the status line. The one
    // exception is a used-up quota, which comes as a 429 that no wait can cure.
    let kind = body_kind(api, body)
        .filter(|k| {
            k.is_retryable() == by_status.is_retryable() || *k == ModelErrorKind::QuotaExceeded
        })
        .unwrap_or(by_status);
    ModelError::new(api, kind, scrub(&api_message(body), key))
        .with_status(status)
        .with_retry_after(header_wait(headers).or_else(|| body_wait(body)))
}

/// The error of an error event inside a stream (which has no status): the body decides, and a
/// body naming nothing known is transient.
pub(crate) fn stream_error(api: ModelApi, data: &[u8]) -> ModelError {
    let kind = body_kind(api, data).unwrap_or(ModelErrorKind::Transient);
    ModelError::new(
        api,
        kind,
        format!("error in the stream: {}", api_message(data)),
    )
    .with_retry_after(body_wait(data))
}

/// The error a whole answer reports in its body although it came with a success status (a
/// Responses answer whose `status` is `failed`): the body decides, and a body naming nothing
/// known is transient, as for an error event in a stream.
pub(crate) fn reported_error(api: ModelApi, data: &[u8]) -> ModelError {
    let kind = body_kind(api, data).unwrap_or(ModelErrorKind::Transient);
    ModelError::new(
        api,
        kind,
        format!("the response failed: {}", api_message(data)),
    )
    .with_retry_after(body_wait(data))
}

/// The error of an exchange that got no complete answer: transient, but for a body past its
/// limit, which another try would only fetch again.
pub(crate) fn transport_error(
    api: ModelApi,
    error: &TransportError,
    key: Option<&ApiKey>,
) -> ModelError {
    let kind = match error {
        TransportError::TooLarge(_) => ModelErrorKind::TooLarge,
        TransportError::Timeout(_) | TransportError::Connection(_) => ModelErrorKind::Transient,
    };
    ModelError::new(api, kind, scrub(&error.to_string(), key))
}

/// The error of an answer past one of its definition's size limits: `what` passed `limit`
/// bytes, set by the definition's `limits.FIELD`.
pub(crate) fn too_large(api: ModelApi, what: &str, limit: usize, field: &str) -> ModelError {
    ModelError::new(
        api,
        ModelErrorKind::TooLarge,
        format!("{what} passed the limit of {limit} bytes (limits.{field})"),
    )
}

/// The kind an HTTP error status alone stands for. Exactly 408, 409, 425, 429 and 5xx give a
/// retryable kind.
pub(crate) fn status_kind(api: ModelApi, status: u16) -> ModelErrorKind {
    match status {
        401 | 403 => ModelErrorKind::Authentication,
        429 => ModelErrorKind::RateLimit,
        529 => ModelErrorKind::Overloaded,
        // Anthropic and Google document 503 as overload; for OpenAI-style servers it is any
        // outage.
        503 if matches!(api, ModelApi::AnthropicMessages | ModelApi::Gemini) => {
            ModelErrorKind::Overloaded
        }
        408 | 409 | 425 | 500..=599 => ModelErrorKind::Transient,
        _ => ModelErrorKind::BadRequest,
    }
}

/// The kind a vendor's error body names, if it names one this crate knows.
fn body_kind(api: ModelApi, body: &[u8]) -> Option<ModelErrorKind> {
    let value = serde_json::from_slice::<Value>(body).ok()?;
    let error = error_object(&value);
    let text = |name: &str| error.get(name).and_then(Value::as_str).unwrap_or_default();
    let message = text("message").to_ascii_lowercase();
    match api {
        ModelApi::OpenAiChat | ModelApi::OpenAiResponses => {
            openai_kind(text("code"), text("type"), &message)
        }
        ModelApi::AnthropicMessages => anthropic_kind(text("type"), &message),
        ModelApi::Gemini => gemini_kind(text("status"), error, &message),
        ModelApi::Scripted => None,
    }
}

/// OpenAI's `error.code` and `error.type`; compatible servers (vLLM, llama.cpp) often give
/// neither for a prompt that is too long, only the message.
fn openai_kind(code: &str, kind: &str, message: &str) -> Option<ModelErrorKind> {
    let named = |name: &str| code == name || kind == name;
    if named("context_length_exceeded")
        || named("exceed_context_size_error")
        || message.contains("maximum context length")
    {
        Some(ModelErrorKind::ContextLength)
    } else if named("insufficient_quota") {
        Some(ModelErrorKind::QuotaExceeded)
    } else if named("rate_limit_exceeded") {
        Some(ModelErrorKind::RateLimit)
    } else if named("invalid_api_key") || named("authentication_error") {
        Some(ModelErrorKind::Authentication)
    } else if named("server_error") {
        Some(ModelErrorKind::Transient)
    } else {
        None
    }
}

/// Anthropic's `error.type`.
fn anthropic_kind(kind: &str, message: &str) -> Option<ModelErrorKind> {
    Some(match kind {
        "authentication_error" | "permission_error" => ModelErrorKind::Authentication,
        "rate_limit_error" => ModelErrorKind::RateLimit,
        "overloaded_error" => ModelErrorKind::Overloaded,
        "api_error" => ModelErrorKind::Transient,
        // "prompt is too long: N tokens > M maximum", or input plus `max_tokens` past the window.
        "invalid_request_error"
            if message.contains("prompt is too long")
                || message.contains("exceed context limit") =>
        {
            ModelErrorKind::ContextLength
        }
        "billing_error" => ModelErrorKind::QuotaExceeded,
        "invalid_request_error" | "request_too_large" | "not_found_error" => {
            ModelErrorKind::BadRequest
        }
        _ => return None,
    })
}

/// Gemini's `error.status` (a google.rpc code name), and for a bad key, which Gemini answers
/// with 400 `INVALID_ARGUMENT`, the `ErrorInfo` detail's reason.
fn gemini_kind(status: &str, error: &Value, message: &str) -> Option<ModelErrorKind> {
    let bad_key =
        details(error).any(|d| d.get("reason").and_then(Value::as_str) == Some("API_KEY_INVALID"));
    Some(match status {
        _ if bad_key => ModelErrorKind::Authentication,
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => ModelErrorKind::Authentication,
        "RESOURCE_EXHAUSTED" => ModelErrorKind::RateLimit,
        "UNAVAILABLE" => ModelErrorKind::Overloaded,
        "INTERNAL" | "DEADLINE_EXCEEDED" => ModelErrorKind::Transient,
        "INVALID_ARGUMENT"
            if message.contains("token") && message.contains("exceeds the maximum") =>
        {
            ModelErrorKind::ContextLength
        }
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "NOT_FOUND" | "OUT_OF_RANGE" => {
            ModelErrorKind::BadRequest
        }
        _ => return None,
    })
}

/// The `error` object of a vendor's body (Gemini may wrap the body in an array).
fn error_object(value: &Value) -> &Value {
    let root = match value {
        Value::Array(items) => items.first().unwrap_or(&Value::Null),
        other => other,
    };
    root.get("error").unwrap_or(root)
}

/// The entries of a google.rpc `details` list.
fn details(error: &Value) -> impl Iterator<Item = &Value> {
    error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
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

/// The wait a server asked for in its headers: `retry-after-ms` (OpenAI-style servers), else
/// `Retry-After`.
fn header_wait(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let ms = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok());
    // Clamped: a negative or absurd value from the server must not panic or overflow a clock.
    if let Some(wait) = ms.and_then(|ms| server_wait_secs(ms / 1000.0)) {
        return Some(wait);
    }
    text("retry-after").and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// The wait Gemini asks for in the body: a `RetryInfo` detail's `retryDelay`, a protobuf
/// duration in JSON such as `"37s"` or `"0.5s"`.
fn body_wait(body: &[u8]) -> Option<Duration> {
    let value = serde_json::from_slice::<Value>(body).ok()?;
    let delay = details(error_object(&value))
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| d.get("retryDelay").and_then(Value::as_str))?;
    let secs = delay.trim().strip_suffix('s')?.parse::<f64>().ok()?;
    // Clamped: a negative or absurd value from the server must not panic or overflow a clock.
    server_wait_secs(secs)
}

/// The API's own words: `error.message` (OpenAI, Anthropic, Gemini; Gemini may wrap it in an
/// array) with `error.type` or `error.status` when given, else the start of the body.
pub(crate) fn api_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let error = error_object(&value);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str());
        if let Some(message) = message {
            // A Responses stream's `error` event has the type `error` itself: its code says more.
            let kind = [error.get("type"), error.get("status"), error.get("code")]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .find(|k| *k != "error");
            let message = match kind {
                Some(kind) => format!("{message} ({kind})"),
                None => message.to_owned(),
            };
            // OpenAI names the parameter an invalid request is about.
            return match error.get("param").and_then(Value::as_str) {
                Some(param) => format!("{message} [parameter {param}]"),
                None => message,
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

    #[test]
    fn exactly_the_statuses_retried_before_give_a_retryable_kind() {
        for api in [
            ModelApi::OpenAiChat,
            ModelApi::OpenAiResponses,
            ModelApi::AnthropicMessages,
            ModelApi::Gemini,
        ] {
            for status in 300..=599 {
                let retried = matches!(status, 408 | 409 | 425 | 429 | 500..=599);
                assert_eq!(
                    status_kind(api, status).is_retryable(),
                    retried,
                    "{api} {status}"
                );
            }
        }
        assert_eq!(
            status_kind(ModelApi::OpenAiChat, 503),
            ModelErrorKind::Transient
        );
        assert_eq!(
            status_kind(ModelApi::Gemini, 503),
            ModelErrorKind::Overloaded
        );
    }

    #[test]
    fn a_body_names_the_cause_but_never_overrules_the_status_on_retrying() {
        let kind = |api, status, body: &str| {
            http_error(
                api,
                StatusCode::from_u16(status).expect("status"),
                &HeaderMap::new(),
                body.as_bytes(),
                None,
            )
            .kind()
        };
        // A compatible server that gives only the message.
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400}"#;
        assert_eq!(
            kind(ModelApi::OpenAiChat, 400, vllm),
            ModelErrorKind::ContextLength
        );
        // A body claiming overload on a 400 is not retried: the status decides that.
        let odd = r#"{"type":"error","error":{"type":"overloaded_error","message":"?"}}"#;
        assert_eq!(
            kind(ModelApi::AnthropicMessages, 400, odd),
            ModelErrorKind::BadRequest
        );
        let bad_key = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#;
        assert_eq!(
            kind(ModelApi::Gemini, 400, bad_key),
            ModelErrorKind::Authentication
        );
        let window = r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"}}"#;
        assert_eq!(
            kind(ModelApi::AnthropicMessages, 400, window),
            ModelErrorKind::ContextLength
        );
        assert_eq!(
            kind(ModelApi::Gemini, 502, "<html>bad gateway</html>"),
            ModelErrorKind::Transient
        );
        // A used-up quota is the one cause that makes a retryable status final.
        let quota = r#"{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let used_up = kind(ModelApi::OpenAiResponses, 429, quota);
        assert_eq!(used_up, ModelErrorKind::QuotaExceeded);
        assert!(!used_up.is_retryable());
        let billing = r#"{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low."}}"#;
        assert_eq!(
            kind(ModelApi::AnthropicMessages, 400, billing),
            ModelErrorKind::QuotaExceeded
        );
    }

    #[test]
    fn waits_come_from_headers_first_then_gemini_s_retry_info() {
        let body = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"quota","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
        assert_eq!(body_wait(body), Some(Duration::from_millis(1500)));
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "2".parse().expect("value"));
        let error = http_error(
            ModelApi::Gemini,
            StatusCode::TOO_MANY_REQUESTS,
            &headers,
            body,
            None,
        );
        assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
        // Values a server should never send: negative ones are ignored, huge ones clamped.
        let mut negative = HeaderMap::new();
        negative.insert("retry-after-ms", "-5".parse().expect("value"));
        negative.insert("retry-after", "-1".parse().expect("value"));
        assert_eq!(header_wait(&negative), None);
        let mut absurd = HeaderMap::new();
        absurd.insert("retry-after-ms", "1e300".parse().expect("value"));
        assert_eq!(header_wait(&absurd), Some(crate::retry::MAX_SERVER_WAIT));
        let negative = br#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-5s"}]}}"#;
        assert_eq!(body_wait(negative), None);
        let huge = br#"{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1e20s"}]}}"#;
        assert_eq!(body_wait(huge), Some(crate::retry::MAX_SERVER_WAIT));
    }
}
