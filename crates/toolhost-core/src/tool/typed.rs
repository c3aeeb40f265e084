//! The typed tool trait: arguments and output are Rust types, schemas come from `schemars`.

use super::{ExecutionMode, ToolContext};
use crate::approval::ApprovalPolicy;
use crate::output::content_blocks;
use crate::result::{ToolContent, ToolResult};
use crate::variables::VariableDecl;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// A tool whose arguments and output are Rust types.
///
/// ```
/// use toolhost_core::tool::{Tool, ToolContext, ToolError};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs { a: i64, b: i64 }
///
/// struct Add;
/// impl Tool for Add {
///     type Args = AddArgs;
///     type Output = String;
///     fn name(&self) -> &str { "add" }
///     fn description(&self) -> String { "Adds two integers.".into() }
///     async fn call(&self, args: AddArgs, _ctx: ToolContext) -> Result<String, ToolError> {
///         Ok((args.a + args.b).to_string())
///     }
/// }
/// let tool = toolhost_core::AnyTool::from_tool(Add).unwrap();
/// assert_eq!(tool.definition().name, "add");
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The arguments; their JSON Schema is derived with `schemars`. Use [`NoArgs`] for none.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// The output; see [`IntoToolOutput`] for what each type becomes.
    type Output: IntoToolOutput;

    /// The tool's name (snake_case, 1 to 64 characters, by the spec's advice).
    fn name(&self) -> &str;

    /// What the tool does, when to use it and what it returns; shown to the model.
    fn description(&self) -> String;

    /// Runs the tool on validated arguments.
    fn call(
        &self,
        args: Self::Args,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;

    /// The approval policy; `None` runs every call directly.
    fn approval(&self) -> Option<Arc<dyn ApprovalPolicy>> {
        None
    }

    /// Variables the tool needs at run time.
    fn variables(&self) -> Vec<VariableDecl> {
        Vec::new()
    }

    /// Where the tool runs; a provider-mode tool's `call` is never invoked.
    fn execution_mode(&self) -> ExecutionMode {
        ExecutionMode::Local
    }

    /// The provider that runs a provider-mode tool.
    fn execution_provider(&self) -> Option<String> {
        None
    }

    /// Whether a call may be re-run safely with the same idempotency key.
    fn idempotent(&self) -> bool {
        false
    }

    /// What the tool says about its effects (served as MCP annotations).
    fn hints(&self) -> super::ToolHints {
        super::ToolHints::default()
    }
}

/// The arguments of a tool that takes none: `{}` and nothing else.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "properties": {}, "additionalProperties": false})
    }
}

/// Why a tool failed; becomes an error result the model can act on.
///
/// Any `std::error::Error` converts into it with `?`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// The message shown to the model.
    pub message: String,
    /// A stack or chain of causes, for debugging; never shown to the model.
    pub stack: Option<String>,
}

impl ToolError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            stack: None,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(e: E) -> Self {
        let mut stack = Vec::new();
        let mut source = e.source();
        while let Some(s) = source {
            stack.push(s.to_string());
            source = s.source();
        }
        Self {
            message: e.to_string(),
            stack: (!stack.is_empty()).then(|| stack.join("\ncaused by: ")),
        }
    }
}

/// A tool's output before it becomes a [`ToolResult`].
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// Text, passed to the model as it is.
    Text(String),
    /// A JSON value: content blocks stay blocks, anything else becomes JSON text.
    Value(Value),
    /// A complete result (with attachments, or an error status).
    Result(ToolResult),
}

impl ToolOutput {
    /// The value an output schema is checked against, if this output has one.
    pub(crate) fn checked_value(&self) -> Option<std::borrow::Cow<'_, Value>> {
        use std::borrow::Cow;
        match self {
            ToolOutput::Text(s) => Some(Cow::Owned(Value::String(s.clone()))),
            ToolOutput::Value(v) => Some(Cow::Borrowed(v)),
            ToolOutput::Result(_) => None,
        }
    }

    /// The result this output stands for.
    pub fn into_result(self) -> ToolResult {
        match self {
            ToolOutput::Text(s) => ToolResult::success(s),
            // What `serialize_tool_output` would give, without copying the string.
            ToolOutput::Value(Value::String(s)) => ToolResult::success(s),
            ToolOutput::Value(v) => match content_blocks(&v) {
                Some(blocks) => {
                    let mut r =
                        ToolResult::success(crate::output::tool_result_content_to_text(&blocks));
                    r.content = Some(blocks);
                    r
                }
                None => ToolResult::success(crate::output::serialize_tool_output(&v)),
            },
            ToolOutput::Result(r) => r,
        }
    }
}

/// Types a tool may return.
///
/// | type | becomes |
/// |---|---|
/// | `String`, `&'static str` | the result text, unquoted |
/// | `serde_json::Value` | content blocks if it is an array of them, else JSON text |
/// | [`Json<T>`] | JSON text, checked against `T`'s schema |
/// | `Vec<ToolContent>` | content blocks |
/// | [`ToolResult`] | itself (attachments, explicit error status) |
pub trait IntoToolOutput: Send + 'static {
    /// Converts the value.
    fn into_tool_output(self) -> ToolOutput;
    /// The output schema checked before the result is accepted, if this type has one.
    fn output_schema() -> Option<Value> {
        None
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::Text(self)
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::Text(self.to_owned())
    }
}

impl IntoToolOutput for Value {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::Value(self)
    }
}

impl IntoToolOutput for ToolResult {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::Result(self)
    }
}

impl IntoToolOutput for Vec<ToolContent> {
    fn into_tool_output(self) -> ToolOutput {
        match serde_json::to_value(&self) {
            Ok(v) => ToolOutput::Value(v),
            Err(e) => ToolOutput::Result(ToolResult::error(format!(
                "content could not be encoded: {e}"
            ))),
        }
    }
}

/// A structured output: serialized to JSON and checked against the schema of `T`.
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolOutput for Json<T> {
    fn into_tool_output(self) -> ToolOutput {
        match serde_json::to_value(&self.0) {
            Ok(v) => ToolOutput::Value(v),
            Err(e) => ToolOutput::Result(ToolResult::error(format!(
                "output could not be encoded as JSON: {e}"
            ))),
        }
    }
    fn output_schema() -> Option<Value> {
        Some(super::any::schema_of::<T>())
    }
}
