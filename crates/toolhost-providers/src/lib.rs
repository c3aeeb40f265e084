//! # toolhost-providers: models
//!
//! The [`Model`] contract every adapter implements, the scripted [`ScriptedModel`] (the spec's
//! `test` provider), and [`HttpModel`], the adapter for the HTTP APIs: the OpenAI Responses API,
//! OpenAI chat completions (and every server that speaks it), Anthropic Messages and Gemini
//! `generateContent`.
//!
//! ## Which API
//! [`ModelConfig::wire_api`] decides: `openai` speaks Responses unless the definition says
//! `api: "chat"`; `openai-compatible` speaks chat completions unless it says
//! `api: "responses"`; `anthropic` and `gemini` take no `api`. Any other `api` is a
//! [`ConfigError::BadSetting`] naming the field.
//!
//! ## Features
//! - `http` (default): the HTTP adapters — [`HttpModel`], [`model_from_config`] and
//!   [`model_from_env`] — with hyper, rustls and tokio's networking.
//! - Without it (`default-features = false`) the crate is the contract alone: the request,
//!   response and error types, the [`Model`] trait, [`check_history`], model definitions
//!   ([`ModelConfig`], [`ConfigError`]), the [`ScriptedModel`], the HTTP client contract
//!   ([`fetch`]) and the workspace's one server-sent events parser ([`sse`], which the MCP
//!   client reads its servers' event streams with too); it links no network or TLS code. A program that runs threads without HTTP models depends on it this way.
//!
//! ## Contract
//! - A model answers a [`ModelRequest`] (the conversation, the offered tools, `toolChoice`,
//!   `parallelToolCalls`) with a [`ModelResponse`]: text, tool calls, reasoning, results of
//!   provider-run tools, and usage where known (unknown counts are `None`, never zero).
//! - A tool message's [`ChatMessage::is_error`] reaches Anthropic as `is_error`; the other APIs
//!   see an error only in the result's text.
//! - A failure is a [`ModelError`]: the [`ModelApi`] it came from, the HTTP status if an
//!   answer came, a [`ModelErrorKind`], the wait the server asked for, and the API's own
//!   message; shown in one line that names the API, the status and the cause. See
//!   [Errors](#errors) for how each API's answers map to kinds.
//! - [`model_from_config`] builds a model from a [`ModelConfig`] ([`model_from_env`] reads the
//!   key from the process environment); a missing key fails there, naming its variable. The
//!   key is an [`ApiKey`]: it never appears in a `Debug` output, an error or a log, and a
//!   server's echo of it is scrubbed.
//!
//! ## Tool declarations
//! Each API gets the tools lowered for it (`toolhost_core::schema::lower`). Names and property
//! keys the API refuses are renamed on the wire, deterministically and without collisions, and
//! mapped back in the calls of an answer, so the runtime only sees the tools' own: tool names
//! for every API (`toolhost_core::names`), property keys for Anthropic ([`keys`]).
//!
//! ## Call ids
//! A call keeps the id the API issued. Within one answer, a repeated id is kept once (the first
//! wins); an id that repeats one of the conversation gets a `_2`, `_3`... suffix; a missing id
//! (Gemini, some servers) is made up (`call_th...`). The runtime may give the calls ids of its
//! own (it keeps their order); an adapter sends back whatever ids the conversation carries, the
//! same on a call and on its result, as OpenAI and Anthropic require.
//!
//! ## Continuity
//! Some APIs need parts of a reply back, unchanged, in later turns. An adapter returns them in
//! [`ModelResponse::continuity`] under its API's key; the runtime stores that JSON with the
//! reply, never reads or changes it, and gives it back in [`ChatMessage::continuity`] of that
//! assistant message. An adapter ignores another API's key, so a thread can change models. What
//! belongs to a call names it by its position in the reply's `tool_calls`, never by id.
//! - Anthropic: `{"anthropic": {"blocks": [...]}}`, the reply's `thinking` and
//!   `redacted_thinking` blocks as received, sent back first in that assistant turn.
//! - Gemini: `{"gemini": {"calls": [SIG or null, ...], "text": SIG}}`, the reply's
//!   `thoughtSignature`s, put back on the `functionCall` parts by position and on the text.
//! - OpenAI Responses: `{"responses": {"output": [...], "responseId": ID}}`, the reply's output
//!   items in order: `reasoning` items (with `encrypted_content`) and hosted tools' items as
//!   received, and the places of its text and of each call (by position, with the wire's
//!   `call_id`). Sent back in that order, each reasoning item before the call it led to; the
//!   runtime's call ids are mapped back to the wire's. Requests are `store: false`, so a thread
//!   never depends on state it did not store; `previous_response_id: true` in the settings opts
//!   into OpenAI's state.
//! - OpenAI chat: none.
//!
//! ## Errors
//! The HTTP status gives the kind: 401 and 403 `Authentication`; 429 `RateLimit`; 529, and 503
//! from Anthropic or Gemini, `Overloaded`; 408, 409, 425 and other 5xx `Transient`; any other
//! 4xx `BadRequest`. The error body then names the cause more precisely, as long as that does
//! not change whether a retry may help, but for a used-up quota (`QuotaExceeded`, which comes
//! as a 429 that no wait cures, and is never retried):
//! - OpenAI chat and Responses: `error.code` (or `type`) `context_length_exceeded` → `ContextLength`,
//!   `rate_limit_exceeded` → `RateLimit`, `insufficient_quota` → `QuotaExceeded`, `invalid_api_key` →
//!   `Authentication`; a message about the maximum context length (compatible servers) →
//!   `ContextLength`. The `param` an invalid request names is kept in the message. In a
//!   Responses stream, an `error` event and `response.failed` are read the same way.
//! - Anthropic: `error.type` `authentication_error` and `permission_error` →
//!   `Authentication`, `rate_limit_error` → `RateLimit`, `overloaded_error` → `Overloaded`,
//!   `api_error` → `Transient`, `billing_error` → `QuotaExceeded`, `invalid_request_error` →
//!   `BadRequest`, or `ContextLength` when
//!   the prompt (or the prompt with `max_tokens`) is too long for the context window.
//! - Gemini: `error.status` `UNAUTHENTICATED` and `PERMISSION_DENIED` (and an `ErrorInfo` of
//!   reason `API_KEY_INVALID`) → `Authentication`, `RESOURCE_EXHAUSTED` → `RateLimit`,
//!   `UNAVAILABLE` → `Overloaded`, `INTERNAL` and `DEADLINE_EXCEEDED` → `Transient`,
//!   `INVALID_ARGUMENT` → `BadRequest`, or `ContextLength` when the input has too many tokens.
//!
//! An error event inside a stream has no status: its body alone decides, and `Transient` when
//! it names nothing known. Failed connections, timeouts and cut answers are `Transient`; an
//! answer that arrived whole but cannot be read is `MalformedAnswer`. The wait comes from
//! `retry-after-ms` or `Retry-After` (seconds or an HTTP date), else from Gemini's
//! `RetryInfo.retryDelay`, and is clamped to [`MAX_SERVER_WAIT`].
//!
//! ## Limits
//! What a server sends is bounded by the definition's [`Limits`]: a whole body (an error
//! body too) and all the bytes of a stream (`maxBodyBytes`), one line or event of a stream
//! (`maxEventBytes`), and the reply put together from it (`maxAnswerBytes`). Past one, the
//! answer fails with [`ModelErrorKind::TooLarge`], naming the limit and its field, and is not
//! retried.
//!
//! ## Retries
//! Only the HTTP exchange is retried, and only errors of a retryable kind (`RateLimit`,
//! `Overloaded`, `Transient`): with exponential backoff and jitter, honouring the server's
//! wait, within [`RetryPolicy`]'s attempts and total wait. The runtime must never ask a model
//! again once the tool calls of its answer have started to run.
//!
//! ## Streaming
//! [`Model::complete_streaming`] reports [`StreamDelta`]s (text, reasoning, tool-call starts and
//! argument fragments with the call's index and id) to a [`DeltaSink`] while the answer
//! arrives over server-sent events, and returns the same [`ModelResponse`] as
//! [`Model::complete`]. An answer the API ended early (Responses `incomplete`: the output limit,
//! the content filter) finishes as [`FinishReason::Length`] or [`FinishReason::Other`], never as
//! a finished answer. After a retry a [`StreamDelta::Restarted`] says to drop what came before.
//!
//! ## Tool-call ordering
//! [`check_history`] runs on the conversation right before every model request. All four APIs
//! refuse a call without its result, a result without its call, and results that do not come
//! right after the message that made the calls. It returns `None` for a conversation that
//! already pairs them (one linear pass); otherwise it returns a repaired one and a
//! [`HistoryRepair`] per change: a missing result becomes an error result
//! ([`RESULT_UNAVAILABLE`]), never a success; a late result is moved up; a result answering no
//! earlier call, or a second one, is dropped. Other messages are kept as they are.
//!
//! ## HTTP client
//! hyper 1 with hyper-util's pooled client, and rustls (ring, webpki roots) for TLS: the same
//! hyper the server side shares through axum, HTTP/1.1 only, no cookie or compression layers,
//! and no system OpenSSL. Server-sent events are parsed by [`sse`]: the one parser of the
//! workspace (bounded, every line ending, `id` and `retry`), not a library's, which holds an
//! event of any size in memory and refuses fields it does not know.
//!
//! Proxies are honoured as curl honours them ([`ProxyConfig`]): `http_proxy`, `HTTPS_PROXY`,
//! `ALL_PROXY` and `NO_PROXY` in either case, read when a model is built. The proxy applies to
//! every host `NO_PROXY` does not name, loopback included; `http://` requests are forwarded,
//! `https://` ones tunnelled with `CONNECT`, streamed answers alike. The certificate
//! authorities in the PEM file `SSL_CERT_FILE` names are trusted besides the built-in ones (a
//! proxy that inspects TLS needs that). A [`Network`] passed to [`HttpModel::with_network`]
//! sets both explicitly.

