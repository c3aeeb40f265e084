//! Agents, prompts, models and activities of a project.

use super::agent::{AgentDef, AgentKind};
use super::agent_tools::check_agent_tools;
use super::includes::resolve_includes;
use super::mcp_catalog::{load_mcp_catalog, McpCatalog};
use super::prompt::PromptDef;
use super::prompt_tools::check_prompt_tools;
use super::tools::FileProblem;
use crate::activity::ProcessActivity;
use crate::files::{read_text, MAX_FILE_BYTES};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use toolhost_core::variables::{variables_from_tenvs, VariableDecl, VariableKind};

/// The default step budget of a side when neither the prompt nor the agent sets one.
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// Reads `tenvs` into `variables`, and refuses a text value given for a secret.
fn settle_variables(
    variables: &mut Vec<VariableDecl>,
    tenvs: &Option<Value>,
    values: &BTreeMap<String, String>,
) -> Result<(), String> {
    if let Some(schema) = tenvs {
        variables.extend(variables_from_tenvs(schema).map_err(|e| e.to_string())?);
    }
    for v in variables.iter() {
        if v.kind == VariableKind::Secret && values.contains_key(&v.name) {
            return Err(format!(
                "`values` gives secret variable \"{}\" a value; secrets are never written in definition files: give them to the thread",
                v.name
            ));
        }
    }
    Ok(())
}

/// A model definition (`agents/models/NAME.json`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelDef {
    /// The definition's name (the file stem).
    #[serde(default)]
    pub name: String,
    /// `test`, `openai`, `anthropic`, `gemini`, ...
    pub provider: String,
    /// The provider's model id.
    #[serde(default)]
    pub model: Option<String>,
    /// For `test`: the script file, relative to the project.
    #[serde(default)]
    pub script: Option<PathBuf>,
    /// The API's base URL (any compatible server).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// For `openai` and `openai-compatible`: `responses` or `chat`.
    #[serde(default)]
    pub api: Option<String>,
    /// Provider settings (temperature, ...).
    #[serde(default)]
    pub settings: Value,
    /// Whether the model supports OpenAI strict function calling.
    #[serde(default)]
    pub strict: bool,
    /// How transient failures are retried (`maxAttempts`, `initialBackoffMs`, ...).
    #[serde(default)]
    pub retry: Option<Value>,
    /// Time limits of one attempt (`connectMs`, `requestMs`, `streamIdleMs`).
    #[serde(default)]
    pub timeouts: Option<Value>,
}

/// Why a model definition does not make an adapter's configuration.
#[derive(Debug, thiserror::Error)]
pub enum ModelDefError {
    /// A model served over HTTP names no `model`.
    #[error("a model served over HTTP needs `model`, the id the API knows")]
    NoModel,
    /// The fields do not make a configuration.
    #[error("not a valid model definition: {0}")]
    Invalid(serde_json::Error),
    /// The provider does not speak the `api` named.
    #[error("field `api`: {0}")]
    Api(toolhost_providers::ConfigError),
}

impl ModelDef {
    /// The adapter configuration of a model served over HTTP.
    pub fn http_config(&self) -> Result<toolhost_providers::ModelConfig, ModelDefError> {
        let mut config = serde_json::json!({
            "provider": self.provider,
            "model": self.model.clone().ok_or(ModelDefError::NoModel)?,
            "baseUrl": self.base_url,
            "apiKeyEnv": self.api_key_env,
            "api": self.api,
            "strict": self.strict,
            "name": format!("{}:{}", self.provider, self.name),
        });
        if self.settings.is_object() {
            config["settings"] = self.settings.clone();
        }
        if let Some(retry) = &self.retry {
            config["retry"] = retry.clone();
        }
        if let Some(timeouts) = &self.timeouts {
            config["timeouts"] = timeouts.clone();
        }
        let config: toolhost_providers::ModelConfig =
            serde_json::from_value(config).map_err(ModelDefError::Invalid)?;
        // An `api` the provider does not speak fails here, naming the field, not at first use.
        if config.api.is_some() {
            config.wire_api().map_err(ModelDefError::Api)?;
        }
        Ok(config)
    }
}

/// Everything of a project but its tools.
#[derive(Debug, Clone, Default)]
pub struct Definitions {
    /// Agents by name.
    pub agents: BTreeMap<String, AgentDef>,
    /// Prompts by name.
    pub prompts: BTreeMap<String, PromptDef>,
    /// Models by name.
    pub models: BTreeMap<String, ModelDef>,
    /// Process activities by name.
    pub activities: BTreeMap<String, ProcessActivity>,
    /// The prompts and resources served to MCP clients.
    pub mcp: McpCatalog,
    /// Files that did not load, and files that name a prompt that does not exist.
    pub problems: Vec<FileProblem>,
}

/// The `.json` files of a folder in name order, with their stems; a missing folder is empty.
pub(crate) fn json_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        // Not `is_file`: a FIFO or device named like a definition is reported, not passed over.
        .filter(|p| !p.is_dir() && p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| Some((p.file_stem()?.to_str()?.to_owned(), p)))
        .collect();
    files.sort();
    files
}

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, String> {
    let text = read_text(path, MAX_FILE_BYTES).map_err(|e| e.reason())?;
    serde_json::from_str(&text).map_err(|e| format!("not a valid definition: {e}"))
}

