//! Giving the calls of one reply their results, following the durability contract.
//!
//! Each pending call is first *planned* without side effects: an unknown tool, arguments that do
//! not parse or validate, and (after a crash) a non-idempotent call whose outcome is unknown are
//! answered at once. The others *run*: their intent is journaled before they start, and their
//! result (with its attachments) is stored in one batch after they end. With `parallel`, the
//! runnable calls of a reply run together, at most [`PARALLEL_CAP`] at a time, and their
//! results are still stored in call order.

use super::execute::{call_info, context, execute, joined, CallEnd, CallTask};
use super::hooks::{before_call, BeforeCall};
use super::middleware::Failed;
use super::offer::{AgentOffer, Offer};
use super::outcome::Waiting;
use super::outcome::NOT_RUN_STOPPED;
use super::ownership::OwnerId;
use super::plan::{
    after_gate, answer_writes, check_call, intent_of, CallFacts, Checked, Plan, Planned,
};
use super::records::stored_result;
use super::state::ThreadState;
use super::stop::Stop;
use super::subprompt::SubOutcome;
use super::{Runtime, RuntimeError};
use crate::variables::Redactor;
use serde_json::Value;
use std::collections::HashSet;
use toolhost_core::tool::AbortSignal;
use toolhost_core::ToolResult;
use toolhost_store::{CallState, Message, ToolCallRecord, Write};

/// The most calls of one reply that run at once when a prompt asks for parallel calls.
pub const PARALLEL_CAP: usize = 4;

impl Runtime {
    /// Reads what is known of a call, checks it, asks the approval gate when the checks pass,
    /// and returns its plan (see [`super::plan`]).
    async fn plan(
        &self,
        state: &ThreadState,
        call: &ToolCallRecord,
        offer: &Offer,
        stopped: bool,
        fresh: bool,
    ) -> Result<Plan, RuntimeError> {
        let thread_id = state.thread_id();
        let journaled = if fresh {
            Some(CallState::Intent)
        } else {
            self.services
                .db
                .call(thread_id, &call.id)
                .await?
                .map(|c| c.state)
        };
        let facts = CallFacts {
            journaled,
            fresh,
            stopped,
        };
        let info = call_info(state, offer, call);
        let input = |args: Value| offer.pipeline.input(&info, args);
        let middleware: Option<&dyn Fn(Value) -> Result<Value, Failed>> =
            (!offer.pipeline.has_no_middleware()).then_some(&input);
        let (tool, args, env, changed) =
            match check_call(call, &offer.tools, facts, state.variables(), middleware) {
                Checked::Decided(plan) => return Ok(plan),
                Checked::ToGate {
                    tool,
                    args,
                    env,
                    changed,
                } => (tool, args, env, changed),
            };
        let gate = self
            .approvals()
            .gate(
                thread_id,
                state.agent(),
                &call.id,
                &tool,
                args,
                state.redactor(),
                &state.control().request(),
            )
            .await?;
        let mut plan = after_gate(call, journaled.is_some(), gate, tool, env, changed);
        // The journal keeps the arguments a call runs with, and never a secret in them (input
        // middleware may have put one there): the call itself runs with the real ones.
        if let Plan::Run { before, .. } = &mut plan {
            redact_intents(before, state.redactor());
        }
        Ok(plan)
    }

