//! The variables of a thread: merged from definitions and the thread's own values, given when
//! the thread is created or while it waits for them.
//!
//! Across threads (spec 001 §3): a child thread inherits its parent's resolved values, but for
//! the names its own definitions declare `scoped`. Scoped values still flow down from the
//! thread where they are given, since a grandchild inherits what its parent resolved.

use super::loaded::LoadedProject;
use super::{Runtime, RuntimeError};
use crate::project::AgentDef;
use crate::variables::secrets::{SecretError, SecretKey};
use crate::variables::{Redactor, Resolved, VariableValue};
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use toolhost_core::variables::VariableKind;
use toolhost_store::{
    new_id, AsyncStore, NewMessage, NewThread, Role, StoredVariable, Thread, Write,
};

impl Runtime {
    /// Gives a thread variable values (for example the ones it paused for); a request whose
    /// variables all have values now is marked answered. Run the thread again to continue.
    /// Values a request of a deferred sub-agent instance asks for are stored in that instance
    /// instead, which answering the request boots (see `subagent::bootstrap`).
    pub async fn set_variables(
        &self,
        thread_id: &str,
        values: Vec<VariableValue>,
    ) -> Result<(), RuntimeError> {
        self.project.refuse_undeclared(&values)?;
        // Values a deferred sub-agent instance waits for go to it, not to this thread.
        let had = !values.is_empty();
        let values = self.give_deferred(thread_id, values).await?;
        if had && values.is_empty() {
            return Ok(());
        }
        let given: BTreeSet<String> = values.iter().map(|v| v.name.clone()).collect();
        let mut writes = self.variables().variable_writes(thread_id, values)?;
        let covered = self.variables().covered(thread_id, given).await?;
        for request in self.services.db.variable_requests(thread_id).await? {
            if request.answered_at.is_none() && covered.all(&request.names) {
                writes.push(Write::AnswerVariables { id: request.id });
            }
        }
        self.services.db.apply(thread_id, writes).await?;
        Ok(())
    }

    /// Creates a thread for `agent` with the user's first message and variable values. It fails,
    /// naming them, when variables the agent or its prompts require have no value.
    pub async fn start_thread_with(
        &self,
        agent: &str,
        message: &str,
        values: Vec<VariableValue>,
    ) -> Result<Thread, RuntimeError> {
        let def = self.project.startable_agent(agent)?;
        self.project.refuse_undeclared(&values)?;
        let given: BTreeSet<&str> = values.iter().map(|v| v.name.as_str()).collect();
        let mut missing: Vec<String> = self
            .project
            .agent_declarations(def)
            .into_iter()
            .filter(|d| {
                d.required
                    && !given.contains(d.name.as_str())
                    && !self.project.defined_value(def, &d.name)
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
        let redactor = self.project.redactor_of(&values);
        // The id is chosen first: secrets are sealed for their thread.
        let id = new_id();
        let mut writes = self.variables().variable_writes(&id, values)?;
        writes.extend(self.project.thread_model_write());
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

/// A boxed future of the engine: what resolves a thread's parent, which resolves its own.
type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, RuntimeError>> + Send + 'a>>;

/// The variables of the runtime's threads: what a thread resolves (definitions, what it
/// inherits, its own values with secrets opened), the redactor of its secrets, and the writes
/// that store values (secrets sealed). Reads the project and the store; writes nothing itself.
pub(super) struct Variables<'a> {
    pub(super) project: &'a LoadedProject,
    pub(super) db: &'a AsyncStore,
    pub(super) key: Option<&'a SecretKey>,
}

impl<'a> Variables<'a> {
    fn secret_key(&self) -> Result<&SecretKey, RuntimeError> {
        self.key.ok_or(RuntimeError::Secret(SecretError::NoKey))
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
        for prompt in self.project.agent_prompts(agent) {
            resolved.merge(prompt.values.iter().map(text));
        }
        resolved.merge(agent.values.iter().map(text));
        resolved.merge(self.inherited(thread_id, agent).await?.entries());
        let stored = self.db.variables(thread_id).await?;
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

    /// What the thread inherits from its parent: every value the parent resolves (its secrets
    /// opened with the parent's seal), less the names `agent` (the thread's) declares `scoped`.
    /// Empty for a thread without a parent. Boxed: it resolves the parent, which inherits too.
    pub(super) fn inherited<'b>(
        &'b self,
        thread_id: &'b str,
        agent: &'b AgentDef,
    ) -> Boxed<'b, Resolved> {
        Box::pin(async move {
            let mut inherited = Resolved::default();
            let Some(parent) = self.db.thread(thread_id).await?.parent else {
                return Ok(inherited);
            };
            let parent_thread = self.db.thread(&parent).await?;
            // A parent whose agent is gone passes nothing on.
            let Some(parent_agent) = self.project.defs.agents.get(&parent_thread.agent) else {
                return Ok(inherited);
            };
            let scoped = self.project.scoped_names(agent);
            let values = self.resolve(&parent, parent_agent).await?;
            inherited.merge(
                values
                    .entries()
                    .filter(|(name, _, _)| !scoped.contains(name)),
            );
            Ok(inherited)
        })
    }

    /// A redactor for the secrets stored for a thread, opened with the runtime's key: what a
    /// person sends the thread is redacted with it before it is stored, so that a secret pasted
    /// into a message reaches neither the store nor the model.
    pub(super) async fn thread_redactor(&self, thread_id: &str) -> Result<Redactor, RuntimeError> {
        let mut secrets = Vec::new();
        for v in self.db.variables(thread_id).await? {
            if v.secret {
                let value = self.secret_key()?.open(thread_id, &v.name, &v.value)?;
                secrets.push((v.name, value));
            }
        }
        // The secrets it inherits are its own too.
        let thread = self.db.thread(thread_id).await?;
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
            let secret = v.secret || self.project.declared_secret(&v.name);
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
    ) -> Result<Covered<'a>, RuntimeError> {
        let thread = self.db.thread(thread_id).await?;
        let mut names = given;
        if let Some(agent) = self.project.defs.agents.get(&thread.agent) {
            let inherited = self.inherited(thread_id, agent).await?;
            names.extend(inherited.entries().map(|(name, _, _)| name));
        }
        names.extend(
            self.db
                .variables(thread_id)
                .await?
                .into_iter()
                .map(|v| v.name),
        );
        Ok(Covered {
            project: self.project,
            agent: self.project.defs.agents.get(&thread.agent),
            names,
        })
    }
}

/// The variables a thread has values for (see [`Variables::covered`]).
struct Covered<'a> {
    project: &'a LoadedProject,
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
                    .is_some_and(|a| self.project.defined_value(a, name))
        })
    }
}
