//! Tools defined at run time from a name, a description, a JSON Schema and an async closure.

use super::any::{BoxFuture, Execute, ToolParts};
use super::typed::{IntoToolOutput, ToolError, ToolOutput};
use super::{AnyTool, CallFailure, ExecutionMode, ToolContext, ToolDefinition, ToolHints};
use crate::approval::ApprovalPolicy;
use crate::schema::{no_arguments_schema, Dialect, SchemaError};
use crate::variables::VariableDecl;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A builder for a tool whose schema is raw JSON Schema.
///
/// ```
/// use toolhost_core::tool::{DynamicTool, ToolError};
/// use serde_json::{json, Value};
/// let echo = DynamicTool::new("echo", "Repeats the text.")
///     .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
///     .handler(|args: Value, _ctx| async move { Ok::<_, ToolError>(args["text"].as_str().unwrap_or("").to_owned()) })
///     .build()
///     .unwrap();
/// assert_eq!(echo.name(), "echo");
/// ```
pub struct DynamicTool {
    definition: ToolDefinition,
    dialect: Dialect,
    output_schema: Option<Value>,
    approval: Option<Arc<dyn ApprovalPolicy>>,
    execute: Option<Arc<dyn Execute>>,
}

struct ClosureExecute<F>(F);

impl<F, Fut, O> Execute for ClosureExecute<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: IntoToolOutput,
{
    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallFailure>> {
        // The closure is called inside the future, so a panic in it is caught like one in the
        // future it returns.
        Box::pin(async move {
            let fut = (self.0)(args, ctx);
            Ok(fut.await?.into_tool_output())
        })
    }
}

impl DynamicTool {
    /// Starts a tool with no arguments and no implementation.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            definition: ToolDefinition {
                name: name.into(),
                description: description.into(),
                parameters: no_arguments_schema(),
                output_schema: None,
                execution_mode: ExecutionMode::Local,
                execution_provider: None,
                variables: Vec::new(),
                idempotent: false,
                hints: ToolHints::default(),
            },
            dialect: Dialect::Subset,
            output_schema: None,
            approval: None,
            execute: None,
        }
    }

    /// The JSON Schema of the arguments (an object schema inside the subset).
    pub fn parameters(mut self, schema: Value) -> Self {
        self.definition.parameters = schema;
        self
    }

    /// Takes any JSON Schema 2020-12 for the arguments and output, not only the spec's subset
    /// (see [`Dialect::General`]): for tools defined elsewhere, such as an MCP server's.
    pub fn general_schema(mut self) -> Self {
        self.dialect = Dialect::General;
        self
    }

    /// A JSON Schema the output must match; output that does not becomes an error result.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The approval policy, kept on the tool and never shown in its definition.
    pub fn approval(mut self, policy: impl ApprovalPolicy + 'static) -> Self {
        self.approval = Some(Arc::new(policy));
        self
    }

    /// Declares a variable the tool needs.
    pub fn variable(mut self, decl: VariableDecl) -> Self {
        self.definition.variables.push(decl);
        self
    }

    /// Marks the tool as run by a provider; its handler is never called.
    pub fn provider_executed(mut self, provider: impl Into<String>) -> Self {
        self.definition.execution_mode = ExecutionMode::Provider;
        self.definition.execution_provider = Some(provider.into());
        self
    }

    /// Declares that re-running a call with the same idempotency key is safe.
    pub fn idempotent(mut self, yes: bool) -> Self {
        self.definition.idempotent = yes;
        self
    }

    /// What the tool says about its effects (served as MCP annotations).
    pub fn hints(mut self, hints: ToolHints) -> Self {
        self.definition.hints = hints;
        self
    }

    /// The implementation: an async closure over the validated arguments and the context.
    pub fn handler<F, Fut, O>(mut self, f: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: IntoToolOutput,
    {
        self.execute = Some(Arc::new(ClosureExecute(f)));
        self
    }

    /// Checks and compiles the schemas: the registration step.
    pub fn build(self) -> Result<AnyTool, SchemaError> {
        AnyTool::register(ToolParts {
            dialect: self.dialect,
            definition: self.definition,
            output_schema: self.output_schema,
            approval: self.approval,
            execute: self.execute,
        })
    }
}
