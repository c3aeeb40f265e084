//! [`HttpModel`]: a [`Model`] over one HTTP API, with bounded retries of the exchange.

use crate::api::{settings, wire_tools, CallContext, Settings, WireApi};
use crate::assemble::Assembly;
use crate::config::{ApiKind, ConfigError, Limits, ModelConfig, Timeouts};
use crate::delta::{DeltaSink, StreamDelta};
use crate::failure::{http_error, scrub, too_large, transport_error};
use crate::network::Network;
use crate::retry::{RetryPolicy, RetryStep};
use crate::secret::ApiKey;
use crate::sse::SseParser;
use crate::transport::{next_chunk, read_body, Transport};
use crate::{anthropic, gemini, openai, responses, ModelApi};
use crate::{Model, ModelError, ModelErrorKind, ModelFuture, ModelRequest, ModelResponse};
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_core::exact::{self, ExactJsonError};

/// A model behind an HTTP API (OpenAI Responses, OpenAI chat completions and compatible servers,
/// Anthropic Messages, Gemini). Built by [`crate::model_from_config`] or [`HttpModel::new`].
pub struct HttpModel {
    name: String,
    kind: ApiKind,
    base_url: String,
    key: Option<ApiKey>,
    api: Box<dyn WireApi>,
    settings: Settings,
    strict: bool,
    retry: RetryPolicy,
    timeouts: Timeouts,
    limits: Limits,
    transport: Transport,
}

impl fmt::Debug for HttpModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpModel")
            .field("name", &self.name)
            .field("api", &self.kind)
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .field("strict", &self.strict)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// A request rendered for the wire, before it is sent; see [`HttpModel::prepare`].
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    url: String,
    body: Bytes,
    stream: bool,
    context: CallContext,
}

impl PreparedRequest {
    /// Where it goes.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The JSON body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Whether it asks for a streamed answer.
    pub fn is_streaming(&self) -> bool {
        self.stream
    }
}

impl HttpModel {
    /// Builds the model a definition describes; `env` reads the key's variable. Requests go
    /// through the proxies the process environment names ([`Network::from_env`]).
    pub fn new(
        config: &ModelConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        Self::with_network(config, env, &Network::from_env()?)
    }

    /// Builds the model a definition describes, its requests reaching the network as `network`
    /// says (proxies, extra authorities to trust); `env` reads the key's variable.
    pub fn with_network(
        config: &ModelConfig,
        env: impl Fn(&str) -> Option<String>,
        network: &Network,
    ) -> Result<Self, ConfigError> {
        let kind: ApiKind = config.provider.parse()?;
        let dialect = config.wire_api()?;
        let name = config
            .name
            .clone()
            .unwrap_or_else(|| format!("{}:{}", kind, config.model));
        let base_url = match (&config.base_url, kind.default_base_url()) {
            (Some(url), _) => url.trim_end_matches('/').to_owned(),
            (None, Some(url)) => url.to_owned(),
            (None, None) => {
                return Err(ConfigError::BadBaseUrl {
                    model: name,
                    url: String::new(),
                    reason: "an openai-compatible model needs a baseUrl".to_owned(),
                })
            }
        };
        if !(base_url.starts_with("http://") || base_url.starts_with("https://"))
            || base_url.parse::<hyper::Uri>().is_err()
        {
            return Err(ConfigError::BadBaseUrl {
                model: name,
                url: base_url,
                reason: "expected an http:// or https:// URL".to_owned(),
            });
        }
        let variable = config.api_key_env.as_deref().or(kind.default_key_env());
        let key = match variable {
            None => None,
            Some(variable) => match env(variable).filter(|k| !k.trim().is_empty()) {
                Some(key) => Some(ApiKey::new(key.trim())),
                None => {
                    return Err(ConfigError::MissingKey {
                        variable: variable.to_owned(),
                        model: name,
                    })
                }
            },
        };
        let mut settings = settings(&name, config)?;
        let api: Box<dyn WireApi> = match dialect {
            ModelApi::OpenAiResponses => {
                Box::new(responses::OpenAiResponses::new(&mut settings).map_err(
                    |(setting, reason)| ConfigError::BadSetting {
                        model: name.clone(),
                        setting: setting.to_owned(),
                        reason: reason.to_owned(),
                    },
                )?)
            }
            ModelApi::AnthropicMessages => Box::new(anthropic::AnthropicMessages),
            ModelApi::Gemini => Box::new(gemini::GeminiGenerate),
            ModelApi::OpenAiChat | ModelApi::Scripted => Box::new(openai::OpenAiChat),
        };
        let connect = Duration::from_millis(config.timeouts.connect_ms);
        let transport =
            Transport::new(connect, network, crate::reach::Reach::Any).map_err(|reason| {
                ConfigError::Client {
                    model: name.clone(),
                    reason,
                }
            })?;
        Ok(HttpModel {
            name,
            kind,
            base_url,
            key,
            api,
            settings,
            strict: config.strict,
            retry: config.retry,
            timeouts: config.timeouts,
            limits: config.limits,
            transport,
        })
    }

