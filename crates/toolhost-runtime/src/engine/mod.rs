//! The engine: runs threads of `ai_human` and `dual_ai` agents, one step at a time, with every tool call
//! journaled.
//!
//! The loop is driven by what is stored, not by what is in memory: each step looks at the last
//! assistant message, finishes the calls it made that have no result yet, and only then asks the
//! model again. A process that was killed at any moment therefore continues exactly where the
//! store says it was when it is started again:
//! - a call with a stored result is never run again;
//! - a call journaled (intent) without a result has an unknown outcome: it is run again only when
//!   its tool is declared idempotent, and otherwise the model is told that it may or may not have
//!   taken effect;
//! - a call that was never journaled never started, and runs now.

mod answer;
mod approvals;
mod as_tool;
mod ask;
mod attachments;
mod call_results;
mod calls;
mod code;
mod content;
mod context;
mod control;
mod decide;
mod ending;
mod error;
pub mod events;
mod execute;
mod factory;
mod fetch;
mod fingerprint;
mod histories;
mod history;
mod hooks;
mod images;
mod inherit;
mod lease_keeper;
mod lineage;
mod live;
mod load;
mod middleware;
mod offer;
mod outcome;
mod ownership;
mod plan;
mod quotas;
mod records;
mod redaction;
mod repair;
mod reply;
mod request;
mod run;
mod run_code_tool;
mod runner;
mod scratch;
mod send;
mod session;
mod session_status;
mod set_env;
mod side;
mod soundness;
pub(crate) mod state;
mod state_error;
mod stop;
mod stopping;
mod subagent;
mod subprompt;
mod thread_model;
mod thread_vars;
mod turns;

pub use approvals::{
    tool_fingerprint, ApprovalHandler, Verdict, VerdictFuture, CHANGED_WHILE_WAITING,
};
pub use as_tool::{AsToolOptions, AS_TOOL_TAG};
pub use ask::{Answerer, AnswererGuard, Answering, AskKind};
pub use call_results::ExpectedResult;
pub use calls::PARALLEL_CAP;
pub use code::{DEFAULT_MAX_RUNS_IN_FLIGHT, DEFAULT_WARM_RUNTIMES};
pub use content::MAX_IMAGE_BASE64;
pub use control::STOPPED_BY_KEY;
pub use error::{describe_owner, name_list, RuntimeError};
pub use factory::ModelFactory;
pub use fetch::FetchPolicy;
pub use images::MAX_IMAGES_PER_REQUEST;
pub use live::{LiveEvent, LiveKind, LIVE_CAPACITY};
pub use load::process_activities;
pub use middleware::{
    AfterFailure, BeforeCall, CallInfo, CompletionRequestArgs, CompletionResponseArgs, Middleware,
    MiddlewareError, MiddlewareResult, MiddlewareScope, MiddlewareStage, OutputReplacement,
    StepInfo, ToolHooks, ToolInputArgs, ToolOutputArgs,
};
pub use outcome::{RunOutcome, SessionEnd, StopReason, Waiting, NOT_RUN_STOPPED, OUTCOME_UNKNOWN};
pub use ownership::{owner_process, OwnerId, DEFAULT_LEASE_TTL};
pub use quotas::WriteQuotas;
pub use repair::{fit_arguments, Fitted};
pub use request::RunRequest;
pub use run_code_tool::RUN_CODE_TOOL;
pub use scratch::{ScratchCall, SCRATCH_TAG};
pub use send::Delivery;
pub use state::ThreadState;
pub use state_error::StateError;
pub use thread_vars::VariableToGive;
pub use toolhost_core::canonical::canonical_hash;
pub use turns::{Side, DEFAULT_MAX_SESSION_TURNS};

use crate::project::{Definitions, FileProblem, LoadedTool};
use crate::variables::secrets::SecretKey;

use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost_core::{AnyTool, ToolSet};
use toolhost_providers::Model;
use toolhost_store::{AsyncStore, Store, StoreError, Thread};

/// How many releases of threads a waiting run may fall behind by before it looks at the store
/// again anyway.
const RELEASES_KEPT: usize = 1024;

