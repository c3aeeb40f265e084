//! The runner: one thread's step cycle while its run holds the lease. It holds what the run
//! knows of the thread (its messages, its position, the calls that have results, each side's
//! request) and brings them up to date with what it stores itself, so a step reads the store
//! only for what can arrive from outside (queued work). Each step: finish the calls of the last
//! reply, decide (see [`super::decide`]) whether the turn is over, take queued work, or ask the
//! model and store its reply; the runner performs what the decision says.

use super::calls::early_intents;
use super::context::Turn;
use super::control::RunControl;
use super::decide::{next_step, pending_calls, Queued, Step, TurnRules};
use super::histories::History;
use super::images::images_of;
use super::outcome::{RunOutcome, StopReason};
use super::ownership::OwnerId;
use super::plan::answer_writes;
use super::records::{discarded_reply, queued_message};
use super::scratch::SCRATCH_TAG;
use super::side::{index_of, run_of, SideRun};
use super::turns::{opens_session, Position, Side, DEFAULT_MAX_SESSION_TURNS};
use super::{Runtime, RuntimeError};
use crate::project::{AgentDef, SUBAGENT_CREATE};
use crate::variables::{Redactor, Resolved};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use toolhost_core::tool::AbortSignal;
use toolhost_core::ToolResult;
use toolhost_store::{
    Message, QueueItem, Queued as QueuedWork, Role, Thread, ThreadStatus, ToolStatus, Write,
};

/// What the runner does after a step.
pub(super) enum Flow {
    /// The next step.
    Next,
    /// The run ends with this outcome.
    Done(Box<RunOutcome>),
    /// The thread changed what its sides offer (a handoff, a new sub-agent instance): the run
    /// starts over from the store.
    Again,
}

/// One thread's run while it holds the lease.
pub(super) struct Runner<'r> {
    rt: &'r Runtime,
    thread: Thread,
    agent: &'r AgentDef,
    owner: &'r OwnerId,
    abort: &'r AbortSignal,
    /// The thread's messages (and which calls have a result), kept up to date with what the
    /// run stores.
    history: &'r mut History,
    position: Position,
    variables: Arc<Resolved>,
    redactor: Redactor,
    /// Each side's request and offer; a thread with one side has only `a`.
    sides: Vec<SideRun<'r>>,
    /// Calls whose intent this run journaled with their reply and that have not started.
    fresh: HashSet<String>,
    control: Arc<RunControl>,
    /// The spec's in-memory context: shared by the calls of this run, never stored.
    context: Arc<Mutex<serde_json::Map<String, serde_json::Value>>>,
    /// Whether the thread holds direct calls (see [`super::scratch`]): it never asks a model.
    scratch: bool,
    /// Whether the thread's sub-agent instances decide what its lifecycle tools offer.
    has_children: bool,
    max_session_turns: u32,
}

