//! Resumable sub-agents (spec 001 §5–§6, catalogue SA-14 … SA-17): an agent offered with
//! `resumable` runs as instances that live on. The prompt is not offered a tool of the agent's
//! name but the runtime's two lifecycle tools:
//!
//! - `subagent_create {agent?, name, arguments}` starts an instance: a child thread named
//!   `name` (its `name:` tag; unique among the thread's instances), whose first message comes
//!   from `arguments` (the receiving side's `requiredSchema`, or `{message}`), which are also
//!   stored on the child ([`ThreadState::arguments`](super::super::ThreadState::arguments)).
//!   `agent` is asked for only when the prompt offers more than one resumable agent. Once the
//!   thread has `maxInstances` instances of an agent it is no longer offered (and a call is
//!   refused); when no agent can take one more, `subagent_create` is not offered at all.
//! - `subagent_message {name, message}` sends a message to an instance (by its name or its
//!   thread id): it opens a new session of the child, answered by the side `receives_messages`
//!   names (`side_a` as a user message, `side_b` as side A's voice). Offered once the thread has
//!   an instance.
//!
//! Both wait for the session's result when the entry is `blocking` (the default) and return it
//! with the instance's reference; otherwise they return the reference at once and, with
//! `parentCommunication: implicit`, each session's result reaches the parent as a queued
//! message (see [`super::detached`]); with `explicit` only what the child's tools send with
//! `notify_parent` does.
//!
//! Idempotent like every agent call: the instance's id is derived from the creating call, and a
//! message is queued once per call, so a call run again after a crash starts nothing twice.

use super::super::loaded::LoadedProject;
use super::super::state::ThreadState;
use super::super::turns::Side;
use super::super::{Runtime, RuntimeError};
use super::bootstrap::env_required;
use super::{
    child_id, detached, first_message, name_tag, Boxed, DEFERRED_KEY, INSTANCE_KEY, RESUMABLE_TAG,
};
use crate::project::{
    agent_tool, ParentCommunication, ReceivingSide, SubagentToolConfig, DEFAULT_MESSAGE_PROPERTY,
    SUBAGENT_CREATE, SUBAGENT_MESSAGE,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use toolhost_core::tool::{AbortSignal, DynamicTool, ToolError};
use toolhost_core::{AnyTool, ToolResult};
use toolhost_store::{
    MessageMeta, NewMessage, NewThread, QueueItem, Role, StoreError, Thread, ToolCallRecord, Write,
};

/// The instance's display name: its `name:` tag.
pub(in crate::engine) fn display_name(thread: &Thread) -> Option<&str> {
    thread.tags.iter().find_map(|t| t.strip_prefix("name:"))
}

/// The resumable instances of a thread, oldest first.
pub(in crate::engine) fn instances(children: &[Thread]) -> impl Iterator<Item = &Thread> {
    children
        .iter()
        .filter(|t| t.tags.iter().any(|tag| tag == RESUMABLE_TAG))
}

/// How many instances of each agent a thread has.
pub(in crate::engine) fn instance_counts(children: &[Thread]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for t in instances(children) {
        *counts.entry(t.agent.clone()).or_default() += 1;
    }
    counts
}

/// Whether one more instance of the agent `config` names may start.
pub(in crate::engine) fn has_room(
    config: &SubagentToolConfig,
    counts: &HashMap<String, usize>,
) -> bool {
    let max = config.resumable.as_ref().and_then(|r| r.max_instances);
    let have = counts.get(&config.name).copied().unwrap_or(0);
    max.is_none_or(|max| have < max as usize)
}

/// A lifecycle tool's handler: it runs only inside a thread's run.
fn inside_a_run(name: &'static str, description: &str) -> DynamicTool {
    DynamicTool::new(name, description).handler(move |_: Value, _| async move {
        Err::<String, _>(ToolError::new(format!(
            "\"{name}\" runs only inside a thread's run"
        )))
    })
}

/// The `subagent_create` tool for the resumable agents that may take one more instance
/// (`creatable`, with the schema of each one's receiving side); `None` when there are none.
pub(in crate::engine) fn create_tool(
    creatable: &[(&SubagentToolConfig, Value)],
) -> Option<AnyTool> {
    let (first, first_schema) = creatable.first()?;
    let mut properties = serde_json::Map::new();
    let mut required = vec![json!("name"), json!("arguments")];
    if creatable.len() > 1 {
        let names: Vec<&str> = creatable.iter().map(|(c, _)| c.name.as_str()).collect();
        properties.insert(
            "agent".into(),
            json!({"type": "string", "enum": names, "description": "The agent to start an instance of."}),
        );
        required.insert(0, json!("agent"));
    }
    properties.insert(
        "name".into(),
        json!({"type": "string", "minLength": 1, "description": "A name for the new instance, unique in this conversation; later messages address it by this name."}),
    );
    // One agent: its arguments' own schema. Several: checked against the chosen agent's.
    let arguments = if creatable.len() == 1 {
        first_schema.clone()
    } else {
        json!({"type": "object", "description": "The chosen agent's arguments (see the description)."})
    };
    properties.insert("arguments".into(), arguments);
    let agents: Vec<String> = creatable
        .iter()
        .map(|(c, schema)| format!("\"{}\" (arguments: {schema})", c.name))
        .collect();
    let description = if creatable.len() == 1 {
        format!(
            "Starts a new instance of the agent \"{}\", which keeps its conversation: send it more with {SUBAGENT_MESSAGE}.",
            first.name
        )
    } else {
        format!(
            "Starts a new instance of one of these agents, which keeps its conversation: send it more with {SUBAGENT_MESSAGE}. Agents: {}.",
            agents.join("; ")
        )
    };
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    inside_a_run(SUBAGENT_CREATE, &description)
        .parameters(schema)
        .idempotent(true)
        .build()
        .ok()
}

/// The `subagent_message` tool, naming the instances there are.
pub(in crate::engine) fn message_tool(instances: &[&str]) -> Option<AnyTool> {
    let listed = match instances {
        [] => "none yet".to_owned(),
        names => names.join(", "),
    };
    let description = format!(
        "Sends a message to an instance started with {SUBAGENT_CREATE} and returns its answer. Instances: {listed}."
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "The instance's name (or its reference)."},
            DEFAULT_MESSAGE_PROPERTY: {"type": "string", "description": "The message."},
        },
        "required": ["name", DEFAULT_MESSAGE_PROPERTY],
        "additionalProperties": false,
    });
    inside_a_run(SUBAGENT_MESSAGE, &description)
        .parameters(schema)
        .idempotent(true)
        .build()
        .ok()
}

