//! The model contract: what a request holds and what a response gives back.

use crate::delta::DeltaSink;
use crate::ModelError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use toolhost_core::ToolDefinition;

/// Who wrote a message, as the model sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// Instructions.
    System,
    /// The user.
    #[default]
    User,
    /// The model itself.
    Assistant,
    /// A tool result.
    Tool,
}

/// A tool call made by the model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// The call id. The HTTP adapters return the id the API issued (made unique within the
    /// conversation, see the crate page); the runtime may keep it or give the call its own, and
    /// the adapters send back whichever the conversation carries, with the call and its result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as text, as the model wrote them.
    pub arguments: String,
}

/// An image attached to a message (a tool result's picture, for instance).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageAttachment {
    /// A name to show where the image cannot be sent, e.g. the attachment's file name.
    pub name: String,
    /// The media type, e.g. `image/png`.
    pub mime_type: String,
    /// The image bytes, base64-encoded (standard alphabet, with padding).
    pub data_base64: String,
}

impl fmt::Debug for ImageAttachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImageAttachment")
            .field("name", &self.name)
            .field("mime_type", &self.mime_type)
            .field("base64_len", &self.data_base64.len())
            .finish()
    }
}

/// One message of the conversation sent to a model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// The author.
    pub role: ChatRole,
    /// The text.
    pub content: Option<String>,
    /// Calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ModelToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images a tool message carries. Sent as images where the API takes them in tool results
    /// (Anthropic, Gemini), as a placeholder line of text where it does not (OpenAI chat).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageAttachment>,
    /// On a tool message: the result is an error (Anthropic's `is_error`; the other APIs see
    /// the error only in the text).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// On an assistant message: what the adapter returned in [`ModelResponse::continuity`] for
    /// it, given back unchanged so the API gets what it needs in later turns (Anthropic
    /// thinking blocks, Gemini thought signatures). Opaque to everything but the adapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuity: Option<Value>,
}

/// Which tools the model may or must call (a prompt's `toolChoice`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ToolChoice {
    /// The model decides (`auto`).
    Auto,
    /// No tool calls (`none`).
    None,
    /// At least one tool call (`required`).
    Required,
    /// This tool must be called (any other string names a tool).
    Tool(String),
}

impl From<String> for ToolChoice {
    fn from(s: String) -> Self {
        match s.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            _ => ToolChoice::Tool(s),
        }
    }
}

impl From<ToolChoice> for String {
    fn from(c: ToolChoice) -> Self {
        match c {
            ToolChoice::Auto => "auto".to_owned(),
            ToolChoice::None => "none".to_owned(),
            ToolChoice::Required => "required".to_owned(),
            ToolChoice::Tool(name) => name,
        }
    }
}

/// What a model is asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRequest {
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// The tools offered. Provider-mode tools are sent as the provider's hosted tools.
    pub tools: Vec<ToolDefinition>,
    /// Which tools the model may call; `None` leaves the API's default (auto).
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one reply; `None` leaves the API's default.
    /// Gemini has no such switch and ignores it.
    pub parallel_tool_calls: Option<bool>,
    /// The JSON Schema the reply must be, as the API's structured output (spec 004's combined
    /// request); `None` for a free reply. See [`ResponseFormat`].
    pub response_format: Option<ResponseFormat>,
}

/// A reply given as one JSON document of a schema (structured output). Each API is asked in
/// its own way: OpenAI Chat Completions `response_format` and Responses `text.format` (a JSON
/// schema, not strict: the runtime validates the reply itself), Gemini `responseMimeType`
/// with `responseJsonSchema`, Anthropic a tool of this name whose call is forced: its input is
/// the reply. Whichever way it arrives, [`ModelResponse::structured`] gives the document's
/// text.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseFormat {
    /// The schema's name (a tool name on Anthropic: letters, digits, `_` and `-`).
    pub name: String,
    /// The schema.
    pub schema: Value,
}

/// Token counts; a count the API did not report is `None`, never zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read.
    pub input_tokens: Option<u64>,
    /// Tokens written.
    pub output_tokens: Option<u64>,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its reply.
    #[default]
    Stop,
    /// It wants tools to run.
    ToolCalls,
    /// It hit its output limit.
    Length,
    /// Something else.
    Other,
}

/// A call the provider ran itself (a provider-mode tool) and what it gave back. The runtime
/// records it as a tool result and never executes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderToolResult {
    /// The provider's id of the call, where it gives one.
    pub call_id: Option<String>,
    /// The tool's name (mapped back from the hosted tool's name on the wire).
    pub name: String,
    /// What the provider ran the tool with (a search query, code), where it says.
    pub input: Option<Value>,
    /// What the tool gave back, as the provider reported it.
    pub output: Value,
    /// Whether the provider reported the run as failed (an Anthropic `*_error` result, a
    /// Gemini code execution whose outcome is not `OUTCOME_OK`).
    #[serde(default)]
    pub failed: bool,
}

/// What a model answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    /// The reply text.
    pub text: Option<String>,
    /// The calls it makes, in order.
    pub tool_calls: Vec<ModelToolCall>,
    /// Token counts.
    pub usage: Usage,
    /// Why it stopped.
    pub finish: FinishReason,
    /// The model's reasoning text, where the API returns it.
    pub reasoning: Option<String>,
    /// Results of provider-mode tools the provider ran while answering.
    pub provider_results: Vec<ProviderToolResult>,
    /// Data the API needs back with this reply in later turns (see
    /// [`ChatMessage::continuity`]); the runtime stores it with the reply. `None` when there is
    /// none.
    pub continuity: Option<Value>,
}

impl ModelResponse {
    /// The text of the document a reply to a [`ResponseFormat`] request gave: the reply's
    /// text, or, where the API answers with a forced tool (Anthropic), the input of the one
    /// call of that tool. `None` when the reply holds neither.
    pub fn structured(&self, format: &ResponseFormat) -> Option<String> {
        if let Some(text) = self.text.as_deref().filter(|t| !t.trim().is_empty()) {
            return Some(text.to_owned());
        }
        match self.tool_calls.as_slice() {
            [only] if only.name == format.name => Some(only.arguments.clone()),
            _ => None,
        }
    }
}

/// A boxed future returned by [`Model::complete`].
pub type ModelFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ModelResponse, ModelError>> + Send + 'a>>;

/// A language model that can call tools.
pub trait Model: Send + Sync {
    /// A short name for logs and transcripts, e.g. `test:quickstart`.
    fn name(&self) -> &str;
    /// Answers one request.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> ModelFuture<'a>;

    /// How many times one request is sent at most, the first time included: the bound of the
    /// model's retries, which the runtime also keeps when it refuses an answer as malformed (a
    /// call without a tool name, for example) and asks again. The default is that of
    /// [`crate::RetryPolicy`].
    fn max_attempts(&self) -> u32 {
        crate::RetryPolicy::default().max_attempts
    }

    /// Answers one request, reporting the answer to `sink` piece by piece as it arrives. The
    /// returned response is the same as [`Model::complete`] would give and is authoritative;
    /// deltas are for showing progress. The default streams nothing and reports the whole text
    /// as one delta at the end.
    fn complete_streaming<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: &'a DeltaSink,
    ) -> ModelFuture<'a> {
        Box::pin(async move {
            let response = self.complete(request).await?;
            if let Some(text) = &response.text {
                sink(crate::delta::StreamDelta::Text(text.clone()));
            }
            Ok(response)
        })
    }
}