impl<'r> Runner<'r> {
    /// Takes up the thread `thread_id`, whose messages are `history`, for the run `owner`:
    /// builds each side's request and marks the thread running.
    pub async fn start(
        rt: &'r Runtime,
        thread_id: &str,
        owner: &'r OwnerId,
        abort: &'r AbortSignal,
        history: &'r mut History,
    ) -> Result<Runner<'r>, RuntimeError> {
        let thread = rt.services.db.thread(thread_id).await?;
        let agent = rt
            .project
            .defs
            .agents
            .get(&thread.agent)
            .ok_or_else(|| rt.unknown_agent(&thread.agent))?;
        let position = Position::from_history(agent, history.messages());
        let variables = Arc::new(rt.variables().resolve(thread_id, agent).await?);
        let redactor = variables.redactor();
        let texts = variables.texts();
        // The thread's sub-agent instances decide what its lifecycle tools offer.
        let children = match rt.project.offers_resumable(agent) {
            true => Some(rt.services.db.threads(Some(thread_id)).await?),
            false => None,
        };
        // A scratch thread never asks a model: its sides need what they offer, not a request
        // made of the whole thread.
        let scratch = thread.tags.iter().any(|t| t == SCRATCH_TAG);
        let seen: &[Message] = if scratch { &[] } else { history.messages() };
        // What each stored result shows (read once, for both sides).
        let mut shown = Vec::with_capacity(seen.len());
        for m in seen {
            shown.push(images_of(&rt.services.db, thread_id, m).await);
        }
        let thread_model = rt.thread_model(thread_id).await?;
        let mut sides = Vec::with_capacity(2);
        let dual = position.is_dual();
        for (side, def) in [
            (Side::A, Some(&agent.side_a)),
            (Side::B, agent.side_b.as_ref()),
        ] {
            let Some(def) = def.filter(|_| side == Side::A || dual) else {
                continue;
            };
            let turn = Turn::at(seen, &position.as_side(side));
            sides.push(rt.side_run(
                &agent.name,
                def,
                dual.then_some(side),
                seen,
                &shown,
                &texts,
                children.as_deref(),
                turn,
                thread_model.as_deref(),
            )?);
        }
        rt.commit(
            thread_id,
            owner,
            vec![Write::SetStatus(ThreadStatus::Running)],
        )
        .await?;
        let control = Arc::new(RunControl::new(dual, rt.request_for(thread_id)));
        rt.queue_immediate(thread_id, owner, agent, &variables, history.messages())
            .await?;
        Ok(Runner {
            rt,
            agent,
            owner,
            abort,
            history,
            position,
            variables,
            redactor,
            sides,
            fresh: HashSet::new(),
            control,
            context: Arc::default(),
            scratch,
            has_children: children.is_some(),
            max_session_turns: agent.max_session_turns.unwrap_or(DEFAULT_MAX_SESSION_TURNS),
            thread,
        })
    }

    /// Runs steps until the run ends or must start over.
    pub async fn run(mut self) -> Result<Flow, RuntimeError> {
        loop {
            // The calls of the last reply that have no result yet get theirs, in order. After
            // a stop, the ones that did not start are answered "not run" rather than left
            // journaled: a call stored with its reply must not read as cut off later.
            let flow = match pending_calls(self.history.messages(), self.history.answered()) {
                Some((caller, reply, pending)) => self.finish_calls(caller, reply, pending).await?,
                None => self.step().await?,
            };
            match flow {
                Flow::Next => {}
                end => return Ok(end),
            }
        }
    }

    fn thread_id(&self) -> &str {
        &self.thread.id
    }

    /// Gives the pending calls of `caller`'s last reply (at position `reply`) their results,
    /// then takes up what they changed (values set, a forced turn, a handoff, a new instance).
    async fn finish_calls(
        &mut self,
        caller: Side,
        reply: i64,
        pending: Vec<toolhost_store::ToolCallRecord>,
    ) -> Result<Flow, RuntimeError> {
        let (rt, owner, abort) = (self.rt, self.owner, self.abort);
        let thread_id = self.thread.id.clone();
        let offer = run_of(&self.sides, caller).offer.clone();
        let state = rt
            .thread_state(&thread_id, &self.thread.agent)
            .at(caller, self.position.turn, self.position.steps)
            .with_variables(self.variables.clone())
            .in_run(self.context.clone(), offer.tools.clone(), abort.clone())
            .owned_by(owner)
            .with_control(self.control.clone())
            .entering(&offer.prompt, offer.tools.clone());
        let (results, waiting) = rt
            .finish_calls(&state, reply, pending, &offer, abort, &self.fresh, owner)
            .await?;
        self.fresh.clear();
        // A new instance changes what the lifecycle tools offer (see below).
        let created = self.has_children
            && results.iter().any(|m| {
                m.name.as_deref() == Some(SUBAGENT_CREATE) && m.status == Some(ToolStatus::Success)
            });
        self.record(results).await;
        if let Some(waiting) = waiting {
            return Ok(Flow::Done(Box::new(
                rt.pause(&thread_id, owner, waiting).await?,
            )));
        }
        // A handoff: the new agent's side takes the thread from here.
        if rt.handed_over(&thread_id, &self.thread.agent).await? {
            return Ok(Flow::Again);
        }
        // Values the calls set (`setEnv`) are stored now and seen from the next step.
        let set = self.control.take_env();
        if !set.is_empty() {
            rt.store_env(&thread_id, owner, set).await?;
            self.variables = Arc::new(rt.variables().resolve(&thread_id, self.agent).await?);
            self.redactor = self.variables.redactor();
        }
        // A call gave the next turn of the session to a side (`forceTurn`).
        if let Some(side) = self
            .control
            .take_forced()
            .filter(|_| self.position.is_dual())
        {
            self.position.force_turn(side);
            self.refocus().await;
        }
        // The sides are offered again from the store: `subagent_message` once there is an
        // instance, `subagent_create` no more once `maxInstances` are reached.
        Ok(if created { Flow::Again } else { Flow::Next })
    }

    /// With no call pending: ends the turn, takes queued work, or asks the model.
    async fn step(&mut self) -> Result<Flow, RuntimeError> {
        let (rt, owner) = (self.rt, self.owner);
        if self.abort.is_aborted() {
            rt.record_stopper(self.thread_id(), owner, &self.control)
                .await?;
            return self.finish(StopReason::Stopped).await;
        }
        let queued = rt.services.db.queued(self.thread_id()).await?;
        if self.scratch && queued.is_empty() {
            return self.finish(StopReason::MaxSteps(0)).await;
        }
        let run = run_of(&self.sides, self.position.side);
        let rules = TurnRules {
            side: run.def,
            max_steps: run.max_steps,
            max_session_turns: self.max_session_turns,
        };
        let waiting = self.what_waits(&queued);
        match next_step(
            waiting,
            &self.position,
            &rules,
            self.history.messages(),
            self.history.answered(),
        ) {
            Step::End(reason) => self.finish(reason).await,
            Step::RefuseQueued(reason) => {
                let max_steps = rules.max_steps;
                self.refuse_queued(queued, max_steps).await?;
                self.finish(reason).await
            }
            Step::HandOver => {
                self.position.next_turn();
                self.refocus().await;
                Ok(Flow::Next)
            }
            Step::TakeQueued => self.take_queued(queued).await,
            Step::Ask => self.ask().await,
        }
    }

    /// What the queue holds, as the next step cares. Queued tools count against the turn's
    /// budget, unless what is queued opens a new turn (a person's message; any message from
    /// outside in a dual_ai thread) or the thread holds direct calls (scratch), which have no
    /// model turns.
    fn what_waits(&self, queued: &[QueuedWork]) -> Queued {
        let has_tools = queued
            .iter()
            .any(|q| matches!(q.item, QueueItem::Tool { .. }));
        let opens_turn = queued.iter().any(|q| match &q.item {
            QueueItem::Message { role, .. } => self.position.is_dual() || *role == Role::User,
            QueueItem::Tool { .. } => false,
        });
        if queued.is_empty() {
            Queued::Nothing
        } else if has_tools && !opens_turn && !self.scratch {
            Queued::ToolsOnly
        } else {
            Queued::Messages
        }
    }

    /// Stores the queued tools as not run, the turn's step budget being used up.
    async fn refuse_queued(
        &mut self,
        queued: Vec<QueuedWork>,
        max_steps: u32,
    ) -> Result<(), RuntimeError> {
        let through = queued.last().map_or(0, |q| q.seq);
        let refusal = ToolResult::error(format!(
            "ToolCallError: this queued call was not run: the turn's step budget \
             (maxSteps: {max_steps}) is used up, and queued tools count against it."
        ));
        let mut writes = Vec::new();
        for q in queued {
            let message = queued_message(q.item, &self.position);
            let calls = message.tool_calls.clone();
            writes.push(Write::AppendMessage(message));
            for call in &calls {
                writes.extend(answer_writes(call, false, &refusal));
            }
        }
        writes.push(Write::Dequeue { through });
        self.rt.commit(self.thread_id(), self.owner, writes).await?;
        Ok(())
    }

    /// Stores the queued work as the thread's messages, moving the position on.
    async fn take_queued(&mut self, queued: Vec<QueuedWork>) -> Result<Flow, RuntimeError> {
        let through = queued.last().map_or(0, |q| q.seq);
        let tools = queued
            .iter()
            .filter(|q| matches!(q.item, QueueItem::Tool { .. }))
            .count() as u32;
        let mut writes: Vec<Write> = queued
            .into_iter()
            .map(|q| Write::AppendMessage(queued_message(q.item, &self.position)))
            .collect();
        writes.push(Write::Dequeue { through });
        let stored = self
            .rt
            .commit(self.thread_id(), self.owner, writes)
            .await?
            .messages;
        // A person's message starts a new turn of an ai_human thread, a message from outside a
        // new session of a dual_ai one.
        let dual = self.position.is_dual();
        let new_turn = if dual {
            stored.iter().any(opens_session)
        } else {
            stored.iter().any(|m| m.role == Role::User)
        };
        if new_turn && !dual {
            self.position.steps = 0;
            self.position.turn += 1;
        }
        // Each queued tool is a step of the turn it runs in.
        self.position.steps += tools;
        self.record(stored).await;
        if new_turn && dual {
            self.position = Position::from_history(self.agent, self.history.messages());
        }
        if new_turn {
            self.refocus().await;
        }
        Ok(Flow::Next)
    }

    /// Asks the model and stores its reply (with the intents of the calls that start at once)
    /// before anything runs.
    async fn ask(&mut self) -> Result<Flow, RuntimeError> {
        let (rt, owner, abort) = (self.rt, self.owner, self.abort);
        let thread_id = self.thread.id.clone();
        let at = index_of(&self.sides, self.position.side);
        tracing::debug!(
            thread = %thread_id,
            side = %self.position.side,
            turn = self.position.turn,
            step = self.position.steps + 1,
            model = self.sides[at].model.name(),
            "asking the model"
        );
        let mut writes = rt
            .ask(
                &thread_id,
                &mut self.sides[at],
                &self.position,
                owner,
                &self.redactor,
                abort,
            )
            .await?;
        // Stopped while the model answered: a reply whose calls would only be answered "not
        // run" is not stored (an event says so), nor is there one when the stop came between
        // refused answers; the thread asks again when resumed.
        if abort.is_aborted() {
            let discarded = discarded_reply(&writes);
            if writes.is_empty() || discarded.is_some() {
                tracing::info!(thread = %thread_id, "stopped: no answer is kept");
                rt.commit(&thread_id, owner, discarded.into_iter().collect())
                    .await?;
                return self.finish(StopReason::Stopped).await;
            }
        }
        let intents = writes
            .iter()
            .find_map(|w| match w {
                Write::AppendMessage(m) if m.role == Some(Role::Assistant) => Some(early_intents(
                    &m.tool_calls,
                    &self.sides[at].offer,
                    &self.variables,
                    &self.control.request(),
                )),
                _ => None,
            })
            .unwrap_or_default();
        for intent in &intents {
            if let Write::RecordIntent(i) = intent {
                self.fresh.insert(i.call_id.clone());
            }
        }
        writes.extend(intents);
        let applied = rt.commit(&thread_id, owner, writes).await?;
        self.position.steps += 1;
        self.record(applied.messages).await;
        Ok(Flow::Next)
    }

    async fn finish(&self, reason: StopReason) -> Result<Flow, RuntimeError> {
        let outcome = self.rt.finish(self.thread_id(), self.owner, reason).await?;
        Ok(Flow::Done(Box::new(outcome)))
    }

    /// Rebuilds the request of the side whose turn it is (see [`Runtime::refocus`]).
    async fn refocus(&mut self) {
        self.rt
            .refocus(
                &self.thread.id,
                &mut self.sides,
                self.history.messages(),
                &self.position,
            )
            .await;
    }

    /// Appends stored messages to the history and each side's request (tool results with what
    /// they show).
    async fn record(&mut self, messages: Vec<Message>) {
        for m in messages {
            let shown = images_of(&self.rt.services.db, &self.thread.id, &m).await;
            for side in self.sides.iter_mut() {
                side.record_state(&m);
                side.see(&m, || shown.clone());
            }
            self.history.push(m);
        }
    }
}