    /// The API this model speaks.
    pub fn api(&self) -> ApiKind {
        self.kind
    }

    /// Renders a request as it would be sent (the key is added only when sending).
    pub fn prepare(&self, request: &ModelRequest, stream: bool) -> PreparedRequest {
        let wire = wire_tools(self.api.as_ref(), request, self.strict);
        let body = self.api.body(request, &wire, &self.settings, stream);
        PreparedRequest {
            url: format!(
                "{}{}",
                self.base_url,
                self.api.path(&self.settings.model, stream)
            ),
            body: Bytes::from(serde_json::to_vec(&body).unwrap_or_default()),
            stream,
            context: wire.context,
        }
    }

    /// Reads a whole (non-streamed) answer to `prepared`.
    pub fn parse_response(
        &self,
        prepared: &PreparedRequest,
        body: &[u8],
    ) -> Result<ModelResponse, ModelError> {
        let api = self.api.api();
        let answer: Value = exact::from_slice(body).map_err(|e| {
            // A body that ends early was cut on the way; anything else came whole but wrong.
            let (kind, message) = match e {
                ExactJsonError::Json(e) if e.is_eof() => (
                    ModelErrorKind::Transient,
                    format!("the answer is not JSON: {e}"),
                ),
                ExactJsonError::Json(e) => (
                    ModelErrorKind::MalformedAnswer,
                    format!("the answer is not JSON: {e}"),
                ),
                ExactJsonError::Inexact(n) => (
                    ModelErrorKind::MalformedAnswer,
                    format!("the answer holds a number that cannot be kept exactly: {n}"),
                ),
            };
            ModelError::new(api, kind, scrub(&message, self.key.as_ref()))
        })?;
        if let Some(failure) = self.api.reported_failure(&answer) {
            return Err(failure);
        }
        let mut out = Assembly::new(prepared.context.clone());
        self.api.read(&answer, &mut out).map_err(|reason| {
            ModelError::new(
                api,
                ModelErrorKind::MalformedAnswer,
                scrub(&format!("unexpected answer: {reason}"), self.key.as_ref()),
            )
        })?;
        Ok(out.finish())
    }

