//! The built-in `run_code` tool: a model's ES module runs in the runtime's sandbox through the
//! calling thread's [`ThreadState::run_code`], journaled and redacted like every call.

use super::ThreadState;
use serde_json::{json, Value};
use toolhost_core::schema::SchemaError;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{AnyTool, ToolContext, ToolResult};
use toolhost_sandbox::{Execute, RunCode, RunResult};

/// The name of the built-in tool. A project tool of the same name (a file or a Rust tool)
/// replaces it, as it replaces the built-in `think`.
pub const RUN_CODE_TOOL: &str = "run_code";

const DESCRIPTION: &str = "Runs JavaScript in an isolated sandbox with no files, network, timers or environment, under a memory cap and a deadline. `source` is an ES module; its default export is called with `args` (JSON values) and may be async. The result is JSON text: {status: \"success\", result, logs, durationMs} or {status: \"error\", error: {name, message, stack}, logs, durationMs}. console output is captured into logs.";

/// The tool, ready to be offered by a prompt that lists `run_code`.
pub(crate) fn run_code_tool() -> Result<AnyTool, SchemaError> {
    DynamicTool::new(RUN_CODE_TOOL, DESCRIPTION)
        .parameters(json!({
            "type": "object",
            "properties": {
                "source": {"type": "string", "description": "An ES module; its default export is called."},
                "args": {
                    "type": "array",
                    "description": "JSON arguments passed to the default export.",
                    "items": {"anyOf": [
                        {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
                        {"type": "object"}, {"type": "array", "items": {"anyOf": [
                            {"type": "string"}, {"type": "number"}, {"type": "boolean"},
                            {"type": "null"}, {"type": "object"}
                        ]}}
                    ]}
                }
            },
            "required": ["source"]
        }))
        .handler(|args: Value, ctx: ToolContext| async move {
            let state = ctx
                .get::<ThreadState>()
                .ok_or_else(|| ToolError::new("run_code runs only inside a thread"))?;
            let code = RunCode {
                source: args["source"].as_str().unwrap_or_default().to_owned(),
                execute: Execute {
                    args: args["args"].as_array().cloned().unwrap_or_default(),
                    ..Execute::default()
                },
                ..RunCode::default()
            };
            Ok::<_, ToolError>(tool_result(&state.run_code(code).await))
        })
        .build()
}

/// The SA-9 shape as JSON text; an error status is an error result whose text starts with the
/// error's name (which says the limit hit, if one was).
fn tool_result(run: &RunResult) -> ToolResult {
    let text = serde_json::to_string(run).unwrap_or_else(|e| format!("unserializable result: {e}"));
    match run.error() {
        None => ToolResult::success(text),
        Some(error) => ToolResult::error(format!("{}: {}\n{text}", error.name, error.message)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_built_in_tool_builds() {
        let tool = super::run_code_tool().expect("the definition is valid");
        assert_eq!(tool.name(), super::RUN_CODE_TOOL);
    }
}