/// What a lifecycle call returns: the instance's reference and name, its status, and (after a
/// session it waited for) the session's result, whose status and files it keeps.
fn answer(child: &str, name: &str, agent: &str, session: Option<ToolResult>) -> ToolResult {
    let Some(session) = session else {
        return ToolResult::success(
            json!({
                "reference": child,
                "name": name,
                "agent": agent,
                "status": "running",
                "result": "arrives as a message when the instance's session ends",
            })
            .to_string(),
        );
    };
    let text = json!({
        "reference": child,
        "name": name,
        "agent": agent,
        "status": "idle",
        "result": session.model_text(),
    })
    .to_string();
    let mut result = if session.is_success() {
        ToolResult::success(text)
    } else {
        ToolResult::error(text)
    };
    for a in session.attachments {
        result = result.with_attachment(a);
    }
    result
}

/// The role of a parent's message to `side`: a user message for side A, side A's voice (an
/// assistant message) for side B.
fn receiving_role(side: ReceivingSide) -> Role {
    match side {
        ReceivingSide::SideA => Role::User,
        ReceivingSide::SideB => Role::Assistant,
    }
}

/// The message a parent sends to its child's receiving side: a user message for side A, side
/// A's voice (an assistant message) for side B.
fn addressed(side: ReceivingSide, content: String) -> NewMessage {
    let role = receiving_role(side);
    let side = (role == Role::Assistant).then_some(Side::A);
    NewMessage {
        role: Some(role),
        content: Some(content),
        metadata: MessageMeta {
            inbound: true,
            side,
            ..MessageMeta::default()
        },
        ..NewMessage::default()
    }
}

