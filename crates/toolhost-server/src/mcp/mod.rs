//! MCP: the tools an agent offers, served to MCP clients (the official Rust SDK, `rmcp`, which
//! negotiates the 2025-11-25 protocol with `initialize` and the stateless 2026-07-28 one).
//! [`McpTools`] is the handler; the command line serves it over stdio (`toolhost mcp`), the
//! server over streamable HTTP at `/mcp` (see [`crate::ServerConfig::mcp_agent`]).
//!
//! - `tools/list`: the function tools the agent's first prompt offers, by name, in pages of
//!   [`TOOLS_PAGE_SIZE`] (`nextCursor` on every page but the last), each with its
//!   description, its input schema as the tool declares it, its output schema when it has an
//!   object one, and its annotations: `idempotentHint` from the definition's `idempotent`, and
//!   `readOnlyHint`, `destructiveHint` and `openWorldHint` where the definition gives them (a
//!   blueprint's `annotations`, a Rust tool's `hints`, an imported tool's server).
//! - `tools/call` runs through the same path as a direct call of the HTTP API: arguments that do
//!   not fit the schema are a result with `isError: true` listing what is wrong (nothing is
//!   stored); otherwise the call is journaled on the session's thread (tagged `scratch`: one
//!   per MCP session, made by its first call; a session's calls run one after another, and a
//!   call left waiting keeps its thread to itself, the next call starting another), with
//!   its idempotency key, approval, variables and redaction, and its result comes back as text
//!   (`isError` when the tool failed), and for a tool with an output schema as
//!   `structuredContent` too. A call that waits for an approval is put to the client's user
//!   (form elicitation: approve, or deny with a message) when the client can elicit and the
//!   protocol lets a server ask (2025-11-25), and so are the text variables it waits for (one
//!   form, a field each). A secret is never asked through a client, which would see it in
//!   clear: over HTTP, a client that can open a URL (URL-mode elicitation) sends its user to the
//!   thread's web page, and the call goes on once the secret is given there; otherwise the call
//!   is an error result saying what it waits for and where to give it, as it is when the client
//!   cannot ask. A client's cancellation stops the call's thread. What
//!   the tool says of its progress ([`toolhost_runtime::engine::ThreadState::progress`]) is
//!   sent as progress notifications when the request carries a `progressToken`.

mod elicit;
mod http;
mod pages;
mod progress;

pub(crate) use http::routes;
pub use pages::TOOLS_PAGE_SIZE;

use elicit::{ask_approval, ask_variables};
use pages::page;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_runtime::engine::{
    fit_arguments, RunOutcome, Runtime, RuntimeError, ScratchCall, VariableToGive, Waiting,
};

/// `schema` when it describes an object.
fn object_schema(schema: Option<&Value>) -> Option<&Value> {
    schema.filter(|s| s.get("type") == Some(&json!("object")))
}

/// How long a call waits for secrets a person gives on the thread's page after the client's
/// user agreed to go there.
pub const SECRETS_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The MCP handler of one agent's tools.
#[derive(Clone)]
pub struct McpTools {
    runtime: Arc<Runtime>,
    agent: String,
    /// Where a person answers a call that waits.
    answering: Answering,
    /// The thread the session's calls are journaled on, once the first call made it. Held
    /// for the whole of a call: a session's calls run one after another.
    session: Arc<tokio::sync::Mutex<Option<String>>>,
}

/// Where a person answers a call that waits for an approval or variables.
#[derive(Debug, Clone)]
pub enum Answering {
    /// On the command line: `toolhost resume` with this project folder and data folder.
    CommandLine {
        /// The project folder.
        project: String,
        /// The data folder.
        data: String,
    },
    /// Over the HTTP API: the thread's approvals and variables endpoints.
    Http,
}

impl Answering {
    fn approval(&self, thread: &str, call: &str) -> String {
        match self {
            Answering::CommandLine { project, data } => format!(
                "approve it with `toolhost resume {project} {thread} --data {data} --approve {call}` (or --deny {call})"
            ),
            Answering::Http => format!("decide it with POST /v1/threads/{thread}/approvals/{call}"),
        }
    }

    fn variables(&self, thread: &str, request: &str) -> String {
        match self {
            Answering::CommandLine { project, data } => format!(
                "give them with `toolhost resume {project} {thread} --data {data} --var NAME=VALUE` (--secret NAME for a secret)"
            ),
            Answering::Http => format!("give them with POST /v1/threads/{thread}/variables/{request}"),
        }
    }
}

