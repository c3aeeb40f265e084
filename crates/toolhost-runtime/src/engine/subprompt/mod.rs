//! Prompt tools: a call of a prompt that another prompt offers runs that prompt as a
//! sub-prompt, to its end, on the same thread.
//!
//! The sub-prompt's messages are stored on the thread under the call (`parent_id` is the call's
//! id, `depth` one more than the caller's), so the calling prompt's model never sees them, and
//! everything about them is read back from the store: its first message, its replies, and its
//! own calls, which go through the same journal as any other (intent before they run, result
//! before the next step). The prompt tool is idempotent: a call whose sub-prompt was cut off by
//! a crash or a pause runs again and continues the sub-prompt where the store says it was, so
//! no call inside it runs twice and the calling call gets one result.

mod shape;

use super::calls::early_intents;
use super::context::Turn;
use super::images::images_of;
use super::loaded::LoadedProject;
use super::offer::{Nest, Offer};
use super::outcome::Waiting;
use super::ownership::OwnerId;
use super::records::discarded_reply;
use super::side::SideRun;
use super::state::ThreadState;
use super::turns::Position;
use super::{Runtime, RuntimeError};
use crate::project::{
    prompt_tool, Definitions, PromptDef, SideDef, SubpromptConfig, DEFAULT_MAX_STEPS,
    MAX_SUBPROMPT_DEPTH,
};
use serde_json::Value;
pub(super) use shape::attachment_paths;
use shape::{call_result, first_message, Ending};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use toolhost_core::tool::AbortSignal;
use toolhost_core::{AnyTool, ToolResult};
use toolhost_store::path::normalize;
use toolhost_store::{Message, NewMessage, Role, ToolCallRecord, Write};

/// How a sub-prompt's run ended: with a result for the calling call, or waiting for a person
/// (a decision or variables a call inside it needs); the calling call then has no result yet.
pub(super) enum SubOutcome {
    Done(ToolResult),
    Waiting(Waiting),
}

/// The tool of every prompt some prompt offers, by name. A prompt whose tool cannot be built
/// (a bad `requiredSchema`) is a problem of its file already.
pub(super) fn offered_prompt_tools(defs: &Definitions) -> HashMap<String, AnyTool> {
    defs.prompts
        .values()
        .flat_map(|p| p.tools.iter())
        .filter_map(|offer| defs.prompts.get(&offer.name))
        .filter_map(|p| Some((p.name.clone(), prompt_tool(p).ok()?)))
        .collect()
}

type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, RuntimeError>> + Send + 'a>>;

