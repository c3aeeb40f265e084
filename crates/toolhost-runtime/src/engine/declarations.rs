//! What the project's definitions declare about variables: which a thread of an agent needs,
//! which are secret, which are `scoped`, which a person may give. Plain queries over the loaded
//! project; nothing here reads the store.

use super::loaded::LoadedProject;
use super::RuntimeError;
use crate::project::{AgentDef, AgentKind, PromptDef};
use crate::variables::{Redactor, VariableValue};
use std::collections::BTreeSet;
use toolhost_core::variables::{VariableDecl, VariableKind};

/// A variable a new thread of an agent may be given ([`super::Runtime::variables_to_give`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VariableToGive {
    /// Its name.
    pub name: String,
    /// Whether it is a secret: sealed when stored, never shown again.
    pub secret: bool,
    /// The thread cannot start without it; the others are asked for when a tool needs them.
    pub required_at_start: bool,
    /// What it is for, as declared.
    pub description: String,
}

impl LoadedProject {
    /// The prompts of the agent's sides.
    pub(crate) fn agent_prompts<'a>(
        &'a self,
        agent: &'a AgentDef,
    ) -> impl Iterator<Item = &'a PromptDef> {
        let sides: Vec<&PromptDef> = std::iter::once(&agent.side_a)
            .chain(agent.side_b.as_ref())
            .filter_map(|side| self.defs.prompts.get(&side.prompt))
            .collect();
        // The prompts its sides offer as tools run on its threads too.
        let subs: Vec<&PromptDef> = sides.iter().flat_map(|p| self.reached_prompts(p)).collect();
        sides.into_iter().chain(subs)
    }

    /// Whether the agent or one of its prompts gives `name` a value.
    pub(crate) fn defined_value(&self, agent: &AgentDef, name: &str) -> bool {
        agent.values.contains_key(name)
            || self
                .agent_prompts(agent)
                .any(|p| p.values.contains_key(name))
    }

    /// The declarations of the agent and of the prompts of its sides.
    pub(crate) fn agent_declarations(&self, agent: &AgentDef) -> Vec<VariableDecl> {
        self.agent_prompts(agent)
            .flat_map(|p| p.variables.iter())
            .chain(&agent.variables)
            .cloned()
            .collect()
    }

    /// The variables a person may give a new thread of `agent`, for a form that starts one:
    /// those the agent, its prompts and the tools its prompts offer declare, once per name (a
    /// secret when any declaration says so), leaving out those its definitions give a value.
    /// `None` when there is no such agent.
    pub(crate) fn variables_to_give(&self, agent: &str) -> Option<Vec<VariableToGive>> {
        let def = self.defs.agents.get(agent)?;
        let at_start = self.agent_declarations(def);
        let of_tools: Vec<&VariableDecl> = self
            .agent_prompts(def)
            .flat_map(|p| p.tools.iter())
            .filter_map(|name| self.tools.get(name))
            .flat_map(|t| t.definition().variables.iter())
            .collect();
        let mut wanted: Vec<VariableToGive> = Vec::new();
        for (decl, asked_at_start) in at_start
            .iter()
            .map(|d| (d, true))
            .chain(of_tools.into_iter().map(|d| (d, false)))
        {
            if self.defined_value(def, &decl.name) {
                continue;
            }
            let secret = decl.kind == VariableKind::Secret;
            let required_at_start = asked_at_start && decl.required;
            match wanted.iter_mut().find(|w| w.name == decl.name) {
                Some(w) => {
                    w.secret |= secret;
                    w.required_at_start |= required_at_start;
                    if w.description.is_empty() {
                        w.description.clone_from(&decl.description);
                    }
                }
                None => wanted.push(VariableToGive {
                    name: decl.name.clone(),
                    secret,
                    required_at_start,
                    description: decl.description.clone(),
                }),
            }
        }
        Some(wanted)
    }

    /// Every variable declaration of the project's tools, prompts and agents.
    pub(crate) fn declarations(&self) -> impl Iterator<Item = &VariableDecl> {
        self.tools
            .values()
            .flat_map(|t| t.definition().variables.iter())
            .chain(self.defs.prompts.values().flat_map(|p| p.variables.iter()))
            .chain(self.defs.agents.values().flat_map(|a| a.variables.iter()))
    }

    /// The names every definition of the project (tool, prompt or agent) declares secret: what a
    /// program asking for values must read without showing them.
    pub(crate) fn secret_names(&self) -> BTreeSet<String> {
        self.declarations()
            .filter(|d| d.kind == VariableKind::Secret)
            .map(|d| d.name.clone())
            .collect()
    }

    /// The variable names the project's definitions use: declared by a tool, prompt or agent,
    /// named by a prompt's `env` part, or by an agent tool's settings (`optional`, and
    /// `immediate`'s `nameEnv`, `descriptionEnv` and `scopedEnv`). The only variables a thread
    /// may be given (project-wide, since a thread's children inherit them).
    pub(crate) fn declared_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.declarations().map(|d| d.name.clone()).collect();
        for prompt in self.defs.prompts.values() {
            names.extend(prompt.env_parts());
            for config in prompt.tools.iter().filter_map(|t| t.agent.as_ref()) {
                names.extend(config.optional.iter().cloned());
                if let Some(immediate) = &config.immediate {
                    names.extend(immediate.name_env.iter().cloned());
                    names.extend(immediate.description_env.iter().cloned());
                    names.extend(immediate.scoped_env.iter().cloned());
                }
            }
        }
        names
    }

    /// Refuses values given from outside (a thread's creation, a direct call, answers to a
    /// request) for names no definition uses ([`LoadedProject::declared_names`]). Values a tool sets
    /// (`setEnv`) or a parent passes to a child are the project's own and are not checked.
    pub(crate) fn refuse_undeclared(&self, values: &[VariableValue]) -> Result<(), RuntimeError> {
        let declared = self.declared_names();
        let mut undeclared: Vec<String> = values
            .iter()
            .filter(|v| !declared.contains(&v.name))
            .map(|v| v.name.clone())
            .collect();
        if undeclared.is_empty() {
            return Ok(());
        }
        undeclared.dedup();
        Err(RuntimeError::UndeclaredVariables {
            names: undeclared,
            declared: declared.into_iter().collect(),
        })
    }

    /// Whether any definition (tool, prompt or agent) declares `name` a secret.
    pub(crate) fn declared_secret(&self, name: &str) -> bool {
        self.declarations()
            .any(|d| d.name == name && d.kind == VariableKind::Secret)
    }

    /// The agent, when a thread of it can start: every definition it reaches is sound and every
    /// side's model usable (a key that is not set fails now, before anything is stored).
    pub(crate) fn startable_agent(&self, agent: &str) -> Result<&AgentDef, RuntimeError> {
        self.check_agent(agent)?;
        let def = self
            .defs
            .agents
            .get(agent)
            .ok_or_else(|| self.unknown_agent(agent))?;
        let side_b = def
            .side_b
            .as_ref()
            .filter(|_| def.kind == AgentKind::DualAi);
        for side in std::iter::once(&def.side_a).chain(side_b) {
            if let Some(prompt) = self.defs.prompts.get(&side.prompt) {
                self.model_for(&prompt.model, None)?;
            }
        }
        Ok(def)
    }

    /// The redactor of the secrets among `values` (given as secrets or declared secret).
    pub(crate) fn redactor_of(&self, values: &[VariableValue]) -> Redactor {
        Redactor::new(
            values
                .iter()
                .filter(|v| v.secret || self.declared_secret(&v.name))
                .map(|v| (v.name.clone(), v.value.clone())),
        )
    }

    /// The names the agent, its prompts and the tools they offer declare `scoped`.
    pub(crate) fn scoped_names(&self, agent: &AgentDef) -> BTreeSet<String> {
        let of_tools = self
            .agent_prompts(agent)
            .flat_map(|p| p.tools.iter())
            .filter_map(|name| self.tools.get(name))
            .flat_map(|t| t.definition().variables.clone());
        self.agent_declarations(agent)
            .into_iter()
            .chain(of_tools)
            .filter(|d| d.scoped)
            .map(|d| d.name)
            .collect()
    }

    /// The variables the agent named `agent` (its definitions) requires and declares `scoped`
    /// that none of them gives a value: an instance cannot start without them.
    pub(crate) fn scoped_required(&self, agent: &str) -> Vec<String> {
        let Some(def) = self.defs.agents.get(agent) else {
            return Vec::new();
        };
        let names: BTreeSet<String> = self
            .agent_declarations(def)
            .into_iter()
            .filter(|d| d.required && d.scoped && !self.defined_value(def, &d.name))
            .map(|d| d.name)
            .collect();
        names.into_iter().collect()
    }
}