/// A loaded project, ready to run threads against a store.
pub struct Runtime {
    root: PathBuf,
    store: Arc<dyn Store>,
    /// The same store, for the engine's async code: nothing it does blocks an executor thread.
    db: AsyncStore,
    defs: Definitions,
    tools: ToolSet,
    /// The tools loaded from files, as loaded (file, blueprint, binding); a tool not in it is
    /// written in Rust.
    files: HashMap<String, LoadedTool>,
    models: HashMap<String, Arc<dyn Model>>,
    problems: Vec<FileProblem>,
    /// The model definition every prompt uses instead of its own, when set.
    model_override: Option<String>,
    /// Why a model definition that loaded cannot be used (its key is not set, for example).
    unavailable: HashMap<String, String>,
    /// The run of each thread that a run of this runtime owns: its owner id and abort signal.
    running: Arc<std::sync::Mutex<HashMap<String, ownership::RunEntry>>>,
    /// How long a thread's lease lasts unless renewed.
    lease_ttl: std::time::Duration,
    /// Keeps the leases of the threads this runtime's runs own (see [`lease_keeper`]).
    leases: lease_keeper::LeaseKeeper,
    /// The threads the runs of this runtime let go of, as they do: what wakes a run that
    /// waits to claim one (see `ownership.rs`).
    released: tokio::sync::broadcast::Sender<Arc<str>>,
    /// Decides approval requests at once, when the embedding program installed one.
    approval_handler: Option<Arc<dyn ApprovalHandler>>,
    /// Seals and opens secret values.
    secret_key: Option<SecretKey>,
    /// Middleware in registration order, with where it applies.
    middleware: Vec<(MiddlewareScope, Arc<dyn Middleware>)>,
    /// Tool hooks in registration order.
    hooks: Vec<Arc<dyn ToolHooks>>,
    /// Live events (streamed answers) of every thread this runtime runs.
    live: live::LiveHub,
    /// Who answers what the calls of served threads ask while they run.
    answerers: ask::Answerers,
    /// The process activity each project tool is bound to, by tool name (for approvals).
    bound: HashMap<String, String>,
    /// The tool of each prompt another prompt offers, by name (see [`subprompt`]).
    prompt_tools: HashMap<String, AnyTool>,
    /// The tool of each `dual_ai` agent a prompt offers, by name (see [`subagent`]).
    agent_tools: HashMap<String, AnyTool>,
    /// The `runCode` sandbox every thread's calls share (see [`code`]).
    code: code::CodeRunner,
    /// The hosts tools may fetch from, and what fetches (see [`fetch`]); none by default.
    fetch: Option<Arc<fetch::FetchPolicy>>,
    /// What tools may store, per call and per thread (see [`quotas`]).
    quotas: Arc<quotas::WriteQuotas>,
    /// The messages of recently run threads, kept between runs (see [`histories`]).
    histories: Arc<histories::Histories>,
    /// Where a call of a sub-agent that does not block hands its child to the run of the
    /// calling thread, by thread id (see [`subagent`]).
    detached: Arc<std::sync::Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<String>>>>,
    /// Who waits for the result of which call, as a value (see [`call_results`]).
    call_results: call_results::CallResults,
    /// The settings of the requests under way that brought some, by thread (see [`request`]).
    requests: Arc<std::sync::Mutex<HashMap<String, Arc<RunRequest>>>>,
    /// The connections to the project's MCP servers, held so that they live as long as the
    /// runtime (its imported tools hold them weakly); closed by [`Runtime::close_mcp`] or when
    /// the runtime is dropped.
    mcp_hub: Option<Arc<crate::mcp::McpHub>>,
    /// The project's MCP servers as they loaded.
    mcp_servers: Vec<crate::mcp::ServerStatus>,
    /// The pin of each imported tool's definition as it loaded.
    mcp_pins: HashMap<String, Value>,
}

impl Runtime {
    /// Takes over what belongs to the process rather than to one load of the project from
    /// `previous` (a load of the same project, on the same store, before its files changed):
    /// its live events, the runs under way with their stop signals, the hand-offs of
    /// sub-agents, the settings of requests under way and the `runCode` slots. A server that
    /// loads its project again with this keeps streaming, stopping and limiting the runs the
    /// previous load started, which finish on the project they started with.
    pub fn carry_over_from(&mut self, previous: &Runtime) {
        self.live = previous.live.clone();
        self.answerers = previous.answerers.clone();
        self.running = previous.running.clone();
        self.detached = previous.detached.clone();
        self.requests = previous.requests.clone();
        self.call_results = previous.call_results.clone();
        self.code = previous.code.clone();
    }

    /// Ends the connections to the project's MCP servers gracefully (each program sees its
    /// standard input end, then its signals): what a program that embeds the runtime does before
    /// it exits. A later call of an imported tool connects again.
    pub async fn close_mcp(&self) {
        if let Some(hub) = &self.mcp_hub {
            hub.close().await;
        }
    }

    /// The project's agents, prompts, models and activities as they loaded.
    pub fn definitions(&self) -> &Definitions {
        &self.defs
    }

