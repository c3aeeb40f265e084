//! Model definitions: which API, which model, where, and the name of the key's variable.

use crate::retry::RetryPolicy;
use crate::ModelApi;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::str::FromStr;

/// The HTTP APIs toolhost speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiKind {
    /// OpenAI at api.openai.com: the Responses API, or chat completions with `api: "chat"` (key
    /// from `OPENAI_API_KEY` by default).
    OpenAi,
    /// Any server speaking the chat-completions protocol (vLLM, llama.cpp, Ollama, OpenRouter,
    /// ...), or the Responses API with `api: "responses"`: `baseUrl` is required and no key is
    /// sent unless `apiKeyEnv` names one.
    OpenAiCompatible,
    /// Anthropic Messages (key from `ANTHROPIC_API_KEY` by default).
    Anthropic,
    /// Google Gemini `generateContent` (key from `GEMINI_API_KEY` by default).
    Gemini,
}

impl ApiKind {
    /// The name used in model definitions.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiKind::OpenAi => "openai",
            ApiKind::OpenAiCompatible => "openai-compatible",
            ApiKind::Anthropic => "anthropic",
            ApiKind::Gemini => "gemini",
        }
    }

    /// The vendor's base URL, if the API has one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            ApiKind::OpenAi => Some("https://api.openai.com/v1"),
            ApiKind::OpenAiCompatible => None,
            ApiKind::Anthropic => Some("https://api.anthropic.com"),
            ApiKind::Gemini => Some("https://generativelanguage.googleapis.com/v1beta"),
        }
    }

    /// The variable read for the key when the definition names none.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            ApiKind::OpenAi => Some("OPENAI_API_KEY"),
            ApiKind::OpenAiCompatible => None,
            ApiKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ApiKind::Gemini => Some("GEMINI_API_KEY"),
        }
    }
}

impl fmt::Display for ApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApiKind {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(ApiKind::OpenAi),
            "openai-compatible" | "openai_compatible" => Ok(ApiKind::OpenAiCompatible),
            "anthropic" => Ok(ApiKind::Anthropic),
            "gemini" | "google" => Ok(ApiKind::Gemini),
            other => Err(ConfigError::UnknownProvider(other.to_owned())),
        }
    }
}

/// Time limits of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Timeouts {
    /// Connecting (TCP and TLS).
    pub connect_ms: u64,
    /// A whole non-streamed answer, headers and body.
    pub request_ms: u64,
    /// The longest silence between two chunks of a stream (and before its headers).
    pub stream_idle_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect_ms: 10_000,
            request_ms: 300_000,
            stream_idle_ms: 120_000,
        }
    }
}

/// Bounds on what a model server may send, so that a broken or hostile `baseUrl` cannot grow
/// memory without bound. An answer past one fails with a [`crate::ModelErrorKind::TooLarge`]
/// error naming the limit and its field; it is not retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Limits {
    /// A whole non-streamed body (an error body too), and all the bytes of one streamed answer,
    /// keep-alive comments included.
    pub max_body_bytes: usize,
    /// One line, and the data of one event, of a streamed answer.
    pub max_event_bytes: usize,
    /// The reply put together from an answer: its text, its reasoning, and the ids, names and
    /// arguments of its calls.
    pub max_answer_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 * 1024 * 1024,
            max_event_bytes: 16 * 1024 * 1024,
            max_answer_bytes: 32 * 1024 * 1024,
        }
    }
}

