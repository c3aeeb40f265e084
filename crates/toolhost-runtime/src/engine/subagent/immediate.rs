//! Agents the runtime starts itself (`immediate`, spec 001 §5): an agent a prompt offers with
//! `immediate` is called by the runtime when the prompt becomes active, before its first model
//! step, and the call runs like a model's (blocking or not, journaled, its result in the
//! conversation).
//!
//! - **When**: the first time a run of the thread starts with the prompt on one of the agent's
//!   sides, the call is queued under a key of the thread, the prompt and the agent, so it is
//!   made once per thread however often the thread runs (or crashes); the step that takes the
//!   queue runs it before the model is asked.
//! - **The child's first message** is all a model may see of the instance (the security rule of
//!   §5): the values of `nameEnv` and `descriptionEnv`, one per line; without either, the
//!   thread's first user message. toolhost has no bootstrap model deriving arguments, so an
//!   agent whose first side takes arguments (`requiredSchema`) cannot be immediate (refused at
//!   load).
//! - **`scopedEnv`**: the values are copied into the child when it is created, as secrets (sealed,
//!   redacted from everything), but for a name `nameEnv` or `descriptionEnv` also designates.

use super::super::ownership::OwnerId;
use super::super::{Runtime, RuntimeError};
use crate::project::{AgentDef, Immediate, PromptDef, DEFAULT_MESSAGE_PROPERTY};
use crate::variables::{Resolved, VariableValue};
use serde_json::json;
use std::collections::BTreeMap;
use toolhost_store::{Message, QueueItem, Role, Write};

impl Runtime {
    /// Queues, once per thread, a call of every agent that the prompts of `agent`'s sides offer
    /// with `immediate` and whose `optional` flag is on.
    pub(in crate::engine) async fn queue_immediate(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        agent: &AgentDef,
        resolved: &Resolved,
        history: &[Message],
    ) -> Result<(), RuntimeError> {
        let prompts: Vec<&PromptDef> = std::iter::once(&agent.side_a)
            .chain(agent.side_b.as_ref())
            .filter_map(|side| self.project.defs.prompts.get(&side.prompt))
            .collect();
        let texts = resolved.texts();
        let mut writes = Vec::new();
        for prompt in prompts {
            for offer in &prompt.tools {
                let Some(config) = &offer.agent else { continue };
                let Some(immediate) = &config.immediate else {
                    continue;
                };
                if !self.project.agent_tools.contains_key(&offer.name) || !config.is_offered(&texts)
                {
                    continue;
                }
                let message = first_message(immediate, resolved, history);
                let arguments = json!({ DEFAULT_MESSAGE_PROPERTY: message });
                writes.push(Write::EnqueueOnce {
                    key: format!("immediate:{}:{}", prompt.name, offer.name),
                    item: QueueItem::Tool {
                        name: offer.name.clone(),
                        arguments: resolved.redactor().json(arguments),
                    },
                });
            }
        }
        if !writes.is_empty() {
            self.commit(thread_id, owner, writes).await?;
        }
        Ok(())
    }

    /// The writes that copy the `scopedEnv` values the parent has (`parent`, resolved) into a
    /// child being created, as secrets but for the names `nameEnv` and `descriptionEnv` name.
    pub(in crate::engine) fn scoped_env_writes(
        &self,
        child: &str,
        immediate: &Immediate,
        parent: &Resolved,
    ) -> Result<Vec<Write>, RuntimeError> {
        let shown = [&immediate.name_env, &immediate.description_env];
        let values: BTreeMap<&str, VariableValue> = immediate
            .scoped_env
            .iter()
            .filter_map(|name| {
                let value = parent.get(name)?;
                let designated = shown.iter().any(|s| s.as_deref() == Some(name.as_str()));
                Some((
                    name.as_str(),
                    if designated {
                        VariableValue::text(name, value)
                    } else {
                        VariableValue::secret(name, value)
                    },
                ))
            })
            .collect();
        self.variables()
            .variable_writes(child, values.into_values().collect())
    }
}

/// The first message of an immediate child: the `nameEnv` and `descriptionEnv` values, one per
/// line; without either, the thread's first user message.
fn first_message(immediate: &Immediate, resolved: &Resolved, history: &[Message]) -> String {
    let lines: Vec<&str> = [&immediate.name_env, &immediate.description_env]
        .into_iter()
        .flatten()
        .filter_map(|name| resolved.get(name))
        .collect();
    if !lines.is_empty() {
        return lines.join("\n");
    }
    history
        .iter()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content.clone())
        .unwrap_or_default()
}
