//! The step cycle of one thread: finish pending calls, decide whether the turn is over, ask the
//! model, store its reply, repeat.

use super::calls::early_intents;
use super::context::Turn;
use super::control::RunControl;
use super::decide::{next_step, pending_calls, Queued, Step, TurnRules};
use super::images::images_of;
use super::outcome::{RunOutcome, StopReason, Waiting};
use super::ownership::{OwnerId, Ownership};
use super::plan::answer_writes;
use super::records::{discarded_reply, queued_message};
use super::scratch::SCRATCH_TAG;
use super::side::{index_of, run_of, SideRun};
use super::turns::{opens_session, Position, Side, DEFAULT_MAX_SESSION_TURNS};
use super::{Runtime, RuntimeError};
use crate::project::SUBAGENT_CREATE;
use std::collections::HashSet;
use std::sync::Arc;
use toolhost_core::tool::AbortSignal;
use toolhost_core::ToolResult;

use toolhost_store::{Message, QueueItem, Role, ThreadStatus, ToolStatus, Write};

impl Runtime {
    /// Runs the thread until its turn ends (for a `dual_ai` agent: until its session ends).
    /// Safe to call again after a crash: it continues from what is stored.
    ///
    /// The run owns the thread while it runs (see [`Runtime::owner_of`]): when another live run
    /// owns it, nothing is read or changed and [`RuntimeError::ThreadBusy`] says who owns it.
    /// Work that arrives while the run ends (a queued message, a decision on the call it paused
    /// at) is taken up before it returns.
    pub async fn run(&self, thread_id: &str) -> Result<RunOutcome, RuntimeError> {
        let thread = self.db.thread(thread_id).await?;
        self.check_agent(&thread.agent)?;
        self.check_not_deferred(&thread).await?;
        let ownership = self.claim(thread_id).await?;
        let outcome = self.run_claimed(thread_id, ownership).await?;
        self.deliver_if_detached(&thread, &outcome).await?;
        Ok(outcome)
    }

    /// Like [`Runtime::run`], but waits while another run owns the thread, then runs it.
    pub async fn run_when_free(&self, thread_id: &str) -> Result<RunOutcome, RuntimeError> {
        let thread = self.db.thread(thread_id).await?;
        self.check_agent(&thread.agent)?;
        self.check_not_deferred(&thread).await?;
        let ownership = self.claim_when_free(thread_id).await?;
        let outcome = self.run_claimed(thread_id, ownership).await?;
        self.deliver_if_detached(&thread, &outcome).await?;
        Ok(outcome)
    }

    async fn run_claimed(
        &self,
        thread_id: &str,
        mut ownership: Ownership<'_>,
    ) -> Result<RunOutcome, RuntimeError> {
        loop {
            let outcome = self
                .run_with_children(thread_id, &ownership.owner, &ownership.abort)
                .await;
            if ownership.lost() {
                tracing::warn!(
                    thread = thread_id,
                    "the run lost the thread to another owner"
                );
            }
            // Released first, then looked at: whoever stores work after this look finds the
            // thread free and runs it; whoever stored it before is seen here. A stop that came
            // while the run ended is honoured: the thread is not taken again.
            let abort = ownership.abort.clone();
            ownership.release().await;
            let again = match &outcome {
                Ok(done) if !abort.is_aborted() => self.arrived_meanwhile(thread_id, done).await?,
                _ => false,
            };
            if !again {
                return outcome;
            }
            ownership = match self.claim(thread_id).await {
                Ok(next) => next,
                // Someone else took the thread and runs the new work.
                Err(RuntimeError::ThreadBusy { .. }) => return outcome,
                Err(e) => return Err(e),
            };
        }
    }