impl McpTools {
    /// The tools of `agent` on `runtime`; a call that waits says where a person answers it.
    pub fn new(runtime: Arc<Runtime>, agent: &str, answering: Answering) -> Self {
        McpTools {
            runtime,
            agent: agent.to_owned(),
            answering,
            session: Arc::default(),
        }
    }

    /// The same tools for a new MCP session, whose calls go on a thread of its own.
    pub fn for_new_session(&self) -> Self {
        McpTools {
            session: Arc::default(),
            ..self.clone()
        }
    }

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

    /// Sends the client's user to the thread's page for the secrets a call waits for (over
    /// HTTP, to a client that can open a URL) and waits until they are given there (at most
    /// [`SECRETS_WAIT`], and not past the client's cancellation); true once they are.
    async fn secrets_given_on_page(
        &self,
        context: &RequestContext<RoleServer>,
        tool: &str,
        thread_id: &str,
        request_id: &str,
        names: &[String],
    ) -> bool {
        if !matches!(self.answering, Answering::Http) {
            return false;
        }
        let Some(page) = elicit::thread_page(context, thread_id) else {
            return false;
        };
        if !elicit::send_to_page(context, tool, &page, request_id, names).await {
            return false;
        }
        let store = toolhost_store::AsyncStore::new(self.runtime.store().clone());
        let deadline = tokio::time::Instant::now() + SECRETS_WAIT;
        while tokio::time::Instant::now() < deadline && !context.ct.is_cancelled() {
            let answered = store
                .variable_requests(thread_id)
                .await
                .is_ok_and(|requests| {
                    requests
                        .iter()
                        .any(|r| r.id == request_id && r.answered_at.is_some())
                });
            if answered {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        false
    }

    /// What the agent declares of the variables `names` (a name it does not declare is taken
    /// as a secret, so that it is never asked in clear).
    fn wanted(&self, names: &[String]) -> Vec<VariableToGive> {
        let declared = self
            .runtime
            .variables_to_give(&self.agent)
            .unwrap_or_default();
        names
            .iter()
            .map(|name| {
                declared
                    .iter()
                    .find(|v| &v.name == name)
                    .cloned()
                    .unwrap_or_else(|| VariableToGive {
                        name: name.clone(),
                        secret: true,
                        required_at_start: false,
                        description: String::new(),
                    })
            })
            .collect()
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
        let mut session = self.session.lock().await;
        let started = match session.as_deref() {
            Some(thread) => self.runtime.add_scratch_call(thread, name, &text).await,
            None => {
                self.runtime
                    .start_scratch_call(&self.agent, name, &text, Vec::new())
                    .await
            }
        };
        let ScratchCall { thread, call_id } = match started {
            Ok(call) => call,
            Err(e) => return Ok(Self::error(format!("the call could not start: {e}"))),
        };
        let relay = progress::relay(&self.runtime, context, &thread.id, &call_id);
        let answer = self.carry_out(tool, &thread, &call_id, context).await;
        // Every progress the call reported is sent before its answer.
        if let Some(relay) = relay {
            relay.finish().await;
        }
        // The session's next call goes on the same thread once this one has its result; a call
        // left waiting (or cancelled) keeps its thread to itself, and the next starts another.
        let journal = toolhost_store::AsyncStore::new(self.runtime.store().clone());
        let completed = matches!(
            journal.call(&thread.id, &call_id).await,
            Ok(Some(record)) if record.state == toolhost_store::CallState::Completed
        );
        *session = completed.then(|| thread.id.clone());
        answer
    }

    /// The stored result of call `call_id` in `thread_id`, if it has one.
    async fn result_of(
        &self,
        thread_id: &str,
        call_id: &str,
    ) -> Result<Option<toolhost_store::Message>, McpError> {
        let messages = toolhost_store::AsyncStore::new(self.runtime.store().clone())
            .messages(thread_id)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(messages
            .into_iter()
            .find(|m| m.tool_call_id.as_deref() == Some(call_id)))
    }

    /// Runs a started call's thread to its end (asking the client's user what it waits for, when
    /// the client can be asked) and answers with its result, or with what it waits for.
    async fn carry_out(
        &self,
        tool: &toolhost_core::AnyTool,
        thread: &toolhost_store::Thread,
        call_id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = tool.name();
        let waiting_since = tokio::time::Instant::now();
        let outcome = loop {
            let outcome = tokio::select! {
                outcome = self.runtime.run(&thread.id) => outcome,
                () = context.ct.cancelled() => {
                    self.runtime.stop(&thread.id).await;
                    return Err(McpError::internal_error("the call was cancelled", None));
                }
            };
            // Another run owns the thread (the server resumes a thread whose variables were
            // given on its page): the call's result comes from that run, so wait for it.
            if let Err(RuntimeError::ThreadBusy { .. }) = &outcome {
                if waiting_since.elapsed() < SECRETS_WAIT && !context.ct.is_cancelled() {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            }
            // A client that can ask its user gives the text variables the call waits for, or
            // sends the user to the thread's page for secrets.
            if let Ok(RunOutcome::Paused(Waiting::Variables { names, request_id })) = &outcome {
                let wanted = self.wanted(names);
                if wanted.iter().any(|v| v.secret) {
                    if self
                        .secrets_given_on_page(context, name, &thread.id, request_id, names)
                        .await
                    {
                        continue;
                    }
                } else if let Some(values) = ask_variables(context, name, &wanted).await {
                    if let Err(e) = self.runtime.set_variables(&thread.id, values).await {
                        return Ok(Self::error(format!("the values were not taken: {e}")));
                    }
                    continue;
                }
            }
            // A client that can ask its user decides the approval the call waits for.
            if let Ok(RunOutcome::Paused(Waiting::Approval(request))) = &outcome {
                if let Some(verdict) = ask_approval(context, request).await {
                    if let Err(e) = self
                        .runtime
                        .decide(&thread.id, &request.call_id, verdict)
                        .await
                    {
                        return Ok(Self::error(format!("the decision was not taken: {e}")));
                    }
                    continue;
                }
            }
            break outcome;
        };
        match outcome {
            Err(e) => Ok(Self::error(format!("the call failed: {e}"))),
            Ok(RunOutcome::Paused(Waiting::Approval(request))) => Ok(Self::error(format!(
                "the call of \"{}\" waits for a person's approval; {}",
                request.tool,
                self.answering.approval(&thread.id, &request.call_id)
            ))),
            Ok(RunOutcome::Paused(Waiting::Variables { names, request_id })) => {
                let secrets: Vec<String> = self
                    .wanted(&names)
                    .into_iter()
                    .filter(|v| v.secret)
                    .map(|v| v.name)
                    .collect();
                let never = if secrets.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({} {} secret: a secret is never asked through an MCP client, which would see it in clear)",
                        secrets.join(", "),
                        if secrets.len() == 1 { "is a" } else { "are each a" }
                    )
                };
                Ok(Self::error(format!(
                    "the call waits for values of {}{never}; {}",
                    names.join(", "),
                    self.answering.variables(&thread.id, &request_id)
                )))
            }
            Ok(RunOutcome::Done(_)) => {
                let Some(result) = self.result_of(&thread.id, call_id).await? else {
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

impl ServerHandler for McpTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let offered = self.offered();
        let cursor = request.and_then(|r| r.cursor);
        let (names, next) = page(&offered, cursor.as_deref(), TOOLS_PAGE_SIZE)?;
        let tools: Vec<Value> = names
            .iter()
            .filter_map(|name| self.runtime.tools().get(name))
            .map(|tool| {
                let def = tool.definition();
                // The hints the definition gives, and whether a call may be repeated.
                let mut annotations = serde_json::to_value(def.hints).unwrap_or_else(|_| json!({}));
                annotations["idempotentHint"] = json!(def.idempotent);
                let mut listed = json!({
                    "name": def.name,
                    "description": def.description,
                    "inputSchema": def.parameters,
                    "annotations": annotations,
                });
                // MCP takes an object schema for output (its results are objects).
                if let Some(output) = object_schema(def.output_schema.as_ref()) {
                    listed["outputSchema"] = output.clone();
                }
                listed
            })
            .collect();
        // `resultType` is required on every result from protocol 2026-07-28 on.
        let mut listed = json!({ "tools": tools, "resultType": "complete" });
        if let Some(next) = next {
            listed["nextCursor"] = json!(next);
        }
        serde_json::from_value(listed)
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
