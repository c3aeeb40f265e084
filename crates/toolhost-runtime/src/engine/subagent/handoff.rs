//! Handoffs: a call of an `ai_human` agent that a prompt offers hands the thread over to that
//! agent (spec 001 §5, catalogue SA-10). The thread stays the same, with its whole history; the
//! call's result and the change of agent are stored in one batch, so after a crash the thread
//! is either still the caller's, with the call to answer, or the new agent's, with the call
//! answered. The new agent's first side takes the turn over from the next step.

use super::super::execute::CallEnd;
use super::super::loaded::LoadedProject;
use super::super::offer::Offer;
use super::super::state::ThreadState;
use super::super::{Runtime, RuntimeError};
use crate::project::{AgentDef, AgentKind};
use serde_json::json;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{AnyTool, SchemaError, ToolResult};
use toolhost_store::{ToolCallRecord, Write};

/// The tool an `ai_human` agent is when a prompt offers it: it takes no arguments.
pub(in crate::engine) fn handoff_tool(agent: &AgentDef) -> Result<AnyTool, SchemaError> {
    let name = agent.name.clone();
    let description = agent.description.clone().unwrap_or_else(|| {
        format!("Hands the conversation over to the agent \"{name}\", which answers from now on.")
    });
    DynamicTool::new(&agent.name, &description)
        .parameters(json!({"type": "object", "properties": {}}))
        .idempotent(true)
        .handler(move |_: serde_json::Value, _| {
            let name = name.clone();
            async move {
                Err::<String, _>(ToolError::new(format!(
                    "agent \"{name}\" can be handed over to only inside a thread's run"
                )))
            }
        })
        .build()
}

impl Runtime {
    /// Whether the thread is now run by another agent than `agent` (a handoff happened).
    pub(in crate::engine) async fn handed_over(
        &self,
        thread_id: &str,
        agent: &str,
    ) -> Result<bool, RuntimeError> {
        Ok(self.services.db.thread(thread_id).await?.agent != agent)
    }
}

impl LoadedProject {
    /// The writes of a handoff call: its result and, when the handoff can happen, the change
    /// of the thread's agent. It cannot inside a sub-prompt (whose conversation is not the
    /// thread's) nor in a `dual_ai` thread (whose sides take turns).
    pub(in crate::engine) fn hand_off(
        &self,
        state: &ThreadState,
        call: ToolCallRecord,
        offer: &Offer,
        end: CallEnd,
    ) -> Result<Vec<Write>, RuntimeError> {
        let agent = call.name.clone();
        let current = self.defs.agents.get(state.agent());
        let refusal = if offer.nest.is_some() {
            Some("a sub-prompt cannot hand the thread over".to_owned())
        } else if current.is_some_and(|a| a.kind == AgentKind::DualAi) {
            Some(format!(
                "a dual_ai thread (agent \"{}\") cannot be handed over to another agent",
                state.agent()
            ))
        } else {
            None
        };
        if let Some(why) = refusal {
            return Ok(end.finish(call, ToolResult::error(format!("ToolCallError: {why}"))));
        }
        let mut writes = end.finish(
            call,
            ToolResult::success(format!(
                "The conversation was handed over to the agent \"{agent}\"."
            )),
        );
        writes.push(Write::SetAgent(agent));
        Ok(writes)
    }
}
