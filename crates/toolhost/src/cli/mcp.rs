//! `toolhost mcp DIR --agent NAME`: the tools an agent offers, served to any MCP client over
//! standard input and output (the official Rust SDK, `rmcp`; the stateful 2025-11-25 protocol
//! and the stateless 2026-07-28 one, as the SDK negotiates them).
//!
//! - `tools/list`: the function tools the agent's first prompt offers, by name, each with its
//!   description, its input schema as the tool declares it, its output schema when it has an
//!   object one, and `idempotentHint` from its definition. Nothing but protocol is written to
//!   standard output.
//! - `tools/call` runs through the same path as a direct call of the HTTP API: arguments that do
//!   not fit the schema are a result with `isError: true` listing what is wrong (nothing is
//!   stored); otherwise the call is journaled on a thread of its own (tagged `scratch`, visible
//!   in `threads list`), with its idempotency key, approval, variables and redaction, and its
//!   result comes back as text (`isError` when the tool failed), and for a tool with an output
//!   schema as `structuredContent` too. A call that waits for an
//!   approval or for variables is an error result saying what it waits for and the `toolhost
//!   resume` command that answers it. A client's cancellation stops the call's thread.

use super::output::{self, BAD_INPUT};
use super::project_config;
use super::run::{block_on, check_agent_first, open_project};
use clap::Args;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_runtime::engine::{fit_arguments, RunOutcome, Runtime, ScratchCall, Waiting};

/// `toolhost mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The project folder.
    dir: PathBuf,
    /// The agent whose first prompt's tools are served; calls run as this agent.
    #[arg(long)]
    agent: String,
    /// The data folder (default: `data` of toolhost.toml, else `.toolhost`).
    #[arg(long)]
    data: Option<PathBuf>,
}

/// Serves the agent's tools until the client closes standard input.
pub fn mcp(args: McpArgs) -> ExitCode {
    let file = match project_config::load(&args.dir) {
        Ok(c) => c,
        Err(e) => {
            output::error("the project's toolhost.toml cannot be used.", Some(&e));
            return output::exit(BAD_INPUT);
        }
    };
    if let Err(code) = check_agent_first(&args.dir, &args.agent, None) {
        return code;
    }
    let data = file.data_folder(&args.dir, args.data);
    let (_store, runtime) = match open_project(&args.dir, &data, None, None) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let server = Server {
        runtime: Arc::new(runtime),
        agent: args.agent,
        resume: format!(
            "toolhost resume {} THREAD --data {}",
            args.dir.display(),
            data.display()
        ),
    };
    let served = block_on(async move {
        let running = server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            output::error("the MCP session ended with an error.", Some(&e.to_string()));
            output::exit(BAD_INPUT)
        }
    }
}

/// `schema` when it describes an object.
fn object_schema(schema: Option<&Value>) -> Option<&Value> {
    schema.filter(|s| s.get("type") == Some(&json!("object")))
}

struct Server {
    runtime: Arc<Runtime>,
    agent: String,
    /// How to answer a call that waits (with THREAD to replace).
    resume: String,
}

impl Server {
    /// The names of the function tools the agent's first prompt offers, sorted.
    fn offered(&self) -> Vec<String> {
        let defs = self.runtime.definitions();
        let mut names: Vec<String> = defs
            .agents
            .get(&self.agent)
            .and_then(|a| defs.prompts.get(&a.side_a.prompt))
            .map(|p| {
                p.tools
                    .iter()
                    .filter(|t| self.runtime.tools().get(&t.name).is_some())
                    .map(|t| t.name.clone())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names.dedup();
        names
    }

    fn error(text: String) -> CallToolResponse {
        CallToolResult::error(vec![ContentBlock::text(text)]).into()
    }

    /// Runs one call on a thread of its own, unless the client cancels it.
    async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(tool) = self
            .runtime
            .tools()
            .get(name)
            .filter(|_| self.offered().iter().any(|n| n == name))
        else {
            return Err(McpError::invalid_params(
                format!("tool \"{name}\" is not offered; see tools/list"),
                None,
            ));
        };
        let text = arguments.to_string();
        // Arguments that do not fit are the caller's to fix, told as a tool result.
        if let Err(e) = fit_arguments(tool, &text) {
            return Ok(Self::error(format!(
                "the arguments do not fit tool \"{name}\": {e}"
            )));
        }
        let started = self
            .runtime
            .start_scratch_call(&self.agent, name, &text, Vec::new())
            .await;
        let ScratchCall { thread, call_id } = match started {
            Ok(call) => call,
            Err(e) => return Ok(Self::error(format!("the call could not start: {e}"))),
        };
        let outcome = tokio::select! {
            outcome = self.runtime.run(&thread.id) => outcome,
            () = context.ct.cancelled() => {
                self.runtime.stop(&thread.id).await;
                return Err(McpError::internal_error("the call was cancelled", None));
            }
        };
        let resume = self.resume.replace("THREAD", &thread.id);
        match outcome {
            Err(e) => Ok(Self::error(format!("the call failed: {e}"))),
            Ok(RunOutcome::Paused(Waiting::Approval(request))) => Ok(Self::error(format!(
                "the call of \"{}\" waits for a person's approval; approve it with `{resume} --approve {}` (or deny with --deny)",
                request.tool, request.call_id
            ))),
            Ok(RunOutcome::Paused(Waiting::Variables { names, .. })) => Ok(Self::error(format!(
                "the call waits for values of {}; give them with `{resume} --var NAME=VALUE` (--secret NAME for a secret)",
                names.join(", ")
            ))),
            Ok(RunOutcome::Done(_)) => {
                let messages = toolhost_store::AsyncStore::new(self.runtime.store().clone())
                    .messages(&thread.id)
                    .await
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                let Some(result) = messages
                    .into_iter()
                    .find(|m| m.tool_call_id.as_deref() == Some(call_id.as_str()))
                else {
                    return Ok(Self::error(format!(
                        "the call's thread {} ended without a result",
                        thread.id
                    )));
                };
                let text = result.content.unwrap_or_default();
                let failed = result.status == Some(toolhost_store::ToolStatus::Error);
                // A tool with an output schema also gives its result as structured content,
                // beside the text copy.
                let structured = object_schema(tool.definition().output_schema.as_ref())
                    .filter(|_| !failed)
                    .and_then(|_| serde_json::from_str::<Value>(&text).ok())
                    .filter(Value::is_object);
                let content = vec![ContentBlock::text(text)];
                let mut answer = if failed {
                    CallToolResult::error(content)
                } else {
                    CallToolResult::success(content)
                };
                answer.structured_content = structured;
                Ok(answer.into())
            }
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools: Vec<Value> = self
            .offered()
            .iter()
            .filter_map(|name| self.runtime.tools().get(name))
            .map(|tool| {
                let def = tool.definition();
                let mut listed = json!({
                    "name": def.name,
                    "description": def.description,
                    "inputSchema": def.parameters,
                    "annotations": {"idempotentHint": def.idempotent},
                });
                // MCP takes an object schema for output (its results are objects).
                if let Some(output) = object_schema(def.output_schema.as_ref()) {
                    listed["outputSchema"] = output.clone();
                }
                listed
            })
            .collect();
        // `resultType` is required on every result from protocol 2026-07-28 on.
        serde_json::from_value(json!({ "tools": tools, "resultType": "complete" }))
            .map_err(|e| McpError::internal_error(format!("a tool could not be listed: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        self.call(&request.name, arguments, &context).await
    }
}