    /// What a login for MCP server `name` needs (see [`toolhost_mcp_client::oauth::login`]): its
    /// definition, the HTTP client and the vault its grants are kept in; `None` unless the
    /// server is at a URL with `oauth` and this runtime keeps grants.
    pub fn mcp_login_parts(
        &self,
        name: &str,
    ) -> Option<(
        crate::mcp::McpServerDef,
        Arc<dyn toolhost_providers::fetch::Fetcher>,
        Arc<crate::mcp::Vault>,
    )> {
        self.mcp_hub.as_ref()?.login_parts(name)
    }

    /// The project's MCP servers (`agents/mcp/`) as they loaded: their tools, or why they
    /// have none, and what they wrote to standard error.
    pub fn mcp_servers(&self) -> &[crate::mcp::ServerStatus] {
        &self.mcp_servers
    }

    /// The pin of the definition the imported tool `tool` loaded with; `None` for a tool that
    /// is not one of the project's MCP servers'.
    pub fn mcp_pin(&self, tool: &str) -> Option<&Value> {
        self.mcp_pins.get(tool)
    }

    /// Accepts, for the whole project, the definition the MCP server gave the imported tool
    /// `tool` when this runtime loaded: calls of it go through again in every thread after the
    /// server changed it (see [`crate::mcp::pins`]). One write, whoever owns which thread.
    pub async fn accept_mcp_definition(&self, tool: &str) -> Result<(), RuntimeError> {
        let pin = self.mcp_pin(tool).cloned().ok_or_else(|| {
            RuntimeError::Store(StoreError::Refused(format!(
                "\"{tool}\" is not a tool of this project's MCP servers"
            )))
        })?;
        let tool = tool.to_owned();
        self.db
            .run_blocking(move |store| crate::mcp::accept_definition(store, &tool, &pin))
            .await?;
        Ok(())
    }

    /// Every tool of the project (files, built-ins and tools registered in Rust), by name.
    pub fn tools(&self) -> &ToolSet {
        &self.tools
    }

    /// The tool `name` as it loaded from its file (the file, the blueprint as written, and
    /// whether it is latent or bound to an activity); `None` for a tool written in Rust (built
    /// in or registered) or one that does not exist.
    pub fn tool_file(&self, name: &str) -> Option<&LoadedTool> {
        self.files.get(name)
    }

