//! [`AnyTool`]: a registered tool with its schemas compiled, behind one object-safe call.

use super::typed::{IntoToolOutput, Tool, ToolError, ToolOutput};
use super::unwind::CatchPanic;
use super::{ExecutionMode, ToolContext, ToolDefinition};
use crate::approval::ApprovalPolicy;
use crate::names::name_warning;
use crate::result::ToolResult;
use crate::schema::{compile_schema_in, CompiledSchema, Dialect, SchemaError, Violations};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A boxed future, as the object-safe layer returns it.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The object-safe layer under every tool: run on arguments that already passed validation.
pub(crate) trait Execute: Send + Sync {
    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallFailure>>;
}

/// Why a call to a known tool did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallFailure {
    /// The arguments broke the schema (after defaults were applied).
    #[error("invalid arguments for `{tool}`: {violations}")]
    InvalidArguments {
        /// The tool called.
        tool: String,
        /// Every violation with its pointer.
        violations: Violations,
    },
    /// The tool ran and failed.
    #[error("{message}")]
    Failed {
        /// The tool's message.
        message: String,
        /// The tool's stack, if it gave one.
        stack: Option<String>,
    },
    /// The tool panicked; the panic was caught.
    #[error("tool `{tool}` panicked: {message}")]
    Panicked {
        /// The tool called.
        tool: String,
        /// The panic message.
        message: String,
    },
    /// The output broke the tool's output schema.
    #[error("output of `{tool}` does not match its output schema: {violations}")]
    InvalidOutput {
        /// The tool called.
        tool: String,
        /// Every violation with its pointer.
        violations: Violations,
    },
    /// The output's content blocks are not what they say (an image whose data is not base64).
    #[error("output of `{tool}` has a content block that is not valid: {why}")]
    InvalidContent {
        /// The tool called.
        tool: String,
        /// Which block, and what is wrong with it.
        why: String,
    },
    /// The tool cannot run here: it runs at the provider, or it is a latent blueprint.
    #[error("tool `{tool}` is not executed locally: {why}")]
    NotExecutable {
        /// The tool called.
        tool: String,
        /// Why.
        why: String,
    },
}

impl From<ToolError> for CallFailure {
    fn from(e: ToolError) -> Self {
        CallFailure::Failed {
            message: e.message,
            stack: e.stack,
        }
    }
}

struct Inner {
    definition: ToolDefinition,
    /// The definition's name, shared with the context of every call.
    name: Arc<str>,
    arguments: CompiledSchema,
    /// The argument schema as declared, when it is not the canonical one (`$defs` and `$ref`,
    /// `$schema`): what an MCP client is shown, which takes any JSON Schema 2020-12.
    declared: Option<Value>,
    output: Option<CompiledSchema>,
    approval: Option<Arc<dyn ApprovalPolicy>>,
    execute: Option<Arc<dyn Execute>>,
    warnings: Vec<String>,
}

/// A registered tool: its definition, compiled schemas, approval policy and implementation.
/// Cheap to clone.
#[derive(Clone)]
pub struct AnyTool(Arc<Inner>);

impl fmt::Debug for AnyTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyTool")
            .field("name", &self.0.definition.name)
            .field("approval", &self.0.approval.is_some())
            .finish_non_exhaustive()
    }
}

struct TypedExecute<T>(T);

impl<T: Tool> Execute for TypedExecute<T> {
    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallFailure>> {
        Box::pin(async move {
            let args: T::Args =
                serde_json::from_value(args).map_err(|e| CallFailure::InvalidArguments {
                    tool: self.0.name().to_owned(),
                    violations: Violations {
                        items: vec![crate::schema::Violation {
                            pointer: String::new(),
                            message: e.to_string(),
                        }],
                        more: 0,
                    },
                })?;
            let output = self.0.call(args, ctx).await?;
            Ok(output.into_tool_output())
        })
    }
}

/// The JSON Schema of a Rust type, without the root `title` (the Rust type's name means
/// nothing to a model).
pub(crate) fn schema_of<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
    }
    schema
}