impl Runtime {
    /// Runs (or continues) the sub-prompt of `call`, a call of the prompt tool `config` names
    /// made by the reply at position `reply`, offered by a prompt whose messages are at
    /// `caller_depth`. Boxed: sub-prompts nest.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_subprompt<'a>(
        &'a self,
        state: &'a ThreadState,
        reply: i64,
        call: &'a ToolCallRecord,
        args: Value,
        config: &'a SubpromptConfig,
        caller_depth: u32,
        abort: &'a AbortSignal,
        owner: &'a OwnerId,
    ) -> Boxed<'a, SubOutcome> {
        Box::pin(async move {
            let nest = Nest {
                call_id: call.id.clone(),
                depth: caller_depth + 1,
            };
            let prompt = match self.project.nested_prompt(config, nest.depth) {
                Ok(prompt) => prompt,
                Err(refused) => return Ok(SubOutcome::Done(*refused)),
            };
            let thread_id = state.thread_id();
            let mut mine = match self
                .begun(state, reply, &nest, config, prompt, &args, owner)
                .await?
            {
                Ok(messages) => messages,
                Err(refused) => return Ok(SubOutcome::Done(refused)),
            };
            let position = Position::single();
            let side = side_of(prompt);
            let mut run = self
                .nested_run(state, &side, &nest, &mine, &position)
                .await?;
            let offer = run.offer.clone();
            let inner = state.entering(&prompt.name, offer.tools.clone());
            let max_steps = prompt.max_steps.unwrap_or(DEFAULT_MAX_STEPS);
            let mut steps = mine.iter().filter(|m| m.role == Role::Assistant).count() as u32;
            let mut answered: HashSet<String> =
                mine.iter().filter_map(|m| m.tool_call_id.clone()).collect();
            let mut fresh = HashSet::new();
            let redactor = state.redactor().clone();
            loop {
                let last = mine.iter().rev().find(|m| m.role == Role::Assistant);
                let last_reply = last.map_or(0, |m| m.seq);
                let pending: Vec<ToolCallRecord> = last
                    .map(|m| m.tool_calls.clone())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|c| !answered.contains(&c.id))
                    .collect();
                if !pending.is_empty() {
                    let (results, waiting) = self
                        .finish_calls(&inner, last_reply, pending, &offer, abort, &fresh, owner)
                        .await?;
                    fresh.clear();
                    for m in results {
                        let shown = images_of(&self.services.db, thread_id, &m).await;
                        run.see(&surfaced(&m), || shown);
                        answered.extend(m.tool_call_id.clone());
                        mine.push(m);
                    }
                    if let Some(waiting) = waiting {
                        return Ok(SubOutcome::Waiting(waiting));
                    }
                    continue;
                }
                if let Some(ending) = ending_of(abort.is_aborted(), &mine, steps, max_steps) {
                    return Ok(SubOutcome::Done(call_result(config, &mine, &ending)));
                }
                let writes = self
                    .ask(thread_id, &mut run, &position, owner, &redactor, abort)
                    .await?;
                if abort.is_aborted() {
                    let discarded = discarded_reply(&writes);
                    if writes.is_empty() || discarded.is_some() {
                        self.commit(thread_id, owner, discarded.into_iter().collect())
                            .await?;
                        return Ok(SubOutcome::Done(call_result(
                            config,
                            &mine,
                            &Ending::Stopped,
                        )));
                    }
                }
                let mut writes = nest.place(writes);
                let intents = reply_intents(&writes, &offer, state);
                for intent in &intents {
                    if let Write::RecordIntent(i) = intent {
                        fresh.insert(i.call_id.clone());
                    }
                }
                writes.extend(intents);
                let applied = self.commit(thread_id, owner, writes).await?;
                steps += 1;
                for m in applied.messages {
                    let shown = images_of(&self.services.db, thread_id, &m).await;
                    run.see(&surfaced(&m), || shown);
                    mine.push(m);
                }
            }
        })
    }

    /// The sub-prompt's side (`side`, of its prompt) as the model sees it: nested under the
    /// call `nest`, having seen the messages `mine` it stored so far.
    async fn nested_run<'a>(
        &self,
        state: &ThreadState,
        side: &'a SideDef,
        nest: &Nest,
        mine: &[Message],
        position: &Position,
    ) -> Result<SideRun<'a>, RuntimeError> {
        let texts = state.variables().texts();
        let thread_model = self.thread_model(state.thread_id()).await?;
        let mut run = self.side_run(
            state.agent(),
            side,
            None,
            &[],
            &[],
            &texts,
            None,
            Turn::at(&[], position),
            thread_model.as_deref(),
        )?;
        run.offer = Offer {
            nest: Some(nest.clone()),
            ..run.offer
        };
        for m in mine {
            let shown = images_of(&self.services.db, state.thread_id(), m).await;
            run.see(&surfaced(m), || shown);
        }
        Ok(run)
    }

    /// The messages the sub-prompt has stored so far (after a crash or a pause: everything
    /// before it), or, when it has none, its first message, stored now; or why the call is
    /// refused before the sub-prompt starts (its arguments give no usable attachments).
    #[allow(clippy::too_many_arguments)]
    async fn begun(
        &self,
        state: &ThreadState,
        reply: i64,
        nest: &Nest,
        config: &SubpromptConfig,
        prompt: &PromptDef,
        args: &Value,
        owner: &OwnerId,
    ) -> Result<Result<Vec<Message>, ToolResult>, RuntimeError> {
        let thread_id = state.thread_id();
        // All of it is stored after the reply that made the call: the rest of the thread is
        // not read.
        let stored = self.services.db.messages_after(thread_id, reply).await?;
        let mine: Vec<Message> = stored.into_iter().filter(|m| nest.holds(m)).collect();
        if !mine.is_empty() {
            return Ok(Ok(mine));
        }
        let text = match first_message(config, prompt.required_schema.is_some(), args) {
            Ok((text, paths)) => match self.attached(thread_id, &paths).await? {
                Ok(listed) => text + &listed,
                Err(why) => return Ok(Err(ToolResult::error(why))),
            },
            Err(why) => return Ok(Err(ToolResult::error(why))),
        };
        let first = Write::AppendMessage(NewMessage {
            role: Some(Role::User),
            content: Some(state.redactor().text(&text)),
            ..NewMessage::default()
        });
        let stored = self
            .commit(thread_id, owner, nest.place(vec![first]))
            .await?;
        Ok(Ok(stored.messages))
    }

    /// The lines naming the attachments a sub-prompt's first message carries; each path must be
    /// a file of the thread (the sub-prompt shares its files), or the call is refused naming it.
    async fn attached(
        &self,
        thread_id: &str,
        paths: &[String],
    ) -> Result<Result<String, String>, RuntimeError> {
        let mut lines = String::new();
        for path in paths {
            let stat = match normalize(path) {
                Ok(p) => self.services.db.stat(thread_id, &p).await?,
                Err(e) => return Ok(Err(format!("attachment \"{path}\": {e}"))),
            };
            match stat {
                Some(s) if !s.is_folder => {
                    let mime = s.mime_type.as_deref().unwrap_or("application/octet-stream");
                    lines.push_str(&format!(
                        "\n\nAttached: {} ({mime}, {} bytes)",
                        s.path, s.size
                    ));
                }
                _ => {
                    return Ok(Err(format!(
                        "attachment \"{path}\" is not a file of this thread; nothing was passed on"
                    )))
                }
            }
        }
        Ok(Ok(lines))
    }
}

