//! Agent tools: a call of a `dual_ai` agent that a prompt offers runs that agent as a sub-agent
//! in a child thread, to the end of its session, and the call gets the session's result.
//!
//! The child is a thread like any other: its `parent` is the calling thread, it is tagged
//! `name:AGENT`, and it is run through the same engine, under its own lease, with every call
//! journaled in its own thread. The call is idempotent towards the child: the child's id is
//! derived from the calling thread's id and the call's id, and the child is created in one
//! transaction with its first message, so a call run again after a crash finds the child it
//! started (and runs it on from what its store says) instead of starting a second one. Running
//! a child whose session already ended asks no model again: the engine's decisions over its
//! stored history end the run with the same result.

mod bootstrap;
mod carry;
mod detached;
mod handoff;
mod immediate;
mod result;
mod resumable;

use super::loaded::LoadedProject;
use super::offer::AgentOffer;
use super::state::ThreadState;
use super::{Runtime, RuntimeError, StopReason};
use crate::project::{agent_tool, AgentKind, Definitions, SubagentToolConfig, MAX_SUBAGENT_DEPTH};
use handoff::handoff_tool;
pub(super) use result::session_result;
pub(super) use resumable::display_name;
use resumable::{create_tool, message_tool};
pub(super) use resumable::{has_room, instance_counts, instances};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use toolhost_core::tool::AbortSignal;
use toolhost_core::{AnyTool, ToolResult};
use toolhost_store::{NewMessage, NewThread, Role, StoreError, ToolCallRecord, Write};

/// The tag a child thread carries with its display name: the agent's name, the value of its
/// call's `initAgentNameProperty` argument, or a resumable instance's `name`.
pub(super) fn name_tag(name: &str) -> String {
    format!("name:{name}")
}

/// The child's value recording how it was started: `{agent, name, arguments}` (what
/// [`ThreadState::arguments`] reads).
pub(super) const INSTANCE_KEY: &str = "toolhost.subagent";

/// The tag of a resumable instance.
pub(in crate::engine) const RESUMABLE_TAG: &str = "resumable";

/// The child's value holding the id of the request it waits for (see `bootstrap`).
pub(in crate::engine) const DEFERRED_KEY: &str = "toolhost.subagent.deferred";

/// The tool of every agent some prompt offers, by name. An agent whose first side's prompt did
/// not load, or whose tool cannot be built, is a problem of its files already.
pub(super) fn offered_agent_tools(defs: &Definitions) -> HashMap<String, AnyTool> {
    defs.prompts
        .values()
        .flat_map(|p| p.tools.iter())
        .filter(|offer| !defs.prompts.contains_key(&offer.name))
        .filter_map(|offer| defs.agents.get(&offer.name))
        .filter_map(|a| {
            let tool = match a.kind {
                AgentKind::DualAi => agent_tool(a, defs.prompts.get(&a.side_a.prompt)?),
                AgentKind::AiHuman => handoff_tool(a),
            };
            Some((a.name.clone(), tool.ok()?))
        })
        .collect()
}

