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
//!   cannot ask. Under 2026-07-28 the same requests travel in `input_required` results, and the
//!   client's retry goes on with the call (`rounds`). A client's cancellation stops the call's thread. What
//!   the tool says of its progress ([`toolhost_runtime::engine::ThreadState::progress`]) is
//!   sent as progress notifications when the request carries a `progressToken`.
//! - Results carry the tool's image blocks and the files it attached (`content`); a file sent as
//!   a resource link is read with `resources/read` (`resources`).
//! - What a tool asks while a call runs (`state.elicit`, `state.sample`, `state.roots`) goes to
//!   the call's client when it declared it can (`asks`): as requests under 2025-11-25, and under
//!   2026-07-28 in an `input_required` answer whose retry runs the call again with the answers
//!   (their earlier rounds in a sealed request state, `sealed_state`).
//! - The project's own prompts (`prompts`: `prompts/list`, `prompts/get`,
//!   `completion/complete`) and resources (`served`: fixed ones, and templates read by a
//!   read-only tool; `resources/subscribe` follows a fixed one).
//! - Over HTTP, a 2025-11-25 session's event streams are kept so a client resumes a closed one
//!   with `Last-Event-ID`, its call's answer included (`replay`).
//! - Changes of what the agent offers (`toolhost mcp` loads the project again when its files
//!   change, see `reload`) are announced with `notifications/tools/list_changed`, and changes
//!   of the prompts and resources with their own: to every 2025-11-25 session, and on every
//!   2026-07-28 `subscriptions/listen` stream that asked for them (acknowledged first, each
//!   notification tagged with the subscription's id).

mod asks;
mod call;
mod content;
mod elicit;
mod http;
mod pages;
mod progress;
mod prompts;
mod question_rounds;
mod reload;
mod replay;
mod resources;
mod rounds;
mod sealed_state;
mod served;

pub(crate) use http::routes;
pub use pages::TOOLS_PAGE_SIZE;

use crate::state::RuntimeSlot;
use pages::page;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResponse, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_runtime::engine::{Runtime, VariableToGive};

/// `schema` when it describes an object.
fn object_schema(schema: Option<&Value>) -> Option<&Value> {
    schema.filter(|s| s.get("type") == Some(&json!("object")))
}

/// How a tool is listed: name, description, input schema as declared, object output schema,
/// and the annotations its definition gives (`idempotentHint` always).
fn listed_tool(tool: &toolhost_core::AnyTool) -> Value {
    let def = tool.definition();
    let mut annotations = serde_json::to_value(def.hints).unwrap_or_else(|_| json!({}));
    annotations["idempotentHint"] = json!(def.idempotent);
    let mut listed = json!({
        "name": def.name,
        "description": def.description,
        "inputSchema": tool.declared_parameters(),
        "annotations": annotations,
    });
    // MCP takes an object schema for output (its results are objects).
    if let Some(output) = object_schema(def.output_schema.as_ref()) {
        listed["outputSchema"] = output.clone();
    }
    listed
}

/// Whether the request `context` is of the stateless protocol (2026-07-28 or later).
pub(super) fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| v.as_str() >= "2026-07-28")
}

/// How long a client may keep a list (`tools/list`, `prompts/list`, `resources/list`,
/// `resources/templates/list`) or a fixed text resource before asking again (SEP-2549's
/// `ttlMs`): short, since the project may be loaded again any second; a client that follows
/// the list changes hears of a change sooner.
pub const LIST_TTL_MS: u64 = 5_000;

/// Puts caching hints on a result (2026-07-28, SEP-2549): `ttl_ms`, and `private` scope, since
/// what a server lists and reads depends on the token's agent and the session's thread.
fn cache_hints(result: &mut Value, ttl_ms: u64) {
    result["ttlMs"] = json!(ttl_ms);
    result["cacheScope"] = json!("private");
}

/// The least level of log messages a session gets until its client sets one: a tool's
/// `console.debug` is sent only to a client that asked for debug.
#[allow(deprecated)]
const DEFAULT_LOG_LEVEL: rmcp::model::LoggingLevel = rmcp::model::LoggingLevel::Info;

