//! Whether an agent can run: every definition a thread of it reaches (its sides' prompts, the
//! prompts they include, their models, the tools they offer, the tools its sides' rules name,
//! and the activities behind those tools) exists and loaded. A run is refused before anything
//! is stored when one does not, naming each file and what is missing; it never goes on
//! without the missing part.

use super::loaded::LoadedProject;
use super::{Runtime, RuntimeError};
use crate::project::{FileProblem, PromptDef, SideDef};
use std::path::PathBuf;

impl Runtime {
    /// Checks every definition a thread of `agent` reaches (see the module's page). Fails with
    /// [`RuntimeError::UnknownAgent`] when there is no such agent file, and with
    /// [`RuntimeError::Unsound`] listing each problem otherwise. Checked when a thread is
    /// started, sent a message or run, so tools registered after loading count.
    pub fn check_agent(&self, agent: &str) -> Result<(), RuntimeError> {
        self.project.check_agent(agent)
    }
}

impl LoadedProject {
    /// [`Runtime::check_agent`].
    pub(crate) fn check_agent(&self, agent: &str) -> Result<(), RuntimeError> {
        let problems = self.agent_problems(agent)?;
        if problems.is_empty() {
            return Ok(());
        }
        Err(RuntimeError::Unsound {
            agent: agent.to_owned(),
            problems,
        })
    }

    fn agent_problems(&self, agent: &str) -> Result<Vec<FileProblem>, RuntimeError> {
        self.tree_problems(agent, &mut std::collections::HashSet::new())
    }

    /// The problems of `agent` and of every agent it reaches as a sub-agent (each once).
    fn tree_problems(
        &self,
        agent: &str,
        seen: &mut std::collections::HashSet<String>,
    ) -> Result<Vec<FileProblem>, RuntimeError> {
        seen.insert(agent.to_owned());
        let agent_file = self.file("agents", agent);
        let Some(def) = self.defs.agents.get(agent) else {
            return match self.not_loaded(&agent_file) {
                Some(problem) => Ok(vec![problem]),
                None => Err(self.unknown_agent(agent)),
            };
        };
        let mut problems = Vec::new();
        for (field, side) in def.sides() {
            let Some(prompt) = self.defs.prompts.get(&side.prompt) else {
                let file = self.file("prompts", &side.prompt);
                problems.push(self.not_loaded(&file).unwrap_or_else(|| {
                    FileProblem::dangling(
                        agent_file.clone(),
                        agent,
                        format!(
                            "{field} names prompt \"{}\", which is not in agents/prompts/",
                            side.prompt
                        ),
                    )
                }));
                continue;
            };
            problems.extend(self.prompt_problems(prompt));
            problems.extend(self.side_rule_problems(&agent_file, agent, field, side, prompt));
            // The prompts it offers as tools run on this thread too.
            let mut sub_agents: Vec<String> = Vec::new();
            for sub in self.reached_prompts(prompt) {
                problems.extend(self.prompt_problems(sub));
                sub_agents.extend(self.agents_offered(sub));
            }
            // The agents it offers run in child threads, which must be able to run too.
            sub_agents.extend(self.agents_offered(prompt));
            for child in sub_agents {
                if !seen.contains(child.as_str()) {
                    problems.extend(self.tree_problems(&child, seen)?);
                }
            }
        }
        // Two sides on one prompt would name its problems twice.
        let mut seen = std::collections::HashSet::new();
        problems.retain(|p| seen.insert(p.to_string()));
        Ok(problems)
    }

    /// The prompt's model and the tools it offers.
    fn prompt_problems(&self, prompt: &PromptDef) -> Vec<FileProblem> {
        let prompt_file = self.file("prompts", &prompt.name);
        let mut problems = Vec::new();
        let model = self.model_override.as_deref().unwrap_or(&prompt.model);
        // A model that loaded but cannot be used now (its key is not set) fails when the
        // thread starts, naming the key; here only definitions count.
        if !self.models.contains_key(model) && !self.unavailable.contains_key(model) {
            let file = self.file("models", model);
            problems.push(self.not_loaded(&file).unwrap_or_else(|| {
                FileProblem::dangling(
                    prompt_file.clone(),
                    &prompt.name,
                    format!("names model \"{model}\", which is not in agents/models/"),
                )
            }));
        }
        // What loading found wrong with the file (its prompt tools' settings, for example).
        problems.extend(
            self.problems
                .iter()
                .filter(|p| p.loaded && p.path == prompt_file)
                .cloned(),
        );
        for tool in &prompt.tools {
            if self.tools.contains(tool) && self.defs.prompts.contains_key(&tool.name) {
                problems.push(FileProblem::dangling(
                    prompt_file.clone(),
                    &prompt.name,
                    super::ambiguous(tool),
                ));
            }
        }
        let undefined = |t: &&crate::project::ToolOffer| {
            !self.tools.contains(t)
                && !self.defs.prompts.contains_key(&t.name)
                && !self.defs.agents.contains_key(&t.name)
        };
        for tool in prompt.tools.iter().filter(undefined) {
            // A tool file, or a prompt offered as a tool, that did not load says why.
            let not_loaded = self
                .not_loaded(&self.file("tools", tool))
                .or_else(|| self.not_loaded(&self.file("prompts", tool)));
            problems.push(not_loaded.unwrap_or_else(|| {
                FileProblem::dangling(
                    prompt_file.clone(),
                    &prompt.name,
                    format!(
                        "offers tool \"{tool}\", which is not defined (no file in agents/tools/ or agents/prompts/, no tool registered in code)"
                    ),
                )
            }));
        }
        problems
    }

    /// The tools a side's rules name are offered by its prompt, and the arguments its session
    /// bindings read are arguments of their tools.
    fn side_rule_problems(
        &self,
        agent_file: &std::path::Path,
        agent: &str,
        field: &str,
        side: &SideDef,
        prompt: &PromptDef,
    ) -> Vec<FileProblem> {
        let dangling =
            |message: String| FileProblem::dangling(agent_file.to_owned(), agent, message);
        let mut problems = Vec::new();
        for (rule, tool) in side.named_tools() {
            if !prompt.tools.iter().any(|t| t == tool) {
                problems.push(dangling(format!(
                    "{field}.{rule} names tool \"{tool}\", which its prompt \"{}\" does not offer",
                    prompt.name
                )));
            }
        }
        for (rule, binding) in side.bindings() {
            let Some(tool) = self.tools.get(&binding.name) else {
                continue;
            };
            let parameters = &tool.definition().parameters;
            let properties = [
                ("messageProperty", &binding.message_property),
                ("attachmentsProperty", &binding.attachments_property),
            ];
            for (key, property) in properties {
                let Some(property) = property else { continue };
                let declared = parameters
                    .get("properties")
                    .and_then(|p| p.get(property.as_str()));
                if declared.is_none() {
                    problems.push(dangling(format!(
                        "{field}.{rule}.{key} names \"{property}\", which is not an argument of tool \"{}\"",
                        binding.name
                    )));
                }
            }
        }
        problems
    }

    /// `agents/KIND/NAME.json` of this project.
    fn file(&self, kind: &str, name: &str) -> PathBuf {
        self.root
            .join("agents")
            .join(kind)
            .join(format!("{name}.json"))
    }

    /// The problem of `file`, when it did not load.
    fn not_loaded(&self, file: &std::path::Path) -> Option<FileProblem> {
        self.problems
            .iter()
            .find(|p| !p.loaded && p.path == file)
            .cloned()
    }
}
