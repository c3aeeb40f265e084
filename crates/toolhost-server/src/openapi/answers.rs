//! Schemas of the answers the handlers build with `json!`, one per kind of answer. Like
//! [`super::shapes`] they are never built; each names the handler whose answer it describes.
#![allow(dead_code)]

use super::shapes::{ApprovalRecord, FileEntry, Lease, Message, Thread, Violation};
use serde_json::Value;
use utoipa::ToSchema;

/// `/health` and `/ready`.
#[derive(ToSchema)]
pub(crate) struct Status {
    /// `ok` (health) or `ready` (readiness).
    status: String,
}

/// An agent the token may reach.
#[derive(ToSchema)]
pub(crate) struct Agent {
    name: String,
    /// `ai_human` or `dual_ai`.
    r#type: String,
    /// The prompt of each side.
    prompts: Vec<String>,
    /// Its title, when its definition gives one.
    title: Option<String>,
    /// What it does, when its definition says.
    description: Option<String>,
    /// The variables a new thread of it may be given (what a form that starts one asks for).
    variables: Vec<AgentVariable>,
}

/// A variable a new thread of an agent may be given
/// (`toolhost_runtime::engine::VariableToGive`).
#[derive(ToSchema)]
pub(crate) struct AgentVariable {
    name: String,
    /// A secret: sealed when stored, never returned.
    secret: bool,
    /// The thread cannot start without it; the others are asked for when a tool needs them.
    required_at_start: bool,
    /// What it is for, as declared.
    description: String,
}

/// `GET /v1/agents`.
#[derive(ToSchema)]
pub(crate) struct AgentList {
    agents: Vec<Agent>,
}

/// `POST /v1/threads`: the thread made.
#[derive(ToSchema)]
pub(crate) struct ThreadCreated {
    thread: Thread,
}

/// `GET /v1/threads`: one page, newest first.
#[derive(ToSchema)]
pub(crate) struct ThreadPage {
    threads: Vec<Thread>,
    /// The `cursor` of the next page; `null` on the last.
    next_cursor: Option<String>,
}

/// A variable request a thread waits for.
#[derive(ToSchema)]
pub(crate) struct WaitingVariables {
    request_id: String,
    /// The names it asks for.
    names: Vec<String>,
}

/// What a thread waits for.
#[derive(ToSchema)]
pub(crate) struct Waiting {
    /// The approval requests not decided yet.
    approvals: Vec<super::shapes::ApprovalRequest>,
    /// The variable requests not answered yet.
    variables: Vec<WaitingVariables>,
}

/// `GET /v1/threads/{id}`.
#[derive(ToSchema)]
pub(crate) struct ThreadView {
    thread: Thread,
    /// The run that owns it now, if any.
    owner: Option<Lease>,
    waiting: Waiting,
}

/// `POST /v1/threads/{id}/run`.
#[derive(ToSchema)]
pub(crate) struct RunStarted {
    /// Always `true`: a run was started (it ends at once when another run owns the thread).
    started: bool,
}

/// `GET /v1/mcp/servers`.
#[derive(ToSchema)]
pub(crate) struct McpServerList {
    servers: Vec<McpServer>,
}

/// An MCP server of the project, as it loaded.
#[derive(ToSchema)]
pub(crate) struct McpServer {
    /// Its file's name in agents/mcp/.
    name: String,
    /// Whether it was reached and its tools listed.
    usable: bool,
    /// Why it is not usable.
    problem: Option<String>,
    /// Its tools, as the project offers them (SERVER.TOOL).
    tools: Vec<String>,
    /// For a server whose file has `oauth`: `grant` (`authorization_code` or
    /// `client_credentials`), `authorized`, and with a grant its `issuer`, `scope`,
    /// `expires_at` (milliseconds) and whether it is `renewable`; null for the others.
    oauth: Option<Value>,
}

/// `POST /v1/mcp/servers/{name}/login`.
#[derive(ToSchema)]
pub(crate) struct McpLoginStarted {
    /// The MCP server.
    server: String,
    /// Whether a grant is kept already (client credentials need no person).
    authorized: bool,
    /// The address the person opens to authorize toolhost, when one must.
    authorize_url: Option<String>,
    /// How long the login waits for the person, in seconds.
    expires_in_s: Option<u64>,
}

/// `POST /v1/threads/{id}/stop`.
#[derive(ToSchema)]
pub(crate) struct StopAsked {
    /// Whether a run owned the thread and was asked to stop.
    stop_requested: bool,
}

/// `GET /v1/threads/{id}/messages`: one page, oldest first.
#[derive(ToSchema)]
pub(crate) struct MessagePage {
    messages: Vec<Message>,
    /// The `after` of the next page; `null` on the last.
    next_after: Option<i64>,
}

