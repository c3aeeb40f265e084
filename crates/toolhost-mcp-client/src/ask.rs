//! What an MCP server (or any tool) may ask whoever made its call while the call runs: a form
//! for the person, a completion from their model, their roots; and the answer to come.

use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// What a tool asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskKind {
    /// A form for the person (`elicitation/create` params: `message`, `requestedSchema`).
    Elicit,
    /// A completion from the caller's model (`sampling/createMessage` params: `messages`,
    /// `maxTokens`, ...).
    Sample,
    /// The caller's roots: the folders or places it works in (`roots/list`).
    Roots,
}

impl AskKind {
    /// The protocol method that asks it.
    pub fn method(self) -> &'static str {
        match self {
            AskKind::Elicit => "elicitation/create",
            AskKind::Sample => "sampling/createMessage",
            AskKind::Roots => "roots/list",
        }
    }

    /// The client capability that answers it, as MCP's `ClientCapabilities` names it.
    pub fn capability(self) -> &'static str {
        match self {
            AskKind::Elicit => "elicitation",
            AskKind::Sample => "sampling",
            AskKind::Roots => "roots",
        }
    }

    /// MCP client capabilities (JSON) that answer `kinds`: `{"elicitation": {}, ...}`.
    pub fn capabilities(kinds: &[AskKind]) -> Value {
        Value::Object(
            kinds
                .iter()
                .map(|kind| (kind.capability().to_owned(), serde_json::json!({})))
                .collect(),
        )
    }

    /// The short name a question's key starts with when the tool names none.
    pub fn short(self) -> &'static str {
        match self {
            AskKind::Elicit => "elicit",
            AskKind::Sample => "sample",
            AskKind::Roots => "roots",
        }
    }
}

/// The answer to come: the answer as JSON, or why there is none (one sentence).
pub type Answering = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;
