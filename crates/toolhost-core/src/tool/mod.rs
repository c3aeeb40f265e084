//! Tools: the typed [`Tool`] trait, dynamic tools, and [`AnyTool`], the compiled, type-erased
//! form every tool takes once registered.
//!
//! Registration is where a definition is checked: the argument schema (and the output schema, if
//! any) must be inside the subset and at most seven levels deep, and is compiled once. After that
//! a call costs one validation pass and one dispatch.

mod abort;
pub(crate) mod any;
mod context;
mod dynamic;
mod typed;
mod unwind;

pub use abort::{AbortSignal, Raised};
pub use any::{AnyTool, Call, CallFailure};
pub use context::ToolContext;
pub use dynamic::DynamicTool;
pub use typed::{IntoToolOutput, Json, NoArgs, Tool, ToolError, ToolOutput};

use crate::variables::VariableDecl;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a tool runs (spec 002 `executionMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    /// Executed by toolhost.
    #[default]
    Local,
    /// Executed by the model provider; results come back in its response and the tool's own
    /// `execute` is never called.
    Provider,
}

/// What a tool says about its effects, as MCP's tool annotations carry them: hints for clients
/// and people, never trusted to waive a check. `None` is "not said" (MCP's defaults then apply:
/// not read-only, destructive, open world). Whether a call may be repeated is
/// [`ToolDefinition::idempotent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolHints {
    /// The tool does not change anything (`readOnlyHint`).
    #[serde(
        default,
        rename = "readOnlyHint",
        skip_serializing_if = "Option::is_none"
    )]
    pub read_only: Option<bool>,
    /// What it changes may be destroyed or overwritten (`destructiveHint`).
    #[serde(
        default,
        rename = "destructiveHint",
        skip_serializing_if = "Option::is_none"
    )]
    pub destructive: Option<bool>,
    /// It reaches things outside the project, such as the web (`openWorldHint`).
    #[serde(
        default,
        rename = "openWorldHint",
        skip_serializing_if = "Option::is_none"
    )]
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// Whether no hint is given.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// What a model is shown about a tool, plus what the runtime needs to run it. Never holds the
/// approval policy: approval is kept on the tool, not in its definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What the tool does, when to use it and what it returns.
    pub description: String,
    /// The canonical JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    /// The canonical JSON Schema of the output, when the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Local or provider execution.
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    /// The provider that executes a provider-mode tool (`openai`, `anthropic`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_provider: Option<String>,
    /// Variables the tool needs at run time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<VariableDecl>,
    /// Whether running the tool twice with the same idempotency key has the effect of running it
    /// once; only such tools are re-run when a crash leaves their outcome unknown.
    #[serde(default)]
    pub idempotent: bool,
    /// What the tool says about its effects (MCP's annotations); never shown to a model.
    #[serde(default, skip_serializing_if = "ToolHints::is_empty")]
    pub hints: ToolHints,
}