    /// Whether work for the thread arrived while its run ended: queued work after a finished
    /// turn, or the decision or variables a paused run waits for.
    async fn arrived_meanwhile(
        &self,
        thread_id: &str,
        outcome: &RunOutcome,
    ) -> Result<bool, RuntimeError> {
        Ok(match outcome {
            RunOutcome::Done(StopReason::Stopped) => false,
            RunOutcome::Done(_) => !self.db.queued(thread_id).await?.is_empty(),
            RunOutcome::Paused(Waiting::Approval(request)) => self
                .db
                .approvals(thread_id)
                .await?
                .iter()
                .any(|r| r.request.call_id == request.call_id && r.decision.is_some()),
            // Variables may have been stored before the run asked for them (while it ran):
            // the request is then answered by what is already there.
            RunOutcome::Paused(Waiting::Variables { request_id, names }) => {
                let answered = self
                    .db
                    .variable_requests(thread_id)
                    .await?
                    .iter()
                    .any(|r| &r.id == request_id && r.answered_at.is_some());
                if !answered && self.has_values(thread_id, names).await? {
                    self.db
                        .apply(
                            thread_id,
                            vec![Write::AnswerVariables {
                                id: request_id.clone(),
                            }],
                        )
                        .await?;
                    return Ok(true);
                }
                answered
            }
        })
    }

    /// The step cycle, on a thread this run owns, with the thread's messages as kept from its
    /// last run and brought up to date (see [`super::histories`]); they are kept again when it
    /// ends well.
    pub(super) async fn run_owned(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        abort: &AbortSignal,
    ) -> Result<RunOutcome, RuntimeError> {
        let mut history = self.histories.take(&self.db, thread_id).await?;
        let outcome = self
            .run_owned_on(thread_id, owner, abort, &mut history)
            .await;
        if outcome.is_ok() {
            self.histories.keep(thread_id, history);
        }
        outcome
    }