/// The id of the child thread a call starts: the same for the same calling thread and call, so
/// the call finds its child again after a crash. Shaped as a UUID (version 8, derived).
pub(super) fn child_id(parent: &str, call_id: &str) -> String {
    let digest = Sha256::digest(format!("toolhost-subagent\n{parent}\n{call_id}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, RuntimeError>> + Send + 'a>>;

impl Runtime {
    /// Runs (or continues) the child thread of `call`, a call of the agent tool `config` names,
    /// to the end of its session, and returns the call's result. Boxed: sub-agents nest.
    pub(super) fn run_subagent<'a>(
        &'a self,
        state: &'a ThreadState,
        call: &'a ToolCallRecord,
        args: Value,
        config: &'a SubagentToolConfig,
        abort: &'a AbortSignal,
    ) -> Boxed<'a, ToolResult> {
        Box::pin(async move {
            let parent = state.thread_id();
            // A parent stopped before its child started starts none.
            if abort.is_aborted() {
                return Ok(ToolResult::error(format!(
                    "the sub-agent \"{}\" was not started: the thread was stopped",
                    config.name
                )));
            }
            let depth = self.depth_of(parent).await? + 1;
            if depth > MAX_SUBAGENT_DEPTH {
                return Ok(ToolResult::error(format!(
                    "agent tool \"{}\" would nest deeper than {MAX_SUBAGENT_DEPTH} sub-agents",
                    config.name
                )));
            }
            if let Err(e) = self.check_agent(&config.name) {
                return Ok(ToolResult::error(format!(
                    "agent tool \"{}\" cannot run: {e}",
                    config.name
                )));
            }
            let child = child_id(parent, &call.id);
            match self.services.db.thread(&child).await {
                Ok(_) => {}
                Err(StoreError::ThreadNotFound(_)) => {
                    let text = first_message(config, self.project.has_schema(&config.name), &args);
                    let (listed, files) = match self.carry_down(state, config, &args).await? {
                        Ok(carried) => carried,
                        Err(why) => return Ok(ToolResult::error(why)),
                    };
                    let first = Write::AppendMessage(NewMessage {
                        role: Some(Role::User),
                        content: Some(state.redactor().text(&(text + &listed))),
                        ..NewMessage::default()
                    });
                    let name = display_name_of(config, &args);
                    let mut writes = vec![first];
                    writes.extend(files);
                    writes.push(Write::SetValue {
                        key: INSTANCE_KEY.to_owned(),
                        value: Some(state.redactor().json(serde_json::json!({
                            "agent": config.name,
                            "name": name,
                            "arguments": args,
                        }))),
                    });
                    if let Some(immediate) = &config.immediate {
                        writes.extend(self.scoped_env_writes(
                            &child,
                            immediate,
                            state.variables(),
                        )?);
                    }
                    let mut tags = vec![name_tag(&name)];
                    if !config.blocking {
                        tags.push(detached::DETACHED_TAG.to_owned());
                    }
                    self.services
                        .db
                        .create_thread(NewThread {
                            id: Some(child.clone()),
                            agent: config.name.clone(),
                            parent: Some(parent.to_owned()),
                            tags,
                            writes,
                        })
                        .await?;
                }
                Err(e) => return Err(e.into()),
            }
            if !config.blocking {
                self.detach(parent, &child);
                return Ok(ToolResult::success(detached::reference(
                    &child,
                    &config.name,
                )));
            }
            let outcome = self.run_child(&child, abort).await?;
            self.child_result(&child, parent, &outcome).await
        })
    }

    /// The session result of `child` for its parent, with the files its session ended with
    /// copied into the parent (see [`carry`]).
    async fn child_result(
        &self,
        child: &str,
        parent: &str,
        outcome: &super::RunOutcome,
    ) -> Result<ToolResult, RuntimeError> {
        let mut result = self
            .read_history(child, |history| session_result(child, outcome, history))
            .await?;
        let ended = match outcome {
            super::RunOutcome::Done(
                StopReason::SessionStop(end) | StopReason::SessionFail(end),
            ) => &end.attachments,
            _ => return Ok(result),
        };
        match self.carry_up(child, parent, ended).await? {
            Ok(refs) => {
                for r in refs {
                    result = result.with_attachment(r);
                }
                Ok(result)
            }
            Err(why) => Ok(ToolResult::error(why)),
        }
    }

    /// Runs the child to the end of its session; a stop of the parent's run (from this
    /// process or another) is passed on to the child, which stops after its operation under way.
    async fn run_child(
        &self,
        child: &str,
        abort: &AbortSignal,
    ) -> Result<super::RunOutcome, RuntimeError> {
        let run = self.run_when_free(child);
        tokio::pin!(run);
        tokio::select! {
            outcome = &mut run => return outcome,
            () = abort.aborted() => {}
        }
        // The child is stopped the way the parent was: at once, or after its operation.
        if abort.is_interrupted() {
            self.stop(child).await;
        } else {
            self.stop_gracefully(child);
        }
        run.await
    }

    /// How many ancestors the thread has (a thread started by a person is at depth 0).
    async fn depth_of(&self, thread_id: &str) -> Result<usize, RuntimeError> {
        let mut depth = 0;
        let mut at = self.services.db.thread(thread_id).await?.parent;
        // Bounded: a chain longer than the limit is refused whatever is above it.
        while let Some(parent) = at.filter(|_| depth <= MAX_SUBAGENT_DEPTH) {
            depth += 1;
            at = self.services.db.thread(&parent).await?.parent;
        }
        Ok(depth)
    }
}

/// The child's display name: the argument `initAgentNameProperty` names, when it holds a
/// non-blank string; else the agent's name.
fn display_name_of(config: &SubagentToolConfig, args: &Value) -> String {
    config
        .init_agent_name_property
        .as_deref()
        .and_then(|p| args.get(p))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(&config.name)
        .to_owned()
}

/// The child's first message: the argument `initUserMessageProperty` names (a string as it is,
/// anything else as JSON), else the default `message` argument of a first side without
/// `requiredSchema`, else the whole arguments as JSON.
fn first_message(config: &SubagentToolConfig, has_schema: bool, args: &Value) -> String {
    let property = config
        .init_user_message_property
        .as_deref()
        .or((!has_schema).then_some(crate::project::DEFAULT_MESSAGE_PROPERTY));
    match property.map(|p| args.get(p)) {
        Some(Some(Value::String(s))) => s.clone(),
        Some(Some(other)) => other.to_string(),
        Some(None) => String::new(),
        None => args.to_string(),
    }
}

impl LoadedProject {
    /// Whether the agent's first side's prompt has a `requiredSchema` (its tool's arguments).
    fn has_schema(&self, agent: &str) -> bool {
        self.defs
            .agents
            .get(agent)
            .and_then(|a| self.defs.prompts.get(&a.side_a.prompt))
            .is_some_and(|p| p.required_schema.is_some())
    }

    /// The tools of the lifecycle offers in `offered` (`subagent_create`, `subagent_message`).
    pub(super) fn lifecycle_tools(
        &self,
        offered: &HashMap<String, AgentOffer>,
        children: &[toolhost_store::Thread],
    ) -> Vec<AnyTool> {
        let mut tools = Vec::new();
        for offer in offered.values() {
            match offer {
                AgentOffer::Create(configs) => {
                    let creatable: Vec<(&SubagentToolConfig, Value)> = configs
                        .iter()
                        .filter_map(|c| {
                            let agent = self.defs.agents.get(&c.name)?;
                            let prompt = resumable::receiving_prompt(c, agent)?;
                            let schema =
                                crate::project::prompt_tool_schema(self.defs.prompts.get(&prompt)?);
                            Some((c, schema))
                        })
                        .collect();
                    tools.extend(create_tool(&creatable));
                }
                AgentOffer::Message(_) => {
                    let names: Vec<&str> = instances(children).filter_map(display_name).collect();
                    tools.extend(message_tool(&names));
                }
                _ => {}
            }
        }
        tools
    }

    /// Whether `offer` names an agent that `offered` (what [`LoadedProject::offered_subagents`]
    /// returned for its prompt) left out: one whose `optional` flag is off.
    pub(super) fn withheld(
        &self,
        offer: &crate::project::ToolOffer,
        offered: &HashMap<String, AgentOffer>,
    ) -> bool {
        self.agent_tools.contains_key(&offer.name)
            && !self.tools.contains(offer)
            && !self.prompt_tools.contains_key(&offer.name)
            && !offered.contains_key(&offer.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_always_names_the_same_child_and_another_call_another() {
        let a = child_id("t1", "call_1");
        assert_eq!(a, child_id("t1", "call_1"));
        assert_ne!(a, child_id("t1", "call_2"));
        assert_ne!(a, child_id("t2", "call_1"));
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'8');
    }

    #[test]
    fn the_first_message_comes_from_the_named_argument_or_the_whole_arguments() {
        let mut config = SubagentToolConfig::named("r");
        let args = json!({"message": "hi", "topic": {"a": 1}});
        assert_eq!(first_message(&config, false, &args), "hi");
        assert_eq!(first_message(&config, true, &args), args.to_string());
        config.init_user_message_property = Some("topic".into());
        assert_eq!(first_message(&config, true, &args), r#"{"a":1}"#);
    }
}