    /// Subscribes to the live events of every thread this runtime runs from now on: the
    /// pieces of each model answer as it streams in (see [`LiveEvent`]). They are not stored;
    /// the stored reply is the authoritative answer.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<LiveEvent> {
        self.live.subscribe_all()
    }

    /// Subscribes to the live events of one thread from now on. A follower of one thread never
    /// falls behind because another thread is busy.
    pub fn subscribe_thread(&self, thread_id: &str) -> tokio::sync::broadcast::Receiver<LiveEvent> {
        self.live.subscribe_thread(thread_id)
    }

    /// The model a prompt naming `name` runs on in a thread that was started with
    /// `thread_model` (see [`Runtime::thread_model`]): this runtime's override when one is set,
    /// else the thread's, else the prompt's own; or why it cannot be used (a key that is not
    /// set names its variable).
    pub(super) fn model_for(
        &self,
        name: &str,
        thread_model: Option<&str>,
    ) -> Result<Arc<dyn Model>, RuntimeError> {
        let name = self
            .model_override
            .as_deref()
            .or(thread_model)
            .unwrap_or(name);
        self.models
            .get(name)
            .cloned()
            .ok_or_else(|| RuntimeError::Model {
                name: name.to_owned(),
                reason: match (self.unavailable.get(name), self.defs.models.get(name)) {
                    (Some(why), _) => why.clone(),
                    (None, Some(def)) => format!(
                        "provider \"{}\" has no adapter in this version",
                        def.provider
                    ),
                    (None, None) => "the model definition did not load".to_owned(),
                },
            })
    }

    /// Files of the project that did not load, and files that refer to a name that does not
    /// exist, such as prompts that offer a tool that is not defined (checked now, so tools
    /// registered after loading count). A thread whose agent reaches any of them is refused
    /// (see [`Runtime::check_agent`]).
    pub fn problems(&self) -> Vec<FileProblem> {
        let mut problems = self.problems.clone();
        for prompt in self.defs.prompts.values() {
            let model = &prompt.model;
            if !self.models.contains_key(model) && !self.unavailable.contains_key(model) {
                let file = self
                    .root
                    .join("agents/models")
                    .join(format!("{model}.json"));
                // A model file that did not load is a problem of its own already.
                if !self.problems.iter().any(|p| p.path == file) {
                    problems.push(FileProblem::dangling(
                        self.root
                            .join("agents/prompts")
                            .join(format!("{}.json", prompt.name)),
                        &prompt.name,
                        format!("names model \"{model}\", which is not in agents/models/"),
                    ));
                }
            }
            let file = self
                .root
                .join("agents/prompts")
                .join(format!("{}.json", prompt.name));
            for name in &prompt.tools {
                let message = match (
                    self.tools.contains(name),
                    self.defs.prompts.contains_key(&name.name),
                ) {
                    // An agent offered is checked when the project loads.
                    (false, false) if self.defs.agents.contains_key(&name.name) => continue,
                    (false, false) => format!("offers tool \"{name}\", which is not defined"),
                    (true, true) => ambiguous(name),
                    _ => continue,
                };
                problems.push(FileProblem::dangling(file.clone(), &prompt.name, message));
            }
        }
        problems
    }

    /// The store threads are kept in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Moves the runtime onto another store before it runs anything: a project loaded and
    /// checked once (its MCP servers started once) is then used on the store it serves.
    pub fn set_store(&mut self, store: Arc<dyn Store>) {
        self.db = AsyncStore::new(store.clone());
        self.leases = lease_keeper::LeaseKeeper::new(self.db.clone());
        self.store = store;
    }

    /// Adds a tool written in Rust; a later tool of the same name replaces an earlier one.
    pub fn register_tool(&mut self, tool: AnyTool) {
        self.files.remove(tool.name());
        // The Rust tool replaces a project tool of the same name, and the activity behind it.
        self.bound.remove(tool.name());
        self.tools.add(tool);
    }

    /// Installs a handler that decides approval requests at once; without one, a thread pauses
    /// at a call that needs approval until [`Runtime::decide`] is called.
    pub fn set_approval_handler(&mut self, handler: Arc<dyn ApprovalHandler>) {
        self.approval_handler = Some(handler);
    }

    /// The error for an agent name the project does not define, listing the ones it does.
    pub(crate) fn unknown_agent(&self, name: &str) -> RuntimeError {
        RuntimeError::UnknownAgent {
            name: name.to_owned(),
            known: self.defs.agents.keys().cloned().collect(),
        }
    }

    /// Makes every prompt use the model definition `name` instead of its own (for example to
    /// run a project written for the scripted model on a real one). A thread this runtime
    /// creates remembers it, and later runs of the thread use it unless their runtime names
    /// another ([`Runtime::thread_model`]). Fails when no model definition of that name loaded.
    pub fn override_model(&mut self, name: &str) -> Result<(), RuntimeError> {
        if let Some(why) = self.unavailable.get(name) {
            return Err(RuntimeError::Model {
                name: name.to_owned(),
                reason: why.clone(),
            });
        }
        if !self.models.contains_key(name) {
            return Err(RuntimeError::Model {
                name: name.to_owned(),
                reason: format!(
                    "there is no model definition of this name in agents/models/ (the usable ones: {}; the ones that cannot be used now: {})",
                    name_list(&self.models.keys().collect::<Vec<_>>()),
                    name_list(&self.unavailable.keys().collect::<Vec<_>>())
                ),
            });
        }
        self.model_override = Some(name.to_owned());
        Ok(())
    }

    /// Adds middleware where `scope` says; see [`Middleware`] for the order it runs in.
    pub fn add_middleware(&mut self, scope: MiddlewareScope, middleware: Arc<dyn Middleware>) {
        self.middleware.push((scope, middleware));
    }

    /// Adds hooks that see every tool call's end.
    pub fn add_tool_hooks(&mut self, hooks: Arc<dyn ToolHooks>) {
        self.hooks.push(hooks);
    }

    /// Uses `model` for the model definition `name` (a real adapter, or a test double), also
    /// when the definition itself could not be made usable.
    pub fn register_model(&mut self, name: impl Into<String>, model: Arc<dyn Model>) {
        let name = name.into();
        self.unavailable.remove(&name);
        self.models.insert(name, model);
    }

    /// Creates a thread for `agent` with the user's first message.
    pub async fn start_thread(&self, agent: &str, message: &str) -> Result<Thread, RuntimeError> {
        self.start_thread_with(agent, message, Vec::new()).await
    }
}

/// Why an offered name that is both a tool and a prompt is refused.
pub(super) fn ambiguous(name: &str) -> String {
    format!("offers \"{name}\", which names both a tool and a prompt; rename one of them")
}