impl Runtime {
    /// Runs a call of `subagent_create` for the resumable agents `configs`. Boxed: sub-agents
    /// nest.
    pub(in crate::engine) fn create_instance<'a>(
        &'a self,
        state: &'a ThreadState,
        call: &'a ToolCallRecord,
        args: Value,
        configs: &'a [SubagentToolConfig],
        abort: &'a AbortSignal,
    ) -> Boxed<'a, ToolResult> {
        Box::pin(async move {
            let parent = state.thread_id();
            let agent = match (args.get("agent").and_then(Value::as_str), configs) {
                (Some(agent), _) => agent,
                (None, [only]) => only.name.as_str(),
                (None, _) => return Ok(ToolResult::error("`agent` is missing: say which agent")),
            };
            let Some(config) = configs.iter().find(|c| c.name == agent) else {
                return Ok(ToolResult::error(format!(
                    "\"{agent}\" is not a resumable agent offered here"
                )));
            };
            let name = args
                .get("name")
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default();
            if name.is_empty() {
                return Ok(ToolResult::error(
                    "`name` must not be empty: it names the new instance",
                ));
            }
            let child = child_id(parent, &call.id);
            let existing = match self.services.db.thread(&child).await {
                Ok(t) => Some(t),
                Err(StoreError::ThreadNotFound(_)) => None,
                Err(e) => return Err(e.into()),
            };
            if existing.is_none() {
                let created = self
                    .create_child(state, config, agent, name, &child, &args)
                    .await?;
                if let Some(refused) = created {
                    return Ok(refused);
                }
            }
            let name = existing
                .as_ref()
                .and_then(display_name)
                .unwrap_or(name)
                .to_owned();
            if let Some(request_id) = self.deferred_request(&child).await? {
                let missing = self.project.scoped_required(agent);
                self.request_for_child(parent, &child, &request_id, &missing)
                    .await?;
                return Ok(env_required(
                    parent,
                    &child,
                    &name,
                    agent,
                    &request_id,
                    &missing,
                ));
            }
            self.go_on(state, &child, &name, config, abort).await
        })
    }

    /// Creates the thread `child` of a new instance named `name` of `config`'s agent `agent`,
    /// from the call's `args`; `None` once created, or the call's result when it may not be.
    async fn create_child(
        &self,
        state: &ThreadState,
        config: &SubagentToolConfig,
        agent: &str,
        name: &str,
        child: &str,
        args: &Value,
    ) -> Result<Option<ToolResult>, RuntimeError> {
        let parent = state.thread_id();
        let arguments = args.get("arguments").cloned().unwrap_or(json!({}));
        if let Some(refused) = self.refuse_instance(parent, config, name).await? {
            return Ok(Some(refused));
        }
        let receiving = receiving_side(config);
        let Some(schema_tool) = self.project.receiving_tool(config) else {
            return Ok(Some(ToolResult::error(format!(
                "agent \"{agent}\" cannot start: its receiving side's prompt did not load"
            ))));
        };
        let arguments = match schema_tool.validate(arguments) {
            Ok(valid) => valid,
            Err(e) => return Ok(Some(ToolResult::error(format!("`arguments`: {e}")))),
        };
        let has_schema = self.project.receiving_has_schema(config);
        let text = first_message(config, has_schema, &arguments);
        let (listed, mut writes) = match self.carry_down(state, config, &arguments).await? {
            Ok(carried) => carried,
            Err(why) => return Ok(Some(ToolResult::error(why))),
        };
        let first = addressed(receiving, state.redactor().text(&(text + &listed)));
        writes.insert(0, Write::AppendMessage(first));
        writes.push(Write::SetValue {
            key: INSTANCE_KEY.to_owned(),
            value: Some(state.redactor().json(json!({
                "agent": agent,
                "name": name,
                "arguments": arguments,
                "parentCommunication": match config.resumable.as_ref().map(|r| r.parent_communication) {
                    Some(ParentCommunication::Explicit) => "explicit",
                    _ => "implicit",
                },
            }))),
        });
        // Required scoped variables no definition gives: the instance waits for them.
        let missing = self.project.scoped_required(agent);
        let deferred = (!missing.is_empty()).then(toolhost_store::new_id);
        if let Some(request_id) = &deferred {
            writes.push(Write::SetValue {
                key: DEFERRED_KEY.to_owned(),
                value: Some(Value::String(request_id.clone())),
            });
        }
        let mut tags = vec![name_tag(name), RESUMABLE_TAG.to_owned()];
        // A deferred instance starts after this call returned: its result is queued.
        if !config.blocking || deferred.is_some() {
            tags.push(detached::DETACHED_TAG.to_owned());
        }
        self.services
            .db
            .create_thread(NewThread {
                id: Some(child.to_owned()),
                agent: agent.to_owned(),
                parent: Some(parent.to_owned()),
                tags,
                writes,
            })
            .await?;
        Ok(None)
    }

    /// Why another instance of `config`'s agent named `name` may not start, if it may not: the
    /// thread has `maxInstances` of them, or an instance has that name.
    async fn refuse_instance(
        &self,
        parent: &str,
        config: &SubagentToolConfig,
        name: &str,
    ) -> Result<Option<ToolResult>, RuntimeError> {
        let children = self.services.db.threads(Some(parent)).await?;
        let names: Vec<&str> = instances(&children).filter_map(display_name).collect();
        if names.contains(&name) {
            return Ok(Some(ToolResult::error(format!(
                "an instance named \"{name}\" exists: send it a message with {SUBAGENT_MESSAGE}, or choose another name"
            ))));
        }
        if !has_room(config, &instance_counts(&children)) {
            let max = config
                .resumable
                .as_ref()
                .and_then(|r| r.max_instances)
                .unwrap_or_default();
            return Ok(Some(ToolResult::error(format!(
                "this conversation has its {max} instances of \"{}\" (maxInstances): send a message to one of them with {SUBAGENT_MESSAGE} ({})",
                config.name,
                names.join(", ")
            ))));
        }
        Ok(None)
    }

    /// Runs a call of `subagent_message`: the message is queued to the instance once (keyed by
    /// the call), and the instance goes on. Boxed: sub-agents nest.
    pub(in crate::engine) fn message_instance<'a>(
        &'a self,
        state: &'a ThreadState,
        call: &'a ToolCallRecord,
        args: Value,
        configs: &'a [SubagentToolConfig],
        abort: &'a AbortSignal,
    ) -> Boxed<'a, ToolResult> {
        Box::pin(async move {
            let parent = state.thread_id();
            let wanted = args.get("name").and_then(Value::as_str).unwrap_or_default();
            let message = args
                .get(DEFAULT_MESSAGE_PROPERTY)
                .and_then(Value::as_str)
                .unwrap_or_default();
            let children = self.services.db.threads(Some(parent)).await?;
            let all: Vec<&Thread> = instances(&children).collect();
            let Some(child) = all
                .iter()
                .find(|t| t.id == wanted || display_name(t) == Some(wanted))
            else {
                let names: Vec<&str> = all.iter().filter_map(|t| display_name(t)).collect();
                return Ok(ToolResult::error(format!(
                    "no instance is named \"{wanted}\"; the instances are: {}",
                    if names.is_empty() {
                        "none yet".to_owned()
                    } else {
                        names.join(", ")
                    }
                )));
            };
            let Some(config) = configs.iter().find(|c| c.name == child.agent) else {
                return Ok(ToolResult::error(format!(
                    "the instance \"{wanted}\" runs agent \"{}\", which this prompt does not offer",
                    child.agent
                )));
            };
            let name = display_name(child).unwrap_or(wanted).to_owned();
            if let Some(request_id) = self.deferred_request(&child.id).await? {
                return Ok(ToolResult::error(format!(
                    "the instance \"{name}\" has not started: it waits for variables (request {request_id})"
                )));
            }
            // The child takes the queued message in as `addressed` makes it.
            let role = receiving_role(receiving_side(config));
            self.services
                .db
                .apply(
                    &child.id,
                    vec![
                        Write::EnqueueOnce {
                            key: format!("message:{parent}:{}", call.id),
                            item: QueueItem::Message {
                                role,
                                content: state.redactor().text(message),
                            },
                        },
                        // A new session: its result is delivered again.
                        Write::SetValue {
                            key: detached::DELIVERED_KEY.to_owned(),
                            value: None,
                        },
                    ],
                )
                .await?;
            let id = child.id.clone();
            self.go_on(state, &id, &name, config, abort).await
        })
    }

    /// Runs the instance to the end of its session when the entry blocks, or hands it to the
    /// parent's run and returns its reference.
    async fn go_on(
        &self,
        state: &ThreadState,
        child: &str,
        name: &str,
        config: &SubagentToolConfig,
        abort: &AbortSignal,
    ) -> Result<ToolResult, RuntimeError> {
        if !config.blocking {
            self.detach(state.thread_id(), child);
            return Ok(answer(child, name, &config.name, None));
        }
        let outcome = self.run_child(child, abort).await?;
        let session = self
            .child_result(child, state.thread_id(), &outcome)
            .await?;
        Ok(answer(child, name, &config.name, Some(session)))
    }
}

