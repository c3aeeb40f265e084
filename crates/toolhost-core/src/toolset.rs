//! [`ToolSet`]: the tools offered to a model, and the boundary where calls come in (spec 003).
//!
//! Names are unique: adding a tool whose name is taken replaces the older definition (the last
//! one wins), which is then no longer shown to the model, and a warning is logged. Calls arrive
//! as a name and an argument string and fail in one of three ways: [`ToolSetError::NotFound`],
//! [`ToolSetError::Json`] or [`ToolSetError::Call`].

use crate::args::{parse_tool_args, ArgsParseError};
use crate::result::ToolResult;
use crate::tool::any::Running;
use crate::tool::{AnyTool, CallFailure, ToolContext, ToolDefinition};
use indexmap::IndexMap;

/// Why [`ToolSet::call`] did not return output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolSetError {
    /// No tool has that name.
    #[error("Tool not found: {tool_name}")]
    NotFound {
        /// The name the caller asked for.
        tool_name: String,
        /// The names that do exist, in insertion order.
        available: Vec<String>,
    },
    /// The argument string is not JSON (or has duplicate keys, non-finite numbers or integers
    /// past 64 bits).
    #[error("arguments for `{tool_name}` {}: {}", source.what(), source.reason)]
    Json {
        /// The tool called.
        tool_name: String,
        /// What the parser said.
        source: ArgsParseError,
    },
    /// The tool was found and the arguments parsed, but the call failed.
    #[error("{failure}")]
    Call {
        /// The tool called.
        tool_name: String,
        /// How it failed.
        failure: CallFailure,
    },
}

impl ToolSetError {
    /// The error's class name, as a model sees it before the message.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolSetError::NotFound { .. } => "ToolNotFoundError",
            ToolSetError::Json { .. } => "ToolJsonError",
            ToolSetError::Call { .. } => "ToolCallError",
        }
    }

    /// The text a model is shown: `"<Kind>: message"`, with the available tools for an
    /// unknown name so the model can correct itself.
    pub fn model_text(&self) -> String {
        match self {
            ToolSetError::NotFound { available, .. } => {
                let list = if available.is_empty() {
                    "none".to_owned()
                } else {
                    available.join(", ")
                };
                format!("{}: {self}. Available tools: {list}", self.kind())
            }
            _ => format!("{}: {self}", self.kind()),
        }
    }

    /// This error as an error result, as the runtime stores and shows it.
    pub fn into_result(self) -> ToolResult {
        let stack = match &self {
            ToolSetError::Call {
                failure: CallFailure::Failed { stack, .. },
                ..
            } => stack.clone(),
            _ => None,
        };
        let mut result = ToolResult::error(self.model_text());
        result.stack = stack;
        result
    }
}

/// An ordered set of uniquely named tools.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    /// Keyed with a fast hasher: every call looks its tool up by name, and the keys are the
    /// names the program registered, so there is no table for a caller to flood.
    tools: IndexMap<String, AnyTool, foldhash::fast::RandomState>,
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set of these tools; for duplicate names the last one wins.
    pub fn from_tools(tools: impl IntoIterator<Item = AnyTool>) -> Self {
        let mut set = Self::new();
        set.add_many(tools);
        set
    }

    /// Adds a tool. If the name was taken, the older tool is removed (and returned), the new one
    /// goes to the end, and a warning is logged.
    pub fn add(&mut self, tool: AnyTool) -> Option<AnyTool> {
        let replaced = self.tools.shift_remove(tool.name());
        if replaced.is_some() {
            tracing::warn!(tool = %tool.name(), "a later definition replaces an earlier tool of the same name");
        }
        self.tools.insert(tool.name().to_owned(), tool);
        replaced
    }

    /// Adds several tools in order.
    pub fn add_many(&mut self, tools: impl IntoIterator<Item = AnyTool>) {
        for tool in tools {
            self.add(tool);
        }
    }

    /// Removes a tool; returns whether it existed.
    pub fn delete(&mut self, name: &str) -> bool {
        self.tools.shift_remove(name).is_some()
    }

    /// Whether a tool has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&AnyTool> {
        self.tools.get(name)
    }

    /// The tools in insertion order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &AnyTool> {
        self.tools.values()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The definitions to show a model, in insertion order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .values()
            .map(|t| t.definition().clone())
            .collect()
    }

    fn lookup(&self, name: &str) -> Result<&AnyTool, ToolSetError> {
        self.tools.get(name).ok_or_else(|| ToolSetError::NotFound {
            tool_name: name.to_owned(),
            available: self.tools.keys().cloned().collect(),
        })
    }

    /// Runs a call given as a name and an argument string, and returns the result.
    ///
    /// Never fails: an unknown name, unparsable or invalid arguments and tool failures all
    /// become error results whose text is `"<Kind>: message"`.
    pub async fn execute(&self, name: &str, args: &str, ctx: ToolContext) -> ToolResult {
        match self.try_execute(name, args, ctx).await {
            Ok(result) => result,
            Err(e) => e.into_result(),
        }
    }

    async fn try_execute(
        &self,
        name: &str,
        args: &str,
        ctx: ToolContext,
    ) -> Result<ToolResult, ToolSetError> {
        let result = self
            .start(name, args, ctx)?
            .await
            .map_err(|failure| ToolSetError::Call {
                tool_name: name.to_owned(),
                failure,
            })?;
        // Content blocks are checked here, where every call passes, so no caller renders an
        // image that is none.
        let blocks = result.content.iter().flatten().enumerate();
        for (at, block) in blocks {
            if let Err(why) = block.check() {
                return Err(ToolSetError::Call {
                    tool_name: name.to_owned(),
                    failure: CallFailure::InvalidContent {
                        tool: name.to_owned(),
                        why: format!("block {}: {why}", at + 1),
                    },
                });
            }
        }
        Ok(result)
    }

    /// Finds the tool, parses and validates the arguments and starts the call. Synchronous, so
    /// that the future of a call holds only the small running call, not one future in another.
    fn start<'a>(
        &'a self,
        name: &str,
        args: &str,
        ctx: ToolContext,
    ) -> Result<Running<'a>, ToolSetError> {
        let tool = self.lookup(name)?;
        let args = parse_tool_args(args).map_err(|source| ToolSetError::Json {
            tool_name: name.to_owned(),
            source,
        })?;
        tool.validate(args)
            .and_then(|args| tool.start(args, ctx))
            .map_err(|failure| ToolSetError::Call {
                tool_name: name.to_owned(),
                failure,
            })
    }

    /// Runs a call and returns its output as text: strings unquoted, other values as JSON.
    /// A result with status `error` is returned as [`ToolSetError::Call`].
    pub async fn call(
        &self,
        name: &str,
        args: &str,
        ctx: ToolContext,
    ) -> Result<String, ToolSetError> {
        let result = self.try_execute(name, args, ctx).await?;
        if result.is_success() {
            return Ok(result.result.unwrap_or_default());
        }
        let message = match result.error {
            Some(m) if !m.trim().is_empty() => m,
            _ => format!("Tool {name} failed"),
        };
        Err(ToolSetError::Call {
            tool_name: name.to_owned(),
            failure: CallFailure::Failed {
                message,
                stack: result.stack,
            },
        })
    }
}