/// A model definition (`agents/models/NAME.json`), in the spec's camelCase:
/// ```json
/// {"provider": "anthropic", "model": "claude-sonnet-4-5", "apiKeyEnv": "ANTHROPIC_API_KEY",
///  "settings": {"max_tokens": 2048, "temperature": 0.2}}
/// ```
/// Unknown fields are ignored so the runtime may keep its own next to these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelConfig {
    /// `openai`, `openai-compatible`, `anthropic` or `gemini`.
    pub provider: String,
    /// The model id the API knows, e.g. `gpt-4.1-mini`.
    pub model: String,
    /// Where the API is; the vendor's own address when absent. OpenAI-style bases end in the
    /// version (`http://localhost:11434/v1`); Anthropic's does not (`https://api.anthropic.com`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Which OpenAI API to speak: `responses` or `chat` (chat completions). `openai` uses
    /// `responses` when absent, `openai-compatible` uses `chat`; other providers take none.
    #[serde(default)]
    pub api: Option<String>,
    /// Whether the model supports OpenAI strict function calling (OpenAI APIs only).
    #[serde(default)]
    pub strict: bool,
    /// Extra request fields. `temperature` and `max_tokens` are mapped to each API's own
    /// field (for Gemini, into `generationConfig`); every other entry is copied into the request
    /// body as it is (for Gemini, `generationConfig` entries are merged).
    #[serde(default)]
    pub settings: Map<String, Value>,
    /// How transient failures are retried.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Time limits of one attempt.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Size limits of one answer.
    #[serde(default)]
    pub limits: Limits,
    /// A name for logs and transcripts; `provider:model` when absent.
    #[serde(default)]
    pub name: Option<String>,
}

impl ModelConfig {
    /// A definition with the defaults for everything but the provider and the model id.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        ModelConfig {
            provider: provider.into(),
            model: model.into(),
            base_url: None,
            api_key_env: None,
            api: None,
            strict: false,
            settings: Map::new(),
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
            limits: Limits::default(),
            name: None,
        }
    }
}

impl ModelConfig {
    /// The wire dialect this definition speaks: its provider, with `api` choosing between
    /// OpenAI's two APIs. An `api` value that is unknown, or given for a provider with one
    /// API, fails naming the field.
    pub fn wire_api(&self) -> Result<ModelApi, ConfigError> {
        let kind: ApiKind = self.provider.parse()?;
        let api = self.api.as_deref().map(str::trim);
        let bad = |reason: String| ConfigError::BadSetting {
            model: self
                .name
                .clone()
                .unwrap_or_else(|| format!("{}:{}", kind, self.model)),
            setting: "api".to_owned(),
            reason,
        };
        match (kind, api) {
            (ApiKind::OpenAi, None | Some("responses")) => Ok(ModelApi::OpenAiResponses),
            (ApiKind::OpenAiCompatible, Some("responses")) => Ok(ModelApi::OpenAiResponses),
            (ApiKind::OpenAi | ApiKind::OpenAiCompatible, None | Some("chat")) => {
                Ok(ModelApi::OpenAiChat)
            }
            (ApiKind::OpenAi | ApiKind::OpenAiCompatible, Some(other)) => Err(bad(format!(
                "unknown API \"{other}\"; expected \"responses\" or \"chat\""
            ))),
            (ApiKind::Anthropic, None) => Ok(ModelApi::AnthropicMessages),
            (ApiKind::Gemini, None) => Ok(ModelApi::Gemini),
            (kind, Some(other)) => Err(bad(format!(
                "provider {kind} speaks one API; remove \"api\": \"{other}\""
            ))),
        }
    }
}

/// A model definition that cannot be used. Never holds a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The provider is not one toolhost speaks.
    #[error(
        "unknown model provider \"{0}\"; expected openai, openai-compatible, anthropic or gemini"
    )]
    UnknownProvider(String),
    /// The key's variable is not set (or is empty).
    #[error("the API key is missing: set the environment variable {variable} (model {model})")]
    MissingKey {
        /// The variable's name.
        variable: String,
        /// The model's name.
        model: String,
    },
    /// The base URL is missing or unusable.
    #[error("model {model}: bad base URL \"{url}\": {reason}")]
    BadBaseUrl {
        /// The model's name.
        model: String,
        /// The URL as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A setting has the wrong type.
    #[error("model {model}: setting {setting}: {reason}")]
    BadSetting {
        /// The model's name.
        model: String,
        /// The setting.
        setting: String,
        /// What is wrong.
        reason: String,
    },
    /// A proxy variable names a proxy that cannot be used.
    #[error("proxy variable {variable} = \"{url}\": {reason}")]
    BadProxy {
        /// The variable, e.g. `HTTPS_PROXY`.
        variable: String,
        /// Its value, with any credentials replaced by `***`.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// Certificate authorities to trust could not be read.
    #[error("certificates from {origin}: {reason}")]
    BadCertificates {
        /// Where they came from.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The HTTP client could not be set up.
    #[error("model {model}: {reason}")]
    Client {
        /// The model's name.
        model: String,
        /// What failed.
        reason: String,
    },
}