/// The side a sub-prompt runs as: its prompt, ending when its model answers without calls.
fn side_of(prompt: &PromptDef) -> SideDef {
    SideDef {
        label: None,
        prompt: prompt.name.clone(),
        stop_on_response: true,
        stop_tool: None,
        max_steps: None,
        session_stop: None,
        session_fail: None,
        session_status: None,
    }
}

/// A sub-prompt's message as its own model sees it: at the top of its own conversation.
fn surfaced(m: &Message) -> Message {
    Message {
        depth: 0,
        ..m.clone()
    }
}

/// How a sub-prompt's turn ends now, if it does: stopped, answered (its last message is the
/// model's, with no call left), or out of steps; `None` while it goes on.
fn ending_of(aborted: bool, mine: &[Message], steps: u32, max_steps: u32) -> Option<Ending> {
    if aborted {
        Some(Ending::Stopped)
    } else if mine.last().is_some_and(|m| m.role == Role::Assistant) {
        Some(Ending::Response)
    } else if steps >= max_steps {
        Some(Ending::MaxSteps(max_steps))
    } else {
        None
    }
}

/// The intents of the calls the model's reply among `writes` makes that may be recorded with
/// the reply itself (see [`early_intents`]).
fn reply_intents(writes: &[Write], offer: &Offer, state: &ThreadState) -> Vec<Write> {
    writes
        .iter()
        .find_map(|w| match w {
            Write::AppendMessage(m) if m.role == Some(Role::Assistant) => Some(early_intents(
                &m.tool_calls,
                offer,
                state.variables(),
                &state.control().request(),
            )),
            _ => None,
        })
        .unwrap_or_default()
}

impl LoadedProject {
    /// The prompt of `config` for a sub-prompt at `depth`, or the call's result when it cannot
    /// run: nested too deep, or its prompt did not load.
    fn nested_prompt(
        &self,
        config: &SubpromptConfig,
        depth: u32,
    ) -> Result<&PromptDef, Box<ToolResult>> {
        if depth as usize > MAX_SUBPROMPT_DEPTH {
            return Err(Box::new(ToolResult::error(format!(
                "prompt tool \"{}\" would nest deeper than {MAX_SUBPROMPT_DEPTH} sub-prompts",
                config.name
            ))));
        }
        self.defs.prompts.get(&config.name).ok_or_else(|| {
            Box::new(ToolResult::error(format!(
                "prompt tool \"{}\": the prompt did not load",
                config.name
            )))
        })
    }
}
