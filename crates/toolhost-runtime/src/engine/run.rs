//! The step cycle of one thread: finish pending calls, decide whether the turn is over, ask the
//! model, store its reply, repeat.

use super::history::to_chat;
use super::state::ThreadState;
use super::{Runtime, RuntimeError};
use crate::project::{AgentKind, DEFAULT_MAX_STEPS};
use serde_json::json;
use std::collections::HashSet;
use toolhost_core::{ToolResult, ToolSet};
use toolhost_providers::ModelRequest;
use toolhost_store::{
    new_id, Applied, Message, NewMessage, QueueItem, Role, StoreError, ThreadStatus,
    ToolCallRecord, Write,
};

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model replied without calling tools.
    Response,
    /// The side's stop tool was called.
    StopTool(String),
    /// The step budget of the turn was used up.
    MaxSteps(u32),
    /// [`Runtime::stop`] was called.
    Stopped,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// The thread finished its turn.
    Done(StopReason),
}

/// The text a model sees for a call that was not run because the thread was stopped.
pub const NOT_RUN_STOPPED: &str =
    "ToolCallError: this call was not run: the thread was stopped before it.";

/// The text a model sees for a call whose outcome a crash left unknown.
pub const OUTCOME_UNKNOWN: &str = "ToolCallError: the outcome of this call is unknown: toolhost stopped while it was running, so it may or may not have taken effect. Check its effect before calling it again.";

