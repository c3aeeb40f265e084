//! The variables of a thread: merged from definitions and the thread's own values, given when
//! the thread is created or while it waits for them.

use super::{Runtime, RuntimeError};
use crate::project::{AgentDef, AgentKind, PromptDef};
use crate::variables::secrets::{SecretError, SecretKey};
use crate::variables::{Redactor, Resolved, VariableValue};
use std::collections::BTreeSet;
use toolhost_core::variables::{VariableDecl, VariableKind};
use toolhost_store::{new_id, NewMessage, NewThread, Role, StoredVariable, Thread, Write};

/// A variable a new thread of an agent may be given ([`Runtime::variables_to_give`]).
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

impl Runtime {
    /// Uses `key` to seal and open secret values.
    pub fn set_secret_key(&mut self, key: SecretKey) {
        self.services.secret_key = Some(key);
    }

    fn secret_key(&self) -> Result<&SecretKey, RuntimeError> {
        self.services
            .secret_key
            .as_ref()
            .ok_or(RuntimeError::Secret(SecretError::NoKey))
    }

    /// The prompts of the agent's sides.
    pub(super) fn agent_prompts<'a>(
        &'a self,
        agent: &'a AgentDef,
    ) -> impl Iterator<Item = &'a PromptDef> {
        let sides: Vec<&PromptDef> = std::iter::once(&agent.side_a)
            .chain(agent.side_b.as_ref())
            .filter_map(|side| self.project.defs.prompts.get(&side.prompt))
            .collect();
        // The prompts its sides offer as tools run on its threads too.
        let subs: Vec<&PromptDef> = sides
            .iter()
            .flat_map(|p| self.project.reached_prompts(p))
            .collect();
        sides.into_iter().chain(subs)
    }

    /// Whether the agent or one of its prompts gives `name` a value.
    pub(super) fn defined_value(&self, agent: &AgentDef, name: &str) -> bool {
        agent.values.contains_key(name)
            || self
                .agent_prompts(agent)
                .any(|p| p.values.contains_key(name))
    }

    /// The declarations of the agent and of the prompts of its sides.
    pub(super) fn agent_declarations(&self, agent: &AgentDef) -> Vec<VariableDecl> {
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
    pub fn variables_to_give(&self, agent: &str) -> Option<Vec<VariableToGive>> {
        let def = self.project.defs.agents.get(agent)?;
        let at_start = self.agent_declarations(def);
        let of_tools: Vec<&VariableDecl> = self
            .agent_prompts(def)
            .flat_map(|p| p.tools.iter())
            .filter_map(|name| self.project.tools.get(name))
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
    fn declarations(&self) -> impl Iterator<Item = &VariableDecl> {
        self.project
            .tools
            .values()
            .flat_map(|t| t.definition().variables.iter())
            .chain(
                self.project
                    .defs
                    .prompts
                    .values()
                    .flat_map(|p| p.variables.iter()),
            )
            .chain(
                self.project
                    .defs
                    .agents
                    .values()
                    .flat_map(|a| a.variables.iter()),
            )
    }

    /// The names every definition of the project (tool, prompt or agent) declares secret: what a
    /// program asking for values must read without showing them.
    pub fn secret_names(&self) -> BTreeSet<String> {
        self.declarations()
            .filter(|d| d.kind == VariableKind::Secret)
            .map(|d| d.name.clone())
            .collect()
    }

    /// The variable names the project's definitions use: declared by a tool, prompt or agent,
    /// named by a prompt's `env` part, or by an agent tool's settings (`optional`, and
    /// `immediate`'s `nameEnv`, `descriptionEnv` and `scopedEnv`). The only variables a thread
    /// may be given (project-wide, since a thread's children inherit them).
    pub fn declared_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.declarations().map(|d| d.name.clone()).collect();
        for prompt in self.project.defs.prompts.values() {
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
    /// request) for names no definition uses ([`Runtime::declared_names`]). Values a tool sets
    /// (`setEnv`) or a parent passes to a child are the project's own and are not checked.
    pub(super) fn refuse_undeclared(&self, values: &[VariableValue]) -> Result<(), RuntimeError> {
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
    pub(super) fn declared_secret(&self, name: &str) -> bool {
        self.declarations()
            .any(|d| d.name == name && d.kind == VariableKind::Secret)
    }

    /// The values a thread of `agent` has: prompt values, then the agent's, then what it
    /// inherits from its parent, then the thread's own (secrets opened).
    pub(super) async fn resolve(
        &self,
        thread_id: &str,
        agent: &AgentDef,
    ) -> Result<Resolved, RuntimeError> {
        let mut resolved = Resolved::default();
        let text = |(k, v): (&String, &String)| (k.clone(), v.clone(), VariableKind::Text);
        for prompt in self.agent_prompts(agent) {
            resolved.merge(prompt.values.iter().map(text));
        }
        resolved.merge(agent.values.iter().map(text));
        resolved.merge(self.inherited(thread_id, agent).await?.entries());
        let stored = self.services.db.variables(thread_id).await?;
        let mut opened = Vec::with_capacity(stored.len());
        for v in stored {
            if v.secret {
                let value = self.secret_key()?.open(thread_id, &v.name, &v.value)?;
                opened.push((v.name, value, VariableKind::Secret));
            } else {
                opened.push((v.name, v.value, VariableKind::Text));
            }
        }
        resolved.merge(opened);
        Ok(resolved)
    }

    /// A redactor for the secrets stored for a thread, opened with the runtime's key: what a
    /// person sends the thread is redacted with it before it is stored, so that a secret pasted
    /// into a message reaches neither the store nor the model.
    pub(super) async fn thread_redactor(&self, thread_id: &str) -> Result<Redactor, RuntimeError> {
        let mut secrets = Vec::new();
        for v in self.services.db.variables(thread_id).await? {
            if v.secret {
                let value = self.secret_key()?.open(thread_id, &v.name, &v.value)?;
                secrets.push((v.name, value));
            }
        }
        // The secrets it inherits are its own too.
        let thread = self.services.db.thread(thread_id).await?;
        if let Some(agent) = self.project.defs.agents.get(&thread.agent) {
            let inherited = self.inherited(thread_id, agent).await?;
            secrets.extend(
                inherited
                    .entries()
                    .filter(|(_, _, kind)| *kind == VariableKind::Secret)
                    .map(|(name, value, _)| (name, value)),
            );
        }
        Ok(Redactor::new(secrets))
    }

    /// The writes that store `values` for a thread, secrets sealed.
    pub(super) fn variable_writes(
        &self,
        thread_id: &str,
        values: Vec<VariableValue>,
    ) -> Result<Vec<Write>, RuntimeError> {
        let mut writes = Vec::with_capacity(values.len());
        for v in values {
            let secret = v.secret || self.declared_secret(&v.name);
            let value = if secret {
                self.secret_key()?.seal(thread_id, &v.name, &v.value)?
            } else {
                v.value
            };
            writes.push(Write::SetVariable(StoredVariable {
                name: v.name,
                secret,
                value,
            }));
        }
        Ok(writes)
    }

    /// Gives a thread variable values (for example the ones it paused for); a request whose
    /// variables all have values now is marked answered. Run the thread again to continue.
    /// Values a request of a deferred sub-agent instance asks for are stored in that instance
    /// instead, which answering the request boots (see `subagent::bootstrap`).
    pub async fn set_variables(
        &self,
        thread_id: &str,
        values: Vec<VariableValue>,
    ) -> Result<(), RuntimeError> {
        self.refuse_undeclared(&values)?;
        // Values a deferred sub-agent instance waits for go to it, not to this thread.
        let had = !values.is_empty();
        let values = self.give_deferred(thread_id, values).await?;
        if had && values.is_empty() {
            return Ok(());
        }
        let given: BTreeSet<String> = values.iter().map(|v| v.name.clone()).collect();
        let mut writes = self.variable_writes(thread_id, values)?;
        let covered = self.covered(thread_id, given).await?;
        for request in self.services.db.variable_requests(thread_id).await? {
            if request.answered_at.is_none() && covered.all(&request.names) {
                writes.push(Write::AnswerVariables { id: request.id });
            }
        }
        self.services.db.apply(thread_id, writes).await?;
        Ok(())
    }

    /// Whether the thread now has values for all of `names`.
    pub(super) async fn has_values(
        &self,
        thread_id: &str,
        names: &[String],
    ) -> Result<bool, RuntimeError> {
        Ok(self.covered(thread_id, BTreeSet::new()).await?.all(names))
    }

    /// What the thread has values for: stored for it, `given` now, or given by its agent's or
    /// prompts' definitions.
    async fn covered(
        &self,
        thread_id: &str,
        given: BTreeSet<String>,
    ) -> Result<Covered<'_>, RuntimeError> {
        let thread = self.services.db.thread(thread_id).await?;
        let mut names = given;
        if let Some(agent) = self.project.defs.agents.get(&thread.agent) {
            let inherited = self.inherited(thread_id, agent).await?;
            names.extend(inherited.entries().map(|(name, _, _)| name));
        }
        names.extend(
            self.services
                .db
                .variables(thread_id)
                .await?
                .into_iter()
                .map(|v| v.name),
        );
        Ok(Covered {
            runtime: self,
            agent: self.project.defs.agents.get(&thread.agent),
            names,
        })
    }

    /// The agent, when a thread of it can start: every definition it reaches is sound and every
    /// side's model usable (a key that is not set fails now, before anything is stored).
    pub(super) fn startable_agent(&self, agent: &str) -> Result<&AgentDef, RuntimeError> {
        self.check_agent(agent)?;
        let def = self
            .project
            .defs
            .agents
            .get(agent)
            .ok_or_else(|| self.unknown_agent(agent))?;
        let side_b = def
            .side_b
            .as_ref()
            .filter(|_| def.kind == AgentKind::DualAi);
        for side in std::iter::once(&def.side_a).chain(side_b) {
            if let Some(prompt) = self.project.defs.prompts.get(&side.prompt) {
                self.model_for(&prompt.model, None)?;
            }
        }
        Ok(def)
    }

    /// The redactor of the secrets among `values` (given as secrets or declared secret).
    pub(super) fn redactor_of(&self, values: &[VariableValue]) -> Redactor {
        Redactor::new(
            values
                .iter()
                .filter(|v| v.secret || self.declared_secret(&v.name))
                .map(|v| (v.name.clone(), v.value.clone())),
        )
    }

    /// Creates a thread for `agent` with the user's first message and variable values. It fails,
    /// naming them, when variables the agent or its prompts require have no value.
    pub async fn start_thread_with(
        &self,
        agent: &str,
        message: &str,
        values: Vec<VariableValue>,
    ) -> Result<Thread, RuntimeError> {
        let def = self.startable_agent(agent)?;
        self.refuse_undeclared(&values)?;
        let given: BTreeSet<&str> = values.iter().map(|v| v.name.as_str()).collect();
        let mut missing: Vec<String> = self
            .agent_declarations(def)
            .into_iter()
            .filter(|d| {
                d.required && !given.contains(d.name.as_str()) && !self.defined_value(def, &d.name)
            })
            .map(|d| d.name)
            .collect();
        // A variable declared by both a prompt and the agent is named once.
        let mut named = BTreeSet::new();
        missing.retain(|n| named.insert(n.clone()));
        if !missing.is_empty() {
            return Err(RuntimeError::MissingVariables {
                agent: agent.to_owned(),
                names: missing,
            });
        }
        // A secret in the first message is redacted like one in any later message.
        let redactor = self.redactor_of(&values);
        // The id is chosen first: secrets are sealed for their thread.
        let id = new_id();
        let mut writes = self.variable_writes(&id, values)?;
        writes.extend(self.thread_model_write());
        writes.push(Write::AppendMessage(NewMessage {
            role: Some(Role::User),
            content: Some(redactor.text(message)),
            ..NewMessage::default()
        }));
        // One transaction: a crash never leaves a thread without its message or variables.
        Ok(self
            .services
            .db
            .create_thread(NewThread {
                id: Some(id),
                agent: agent.to_owned(),
                writes,
                ..NewThread::default()
            })
            .await?)
    }
}

/// The variables a thread has values for (see [`Runtime::covered`]).
struct Covered<'a> {
    runtime: &'a Runtime,
    agent: Option<&'a AgentDef>,
    names: BTreeSet<String>,
}

impl Covered<'_> {
    /// Whether every one of `names` has a value.
    fn all(&self, names: &[String]) -> bool {
        names.iter().all(|name| {
            self.names.contains(name)
                || self
                    .agent
                    .is_some_and(|a| self.runtime.defined_value(a, name))
        })
    }
}
