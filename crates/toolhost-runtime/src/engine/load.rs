//! Loading a project: its definitions, tool files, models and MCP servers, read from `root`
//! into a [`Runtime`] on a store. What does not load is a problem of its file
//! ([`Runtime::problems`]); the rest is usable.

use super::{
    code,
    in_process::InProcess,
    lease_keeper,
    loaded::{LoadedProject, Services},
    run_code_tool, subagent, subprompt, ModelFactory, Runtime, RuntimeError, ThreadState,
    DEFAULT_LEASE_TTL,
};
use crate::activity::{ActivityInput, ApprovalRule, ProcessActivity};
use crate::project::{
    load_definitions, load_tools, Definitions, FileProblem, LoadedTool, ProjectError,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolhost_core::approval::Approval;
use toolhost_core::blueprint::{Activities, Binding};
use toolhost_core::tool::ToolError;
use toolhost_core::ToolSet;
use toolhost_providers::{Model, ScriptError, ScriptedModel};
use toolhost_store::{AsyncStore, Store};

/// How MCP servers at a URL are reached: the HTTP client, and where their OAuth grants are kept.
type McpNetwork = (
    Arc<dyn toolhost_providers::fetch::Fetcher>,
    Option<Arc<crate::mcp::Vault>>,
);

impl Runtime {
    /// Loads the project at `root` with no model factory: its scripted (`test`) models are
    /// usable, and a model definition of any other provider loads but is unavailable (a thread
    /// on it fails saying so) unless a model is registered for it with
    /// [`Runtime::register_model`]. Files that do not load are kept in [`Runtime::problems`];
    /// the rest is usable.
    pub async fn load(root: &Path, store: Arc<dyn Store>) -> Result<Self, RuntimeError> {
        Self::load_project(root, store, None, None).await
    }

    /// Loads the project at `root`, building the models of its definitions other than the
    /// scripted ones with `factory` (see [`ModelFactory`]). A definition the factory refuses,
    /// for example because its key is not set, is no problem until a thread uses it. Otherwise
    /// the same as [`Runtime::load`].
    pub async fn load_with(
        root: &Path,
        store: Arc<dyn Store>,
        factory: &dyn ModelFactory,
    ) -> Result<Self, RuntimeError> {
        Self::load_project(root, store, Some(factory), None).await
    }

    /// Loads the project at `root` as [`Runtime::load_with`] does, and reaches the MCP servers
    /// the project names by URL (`agents/mcp/`) through `http` (the command line passes the
    /// providers' hyper client); without it such a server is a problem of its file. `vault`
    /// keeps the servers' OAuth grants (see [`toolhost_mcp_client::oauth`]).
    pub async fn load_networked(
        root: &Path,
        store: Arc<dyn Store>,
        factory: &dyn ModelFactory,
        http: Arc<dyn toolhost_providers::fetch::Fetcher>,
        vault: Option<Arc<crate::mcp::Vault>>,
    ) -> Result<Self, RuntimeError> {
        Self::load_project(root, store, Some(factory), Some((http, vault))).await
    }

    async fn load_project(
        root: &Path,
        store: Arc<dyn Store>,
        factory: Option<&dyn ModelFactory>,
        network: Option<McpNetwork>,
    ) -> Result<Self, RuntimeError> {
        let files_seen = crate::project::ProjectFiles::look(root);
        let defs = load_definitions(root);
        let activities = process_activities(&defs);
        // A project whose tools are all written in Rust needs no agents/tools/ folder.
        let project_tools = match load_tools(root, &activities) {
            Err(ProjectError::NoToolsFolder { .. }) => Default::default(),
            other => other?,
        };
        let bound: HashMap<String, String> = project_tools
            .tools
            .iter()
            .filter_map(|t| match &t.binding {
                Binding::Explicit { activity } => {
                    Some((t.tool.name().to_owned(), activity.clone()))
                }
                Binding::Latent => None,
            })
            .collect();
        let mut problems = project_tools.problems;
        problems.extend(defs.problems.iter().cloned());
        let (http, vault) = network.unzip();
        let mcp = crate::mcp::load_mcp(root, http, vault.flatten()).await;
        problems.extend(mcp.problems);
        // Built-in tools come first, so a project file of the same name replaces them.
        // Their definitions are fixed and checked by their unit tests.
        let builtin = [
            toolhost_core::think::think_tool(),
            run_code_tool::run_code_tool(),
        ]
        .map(|tool| tool.expect("a built-in tool's definition is valid"));
        let files: HashMap<String, LoadedTool> = project_tools
            .tools
            .iter()
            .map(|t| (t.tool.name().to_owned(), t.clone()))
            .collect();
        let tools = ToolSet::from_tools(builtin.into_iter().chain(mcp.tools).chain(
            project_tools.tools.into_iter().map(|t| {
                // A tool bound to an activity whose file asks for approval gets that policy.
                let rule = match &t.binding {
                    Binding::Explicit { activity } => defs
                        .activities
                        .get(activity)
                        .and_then(|a| a.approval.clone()),
                    Binding::Latent => None,
                };
                match rule {
                    Some(rule) => t.tool.with_approval(Arc::new(policy_of(rule))),
                    None => t.tool,
                }
            }),
        ));
        let (models, unavailable) = project_models(root, &defs, factory, &mut problems);
        let project = LoadedProject {
            root: root.to_owned(),
            files_seen,
            tools,
            files,
            models,
            problems,
            model_override: None,
            unavailable,
            bound,
            prompt_tools: subprompt::offered_prompt_tools(&defs),
            agent_tools: subagent::offered_agent_tools(&defs),
            mcp_servers: mcp.servers,
            mcp_pins: mcp.pins,
            defs,
        };
        let services = Services {
            db: AsyncStore::new(store.clone()),
            leases: lease_keeper::LeaseKeeper::new(AsyncStore::new(store.clone())),
            store,
            lease_ttl: DEFAULT_LEASE_TTL,
            approval_handler: None,
            secret_key: None,
            middleware: Vec::new(),
            hooks: Vec::new(),
            code: code::CodeRunner::default(),
            fetch: None,
            quotas: Arc::default(),
            mcp_hub: mcp.hub,
        };
        Ok(Self {
            project,
            services,
            process: InProcess::new(),
        })
    }
}

/// The models of the project's definitions: the scripted ones read from their scripts, the
/// others built by `factory`; with why each model that cannot be used cannot (a definition
/// that does not load is also a problem of its file).
fn project_models(
    root: &Path,
    defs: &Definitions,
    factory: Option<&dyn ModelFactory>,
    problems: &mut Vec<FileProblem>,
) -> (HashMap<String, Arc<dyn Model>>, HashMap<String, String>) {
    let mut models: HashMap<String, Arc<dyn Model>> = HashMap::new();
    let mut unavailable: HashMap<String, String> = HashMap::new();
    for (name, def) in &defs.models {
        let problem = |message: String| {
            FileProblem::not_loaded(
                root.join("agents/models").join(format!("{name}.json")),
                name,
                message,
            )
        };
        if def.provider == "test" {
            match load_script(root, name, def.script.as_deref()) {
                Ok(model) => {
                    models.insert(name.clone(), Arc::new(model));
                }
                Err(reason) => {
                    // A thread on it fails with this reason, not a guess at one.
                    unavailable.insert(name.clone(), reason.clone());
                    problems.push(problem(reason));
                }
            }
            continue;
        }
        // A model whose key is not set is no problem until a thread uses it.
        match def.http_config() {
            Err(reason) => problems.push(problem(reason.to_string())),
            Ok(config) => match factory.map(|f| f.model(&config)) {
                Some(Ok(model)) => {
                    models.insert(name.clone(), model);
                }
                Some(Err(e)) => {
                    unavailable.insert(name.clone(), e.to_string());
                }
                None => {
                    unavailable.insert(
                        name.clone(),
                        format!(
                            "provider \"{}\" needs a model factory, and the runtime was loaded without one",
                            def.provider
                        ),
                    );
                }
            },
        }
    }
    (models, unavailable)
}

/// A model definition of the `test` provider: its script, read from the project.
fn load_script(root: &Path, name: &str, script: Option<&Path>) -> Result<ScriptedModel, String> {
    let Some(script) = script else {
        return Err(
            "a `test` model needs `script`: a JSON or JSONL file of assistant turns".to_owned(),
        );
    };
    let path: PathBuf = root.join(script);
    let text = crate::files::read_text(&path, crate::files::MAX_FILE_BYTES)
        .map_err(|e| format!("cannot read script {}: {}", script.display(), e.reason()))?;
    ScriptedModel::parse(format!("test:{name}"), &script.display().to_string(), &text)
        .map_err(|e: ScriptError| e.to_string())
}

/// The approval policy of an activity file's `approval` rule: every call needs approval.
fn policy_of(rule: ApprovalRule) -> Approval {
    let mut policy = Approval::always();
    if let Some(reason) = rule.reason {
        policy = policy.with_reason(reason);
    }
    if let Some(text) = rule.reject_message {
        policy = policy.with_reject_message(text);
    }
    policy
}

/// The process activities of a project's definitions, as the registry its blueprints bind to
/// (a blueprint whose `_activity` is not among them does not load).
pub fn process_activities(defs: &Definitions) -> Activities {
    let mut activities = Activities::new();
    for (name, activity) in &defs.activities {
        register_process(&mut activities, name, activity.clone());
    }
    activities
}

/// Binds a process activity into the library's activity registry.
fn register_process(activities: &mut Activities, name: &str, activity: ProcessActivity) {
    let activity = Arc::new(activity);
    activities.register(name, move |args, _meta, ctx| {
        let activity = activity.clone();
        async move {
            let state = ctx.get::<ThreadState>();
            let input = ActivityInput {
                tool: ctx.tool_name().unwrap_or_default().to_owned(),
                arguments: args,
                thread_id: ctx.thread_id().map(str::to_owned),
                call_id: ctx.call_id().to_owned(),
                idempotency_key: ctx.idempotency_key(),
                // Only the variables the tool declared, opened for this call.
                variables: state
                    .map(|state| {
                        state
                            .env_all()
                            .iter()
                            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                            .collect()
                    })
                    .unwrap_or_default(),
            };
            // Every secret of the thread, not only the tool's: the program's output is quoted
            // before the engine redacts the result.
            let redactor = state.map(|s| s.redactor().clone()).unwrap_or_default();
            let result = activity
                .run_in(&input, &redactor, state, ctx.abort_signal())
                .await;
            Ok::<_, ToolError>(result)
        }
    });
}
