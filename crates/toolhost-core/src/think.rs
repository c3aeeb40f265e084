//! The think tool (spec 003 `createThinkTool`): a private scratchpad that echoes its thought.

use crate::schema::SchemaError;
use crate::tool::{AnyTool, Tool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

/// The think tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThinkArgs {
    /// A thought to note down before acting.
    pub thought: String,
}

/// A tool that returns the thought it is given; lets a model reason in a visible, stored step.
#[derive(Debug, Clone)]
pub struct ThinkTool {
    name: String,
    description: String,
}

impl Default for ThinkTool {
    fn default() -> Self {
        Self {
            name: "think".to_owned(),
            description: "Use this tool to think about something. It does not obtain new information or change anything; it records the thought. Use it when complex reasoning or a plan is needed.".to_owned(),
        }
    }
}

impl ThinkTool {
    /// The tool under another name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The tool with another description.
    pub fn described(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

impl Tool for ThinkTool {
    type Args = ThinkArgs;
    type Output = String;

    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> String {
        self.description.clone()
    }
    async fn call(&self, args: ThinkArgs, _ctx: ToolContext) -> Result<String, ToolError> {
        Ok(args.thought)
    }
    fn idempotent(&self) -> bool {
        true
    }
    fn hints(&self) -> crate::tool::ToolHints {
        crate::tool::ToolHints {
            read_only: Some(true),
            destructive: Some(false),
            open_world: Some(false),
        }
    }
}

/// The think tool, registered: named `think`, takes `{thought}`, returns it.
pub fn think_tool() -> Result<AnyTool, SchemaError> {
    AnyTool::from_tool(ThinkTool::default())
}