    async fn run(
        &self,
        request: &ModelRequest,
        sink: Option<&DeltaSink>,
    ) -> Result<ModelResponse, ModelError> {
        let prepared = self.prepare(request, sink.is_some());
        let mut waited = Duration::ZERO;
        let mut attempt = 1;
        loop {
            let error = match self.attempt(&prepared, sink).await {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            let delay = match self.retry.after(&error, attempt, waited) {
                RetryStep::Wait(delay) => delay,
                RetryStep::Fail => return Err(error),
                RetryStep::GiveUp(why) => return Err(error.noting(&why)),
            };
            let reason = error.to_string();
            tracing::warn!(model = %self.name, attempt, kind = %error.kind(), wait_ms = delay.as_millis() as u64, "{reason}; retrying");
            tokio::time::sleep(delay).await;
            waited = waited.saturating_add(delay);
            attempt += 1;
            if let Some(sink) = sink {
                sink(StreamDelta::Restarted { attempt, reason });
            }
        }
    }

    fn headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        let mut headers = vec![(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
        headers.extend(self.api.headers());
        if let Some((name, mut value)) = self.key.as_ref().and_then(|k| self.api.auth(k)) {
            value.set_sensitive(true);
            headers.push((name, value));
        }
        headers
    }

    async fn attempt(
        &self,
        prepared: &PreparedRequest,
        sink: Option<&DeltaSink>,
    ) -> Result<ModelResponse, ModelError> {
        let api = self.api.api();
        let key = self.key.as_ref();
        let wait = match sink {
            Some(_) => Duration::from_millis(self.timeouts.stream_idle_ms),
            None => Duration::from_millis(self.timeouts.request_ms),
        };
        let started = Instant::now();
        let response = self
            .transport
            .post(&prepared.url, &self.headers(), prepared.body.clone(), wait)
            .await
            .map_err(|e| transport_error(api, &e, key))?;
        let (parts, mut body) = response.into_parts();
        let is_sse = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let sink = match sink {
            Some(sink) if parts.status.is_success() && is_sse => sink,
            _ => {
                let left = wait
                    .saturating_sub(started.elapsed())
                    .max(Duration::from_millis(1));
                let bytes = read_body(body, left, self.limits.max_body_bytes)
                    .await
                    .map_err(|e| transport_error(api, &e, key))?;
                if !parts.status.is_success() {
                    return Err(http_error(api, parts.status, &parts.headers, &bytes, key));
                }
                let response = self.parse_response(prepared, &bytes)?;
                let size = response.text.as_ref().map_or(0, String::len)
                    + response.reasoning.as_ref().map_or(0, String::len)
                    + response
                        .tool_calls
                        .iter()
                        .map(|c| c.id.len() + c.name.len() + c.arguments.len())
                        .sum::<usize>();
                self.check_answer(size)?;
                if let (Some(sink), Some(text)) = (sink, &response.text) {
                    sink(StreamDelta::Text(text.clone()));
                }
                return Ok(response);
            }
        };
        let limits = self.limits;
        let mut parser = SseParser::with_limit(limits.max_event_bytes);
        let mut reader = self.api.stream_reader();
        let mut out = Assembly::new(prepared.context.clone());
        let idle = Duration::from_millis(self.timeouts.stream_idle_ms);
        let mut received = 0usize;
        loop {
            let chunk = next_chunk(&mut body, idle)
                .await
                .map_err(|e| transport_error(api, &e, key))?;
            // Every byte counts, comments too: endless keep-alives are bounded like text.
            received = received.saturating_add(chunk.as_ref().map_or(0, Bytes::len));
            if received > limits.max_body_bytes {
                let what = "the streamed answer";
                return Err(too_large(api, what, limits.max_body_bytes, "maxBodyBytes"));
            }
            let Some(chunk) = chunk else {
                if reader.finished() {
                    out.continuity = reader.continuity();
                    return Ok(out.finish());
                }
                return Err(ModelError::new(
                    api,
                    ModelErrorKind::Transient,
                    "the stream ended before its end marker (cut)",
                ));
            };
            let events = parser.feed_events(&chunk).map_err(|e| {
                let what = format!("{} of the streamed answer", e.what);
                too_large(api, &what, e.limit, "maxEventBytes")
            })?;
            // An event with no data (only an id or a retry time) carries nothing of the answer.
            for event in events.iter().filter(|e| e.data.is_some()) {
                let done = reader
                    .event(event, &mut out, sink)
                    .map_err(|e| e.map_message(|m| scrub(m, key)))?;
                self.check_answer(out.size())?;
                if done {
                    out.continuity = reader.continuity();
                    return Ok(out.finish());
                }
            }
        }
    }
}

impl HttpModel {
    /// Refuses a reply of `size` bytes (text, reasoning, calls) past `limits.maxAnswerBytes`.
    fn check_answer(&self, size: usize) -> Result<(), ModelError> {
        let limit = self.limits.max_answer_bytes;
        if size > limit {
            let what = "the reply put together from the answer";
            return Err(too_large(self.api.api(), what, limit, "maxAnswerBytes"));
        }
        Ok(())
    }
}

impl Model for HttpModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn max_attempts(&self) -> u32 {
        self.retry.max_attempts
    }

    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a> {
        Box::pin(self.run(request, None))
    }

    fn complete_streaming<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: &'a DeltaSink,
    ) -> ModelFuture<'a> {
        Box::pin(self.run(request, Some(sink)))
    }
}

/// Builds the model a definition describes, reading its key through `env` (pass
/// `|name| std::env::var(name).ok()` for the process environment). A missing key fails here,
/// before any request, with an error naming the variable.
pub fn model_from_config(
    config: &ModelConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, ConfigError> {
    Ok(Arc::new(HttpModel::new(config, env)?))
}

/// Builds the model a definition describes, reading its key from the process environment: the
/// model factory of a program that runs HTTP models. A missing key fails here, before any
/// request, with an error naming the variable.
pub fn model_from_env(config: &ModelConfig) -> Result<Arc<dyn Model>, ConfigError> {
    model_from_config(config, |name| std::env::var(name).ok())
}