// The crate page names the HTTP adapters, which a build without `http` does not have.
#![cfg_attr(not(feature = "http"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "http")]
mod adapter;
#[cfg(feature = "http")]
mod anthropic;
#[cfg(feature = "http")]
mod api;
#[cfg(feature = "http")]
mod assemble;
mod config;
mod delta;
mod error;
#[cfg(feature = "http")]
mod failure;
pub mod fetch;
#[cfg(feature = "http")]
mod gemini;
#[cfg(feature = "http")]
mod hosted;
pub mod keys;
mod model;
#[cfg(feature = "http")]
mod network;
#[cfg(feature = "http")]
mod openai;
mod ordering;
#[cfg(feature = "http")]
mod proxy;
#[cfg(feature = "http")]
mod reach;
#[cfg(feature = "http")]
mod responses;
mod retry;
mod scripted;
mod secret;
pub mod sse;
#[cfg(feature = "http")]
mod transport;

#[cfg(feature = "http")]
pub use adapter::{model_from_config, model_from_env};
#[cfg(feature = "http")]
pub use adapter::{HttpModel, PreparedRequest};
pub use config::{ApiKind, ConfigError, Limits, ModelConfig, Timeouts};
pub use delta::{DeltaSink, StreamDelta};
pub use error::{ModelApi, ModelError, ModelErrorKind};
pub use model::{
    ChatMessage, ChatRole, FinishReason, ImageAttachment, Model, ModelFuture, ModelRequest,
    ModelResponse, ModelToolCall, ProviderToolResult, ResponseFormat, ToolChoice, Usage,
};
#[cfg(feature = "http")]
pub use network::Network;
pub use ordering::{check_history, HistoryRepair, HistoryRepairKind, RESULT_UNAVAILABLE};
#[cfg(feature = "http")]
pub use proxy::ProxyConfig;
pub use retry::{parse_retry_after, RetryPolicy, MAX_SERVER_WAIT};
pub use scripted::{ScriptError, ScriptedModel, ScriptedTurn};
pub use secret::{ApiKey, REDACTED};