    /// Gives the calls in `calls` their results, in order, and returns the result messages in
    /// call order. It stops at a call that waits (for approval or variables) and says what it
    /// waits for: the calls before it are done, the ones after it wait with it. `fresh` are the
    /// calls whose intent this run journaled with their reply (see [`early_intents`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn finish_calls(
        &self,
        state: &ThreadState,
        reply: i64,
        calls: Vec<ToolCallRecord>,
        offer: &Offer,
        abort: &AbortSignal,
        fresh: &HashSet<String>,
        owner: &OwnerId,
    ) -> Result<(Vec<Message>, Option<Waiting>), RuntimeError> {
        // A prompt tool's call runs a whole sub-prompt, an agent tool's a child thread: the
        // calls of a reply that makes one run one at a time.
        let nests = calls.iter().any(|c| {
            offer.subprompts.contains_key(&c.name) || offer.subagents.contains_key(&c.name)
        });
        let step = Step {
            state,
            reply,
            offer,
            abort,
            owner,
        };
        if !offer.parallel || calls.len() < 2 || nests {
            self.finish_in_order(&step, calls, fresh).await
        } else {
            self.finish_together(&step, calls, fresh).await
        }
    }

    /// The calls one after another, each stored as it ends.
    async fn finish_in_order(
        &self,
        step: &Step<'_>,
        calls: Vec<ToolCallRecord>,
        fresh: &HashSet<String>,
    ) -> Result<(Vec<Message>, Option<Waiting>), RuntimeError> {
        let Step {
            state,
            offer,
            abort,
            owner,
            ..
        } = *step;
        let thread_id = state.thread_id();
        let mut messages = Vec::with_capacity(calls.len());
        for (at, call) in calls.iter().enumerate() {
            // The calls from this one on, should the run stop here.
            let rest = &calls[at..];
            let is_fresh = fresh.contains(&call.id);
            let writes = match self
                .plan(state, call, offer, abort.is_aborted(), is_fresh)
                .await?
            {
                Plan::Answered(writes) => writes,
                Plan::Wait(request) => return Ok((messages, Some(request))),
                Plan::Fail(stop) => {
                    return Err(self.stop_for(state, offer, owner, (rest, None), stop).await)
                }
                Plan::Run { before, run } => {
                    if !before.is_empty() {
                        self.commit(thread_id, owner, offer.placed(before)).await?;
                    }
                    // The hooks before the call may skip it, or cancel the run.
                    match before_call(state, offer, call, &run.args) {
                        BeforeCall::Run => {}
                        BeforeCall::Skip(writes) => {
                            let writes = offer.placed(writes);
                            let stored = self.commit(thread_id, owner, writes).await?;
                            messages.push(stored_result(stored)?);
                            continue;
                        }
                        BeforeCall::Cancel(reason) => {
                            let stop = Stop::Cancelled { reason };
                            let at = (rest, None);
                            return Err(self.stop_for(state, offer, owner, at, stop).await);
                        }
                    }
                    match self.run_planned(step, call.clone(), run).await? {
                        Ran::Done(writes) => writes,
                        // The call keeps its intent and no result: it continues when the
                        // sub-prompt's wait is over.
                        Ran::Waiting(w) => return Ok((messages, Some(w))),
                    }
                }
            };
            let writes = offer.placed(writes);
            messages.push(stored_result(self.commit(thread_id, owner, writes).await?)?);
            // Output middleware failed: the result was withheld, the calls after it are not
            // run, and the run stops.
            if let Some((stop, tool)) = state.control().take_failure() {
                let at = (&rest[1..], Some(tool));
                return Err(self.stop_for(state, offer, owner, at, stop).await);
            }
        }
        Ok((messages, None))
    }

    /// Runs one planned call by what its tool is: a prompt tool's sub-prompt, an agent tool's
    /// child thread (or a handoff), or the tool itself.
    async fn run_planned(
        &self,
        step: &Step<'_>,
        call: ToolCallRecord,
        planned: Planned,
    ) -> Result<Ran, RuntimeError> {
        let Step {
            state,
            reply,
            offer,
            abort,
            owner,
        } = *step;
        let Planned {
            tool,
            args,
            env,
            ran_with,
        } = planned;
        let end = CallEnd::new(state, offer, &call, &args, ran_with);
        if let Some(config) = offer.subprompts.get(&call.name) {
            let depth = offer.depth();
            return Ok(
                match self
                    .run_subprompt(state, reply, &call, args, config, depth, abort, owner)
                    .await?
                {
                    SubOutcome::Done(result) => Ran::Done(end.finish(call, result)),
                    SubOutcome::Waiting(w) => Ran::Waiting(w),
                },
            );
        }
        let writes = match offer.subagents.get(&call.name) {
            Some(AgentOffer::Sub(config)) => {
                let result = self.run_subagent(state, &call, args, config, abort).await?;
                end.finish(call, result)
            }
            Some(AgentOffer::Handoff) => self.project.hand_off(state, call, offer, end)?,
            Some(AgentOffer::Create(configs)) => {
                let result = self
                    .create_instance(state, &call, args, configs, abort)
                    .await?;
                end.finish(call, result)
            }
            Some(AgentOffer::Message(configs)) => {
                let result = self
                    .message_instance(state, &call, args, configs, abort)
                    .await?;
                end.finish(call, result)
            }
            None => {
                let ctx = context(state, abort, &call.id, env);
                execute(tool, args, call, ctx, end).await
            }
        };
        Ok(Ran::Done(writes))
    }

    /// The calls together (a prompt that runs calls in parallel, none of them a sub-prompt or
    /// sub-agent): all planned, all intents journaled in one batch before any starts, at most
    /// [`PARALLEL_CAP`] running at once, the results stored in call order in one batch.
    async fn finish_together(
        &self,
        step: &Step<'_>,
        calls: Vec<ToolCallRecord>,
        fresh: &HashSet<String>,
    ) -> Result<(Vec<Message>, Option<Waiting>), RuntimeError> {
        let Step {
            state,
            offer,
            abort,
            owner,
            ..
        } = *step;
        let thread_id = state.thread_id();
        let (mut plans, waiting) = match self.plan_all(step, &calls, fresh).await? {
            Ok(planned) => planned,
            // None of the reply's calls started yet: they are all answered "not run".
            Err(stop) => {
                return Err(self
                    .stop_for(state, offer, owner, (&calls, None), stop)
                    .await)
            }
        };
        // Every intent is journaled before any of the calls starts.
        let intents: Vec<Write> = plans
            .iter_mut()
            .flat_map(|p| match p {
                Plan::Run { before, .. } => std::mem::take(before),
                Plan::Answered(_) | Plan::Wait(_) | Plan::Fail(_) => Vec::new(),
            })
            .collect();
        if !intents.is_empty() {
            self.commit(thread_id, owner, offer.placed(intents)).await?;
        }
        // The hooks before each call may skip it, or cancel the run before any of them starts.
        for (plan, call) in plans.iter_mut().zip(&calls) {
            let Plan::Run { run, .. } = plan else {
                continue;
            };
            match before_call(state, offer, call, &run.args) {
                BeforeCall::Run => {}
                BeforeCall::Skip(writes) => *plan = Plan::Answered(writes),
                BeforeCall::Cancel(reason) => {
                    let stop = Stop::Cancelled { reason };
                    return Err(self
                        .stop_for(state, offer, owner, (&calls, None), stop)
                        .await);
                }
            }
        }
        let writes = run_together(state, offer, abort, plans, calls).await;
        // Results are stored in call order, one batch for the whole reply.
        if writes.is_empty() {
            return Ok((Vec::new(), waiting));
        }
        let stored = self
            .commit(thread_id, owner, offer.placed(writes))
            .await?
            .messages;
        // Output middleware failed for one of them: its result was withheld and the run stops.
        if let Some((stop, tool)) = state.control().take_failure() {
            let at = (&[][..], Some(tool));
            return Err(self.stop_for(state, offer, owner, at, stop).await);
        }
        Ok((stored, waiting))
    }

    /// The plans of the calls up to the first that waits (the ones after it wait with it), and
    /// what it waits for; the stop of a call whose plan fails the run.
    async fn plan_all(
        &self,
        step: &Step<'_>,
        calls: &[ToolCallRecord],
        fresh: &HashSet<String>,
    ) -> Result<Result<(Vec<Plan>, Option<Waiting>), Stop>, RuntimeError> {
        let mut plans = Vec::with_capacity(calls.len());
        for call in calls {
            let is_fresh = fresh.contains(&call.id);
            let aborted = step.abort.is_aborted();
            match self
                .plan(step.state, call, step.offer, aborted, is_fresh)
                .await?
            {
                Plan::Wait(request) => return Ok(Ok((plans, Some(request)))),
                Plan::Fail(stop) => return Ok(Err(stop)),
                plan => plans.push(plan),
            }
        }
        Ok(Ok((plans, None)))
    }
}

