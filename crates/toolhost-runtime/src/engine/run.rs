//! The step cycle of one thread: finish pending calls, decide whether the turn is over, ask the
//! model, store its reply, repeat.

use super::history::ChatView;
use super::state::ThreadState;
use super::turns::{side_of, turn_over, Position, Side, DEFAULT_MAX_SESSION_TURNS};
use super::{Runtime, RuntimeError};
use crate::project::{SideDef, DEFAULT_MAX_STEPS};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use toolhost_core::{ToolResult, ToolSet};
use toolhost_providers::{Model, ModelRequest};
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
    /// A `dual_ai` session had its last turn.
    MaxSessionTurns(u32),
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

/// What one side runs with: its rules, its prompt's model and tools, and the conversation it
/// sees, which grows as the thread does.
struct SideRun<'a> {
    def: &'a SideDef,
    model: Arc<dyn Model>,
    offered: ToolSet,
    parallel: bool,
    max_steps: u32,
    view: ChatView,
    request: ModelRequest,
}

impl SideRun<'_> {
    /// Adds a stored message to what this side's model will be sent.
    fn see(&mut self, m: &Message) {
        if let Some(message) = self.view.see(m) {
            self.request.messages.push(message);
        }
    }
}

/// Appends stored messages to the history, the set of answered calls and each side's request.
fn record(
    history: &mut Vec<Message>,
    answered: &mut HashSet<String>,
    sides: &mut [SideRun<'_>],
    messages: Vec<Message>,
) {
    for m in messages {
        for side in sides.iter_mut() {
            side.see(&m);
        }
        if let Some(id) = &m.tool_call_id {
            answered.insert(id.clone());
        }
        history.push(m);
    }
}

/// The index of a side in the run's list of sides.
fn index_of(side: Side) -> usize {
    match side {
        Side::A => 0,
        Side::B => 1,
    }
}

impl Runtime {
    fn side_run<'a>(
        &self,
        def: &'a SideDef,
        side: Option<Side>,
        history: &[Message],
    ) -> Result<SideRun<'a>, RuntimeError> {
        let prompt = self
            .defs
            .prompts
            .get(&def.prompt)
            .ok_or_else(|| RuntimeError::Model {
                name: def.prompt.clone(),
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
        let mut view = ChatView::new(side);
        let messages = ChatView::system(&prompt.system_text())
            .into_iter()
            .chain(history.iter().filter_map(|m| view.see(m)))
            .collect();
        Ok(SideRun {
            def,
            model,
            parallel: prompt.parallel_tool_calls,
            max_steps: prompt
                .max_steps
                .or(def.max_steps)
                .unwrap_or(DEFAULT_MAX_STEPS),
            view,
            request: ModelRequest {
                messages,
                tools: offered.definitions(),
                ..ModelRequest::default()
            },
            offered,
        })
    }

    /// Runs the thread until its turn ends (for a `dual_ai` agent: until its session ends).
    /// Safe to call again after a crash: it continues from what is stored.
    pub async fn run(&self, thread_id: &str) -> Result<RunOutcome, RuntimeError> {
        let thread = self.store.thread(thread_id)?;
        let agent = self
            .defs
            .agents
            .get(&thread.agent)
            .ok_or_else(|| RuntimeError::UnknownAgent(thread.agent.clone()))?;
        let mut history = self.store.messages(thread_id)?;
        let mut position = Position::from_history(agent, &history);
        let mut sides = vec![self.side_run(
            &agent.side_a,
            position.is_dual().then_some(Side::A),
            &history,
        )?];
        if let (true, Some(b)) = (position.is_dual(), &agent.side_b) {
            sides.push(self.side_run(b, Some(Side::B), &history)?);
        }
        let max_session_turns = agent.max_session_turns.unwrap_or(DEFAULT_MAX_SESSION_TURNS);
        let mut answered: HashSet<String> = history
            .iter()
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        self.store
            .apply(thread_id, vec![Write::SetStatus(ThreadStatus::Running)])?;

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
            {
                let pending: Vec<ToolCallRecord> = last
                    .tool_calls
                    .iter()
                    .filter(|c| !answered.contains(&c.id))
                    .cloned()
                    .collect();
                if !pending.is_empty() {
                    let caller = side_of(last).unwrap_or(Side::A);
                    let run = &sides[index_of(caller).min(sides.len() - 1)];
                    let (offered, parallel) = (run.offered.clone(), run.parallel);
                    let state = ThreadState::new(self.store.clone(), thread_id, &thread.agent).at(
                        caller,
                        position.turn,
                        position.steps,
                    );
                    let results = self
                        .finish_calls(&state, pending, &offered, &abort, parallel)
                        .await?;
                    record(&mut history, &mut answered, &mut sides, results);
                }
            }
            // 2. Work queued while the thread was busy goes in before the model is asked again.
            let queued = self.store.queued(thread_id)?;
            if let Some(through) = queued.last().map(|q| q.seq) {
                let mut writes: Vec<Write> = queued
                    .into_iter()
                    .map(|q| Write::AppendMessage(queued_message(q.item, &position)))
                    .collect();
                writes.push(Write::Dequeue { through });
                let stored = self.store.apply(thread_id, writes)?.messages;
                // A person's message starts a new turn of an ai_human thread.
                if !position.is_dual() && stored.iter().any(|m| m.role == Role::User) {
                    position.steps = 0;
                    position.turn += 1;
                }
                record(&mut history, &mut answered, &mut sides, stored);
                continue;
            }
            // 3. The turn ends on a reply, its stop tool or its step budget; in a dual_ai
            //    session the other side then takes the next turn.
            let run = &sides[index_of(position.side).min(sides.len() - 1)];
            if let Some(reason) = turn_over(&position, run.def, run.max_steps, &history) {
                if !position.is_dual() {
                    return self.finish(thread_id, reason);
                }
                if position.turn >= max_session_turns {
                    return self.finish(thread_id, StopReason::MaxSessionTurns(max_session_turns));
                }
                position.next_turn();
                continue;
            }
            // 4. Ask the model and store its reply before anything runs.
            let run = &sides[index_of(position.side).min(sides.len() - 1)];
            let response = match run.model.complete(&run.request).await {
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
            let mut metadata = json!({"model": run.model.name(), "usage": response.usage});
            position.mark(&mut metadata);
            let applied = self.store.apply(
                thread_id,
                vec![Write::AppendMessage(NewMessage {
                    role: Some(Role::Assistant),
                    content: response.text,
                    tool_calls,
                    metadata,
                    ..NewMessage::default()
                })],
            )?;
            position.steps += 1;
            record(&mut history, &mut answered, &mut sides, applied.messages);
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
fn queued_message(item: QueueItem, position: &Position) -> NewMessage {
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
            metadata: {
                let mut metadata = json!({"queued": true});
                position.mark(&mut metadata);
                metadata
            },
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