/// The parts of a tool before registration; see [`AnyTool::register`].
pub(crate) struct ToolParts {
    pub definition: ToolDefinition,
    /// Which schemas the tool may have (the spec's subset unless it says otherwise).
    pub dialect: Dialect,
    pub output_schema: Option<Value>,
    pub approval: Option<Arc<dyn ApprovalPolicy>>,
    pub execute: Option<Arc<dyn Execute>>,
}

impl AnyTool {
    /// Registers a typed tool: derives and checks its schemas and compiles them.
    pub fn from_tool<T: Tool>(tool: T) -> Result<Self, SchemaError> {
        let parameters = schema_of::<T::Args>();
        let definition = ToolDefinition {
            name: tool.name().to_owned(),
            description: tool.description(),
            parameters,
            output_schema: None,
            execution_mode: tool.execution_mode(),
            execution_provider: tool.execution_provider(),
            variables: tool.variables(),
            idempotent: tool.idempotent(),
            hints: tool.hints(),
        };
        Self::register(ToolParts {
            definition,
            dialect: Dialect::Subset,
            output_schema: <T::Output as IntoToolOutput>::output_schema(),
            approval: tool.approval(),
            execute: Some(Arc::new(TypedExecute(tool))),
        })
    }

    /// Checks and compiles the schemas of a tool's parts; the single door into [`AnyTool`].
    pub(crate) fn register(parts: ToolParts) -> Result<Self, SchemaError> {
        let ToolParts {
            mut definition,
            dialect,
            output_schema,
            approval,
            execute,
        } = parts;
        let name = &definition.name;
        let arguments = compile_schema_in(name, "arguments", &definition.parameters, dialect)?;
        let output = output_schema
            .map(|raw| compile_schema_in(name, "output", &raw, dialect))
            .transpose()?;
        let declared = std::mem::replace(&mut definition.parameters, arguments.schema().clone());
        let declared = (declared != definition.parameters).then_some(declared);
        definition.output_schema = output.as_ref().map(|o| o.schema().clone());
        let warnings: Vec<String> = name_warning(&definition.name).into_iter().collect();
        // Kept on the tool for whoever shows them to a person (`toolhost tools list` does); a
        // log line per tool on every load would drown an imported server's tools in noise.
        for w in &warnings {
            tracing::debug!(tool = %definition.name, "{w}");
        }
        Ok(AnyTool(Arc::new(Inner {
            name: Arc::from(definition.name.as_str()),
            definition,
            arguments,
            declared,
            output,
            approval,
            execute,
            warnings,
        })))
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.0.definition.name
    }

    /// What the model is shown (never the approval policy).
    pub fn definition(&self) -> &ToolDefinition {
        &self.0.definition
    }

    /// The argument schema as the tool declared it (with its `$schema`, `$defs` and `$ref`),
    /// equivalent to the canonical [`ToolDefinition::parameters`] that calls are checked
    /// against: what a client that takes any JSON Schema 2020-12 (MCP's) is shown.
    pub fn declared_parameters(&self) -> &Value {
        self.0
            .declared
            .as_ref()
            .unwrap_or(&self.0.definition.parameters)
    }

    /// The compiled argument schema.
    pub fn arguments(&self) -> &CompiledSchema {
        &self.0.arguments
    }

    /// The approval policy, if the tool has one.
    pub fn approval(&self) -> Option<&Arc<dyn ApprovalPolicy>> {
        self.0.approval.as_ref()
    }

    /// The same tool with `policy` deciding which of its calls need approval. The definition the
    /// model sees does not change.
    pub fn with_approval(&self, policy: Arc<dyn ApprovalPolicy>) -> Self {
        let inner = &self.0;
        AnyTool(Arc::new(Inner {
            definition: inner.definition.clone(),
            name: inner.name.clone(),
            arguments: inner.arguments.clone(),
            declared: inner.declared.clone(),
            output: inner.output.clone(),
            approval: Some(policy),
            execute: inner.execute.clone(),
            warnings: inner.warnings.clone(),
        }))
    }

    /// Warnings raised at registration (a name outside the spec's rule, for example).
    pub fn warnings(&self) -> &[String] {
        &self.0.warnings
    }