impl Runtime {
    /// Runs the thread until its turn ends. Safe to call again after a crash: it continues from
    /// what is stored.
    pub async fn run(&self, thread_id: &str) -> Result<RunOutcome, RuntimeError> {
        let thread = self.store.thread(thread_id)?;
        let agent = self
            .defs
            .agents
            .get(&thread.agent)
            .ok_or_else(|| RuntimeError::UnknownAgent(thread.agent.clone()))?;
        if agent.kind != AgentKind::AiHuman {
            return Err(RuntimeError::UnsupportedAgent(agent.name.clone()));
        }
        let side = &agent.side_a;
        let prompt = self
            .defs
            .prompts
            .get(&side.prompt)
            .ok_or_else(|| RuntimeError::Model {
                name: side.prompt.clone(),
                reason: "the agent's prompt did not load".to_owned(),
            })?;
        let model = self
            .models
            .get(&prompt.model)
            .cloned()
            .ok_or_else(|| RuntimeError::Model {
                name: prompt.model.clone(),
                reason: match self.defs.models.get(&prompt.model) {
                    Some(def) => format!(
                        "provider \"{}\" has no adapter in this version",
                        def.provider
                    ),
                    None => "the model definition did not load".to_owned(),
                },
            })?;
        let offered = ToolSet::from_tools(
            prompt
                .tools
                .iter()
                .filter_map(|name| self.tools.get(name).cloned()),
        );
        let definitions = offered.definitions();
        let system = prompt.system_text();
        let max_steps = prompt
            .max_steps
            .or(side.max_steps)
            .unwrap_or(DEFAULT_MAX_STEPS);

        let mut history = self.store.messages(thread_id)?;
        let mut answered: HashSet<String> = history
            .iter()
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        self.store
            .apply(thread_id, vec![Write::SetStatus(ThreadStatus::Running)])?;

        // Model steps in this turn: assistant messages since the last user message. Kept up to
        // date as messages are appended, so a long turn never walks its history again.
        let mut steps = history
            .iter()
            .rev()
            .take_while(|m| m.role != Role::User)
            .filter(|m| m.role == Role::Assistant)
            .count() as u32;
        let (abort, _running) = self.track(thread_id);
        loop {
            if abort.is_aborted() {
                return self.finish(thread_id, StopReason::Stopped);
            }
            // 1. Finish the calls of the last reply that have no result yet, in order.
            if let Some(last) = history
                .iter()
                .rev()
                .find(|m| m.role == Role::Assistant && m.depth == 0)
                .cloned()
            {
                let state = ThreadState::new(self.store.clone(), thread_id, &thread.agent, steps);
                let pending: Vec<ToolCallRecord> = last
                    .tool_calls
                    .iter()
                    .filter(|c| !answered.contains(&c.id))
                    .cloned()
                    .collect();
                if !pending.is_empty() {
                    let results = self
                        .finish_calls(
                            &state,
                            pending,
                            &offered,
                            &abort,
                            prompt.parallel_tool_calls,
                        )
                        .await?;
                    for m in results {
                        if let Some(id) = &m.tool_call_id {
                            answered.insert(id.clone());
                        }
                        history.push(m);
                    }
                }
                if let Some(stop) = &side.stop_tool {
                    if last.tool_calls.iter().any(|c| &c.name == stop)
                        && history.last().is_some_and(|m| m.role == Role::Tool)
                    {
                        return self.finish(thread_id, StopReason::StopTool(stop.clone()));
                    }
                }
            }
            // 2. Work queued while the thread was busy goes in before the model is asked again.
            let queued = self.store.queued(thread_id)?;
            if let Some(through) = queued.last().map(|q| q.seq) {
                let mut writes: Vec<Write> = queued
                    .into_iter()
                    .map(|q| Write::AppendMessage(queued_message(q.item)))
                    .collect();
                writes.push(Write::Dequeue { through });
                for m in self.store.apply(thread_id, writes)?.messages {
                    // A queued user message starts a new turn; a queued call is no model step.
                    if m.role == Role::User {
                        steps = 0;
                    }
                    history.push(m);
                }
                continue;
            }
            // 3. A reply without calls ends the turn.
            if let Some(last) = history.last() {
                if last.role == Role::Assistant
                    && last.tool_calls.is_empty()
                    && side.stop_on_response
                {
                    return self.finish(thread_id, StopReason::Response);
                }
            }
            // 4. The step budget of this turn.
            if steps >= max_steps {
                return self.finish(thread_id, StopReason::MaxSteps(max_steps));
            }
            // 5. Ask the model and store its reply before anything runs.
            let request = ModelRequest {
                messages: to_chat(&system, &history),
                tools: definitions.clone(),
            };
            let response = match model.complete(&request).await {
                Ok(r) => r,
                Err(e) => {
                    self.store
                        .apply(thread_id, vec![Write::SetStatus(ThreadStatus::Failed)])?;
                    return Err(e.into());
                }
            };
            let mut seen = HashSet::new();
            let tool_calls: Vec<ToolCallRecord> = response
                .tool_calls
                .into_iter()
                // A wire id repeated in one response is executed once.
                .filter(|c| seen.insert(c.id.clone()))
                .map(|c| ToolCallRecord {
                    id: format!("call_{}", new_id().replace('-', "")),
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect();
            let applied = self.store.apply(
                thread_id,
                vec![Write::AppendMessage(NewMessage {
                    role: Some(Role::Assistant),
                    content: response.text,
                    tool_calls,
                    metadata: json!({"model": model.name(), "usage": response.usage}),
                    ..NewMessage::default()
                })],
            )?;
            steps += 1;
            history.extend(applied.messages);
        }
    }

    fn finish(&self, thread_id: &str, reason: StopReason) -> Result<RunOutcome, RuntimeError> {
        // A stopped thread can be resumed; a finished one waits for a new message.
        let status = if reason == StopReason::Stopped {
            ThreadStatus::Idle
        } else {
            ThreadStatus::Done
        };
        self.store
            .apply(thread_id, vec![Write::SetStatus(status)])?;
        Ok(RunOutcome::Done(reason))
    }
}

/// The one message a result batch stores.
pub(super) fn stored_result(applied: Applied) -> Result<Message, RuntimeError> {
    applied.messages.into_iter().next().ok_or_else(|| {
        RuntimeError::Store(StoreError::Corrupt(
            "a result was written but no message came back".to_owned(),
        ))
    })
}

/// The message a queued item becomes: a user message, or a call the runtime makes on the
/// thread's behalf (an assistant message whose call the next step runs).
fn queued_message(item: QueueItem) -> NewMessage {
    match item {
        QueueItem::Message { role, content } => NewMessage {
            role: Some(role),
            content: Some(content),
            ..NewMessage::default()
        },
        QueueItem::Tool { name, arguments } => NewMessage {
            role: Some(Role::Assistant),
            tool_calls: vec![ToolCallRecord {
                id: format!("call_{}", new_id().replace('-', "")),
                name,
                arguments: arguments.to_string(),
            }],
            metadata: json!({"queued": true}),
            ..NewMessage::default()
        },
    }
}

/// The tool message storing a result: the text the model sees, the status, and the whole result.
pub(super) fn result_message(tool: &str, result: &ToolResult) -> NewMessage {
    NewMessage {
        content: Some(result.model_text().to_owned()),
        name: Some(tool.to_owned()),
        status: Some(
            if result.is_success() {
                "success"
            } else {
                "error"
            }
            .to_owned(),
        ),
        metadata: json!({"result": result}),
        ..NewMessage::default()
    }
}
