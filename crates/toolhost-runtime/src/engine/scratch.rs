//! A direct call of one tool, for people testing it: a thread of its own, tagged
//! [`SCRATCH_TAG`], holding one call the runtime makes on the thread's behalf. The engine carries
//! it out exactly as it carries out a model's call (intent journaled before it runs, the
//! idempotency key of thread and call, approval, the variables the tool declares, redaction of
//! secrets from its result). A scratch thread never asks a model: once its calls have their
//! results, its run ends with a step budget of zero (see `run`).

use super::live::new_call_id;
use super::loaded::LoadedProject;
use super::repair::fit_arguments;
use super::turns::Position;
use super::{Runtime, RuntimeError};
use crate::project::AgentDef;
use crate::variables::VariableValue;
use toolhost_store::{
    new_id, ArgumentRepair, Message, MessageMeta, NewMessage, NewThread, Role, Thread,
    ToolCallRecord, Write,
};

/// The tag of a thread made for a direct call of a tool.
pub const SCRATCH_TAG: &str = "scratch";

/// A scratch thread and the call it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ScratchCall {
    /// The thread, tagged [`SCRATCH_TAG`].
    pub thread: Thread,
    /// The id of the call, as the journal and the approvals know it.
    pub call_id: String,
    /// What was mended in the call's arguments to make them fit, a note per change (none when
    /// they fit as written).
    pub repairs: Vec<String>,
}

impl Runtime {
    /// Creates a scratch thread of `agent` holding a call of `tool` with the argument `text`,
    /// and the variable `values` it runs with (secrets sealed, and redacted from the text).
    /// The text is taken as a model's would be: kept as written when it fits, stored mended
    /// (with the repairs in the call's metadata) when a repair makes it fit, and otherwise kept
    /// and answered by the run with what is wrong. [`Runtime::run`] then carries the call out;
    /// the call runs only when the prompt of the agent's first side offers `tool` (otherwise its
    /// result says the tool is not there). Nothing is stored when the agent cannot run.
    pub async fn start_scratch_call(
        &self,
        agent: &str,
        tool: &str,
        text: &str,
        values: Vec<VariableValue>,
    ) -> Result<ScratchCall, RuntimeError> {
        let def = self.project.startable_agent(agent)?;
        self.project.refuse_undeclared(&values)?;
        let redactor = self.project.redactor_of(&values);
        let (message, call_id) = self
            .project
            .scratch_message(def, &[], tool, &redactor.text(text));
        let repairs = repair_notes(&message);
        // The id is chosen first: secrets are sealed for their thread.
        let id = new_id();
        let mut writes = self.variables().variable_writes(&id, values)?;
        writes.extend(self.project.thread_model_write());
        writes.push(Write::AppendMessage(message));
        let thread = self
            .services
            .db
            .create_thread(NewThread {
                id: Some(id),
                agent: agent.to_owned(),
                tags: vec![SCRATCH_TAG.to_owned()],
                writes,
                ..NewThread::default()
            })
            .await?;
        Ok(ScratchCall {
            thread,
            call_id,
            repairs,
        })
    }

    /// Adds a call of `tool` with the argument `text` to the scratch thread `thread_id` (one a
    /// [`Runtime::start_scratch_call`] made), taken as that method takes it; [`Runtime::run`]
    /// then carries it out with the thread's variables. A caller that adds calls to one thread
    /// runs each to its end before adding the next (an MCP session does), so that the thread
    /// reads as one call after another.
    pub async fn add_scratch_call(
        &self,
        thread_id: &str,
        tool: &str,
        text: &str,
    ) -> Result<ScratchCall, RuntimeError> {
        let thread = self.services.db.thread(thread_id).await?;
        if !thread.tags.iter().any(|t| t == SCRATCH_TAG) {
            return Err(RuntimeError::Store(toolhost_store::StoreError::Refused(format!(
                "thread {thread_id} is not a scratch thread; only a direct call's thread takes more direct calls"
            ))));
        }
        let def = self.project.startable_agent(&thread.agent)?;
        let history = self
            .process
            .histories
            .take(&self.services.db, thread_id)
            .await?;
        let redactor = self.variables().thread_redactor(thread_id).await?;
        let text = redactor.text(text);
        let (message, call_id) = self
            .project
            .scratch_message(def, history.messages(), tool, &text);
        let repairs = repair_notes(&message);
        // Given back as read: the run that takes the call up reads the new message after it.
        self.process.histories.keep(thread_id, history);
        self.services
            .db
            .apply(thread_id, vec![Write::AppendMessage(message)])
            .await?;
        Ok(ScratchCall {
            thread,
            call_id,
            repairs,
        })
    }

    /// The stored result of call `call_id` in thread `thread_id`, if it has one: looked up in
    /// the thread's messages as kept between runs (see the `histories` module), so that the
    /// answer to one call of a long session costs what the call added, not the whole thread.
    pub async fn call_result(
        &self,
        thread_id: &str,
        call_id: &str,
    ) -> Result<Option<Message>, RuntimeError> {
        let history = self
            .process
            .histories
            .take(&self.services.db, thread_id)
            .await?;
        let found = history
            .messages()
            .iter()
            .rev()
            .find(|m| m.tool_call_id.as_deref() == Some(call_id))
            .cloned();
        self.process.histories.keep(thread_id, history);
        Ok(found)
    }
}

/// The notes of the repairs a direct call's message records.
fn repair_notes(message: &NewMessage) -> Vec<String> {
    message
        .metadata
        .repairs
        .iter()
        .flat_map(|r| r.notes.clone())
        .collect()
}

impl LoadedProject {
    /// The message of a direct call: the runtime's assistant message holding it, marked queued
    /// at the thread's position, its arguments mended where a repair makes them fit.
    fn scratch_message(
        &self,
        def: &AgentDef,
        history: &[Message],
        tool: &str,
        text: &str,
    ) -> (NewMessage, String) {
        let call_id = new_call_id();
        let mut metadata = MessageMeta {
            queued: true,
            ..MessageMeta::default()
        };
        Position::from_history(def, history).mark(&mut metadata);
        let arguments = match self.tools.get(tool).map(|t| fit_arguments(t, text)) {
            Some(Ok(fitted)) => match fitted.mended {
                Some(value) => {
                    metadata.repairs.push(ArgumentRepair {
                        call_id: call_id.clone(),
                        original: text.to_owned(),
                        notes: fitted.notes,
                    });
                    value.to_string()
                }
                None => text.to_owned(),
            },
            _ => text.to_owned(),
        };
        let message = NewMessage {
            role: Some(Role::Assistant),
            tool_calls: vec![ToolCallRecord {
                id: call_id.clone(),
                name: tool.to_owned(),
                arguments,
            }],
            metadata,
            ..NewMessage::default()
        };
        (message, call_id)
    }
}