/// What one step's calls run with.
#[derive(Clone, Copy)]
struct Step<'a> {
    state: &'a ThreadState,
    /// The position of the reply that made the calls: what a call stored is after it.
    reply: i64,
    offer: &'a Offer,
    abort: &'a AbortSignal,
    owner: &'a OwnerId,
}

/// How a planned call ended: with the writes of its result, or waiting (a sub-prompt's call
/// that waits for approval or variables).
enum Ran {
    Done(Vec<Write>),
    Waiting(Waiting),
}

/// Runs the planned calls of one reply together, at most [`PARALLEL_CAP`] at a time, and
/// returns the writes of their results in call order (a call answered by its plan keeps its
/// answer; one that did not start before a stop is answered "not run").
async fn run_together(
    state: &ThreadState,
    offer: &Offer,
    abort: &AbortSignal,
    plans: Vec<Plan>,
    calls: Vec<ToolCallRecord>,
) -> Vec<Write> {
    let mut results: Vec<Option<Vec<Write>>> = Vec::with_capacity(plans.len());
    let mut running = Vec::new();
    for (i, (plan, call)) in plans.into_iter().zip(calls).enumerate() {
        match plan {
            Plan::Answered(writes) => results.push(Some(writes)),
            Plan::Wait(_) | Plan::Fail(_) => results.push(None),
            // A stop raised while earlier calls ran: the ones that did not start stay so.
            Plan::Run { .. } if abort.is_aborted() => {
                let stopped = ToolResult::error(NOT_RUN_STOPPED);
                results.push(Some(answer_writes(&call, true, &stopped)));
            }
            Plan::Run {
                run:
                    Planned {
                        tool,
                        args,
                        env,
                        ran_with,
                    },
                ..
            } => {
                results.push(None);
                let ctx = context(state, abort, &call.id, env);
                let end = CallEnd::new(state, offer, &call, &args, ran_with);
                running.push((
                    i,
                    call.clone(),
                    CallTask(tokio::spawn(execute(tool, args, call, ctx, end))),
                ));
            }
        }
        // At most PARALLEL_CAP run at once: wait for the oldest before starting another.
        if running.len() == PARALLEL_CAP {
            let (at, call, handle) = running.remove(0);
            results[at] = Some(joined(handle, &call, state.redactor()).await);
        }
    }
    for (at, call, handle) in running {
        results[at] = Some(joined(handle, &call, state.redactor()).await);
    }
    results.into_iter().flatten().flatten().collect()
}