/// The side of a resumable agent that receives the parent's messages.
fn receiving_side(config: &SubagentToolConfig) -> ReceivingSide {
    config
        .resumable
        .as_ref()
        .map_or(ReceivingSide::SideA, |r| r.receives_messages)
}

/// The prompt of the receiving side.
pub(in crate::engine) fn receiving_prompt(
    config: &SubagentToolConfig,
    agent: &crate::project::AgentDef,
) -> Option<String> {
    match receiving_side(config) {
        ReceivingSide::SideA => Some(agent.side_a.prompt.clone()),
        ReceivingSide::SideB => agent.side_b.as_ref().map(|b| b.prompt.clone()),
    }
}

impl LoadedProject {
    /// The tool whose arguments are the instance's: its receiving side's prompt's.
    fn receiving_tool(&self, config: &SubagentToolConfig) -> Option<AnyTool> {
        let agent = self.defs.agents.get(&config.name)?;
        let prompt = self.defs.prompts.get(&receiving_prompt(config, agent)?)?;
        agent_tool(agent, prompt).ok()
    }

    fn receiving_has_schema(&self, config: &SubagentToolConfig) -> bool {
        self.defs
            .agents
            .get(&config.name)
            .and_then(|a| receiving_prompt(config, a))
            .and_then(|p| self.defs.prompts.get(&p))
            .is_some_and(|p| p.required_schema.is_some())
    }
}
