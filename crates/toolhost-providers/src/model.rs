//! The model contract: what a request holds and what a response gives back.

use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;
use toolhost_core::ToolDefinition;

/// Who wrote a message, as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// Instructions.
    System,
    /// The user.
    User,
    /// The model itself.
    Assistant,
    /// A tool result.
    Tool,
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// The call id (runtime-owned once stored).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as text, as the model wrote them.
    pub arguments: String,
}

/// One message of the conversation sent to a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// What a model is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// The tools offered.
    pub tools: Vec<ToolDefinition>,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its reply.
    Stop,
    /// It wants tools to run.
    ToolCalls,
    /// It hit its output limit.
    Length,
    /// Something else.
    Other,
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// The reply text.
    pub text: Option<String>,
    /// The calls it makes, in order.
    pub tool_calls: Vec<ModelToolCall>,
    /// Token counts.
    pub usage: Usage,
    /// Why it stopped.
    pub finish: FinishReason,
}

/// Why a model gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The request cannot succeed as it is (a script mismatch, a refused request).
    #[error("{0}")]
    Rejected(String),
    /// A passing failure (rate limit, server error, timeout); a retry may succeed.
    #[error("{0} (may succeed if retried)")]
    Transient(String),
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
}
