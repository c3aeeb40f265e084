//! [`ModelError`]: why a model gave no answer, as data — the API, the HTTP status, the kind of
//! failure, the wait the server asked for, and the API's own words without the key.

use std::fmt;
use std::time::Duration;

/// The API a model error came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelApi {
    /// OpenAI chat completions, or a server speaking the same protocol.
    OpenAiChat,
    /// The OpenAI Responses API (`POST /responses`), or a server speaking it.
    OpenAiResponses,
    /// Anthropic Messages.
    AnthropicMessages,
    /// Gemini `generateContent`.
    Gemini,
    /// The scripted test model (and models written for tests).
    Scripted,
}

impl ModelApi {
    /// The API's name in errors and logs, e.g. `Anthropic Messages`.
    pub fn label(self) -> &'static str {
        match self {
            ModelApi::OpenAiChat => "OpenAI chat completions",
            ModelApi::OpenAiResponses => "OpenAI Responses",
            ModelApi::AnthropicMessages => "Anthropic Messages",
            ModelApi::Gemini => "Gemini generateContent",
            ModelApi::Scripted => "scripted test model",
        }
    }
}

impl fmt::Display for ModelApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What kind of failure a [`ModelError`] is. Only `RateLimit`, `Overloaded` and `Transient` may
/// pass if the same request is sent again ([`ModelErrorKind::is_retryable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelErrorKind {
    /// The key is missing, wrong, or not allowed to use the model (401, 403).
    Authentication,
    /// The account sent too much in a short time (429); waiting helps.
    RateLimit,
    /// The account's quota or credit is used up (OpenAI's `insufficient_quota`, Anthropic's
    /// `billing_error`): waiting does not help, so it is never retried.
    QuotaExceeded,
    /// The conversation is longer than the model's context window.
    ContextLength,
    /// The API is short of capacity for everyone (Anthropic's 529, a 503 from Anthropic or
    /// Gemini).
    Overloaded,
    /// The API refused the request as it is (400, 404, 413, 422 and other 4xx).
    BadRequest,
    /// A passing failure: a connection that failed or was reset, a timeout, a cut answer or
    /// stream, a 5xx, 408, 409 or 425.
    Transient,
    /// The answer arrived whole but is not what the API is documented to send.
    MalformedAnswer,
    /// The answer passed a size limit of the model's definition (its `limits`): a whole body,
    /// one line or event of a stream, or the reply put together from it. Sending the same
    /// request again would only fetch it again.
    TooLarge,
    /// The scripted test model's script does not fit the request.
    Script,
}

impl ModelErrorKind {
    /// Whether sending the same request again may succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ModelErrorKind::RateLimit | ModelErrorKind::Overloaded | ModelErrorKind::Transient
        )
    }

    /// A short name, e.g. `rate_limit`, for logs and stored records.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelErrorKind::Authentication => "authentication",
            ModelErrorKind::RateLimit => "rate_limit",
            ModelErrorKind::QuotaExceeded => "quota_exceeded",
            ModelErrorKind::ContextLength => "context_length",
            ModelErrorKind::Overloaded => "overloaded",
            ModelErrorKind::BadRequest => "bad_request",
            ModelErrorKind::Transient => "transient",
            ModelErrorKind::MalformedAnswer => "malformed_answer",
            ModelErrorKind::TooLarge => "too_large",
            ModelErrorKind::Script => "script",
        }
    }
}

impl fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a model gave no answer.
///
/// Shown as one line naming the API, the HTTP status (when there was one) and the cause, e.g.
/// `Anthropic Messages: HTTP 529: Overloaded (overloaded_error)`; an error of the scripted
/// model is its message alone, which names the script. The message is scrubbed of the key
/// before it is stored here, so neither `Display` nor `Debug` can show it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", prefix(.api, .status))]
pub struct ModelError {
    api: ModelApi,
    status: Option<u16>,
    kind: ModelErrorKind,
    retry_after: Option<Duration>,
    message: String,
}

impl ModelError {
    /// An error of `kind` from `api`, with no HTTP status and no wait asked for. `message` must
    /// not hold a key: the adapters pass what the server sent through the key's redaction first.
    pub fn new(api: ModelApi, kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            api,
            status: None,
            kind,
            retry_after: None,
            message: message.into(),
        }
    }

    /// The same error, with the HTTP status it came with.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// The same error, with the wait the server asked for before another try.
    pub fn with_retry_after(mut self, wait: Option<Duration>) -> Self {
        self.retry_after = wait;
        self
    }

    /// The API it came from.
    pub fn api(&self) -> ModelApi {
        self.api
    }

    /// The HTTP error status the API answered with, if it answered with one (not for a failed
    /// connection, a cut or unreadable answer, or an error inside a stream).
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ModelErrorKind {
        self.kind
    }

    /// The wait the server asked for (`retry-after-ms`, `Retry-After`, or Gemini's
    /// `RetryInfo`), if any.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The cause in the API's own words (or ours), without the key.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether sending the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }

    /// The same error with `note` added to its message, e.g. why the retries stopped.
    #[cfg(feature = "http")]
    pub(crate) fn noting(mut self, note: &str) -> Self {
        self.message = format!("{}; {note}", self.message);
        self
    }

    /// The same error with its message passed through `f` (the key's redaction).
    #[cfg(feature = "http")]
    pub(crate) fn map_message(mut self, f: impl FnOnce(&str) -> String) -> Self {
        self.message = f(&self.message);
        self
    }
}

/// What comes before the message: the API and the status, `Anthropic Messages: HTTP 529: `.
/// The scripted model's messages name their script themselves, so they stand alone.
fn prefix(api: &ModelApi, status: &Option<u16>) -> String {
    match (api, status) {
        (ModelApi::Scripted, _) => String::new(),
        (api, Some(status)) => format!("{api}: HTTP {status}: "),
        (api, None) => format!("{api}: "),
    }
}
