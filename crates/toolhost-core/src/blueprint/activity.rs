//! Activities registered through the library: the code behind explicit blueprint tools.

use super::latent::LatentExecute;
use super::{split_call, Binding, Blueprint, CallMeta};
use crate::schema::{SchemaError, SchemaIssue};
use crate::tool::any::{BoxFuture, Execute, ToolParts};
use crate::tool::{
    AnyTool, CallFailure, IntoToolOutput, ToolContext, ToolDefinition, ToolError, ToolOutput,
};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

type ActivityFn = dyn Fn(Value, CallMeta, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
    + Send
    + Sync;

/// Activities by name. A blueprint binds to one by its `_activity`, or by its own name.
#[derive(Clone, Default)]
pub struct Activities {
    by_name: HashMap<String, Arc<ActivityFn>>,
}

impl std::fmt::Debug for Activities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.by_name.keys().collect();
        names.sort();
        f.debug_struct("Activities").field("names", &names).finish()
    }
}

struct ActivityExecute(Arc<ActivityFn>);

impl Execute for ActivityExecute {
    fn execute<'a>(
        &'a self,
        call: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallFailure>> {
        let (args, meta) = split_call(call);
        let fut = (self.0)(args, meta, ctx);
        Box::pin(async move { Ok(fut.await?) })
    }
}

impl Activities {
    /// No activities.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers an activity: an async function of the call's arguments (meta-properties split
    /// off into the [`CallMeta`]) and its context. A later registration replaces an earlier one.
    pub fn register<F, Fut, O>(&mut self, name: impl Into<String>, f: F) -> &mut Self
    where
        F: Fn(Value, CallMeta, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: IntoToolOutput,
    {
        let f = Arc::new(f);
        let erased: Arc<ActivityFn> = Arc::new(move |args, meta, ctx| {
            let fut = f(args, meta, ctx);
            Box::pin(async move { fut.await.map(IntoToolOutput::into_tool_output) })
        });
        self.by_name.insert(name.into(), erased);
        self
    }

    /// Whether an activity has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Makes a tool of a blueprint: bound to its activity if there is one, latent otherwise
    /// (the model answers it in the call's `_output`, see the `latent` module). Checks and
    /// compiles the schema the model will fill in. A blueprint whose `_activity` names an
    /// activity that is not registered is refused (at `/properties/_activity`): it would
    /// otherwise become a tool that can never run.
    pub fn bind(&self, blueprint: &Blueprint) -> Result<(AnyTool, Binding), SchemaError> {
        let binding = blueprint.binding(|name| self.contains(name));
        let execute: Option<Arc<dyn Execute>> = match &binding {
            Binding::Explicit { activity } => match self.by_name.get(activity) {
                Some(f) => Some(Arc::new(ActivityExecute(f.clone())) as Arc<dyn Execute>),
                None => {
                    return Err(SchemaError {
                        tool: blueprint.name.clone(),
                        part: "arguments",
                        issues: vec![SchemaIssue {
                            pointer: "/properties/_activity".to_owned(),
                            reason: format!(
                                "names activity \"{activity}\", which is not registered"
                            ),
                        }],
                    })
                }
            },
            // The model answers the call itself, in its `_output`.
            Binding::Latent => Some(Arc::new(LatentExecute) as Arc<dyn Execute>),
        };
        let definition = ToolDefinition {
            name: blueprint.name.clone(),
            description: blueprint.description.clone(),
            parameters: blueprint.model_parameters(&binding),
            output_schema: None,
            execution_mode: blueprint.execution_mode,
            execution_provider: blueprint.execution_provider.clone(),
            variables: blueprint.variables.clone(),
            // A latent call only hands back what the model wrote: giving it again is safe.
            idempotent: blueprint.idempotent || binding == Binding::Latent,
            hints: blueprint.hints,
        };
        let tool = AnyTool::register(ToolParts {
            definition,
            dialect: blueprint.dialect,
            output_schema: match binding {
                Binding::Explicit { .. } => blueprint.meta.output.clone(),
                Binding::Latent => None,
            },
            approval: None,
            execute,
        })?;
        Ok((tool, binding))
    }
}