/// The intents to journal in the same batch as a reply, so that a cycle takes two commits (the
/// reply with its intents, then the result) instead of three: those of the calls that will
/// start as soon as the reply is stored. That is the first call (all of them when the prompt
/// runs calls in parallel), up to the first that may wait (its tool, or the request, asks for
/// approval, or it lacks a required variable): an intent journaled for a call that then waits
/// would read as "outcome unknown" after a restart. A crash between this batch and the call's
/// start leaves the call with an unknown outcome, as a crash during it does.
pub(super) fn early_intents(
    calls: &[ToolCallRecord],
    offer: &Offer,
    variables: &crate::variables::Resolved,
    request: &super::request::RunRequest,
) -> Vec<Write> {
    let starts_at_once = |call: &&ToolCallRecord| {
        offer.tools.get(&call.name).is_some_and(|tool| {
            tool.approval().is_none()
                && !request.approvals.contains_key(&call.name)
                && tool
                    .definition()
                    .variables
                    .iter()
                    .all(|d| !d.required || variables.get(&d.name).is_some())
        })
    };
    let take = if offer.parallel { calls.len() } else { 1 };
    calls
        .iter()
        .take(take)
        .take_while(starts_at_once)
        .map(intent_of)
        .collect()
}

/// Redacts the arguments of the intents among `writes`.
fn redact_intents(writes: &mut [Write], redactor: &Redactor) {
    if redactor.is_empty() {
        return;
    }
    for write in writes {
        if let Write::RecordIntent(intent) = write {
            intent.arguments = match serde_json::from_str::<Value>(&intent.arguments) {
                Ok(value) => redactor.json(value).to_string(),
                Err(_) => redactor.text(&intent.arguments),
            };
        }
    }
}
