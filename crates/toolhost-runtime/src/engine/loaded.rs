//! The project as it loaded: plain data, set up once (models registered or overridden, Rust
//! tools added) before the runtime runs anything, and only read after that.

use super::{ambiguous, lease_keeper, name_list, RuntimeError};
use crate::project::{Definitions, FileProblem, LoadedTool};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use toolhost_core::{AnyTool, ToolSet};
use toolhost_providers::Model;

/// What the project's files define, with what loading made of them.
pub(crate) struct LoadedProject {
    /// The project's folder.
    pub(crate) root: PathBuf,
    /// The project's files as this load found them, before it read any.
    pub(crate) files_seen: crate::project::ProjectFiles,
    /// Its agents, prompts, models and activities as they loaded.
    pub(crate) defs: Definitions,
    /// Every tool: built-ins, files, imported MCP tools and tools registered in Rust.
    pub(crate) tools: ToolSet,
    /// The tools loaded from files, as loaded (file, blueprint, binding); a tool not in it is
    /// written in Rust.
    pub(crate) files: HashMap<String, LoadedTool>,
    /// The usable model of each model definition, by name.
    pub(crate) models: HashMap<String, Arc<dyn Model>>,
    /// Files that did not load.
    pub(crate) problems: Vec<FileProblem>,
    /// The model definition every prompt uses instead of its own, when set.
    pub(crate) model_override: Option<String>,
    /// Why a model definition that loaded cannot be used (its key is not set, for example).
    pub(crate) unavailable: HashMap<String, String>,
    /// The process activity each project tool is bound to, by tool name (for approvals).
    pub(crate) bound: HashMap<String, String>,
    /// The tool of each prompt another prompt offers, by name (see `subprompt`).
    pub(crate) prompt_tools: HashMap<String, AnyTool>,
    /// The tool of each `dual_ai` agent a prompt offers, by name (see `subagent`).
    pub(crate) agent_tools: HashMap<String, AnyTool>,
    /// The project's MCP servers as they loaded.
    pub(crate) mcp_servers: Vec<crate::mcp::ServerStatus>,
    /// The pin of each imported tool's definition as it loaded.
    pub(crate) mcp_pins: HashMap<String, Value>,
}

impl LoadedProject {
    /// The `_outputPath` each of `tools` fixes in its blueprint (spec 004), by tool.
    pub(crate) fn fixed_output_paths(
        &self,
        tools: &[toolhost_core::ToolDefinition],
    ) -> HashMap<String, String> {
        tools
            .iter()
            .filter_map(|t| {
                let path = self
                    .files
                    .get(&t.name)?
                    .blueprint
                    .meta
                    .output_path
                    .clone()?;
                Some((t.name.clone(), path))
            })
            .collect()
    }

    /// The model a prompt naming `name` runs on in a thread that was started with
    /// `thread_model` (see [`super::Runtime::thread_model`]): this runtime's override when one
    /// is set, else the thread's, else the prompt's own; or why it cannot be used (a key that
    /// is not set names its variable).
    pub(crate) fn model_for(
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
    /// (see [`super::Runtime::check_agent`]).
    pub(crate) fn problems(&self) -> Vec<FileProblem> {
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
    /// another ([`super::Runtime::thread_model`]). Fails when no model definition of that
    /// name loaded.
    pub(crate) fn override_model(&mut self, name: &str) -> Result<(), RuntimeError> {
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
}

/// What runs need from outside the project: the store, the code sandbox, the MCP connections,
/// and what the embedding program installed (approval handler, middleware, hooks, limits).
pub(crate) struct Services {
    /// The store threads are kept in.
    pub(crate) store: Arc<dyn toolhost_store::Store>,
    /// The same store, for the engine's async code: nothing it does blocks an executor thread.
    pub(crate) db: toolhost_store::AsyncStore,
    /// How long a thread's lease lasts unless renewed.
    pub(crate) lease_ttl: std::time::Duration,
    /// Keeps the leases of the threads this runtime's runs own (see `lease_keeper`).
    pub(crate) leases: lease_keeper::LeaseKeeper,
    /// Decides approval requests at once, when the embedding program installed one.
    pub(crate) approval_handler: Option<Arc<dyn super::ApprovalHandler>>,
    /// Seals and opens secret values.
    pub(crate) secret_key: Option<crate::variables::secrets::SecretKey>,
    /// Middleware in registration order, with where it applies.
    pub(crate) middleware: Vec<(super::MiddlewareScope, Arc<dyn super::Middleware>)>,
    /// Tool hooks in registration order.
    pub(crate) hooks: Vec<Arc<dyn super::ToolHooks>>,
    /// The `runCode` sandbox every thread's calls share (see `code`).
    pub(crate) code: super::code::CodeRunner,
    /// The hosts tools may fetch from, and what fetches (see `fetch`); none by default.
    pub(crate) fetch: Option<Arc<super::FetchPolicy>>,
    /// What tools may store, per call and per thread (see `quotas`).
    pub(crate) quotas: Arc<super::WriteQuotas>,
    /// The connections to the project's MCP servers, held so that they live as long as the
    /// runtime (its imported tools hold them weakly); closed by `Runtime::close_mcp` or when
    /// the runtime is dropped.
    pub(crate) mcp_hub: Option<Arc<crate::mcp::McpHub>>,
}