/// Reads the agents, prompts, models and activities of the project at `root`, then checks that
/// every name they refer to exists.
pub fn load_definitions(root: &Path) -> Definitions {
    let mut defs = Definitions::default();
    let agents_dir = root.join("agents");
    let problem = |path: &Path, name: &str, message: String| {
        FileProblem::not_loaded(path.to_owned(), name, message)
    };
    for (name, path) in json_files(&agents_dir.join("agents")) {
        match read_json::<AgentDef>(&path).and_then(|mut a| {
            same_name(&a.name, &name)?;
            settle_variables(&mut a.variables, &a.tenvs, &a.values)?;
            Ok(a)
        }) {
            Ok(mut a) => {
                a.name = name.clone();
                if a.kind == AgentKind::DualAi && a.side_b.is_none() {
                    defs.problems.push(problem(
                        &path,
                        &name,
                        "a dual_ai agent needs `sideB`".into(),
                    ));
                } else {
                    defs.agents.insert(name, a);
                }
            }
            Err(m) => defs.problems.push(problem(&path, &name, m)),
        }
    }
    for (name, path) in json_files(&agents_dir.join("prompts")) {
        match read_json::<PromptDef>(&path).and_then(|mut p| {
            same_name(&p.name, &name)?;
            settle_variables(&mut p.variables, &p.tenvs, &p.values)?;
            check_env_parts(&p)?;
            p.check_settings()?;
            Ok(p)
        }) {
            Ok(mut p) => {
                p.name = name.clone();
                defs.prompts.insert(name, p);
            }
            Err(m) => defs.problems.push(problem(&path, &name, m)),
        }
    }
    for (name, message) in resolve_includes(&mut defs.prompts) {
        let path = agents_dir.join("prompts").join(format!("{name}.json"));
        defs.problems.push(problem(&path, &name, message));
    }
    let is_agent = |name: &str| defs.agents.contains_key(name);
    let mut offers = check_prompt_tools(&defs.prompts, &is_agent);
    offers.extend(check_agent_tools(&defs.prompts, &defs.agents));
    for (name, message) in offers {
        let path = agents_dir.join("prompts").join(format!("{name}.json"));
        defs.problems
            .push(FileProblem::dangling(path, &name, message));
    }
    for (name, path) in json_files(&agents_dir.join("models")) {
        match read_json::<ModelDef>(&path).and_then(|m| same_name(&m.name, &name).map(|_| m)) {
            Ok(mut m) => {
                m.name = name.clone();
                defs.models.insert(name, m);
            }
            Err(m) => defs.problems.push(problem(&path, &name, m)),
        }
    }
    for (name, path) in json_files(&agents_dir.join("activities")) {
        let loaded = read_text(&path, MAX_FILE_BYTES)
            .map_err(|e| e.reason())
            .and_then(|text| ProcessActivity::parse(&name, &text, root).map_err(|e| e.reason));
        match loaded {
            Ok(a) => {
                defs.activities.insert(name, a);
            }
            Err(m) => defs.problems.push(problem(&path, &name, m)),
        }
    }
    let (mcp, problems) = load_mcp_catalog(root);
    defs.mcp = mcp;
    defs.problems.extend(problems);
    check_references(&mut defs, &agents_dir);
    defs
}

/// A definition's `name` (the spec's required field) may be left out, since the file's stem
/// names it; when given, it must be that stem, or references would silently mean another file.
fn same_name(given: &str, stem: &str) -> Result<(), String> {
    if given.is_empty() || given == stem {
        return Ok(());
    }
    Err(format!(
        "`name` is \"{given}\" but the file is named {stem}.json; a definition is named by its file"
    ))
}

/// A prompt's `env` parts name text variables it declares; a secret is never put in a prompt.
fn check_env_parts(prompt: &PromptDef) -> Result<(), String> {
    for name in prompt.env_parts() {
        match prompt.variables.iter().find(|v| v.name == name) {
            Some(v) if v.kind == VariableKind::Secret => {
                return Err(format!(
                    "the prompt puts secret variable \"{name}\" into its text; secrets never reach a model"
                ))
            }
            Some(_) => {}
            None => {
                return Err(format!(
                    "the prompt puts variable \"{name}\" into its text but does not declare it in `variables`"
                ))
            }
        }
    }
    Ok(())
}

/// Every side names a prompt that exists. (Models and tools may also be registered in code
/// after loading, so the runtime checks those names when it is asked.)
fn check_references(defs: &mut Definitions, agents_dir: &Path) {
    let mut problems = Vec::new();
    for agent in defs.agents.values() {
        for side in std::iter::once(&agent.side_a).chain(agent.side_b.as_ref()) {
            if !defs.prompts.contains_key(&side.prompt) {
                problems.push(FileProblem::dangling(
                    agents_dir
                        .join("agents")
                        .join(format!("{}.json", agent.name)),
                    &agent.name,
                    format!(
                        "names prompt \"{}\", which is not in agents/prompts/ or did not load",
                        side.prompt
                    ),
                ));
            }
        }
    }
    defs.problems.extend(problems);
}
