//! Agents as tools (spec 003 `asTool`, catalogue AN-19): any agent of a runtime wrapped as a
//! tool that another runtime, or any program holding a [`toolhost_core::ToolSet`], can offer and
//! call. A call runs the agent in a thread of its own (tagged [`AS_TOOL_TAG`]) from the call's
//! message to the end of its turn (an `ai_human` agent) or session (a `dual_ai` one), and
//! returns what the agent ended with, shaped as a sub-agent's session result is (the
//! `sessionStop` message, else the last reply; a `sessionFail` is an error result).
//!
//! It composes with agent tools rather than duplicating them: inside one project, offer the
//! agent in a prompt's `tools` (a sub-agent, a handoff); `as_tool` is for calls from outside.
//! Each call is stateless (a new thread), and idempotent: the thread's id is derived from the
//! call's idempotency key, so a call made again after a crash continues its thread and runs
//! nothing twice.

use super::subagent::{child_id, session_result};
use super::{Runtime, RuntimeError};
use serde_json::{json, Value};
use std::sync::{Arc, Weak};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{AnyTool, ToolResult};
use toolhost_store::{NewMessage, NewThread, Role, StoreError, Write};

/// The tag of a thread a call of an agent's tool runs in.
pub const AS_TOOL_TAG: &str = "as_tool";

/// How an agent is offered as a tool.
#[derive(Debug, Clone, Default)]
pub struct AsToolOptions {
    /// The tool's name (default: the agent's).
    pub name: Option<String>,
    /// The tool's description (default: the agent's `description`).
    pub description: Option<String>,
    /// The tool's arguments (default `{"prompt": string}`, the spec's).
    pub input_schema: Option<Value>,
    /// The argument whose value is the thread's first message (default `prompt`); without it
    /// in the arguments, the whole arguments as JSON.
    pub message_property: Option<String>,
}

impl Runtime {
    /// The agent `agent` of `runtime` as a tool (see the module page). The tool holds the
    /// runtime weakly: registered in the same runtime it makes no cycle, and called after the
    /// runtime is gone it answers an error.
    pub fn agent_as_tool(
        runtime: &Arc<Runtime>,
        agent: &str,
        options: AsToolOptions,
    ) -> Result<AnyTool, RuntimeError> {
        let def = runtime.project.startable_agent(agent)?;
        let name = options.name.clone().unwrap_or_else(|| agent.to_owned());
        let description = options
            .description
            .clone()
            .or_else(|| def.description.clone())
            .unwrap_or_else(|| format!("Runs the agent \"{agent}\" and returns its answer."));
        let schema = options.input_schema.clone().unwrap_or_else(|| {
            json!({
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "What to ask the agent."}},
                "required": ["prompt"],
                "additionalProperties": false
            })
        });
        let weak: Weak<Runtime> = Arc::downgrade(runtime);
        let agent_name = agent.to_owned();
        let agent = agent.to_owned();
        let property = options
            .message_property
            .unwrap_or_else(|| "prompt".to_owned());
        DynamicTool::new(&name, &description)
            .parameters(schema)
            .idempotent(true)
            .handler(move |args: Value, ctx| {
                let (weak, agent, property) = (weak.clone(), agent.clone(), property.clone());
                async move {
                    let runtime = weak.upgrade().ok_or_else(|| {
                        ToolError::new(format!("the runtime of agent \"{agent}\" is gone"))
                    })?;
                    let message = match args.get(&property) {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => args.to_string(),
                    };
                    runtime
                        .run_as_tool(&agent, &message, &ctx.idempotency_key())
                        .await
                        .map_err(|e| ToolError::new(e.to_string()))
                }
            })
            .build()
            .map_err(|e| RuntimeError::Model {
                name: agent_name,
                reason: format!("the agent cannot be offered as a tool: {e}"),
            })
    }

    /// Runs (or continues) the thread of one call of an agent's tool and returns its result.
    async fn run_as_tool(
        &self,
        agent: &str,
        message: &str,
        key: &str,
    ) -> Result<ToolResult, RuntimeError> {
        let id = child_id(&format!("as-tool:{agent}"), key);
        match self.services.db.thread(&id).await {
            Ok(_) => {}
            Err(StoreError::ThreadNotFound(_)) => {
                self.services
                    .db
                    .create_thread(NewThread {
                        id: Some(id.clone()),
                        agent: agent.to_owned(),
                        parent: None,
                        tags: vec![AS_TOOL_TAG.to_owned()],
                        writes: vec![Write::AppendMessage(NewMessage {
                            role: Some(Role::User),
                            content: Some(message.to_owned()),
                            ..NewMessage::default()
                        })],
                    })
                    .await?;
            }
            Err(e) => return Err(e.into()),
        }
        let outcome = self.run_when_free(&id).await?;
        Ok(self
            .read_history(&id, |history| session_result(&id, &outcome, history))
            .await?)
    }
}
