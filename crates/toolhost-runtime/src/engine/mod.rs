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
mod combined;
mod content;
mod context;
mod control;
mod decide;
mod declarations;
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
mod in_process;
mod lease_keeper;
mod lineage;
mod live;
mod load;
mod loaded;
mod middleware;
mod offer;
mod outcome;
mod ownership;
mod plan;
mod quotas;
mod reach;
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
mod setup;
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
mod verdict;
mod work_state;

pub use approvals::{tool_fingerprint, CHANGED_WHILE_WAITING};
pub use as_tool::{AsToolOptions, AS_TOOL_TAG};
pub use ask::{Answerer, AnswererGuard, Answering, AskKind};
pub use call_results::ExpectedResult;
pub use calls::PARALLEL_CAP;
pub use code::{DEFAULT_MAX_RUNS_IN_FLIGHT, DEFAULT_WARM_RUNTIMES};
pub use content::MAX_IMAGE_BASE64;
pub use control::STOPPED_BY_KEY;
pub use declarations::VariableToGive;
pub use error::{describe_owner, name_list, RuntimeError};
pub use factory::ModelFactory;
pub use fetch::FetchPolicy;
pub use images::MAX_IMAGES_PER_REQUEST;
pub use live::{LiveEvent, LiveKind, LIVE_CAPACITY};
pub use load::process_activities;
pub use middleware::{
    AfterFailure, BeforeCall, CallInfo, CompletionRequestArgs, CompletionResponseArgs, HookError,
    Middleware, MiddlewareError, MiddlewareResult, MiddlewareScope, MiddlewareStage,
    OutputReplacement, StepInfo, ToolHooks, ToolInputArgs, ToolOutputArgs,
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
pub use toolhost_core::canonical::canonical_hash;
pub use turns::{Side, DEFAULT_MAX_SESSION_TURNS};
pub use verdict::{ApprovalHandler, Verdict, VerdictFuture};
pub use work_state::work_state;

use crate::project::{Definitions, FileProblem, LoadedTool};
use in_process::InProcess;
use loaded::{LoadedProject, Services};

use serde_json::Value;
use std::sync::Arc;
use toolhost_core::ToolSet;
use toolhost_providers::Model;
use toolhost_store::{Store, StoreError, Thread};

/// A loaded project, ready to run threads against a store: the project as it loaded (plain
/// data), the services its runs use, and what the runs of this process share.
pub struct Runtime {
    project: LoadedProject,
    services: Services,
    process: InProcess,
}

impl Runtime {
    /// Ends the connections to the project's MCP servers gracefully (each program sees its
    /// standard input end, then its signals): what a program that embeds the runtime does before
    /// it exits. A later call of an imported tool connects again.
    pub async fn close_mcp(&self) {
        if let Some(hub) = &self.services.mcp_hub {
            hub.close().await;
        }
    }

    /// The project's files as this load found them before it read any: a watch that compares
    /// the disk with it loads the project again when they changed (see
    /// [`crate::project::ProjectFiles`]).
    pub fn files_seen(&self) -> &crate::project::ProjectFiles {
        &self.project.files_seen
    }

    /// The project's agents, prompts, models and activities as they loaded.
    pub fn definitions(&self) -> &Definitions {
        &self.project.defs
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
        self.services.mcp_hub.as_ref()?.login_parts(name)
    }

    /// The project's MCP servers (`agents/mcp/`) as they loaded: their tools, or why they
    /// have none, and what they wrote to standard error.
    pub fn mcp_servers(&self) -> &[crate::mcp::ServerStatus] {
        &self.project.mcp_servers
    }

    /// The pin of the definition the imported tool `tool` loaded with; `None` for a tool that
    /// is not one of the project's MCP servers'.
    pub fn mcp_pin(&self, tool: &str) -> Option<&Value> {
        self.project.mcp_pins.get(tool)
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
        self.services
            .db
            .run_blocking(move |store| crate::mcp::accept_definition(store, &tool, &pin))
            .await?;
        Ok(())
    }

    /// Every tool of the project (files, built-ins and tools registered in Rust), by name.
    pub fn tools(&self) -> &ToolSet {
        &self.project.tools
    }

    /// The tool `name` as it loaded from its file (the file, the blueprint as written, and
    /// whether it is latent or bound to an activity); `None` for a tool written in Rust (built
    /// in or registered) or one that does not exist.
    pub fn tool_file(&self, name: &str) -> Option<&LoadedTool> {
        self.project.files.get(name)
    }

    /// Subscribes to the live events of every thread this runtime runs from now on: the
    /// pieces of each model answer as it streams in (see [`LiveEvent`]). They are not stored;
    /// the stored reply is the authoritative answer.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<LiveEvent> {
        self.process.live.subscribe_all()
    }

    /// Subscribes to the live events of one thread from now on. A follower of one thread never
    /// falls behind because another thread is busy.
    pub fn subscribe_thread(&self, thread_id: &str) -> tokio::sync::broadcast::Receiver<LiveEvent> {
        self.process.live.subscribe_thread(thread_id)
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
        self.project.model_for(name, thread_model)
    }

    /// Files of the project that did not load, and files that refer to a name that does not
    /// exist, such as prompts that offer a tool that is not defined (checked now, so tools
    /// registered after loading count). A thread whose agent reaches any of them is refused
    /// (see [`Runtime::check_agent`]).
    pub fn problems(&self) -> Vec<FileProblem> {
        self.project.problems()
    }

    /// The store threads are kept in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.services.store
    }

    /// The error for an agent name the project does not define, listing the ones it does.
    pub(crate) fn unknown_agent(&self, name: &str) -> RuntimeError {
        self.project.unknown_agent(name)
    }

    /// The variables a person may give a new thread of `agent`, for a form that starts one:
    /// those the agent, its prompts and the tools its prompts offer declare, once per name (a
    /// secret when any declaration says so), leaving out those its definitions give a value.
    /// `None` when there is no such agent.
    pub fn variables_to_give(&self, agent: &str) -> Option<Vec<VariableToGive>> {
        self.project.variables_to_give(agent)
    }

    /// The names every definition of the project (tool, prompt or agent) declares secret: what a
    /// program asking for values must read without showing them.
    pub fn secret_names(&self) -> std::collections::BTreeSet<String> {
        self.project.secret_names()
    }

    /// The variable names the project's definitions use (see
    /// [`Runtime::set_variables`]): the only variables a thread may be given.
    pub fn declared_names(&self) -> std::collections::BTreeSet<String> {
        self.project.declared_names()
    }

    /// Records a person's decision on a call waiting for approval; then [`Runtime::run`]
    /// continues the thread. The decision is bound to the arguments the call waits with and to
    /// the tool as it is defined now: when the tool was redefined since the request, or the call
    /// does not wait, the decision is refused and nothing changes.
    pub async fn decide(
        &self,
        thread_id: &str,
        call_id: &str,
        verdict: Verdict,
    ) -> Result<toolhost_store::ApprovalRecord, RuntimeError> {
        let redactor = self.variables().thread_redactor(thread_id).await?;
        self.approvals()
            .decide(thread_id, call_id, verdict, &redactor)
            .await
    }

    /// The variables of this runtime's threads.
    fn variables(&self) -> thread_vars::Variables<'_> {
        thread_vars::Variables {
            project: &self.project,
            db: &self.services.db,
            key: self.services.secret_key.as_ref(),
        }
    }

    /// The approvals of this runtime's threads.
    fn approvals(&self) -> approvals::Approvals<'_> {
        approvals::Approvals {
            project: &self.project,
            db: &self.services.db,
            handler: self.services.approval_handler.as_ref(),
        }
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