    /// Applies defaults and validates arguments; returns them with defaults applied.
    pub fn validate(&self, args: Value) -> Result<Value, CallFailure> {
        self.0
            .arguments
            .validate(args)
            .map_err(|violations| CallFailure::InvalidArguments {
                tool: self.name().to_owned(),
                violations,
            })
    }

    /// Runs arguments that already passed [`AnyTool::validate`], catching panics and checking
    /// the output schema.
    pub async fn execute_validated(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> Result<ToolResult, CallFailure> {
        self.start(args, ctx)?.await
    }

    /// Starts the implementation on validated arguments, or says why this tool cannot run here.
    /// Synchronous, so that the futures of callers hold only the small running call.
    pub(crate) fn start(
        &self,
        args: Value,
        mut ctx: ToolContext,
    ) -> Result<Running<'_>, CallFailure> {
        let execute = match (&self.0.execute, self.0.definition.execution_mode) {
            (_, ExecutionMode::Provider) => {
                return Err(CallFailure::NotExecutable {
                    tool: self.name().to_owned(),
                    why: format!(
                        "it runs at the provider ({})",
                        self.0
                            .definition
                            .execution_provider
                            .as_deref()
                            .unwrap_or("unnamed")
                    ),
                })
            }
            (None, _) => {
                return Err(CallFailure::NotExecutable {
                    tool: self.name().to_owned(),
                    // Latent blueprints have one (the model's `_output`); this is a tool
                    // built without a handler, or bound to an activity nobody registered.
                    why: "it has no implementation (no handler, or its activity is not registered)"
                        .to_owned(),
                });
            }
            (Some(e), ExecutionMode::Local) => e,
        };
        ctx.set_tool_name(&self.0.name);
        Ok(Running {
            tool: self,
            inner: CatchPanic(execute.execute(args, ctx)),
        })
    }

    /// Turns what the running call ended with into its result: a caught panic and output that
    /// breaks the output schema become failures.
    fn finish(
        &self,
        ended: Result<Result<ToolOutput, CallFailure>, String>,
    ) -> Result<ToolResult, CallFailure> {
        let output = ended.map_err(|message| CallFailure::Panicked {
            tool: self.name().to_owned(),
            message,
        })??;
        if let Some(schema) = &self.0.output {
            if let Some(value) = output.checked_value() {
                if !schema.is_valid(&value) {
                    return Err(CallFailure::InvalidOutput {
                        tool: self.name().to_owned(),
                        violations: schema.violations(&value),
                    });
                }
            }
        }
        Ok(output.into_result())
    }

    /// Validates and runs one call: every failure is returned as an error, never a panic.
    /// The arguments are validated and the implementation started at once; what it does runs
    /// when the returned future is polled.
    pub fn call(&self, args: Value, ctx: ToolContext) -> Call<'_> {
        match self.validate(args).and_then(|args| self.start(args, ctx)) {
            Ok(running) => Call(Ok(running)),
            Err(failure) => Call(Err(Some(failure))),
        }
    }
}

/// One call of a tool ([`AnyTool::call`]): the running implementation, or the failure that kept
/// it from starting. A plain future rather than an `async fn`'s, so that a call holds no state
/// machine of its own around the implementation's.
pub struct Call<'a>(Result<Running<'a>, Option<CallFailure>>);

impl Future for Call<'_> {
    type Output = Result<ToolResult, CallFailure>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.0 {
            Ok(running) => Pin::new(running).poll(cx),
            Err(failure) => Poll::Ready(Err(failure
                .take()
                .expect("a call that failed to start is polled once"))),
        }
    }
}

/// A started call: the implementation's future, polled with panics caught; when it ends, its
/// output is checked and turned into a result.
pub(crate) struct Running<'a> {
    tool: &'a AnyTool,
    inner: CatchPanic<BoxFuture<'a, Result<ToolOutput, CallFailure>>>,
}

impl Future for Running<'_> {
    type Output = Result<ToolResult, CallFailure>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(ended) => Poll::Ready(this.tool.finish(ended)),
        }
    }
}