/// `GET /v1/threads/{id}/state`: the thread's state document (spec 004).
#[derive(ToSchema)]
pub(crate) struct WorkState {
    /// Each result whose call named an `_outputPath`, at that path (the latest at a path
    /// winning); `null` while there is none.
    #[schema(value_type = Option<Object>)]
    state: Option<serde_json::Value>,
}

/// `POST /v1/threads/{id}/messages`.
#[derive(ToSchema)]
pub(crate) struct Queued {
    /// Always `true`: the message is stored and the thread runs.
    queued: bool,
}

/// `GET /v1/threads/{id}/approvals`: every request of the thread, decided or not.
#[derive(ToSchema)]
pub(crate) struct ApprovalList {
    approvals: Vec<ApprovalRecord>,
}

/// `POST /v1/threads/{id}/approvals/{call_id}`.
#[derive(ToSchema)]
pub(crate) struct ApprovalDecided {
    approval: ApprovalRecord,
}

/// A variable a request asks for.
#[derive(ToSchema)]
pub(crate) struct AskedVariable {
    name: String,
    /// Whether it is a secret (to be given under `secrets`).
    secret: bool,
}

/// `GET /v1/threads/{id}/variables/{request_id}`: never a value.
#[derive(ToSchema)]
pub(crate) struct VariableRequest {
    request_id: String,
    thread_id: String,
    variables: Vec<AskedVariable>,
    /// Milliseconds since the Unix epoch.
    requested_at: i64,
    /// `null` while the request waits.
    answered_at: Option<i64>,
}

/// `POST /v1/threads/{id}/variables/{request_id}`.
#[derive(ToSchema)]
pub(crate) struct VariablesGiven {
    /// Whether the request is answered now (every name it asks for has a value).
    answered: bool,
}

/// `GET /v1/threads/{id}/files`.
#[derive(ToSchema)]
pub(crate) struct FileList {
    /// The folder listed.
    path: String,
    entries: Vec<FileEntry>,
}

/// A tool, as a person testing it needs it.
#[derive(ToSchema)]
pub(crate) struct Tool {
    name: String,
    description: String,
    /// The JSON Schema of its arguments.
    input_schema: Value,
    needs_approval: bool,
    idempotent: bool,
    execution_mode: Value,
    /// The agents the token reaches whose prompts offer it.
    agents: Vec<String>,
    /// How it runs: `rust`, `latent`, `activity` or `process`.
    kind: String,
    /// The activity that runs it (`activity` and `process` kinds).
    #[schema(required = false)]
    activity: String,
    /// The JSON Schema of its output, if declared.
    output_schema: Option<Value>,
}

/// `GET /v1/tools`.
#[derive(ToSchema)]
pub(crate) struct ToolList {
    tools: Vec<Tool>,
}

/// `POST /v1/tools/{name}/validate`: `valid` with the repaired arguments and the repairs
/// made, or not `valid` with the violations.
#[derive(ToSchema)]
pub(crate) struct Validation {
    valid: bool,
    /// The arguments as the tool would get them (when valid).
    #[schema(required = false)]
    arguments: Value,
    /// What was repaired to make them fit (when valid).
    #[schema(required = false)]
    repairs: Vec<String>,
    /// Why they do not fit (when not valid).
    #[schema(required = false)]
    violations: Vec<Violation>,
}

/// Where to answer what a direct call waits for.
#[derive(ToSchema)]
pub(crate) struct WaitingApproval {
    tool: String,
    /// The path to decide it at.
    decide: String,
}

/// Where to give the variables a direct call waits for.
#[derive(ToSchema)]
pub(crate) struct WaitingForVariables {
    names: Vec<String>,
    /// The path to give them at.
    give: String,
}

/// `POST /v1/tools/{name}/call`: done (200) with the result, or waiting (202) for an approval or
/// variables with where to answer.
#[derive(ToSchema)]
pub(crate) struct CallAnswer {
    /// The scratch thread the call is on.
    thread_id: String,
    call_id: String,
    /// The agent the scratch thread is of.
    agent: String,
    /// `done` or `waiting`.
    status: String,
    /// `approval` or `variables` (when waiting).
    #[schema(required = false)]
    waiting_for: String,
    #[schema(required = false)]
    approval: WaitingApproval,
    #[schema(required = false)]
    variables: WaitingForVariables,
    /// The tool's result (when done).
    #[schema(required = false)]
    result: Value,
    /// What was repaired in the arguments (when done).
    #[schema(required = false)]
    repairs: Vec<String>,
}