    /// The step cycle over `history`, the thread's messages, which it keeps up to date with
    /// what it stores.
    async fn run_owned_on(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        abort: &AbortSignal,
        history: &mut Vec<Message>,
    ) -> Result<RunOutcome, RuntimeError> {
        let thread = self.db.thread(thread_id).await?;
        let agent = self
            .defs
            .agents
            .get(&thread.agent)
            .ok_or_else(|| self.unknown_agent(&thread.agent))?;
        let mut position = Position::from_history(agent, history);
        let mut variables = Arc::new(self.resolve(thread_id, agent).await?);
        let mut redactor = variables.redactor();
        let texts = variables.texts();
        // The thread's sub-agent instances decide what its lifecycle tools offer.
        let children = match self.offers_resumable(agent) {
            true => Some(self.db.threads(Some(thread_id)).await?),
            false => None,
        };
        // What each stored result shows (read once, for both sides).
        let mut shown = Vec::with_capacity(history.len());
        for m in history.iter() {
            shown.push(images_of(&self.db, thread_id, m).await);
        }
        let thread_model = self.thread_model(thread_id).await?;
        let start_of = |side: Side| Turn::at(history, &position.as_side(side));
        let mut sides = vec![self.side_run(
            &agent.name,
            &agent.side_a,
            position.is_dual().then_some(Side::A),
            history,
            &shown,
            &texts,
            children.as_deref(),
            start_of(Side::A),
            thread_model.as_deref(),
        )?];
        if let (true, Some(b)) = (position.is_dual(), &agent.side_b) {
            let start = start_of(Side::B);
            sides.push(self.side_run(
                &agent.name,
                b,
                Some(Side::B),
                history,
                &shown,
                &texts,
                children.as_deref(),
                start,
                thread_model.as_deref(),
            )?);
        }
        drop(shown);
        let scratch = thread.tags.iter().any(|t| t == SCRATCH_TAG);
        let max_session_turns = agent.max_session_turns.unwrap_or(DEFAULT_MAX_SESSION_TURNS);
        let mut answered: HashSet<String> = history
            .iter()
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        self.commit(
            thread_id,
            owner,
            vec![Write::SetStatus(ThreadStatus::Running)],
        )
        .await?;
        // The spec's in-memory context: shared by the calls of this run, never stored.
        let context: Arc<std::sync::Mutex<serde_json::Map<String, serde_json::Value>>> =
            Arc::default();
        // Calls whose intent this run journaled with their reply and that have not started.
        let mut fresh: HashSet<String> = HashSet::new();
        let control = Arc::new(RunControl::new(
            position.is_dual(),
            self.request_for(thread_id),
        ));
        self.queue_immediate(thread_id, owner, agent, &variables, history)
            .await?;
        loop {
            // The calls of the last reply that have no result yet get theirs, in order. After
            // a stop, the ones that did not start are answered "not run" rather than left
            // journaled: a call stored with its reply must not read as cut off later.
            if let Some((caller, pending)) = pending_calls(history, &answered) {
                let offer = run_of(&sides, caller).offer.clone();
                let state = self
                    .thread_state(thread_id, &thread.agent)
                    .at(caller, position.turn, position.steps)
                    .with_variables(variables.clone())
                    .in_run(context.clone(), offer.tools.clone(), abort.clone())
                    .owned_by(owner)
                    .with_control(control.clone())
                    .entering(&offer.prompt, offer.tools.clone());
                let (results, waiting) = self
                    .finish_calls(&state, pending, &offer, abort, &fresh, owner)
                    .await?;
                fresh.clear();
                // A new instance changes what the lifecycle tools offer (see below).
                let created = children.is_some()
                    && results.iter().any(|m| {
                        m.name.as_deref() == Some(SUBAGENT_CREATE)
                            && m.status == Some(ToolStatus::Success)
                    });
                self.record(thread_id, history, &mut answered, &mut sides, results)
                    .await;
                if let Some(waiting) = waiting {
                    return self.pause(thread_id, owner, waiting).await;
                }
                // A handoff: the new agent's side takes the thread from here.
                if self.handed_over(thread_id, &thread.agent).await? {
                    return Box::pin(self.run_owned(thread_id, owner, abort)).await;
                }
                // Values the calls set (`setEnv`) are stored now and seen from the next step.
                let set = control.take_env();
                if !set.is_empty() {
                    self.store_env(thread_id, owner, set).await?;
                    variables = Arc::new(self.resolve(thread_id, agent).await?);
                    redactor = variables.redactor();
                }
                // A call gave the next turn of the session to a side (`forceTurn`).
                if let Some(side) = control.take_forced().filter(|_| position.is_dual()) {
                    position.force_turn(side);
                    self.refocus(thread_id, &mut sides, history, &position)
                        .await;
                }
                // The sides are offered again from the store: `subagent_message` once there is
                // an instance, `subagent_create` no more once `maxInstances` are reached.
                if created {
                    return Box::pin(self.run_owned(thread_id, owner, abort)).await;
                }
                continue;
            }
            if abort.is_aborted() {
                self.record_stopper(thread_id, owner, &control).await?;
                return self.finish(thread_id, owner, StopReason::Stopped).await;
            }
            let queued = self.db.queued(thread_id).await?;
            // A scratch thread holds direct calls of tools: it never asks a model.
            if scratch && queued.is_empty() {
                return self.finish(thread_id, owner, StopReason::MaxSteps(0)).await;
            }
            let run = run_of(&sides, position.side);
            let rules = TurnRules {
                side: run.def,
                max_steps: run.max_steps,
                max_session_turns,
            };
            // Queued tools count against the turn's budget, unless what is queued opens a new
            // turn (a person's message; any message from outside in a dual_ai thread) or the
            // thread holds direct calls (scratch), which have no model turns.
            let has_tools = queued
                .iter()
                .any(|q| matches!(q.item, QueueItem::Tool { .. }));
            let opens_turn = queued.iter().any(|q| match &q.item {
                QueueItem::Message { role, .. } => position.is_dual() || *role == Role::User,
                QueueItem::Tool { .. } => false,
            });
            let waiting = if queued.is_empty() {
                Queued::Nothing
            } else if has_tools && !opens_turn && !scratch {
                Queued::ToolsOnly
            } else {
                Queued::Messages
            };
            match next_step(waiting, &position, &rules, history, &answered) {
                Step::End(reason) => return self.finish(thread_id, owner, reason).await,
                Step::RefuseQueued(reason) => {
                    let through = queued.last().map_or(0, |q| q.seq);
                    let refusal = ToolResult::error(format!(
                        "ToolCallError: this queued call was not run: the turn's step budget \
                         (maxSteps: {}) is used up, and queued tools count against it.",
                        rules.max_steps
                    ));
                    let mut writes = Vec::new();
                    for q in queued {
                        let message = queued_message(q.item, &position);
                        let calls = message.tool_calls.clone();
                        writes.push(Write::AppendMessage(message));
                        for call in &calls {
                            writes.extend(answer_writes(call, false, &refusal));
                        }
                    }
                    writes.push(Write::Dequeue { through });
                    self.commit(thread_id, owner, writes).await?;
                    return self.finish(thread_id, owner, reason).await;
                }
                Step::HandOver => {
                    position.next_turn();
                    self.refocus(thread_id, &mut sides, history, &position)
                        .await;
                    continue;
                }
                Step::TakeQueued => {
                    let through = queued.last().map_or(0, |q| q.seq);
                    let tools = queued
                        .iter()
                        .filter(|q| matches!(q.item, QueueItem::Tool { .. }))
                        .count() as u32;
                    let mut writes: Vec<Write> = queued
                        .into_iter()
                        .map(|q| Write::AppendMessage(queued_message(q.item, &position)))
                        .collect();
                    writes.push(Write::Dequeue { through });
                    let stored = self.commit(thread_id, owner, writes).await?.messages;
                    // A person's message starts a new turn of an ai_human thread, a message
                    // from outside a new session of a dual_ai one.
                    let new_turn = if position.is_dual() {
                        stored.iter().any(opens_session)
                    } else {
                        stored.iter().any(|m| m.role == Role::User)
                    };
                    if new_turn && !position.is_dual() {
                        position.steps = 0;
                        position.turn += 1;
                    }
                    // Each queued tool is a step of the turn it runs in.
                    position.steps += tools;
                    self.record(thread_id, history, &mut answered, &mut sides, stored)
                        .await;
                    if new_turn && position.is_dual() {
                        position = Position::from_history(agent, history);
                    }
                    if new_turn {
                        self.refocus(thread_id, &mut sides, history, &position)
                            .await;
                    }
                    continue;
                }
                Step::Ask => {}
            }
            // Ask the model and store its reply before anything runs.
            tracing::debug!(
                thread = thread_id,
                side = %position.side,
                turn = position.turn,
                step = position.steps + 1,
                model = run.model.name(),
                "asking the model"
            );
            let at = index_of(&sides, position.side);
            let mut writes = self
                .ask(
                    thread_id,
                    &mut sides[at],
                    &position,
                    owner,
                    &redactor,
                    abort,
                )
                .await?;
            // Stopped while the model answered: a reply whose calls would only be answered
            // "not run" is not stored (an event says so), nor is there one when the stop came
            // between refused answers; the thread asks again when resumed.
            if abort.is_aborted() {
                let discarded = discarded_reply(&writes);
                if writes.is_empty() || discarded.is_some() {
                    tracing::info!(thread = thread_id, "stopped: no answer is kept");
                    self.commit(thread_id, owner, discarded.into_iter().collect())
                        .await?;
                    return self.finish(thread_id, owner, StopReason::Stopped).await;
                }
            }
            let intents = writes
                .iter()
                .find_map(|w| match w {
                    Write::AppendMessage(m) if m.role == Some(Role::Assistant) => {
                        Some(early_intents(
                            &m.tool_calls,
                            &sides[at].offer,
                            &variables,
                            &control.request(),
                        ))
                    }
                    _ => None,
                })
                .unwrap_or_default();
            for intent in &intents {
                if let Write::RecordIntent(i) = intent {
                    fresh.insert(i.call_id.clone());
                }
            }
            writes.extend(intents);
            let applied = self.commit(thread_id, owner, writes).await?;
            position.steps += 1;
            self.record(
                thread_id,
                history,
                &mut answered,
                &mut sides,
                applied.messages,
            )
            .await;
        }
    }

    /// Appends stored messages to the history, the set of answered calls and each side's
    /// request (tool results with what they show).
    async fn record(
        &self,
        thread_id: &str,
        history: &mut Vec<Message>,
        answered: &mut HashSet<String>,
        sides: &mut [SideRun<'_>],
        messages: Vec<Message>,
    ) {
        for m in messages {
            let shown = images_of(&self.db, thread_id, &m).await;
            for side in sides.iter_mut() {
                side.see(&m, || shown.clone());
            }
            if let Some(id) = &m.tool_call_id {
                answered.insert(id.clone());
            }
            history.push(m);
        }
    }
}