/// How long a call waits for secrets a person gives on the thread's page after the client's
/// user agreed to go there.
pub const SECRETS_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The MCP handler of one agent's tools.
#[derive(Clone)]
pub struct McpTools {
    /// The project as loaded; replaced when its files change (see [`McpTools::reload_on_change`]
    /// and [`crate::Server::reload_on_change`]).
    runtime: RuntimeSlot,
    agent: String,
    /// Where a person answers a call that waits.
    answering: Answering,
    /// The thread the session's calls are journaled on, once the first call made it. Held
    /// for the whole of a call: a session's calls run one after another.
    session: Arc<tokio::sync::Mutex<Option<String>>>,
    /// Calls waiting for a 2026-07-28 client's retry, shared by every session.
    rounds: Arc<rounds::Rounds>,
    /// The least level of the log messages the session's calls send (`logging/setLevel`);
    /// `info` until the client sets one.
    #[allow(deprecated)]
    log_level: Arc<std::sync::Mutex<rmcp::model::LoggingLevel>>,
    /// The project's resources the session follows (`resources/subscribe`), with what each
    /// was when last looked at.
    subscribed: Arc<std::sync::Mutex<std::collections::BTreeMap<String, served::Version>>>,
    /// What seals the request state of a call whose tool asked (2026-07-28), shared by every
    /// session.
    state_key: Arc<sealed_state::StateKey>,
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
        Self::on_slot(RuntimeSlot::new(runtime), agent, answering)
    }

    /// The tools of `agent` on the project `slot` holds (the server's own, over HTTP).
    pub(crate) fn on_slot(runtime: RuntimeSlot, agent: &str, answering: Answering) -> Self {
        McpTools {
            runtime,
            agent: agent.to_owned(),
            answering,
            session: Arc::default(),
            rounds: Arc::default(),
            log_level: Arc::new(std::sync::Mutex::new(DEFAULT_LOG_LEVEL)),
            subscribed: Arc::default(),
            state_key: Arc::default(),
        }
    }

    /// The project as loaded now; a call keeps the one it started with.
    fn runtime(&self) -> Arc<Runtime> {
        self.runtime.current()
    }

    /// Ends the connections to the project's MCP servers gracefully: what the serving program
    /// does when its session is over, before it exits.
    pub async fn close(&self) {
        self.runtime().close_mcp().await;
    }

    /// The same tools for a new MCP session, whose calls go on a thread of its own.
    pub fn for_new_session(&self) -> Self {
        McpTools {
            session: Arc::default(),
            log_level: Arc::new(std::sync::Mutex::new(DEFAULT_LOG_LEVEL)),
            subscribed: Arc::default(),
            ..self.clone()
        }
    }

    /// The names of the function tools the agent's first prompt offers, sorted.
    fn offered(&self) -> Vec<String> {
        let runtime = self.runtime();
        let defs = runtime.definitions();
        let mut names: Vec<String> = defs
            .agents
            .get(&self.agent)
            .and_then(|a| defs.prompts.get(&a.side_a.prompt))
            .map(|p| {
                p.tools
                    .iter()
                    .filter(|t| runtime.tools().get(&t.name).is_some())
                    .map(|t| t.name.clone())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names.dedup();
        names
    }

    /// What the agent declares of the variables `names` (a name it does not declare is taken
    /// as a secret, so that it is never asked in clear).
    fn wanted(&self, names: &[String]) -> Vec<VariableToGive> {
        let declared = self
            .runtime()
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

    /// `resources/read` of `uri`: a thread file, or a resource of the project.
    async fn read_any(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if uri.starts_with(resources::PREFIX) {
            self.read_file(uri).await
        } else {
            self.read_served(uri, context).await
        }
    }

    fn error(text: String) -> CallToolResponse {
        CallToolResult::error(vec![ContentBlock::text(text)]).into()
    }
}

impl ServerHandler for McpTools {
    // Logging is 2025-11-25's (deprecated from 2026-07-28 on, SEP-2577); see `progress`.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_completions()
                .enable_logging()
                .build(),
        )
    }

    /// Keeps the least level of the log messages the session's calls send.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = request.level;
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let offered = self.offered();
        let cursor = request.and_then(|r| r.cursor);
        let (names, next) = page(&offered, cursor.as_deref(), TOOLS_PAGE_SIZE)?;
        let runtime = self.runtime();
        let tools: Vec<Value> = names
            .iter()
            .filter_map(|name| runtime.tools().get(name))
            .map(listed_tool)
            .collect();
        // `resultType` is required on every result from protocol 2026-07-28 on.
        let mut listed = json!({ "tools": tools, "resultType": "complete" });
        cache_hints(&mut listed, LIST_TTL_MS);
        if let Some(next) = next {
            listed["nextCursor"] = json!(next);
        }
        serde_json::from_value(listed)
            .map_err(|e| McpError::internal_error(format!("a tool could not be listed: {e}"), None))
    }

    /// The offered tool `name` as listed: the transport checks the `Mcp-Param-*` headers of a
    /// call against its `x-mcp-header` annotations (SEP-2243).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let tool = self.offered_tool(name).ok()?;
        serde_json::from_value(listed_tool(&tool)).ok()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        // A remembered round (an approval or values asked) goes on; a sealed state carries what
        // the tool was answered before, and the call runs again with it.
        let state = request.request_state;
        if let Some(state) = state.as_deref().filter(|s| !sealed_state::is_sealed(s)) {
            return self.retry(state, request.input_responses, &context).await;
        }
        let round = if is_stateless(&context) {
            Some(self.round_of(
                &request.name,
                &arguments,
                state.as_deref(),
                request.input_responses,
                context.meta.client_capabilities(),
            )?)
        } else {
            None
        };
        self.call(&request.name, arguments, &context, round).await
    }

    /// The project's fixed resources, then the files of the session's thread (left out while
    /// a call of the session is under way).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut resources = self.served_resources();
        // While a call of the session is under way its thread's files are not listed, the
        // project's resources still are.
        resources.extend(self.list_files().await);
        let mut listed = json!({"resources": resources, "resultType": "complete"});
        cache_hints(&mut listed, LIST_TTL_MS);
        serde_json::from_value(listed).map_err(|e| {
            McpError::internal_error(format!("the resources could not be listed: {e}"), None)
        })
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.served_templates()
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.read_any(&request.uri, &context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_to(&request.uri)
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.unsubscribe_from(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.list_served_prompts(request)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.get_served_prompt(request, &context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.complete_served(request)
    }

    /// A 2026-07-28 `subscriptions/listen` stream may follow the tool, prompt and resource
    /// lists and the project's fixed resources.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(self.accepted_filter(requested))
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        self.follow_changes(subscription).await;
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.follow_for_session(context.peer);
    }
}
