//! Running one validated call: its context, the call itself (in a task of its own when calls
//! run in parallel), and what its result passes through before it is stored.

use super::content::checked_content;
use super::control::RunControl;
use super::middleware::{CallInfo, Pipeline};
use super::offer::Offer;
use super::records::result_message;
use super::redaction::result_writes;
use super::state::ThreadState;
use super::stop::Stop;
use crate::variables::{Redactor, Resolved};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use toolhost_core::tool::AbortSignal;
use toolhost_core::variables::VariableKind;
use toolhost_core::{AnyTool, ToolContext, ToolResult, ToolSetError};
use toolhost_store::{HookOutcome, RanWith, ToolCallRecord, Usage, Write};

/// The context of one call: its ids, the run's abort signal, and the thread with the values of
/// the variables the tool declared (secrets opened for this call only).
pub(super) fn context(
    state: &ThreadState,
    abort: &AbortSignal,
    call_id: &str,
    env: BTreeMap<String, String>,
) -> ToolContext {
    ToolContext::new(call_id)
        .with_thread(state.thread_id())
        .with_abort(abort.clone())
        .with_extension(state.for_call(call_id, env))
}

pub(super) fn call_info(state: &ThreadState, offer: &Offer, call: &ToolCallRecord) -> CallInfo {
    CallInfo {
        thread_id: state.thread_id().to_owned(),
        agent: state.agent().to_owned(),
        prompt: offer.prompt.clone(),
        call_id: call.id.clone(),
        tool_call_id: offer.wire_id(&call.id),
        tool: call.name.clone(),
        turn: state.turn(),
    }
}

/// What a call's result passes through after it ran: output middleware and hooks, then
/// redaction of secret values.
pub(super) struct CallEnd {
    info: CallInfo,
    pipeline: Arc<Pipeline>,
    redactor: Arc<Redactor>,
    /// The run's control and the thread's values: a secret the call set (`setEnv`) is redacted
    /// from its result too.
    control: Arc<RunControl>,
    variables: Arc<Resolved>,
    /// The arguments the call runs with, when they are not the ones its call shows.
    ran_with: Option<RanWith>,
    /// The arguments it runs with, for output middleware (kept only when there is some).
    args: Option<Value>,
    /// What tools may store, and what this call wrote: its returned attachments count too.
    quotas: Arc<super::quotas::WriteQuotas>,
    usage: Arc<super::quotas::CallUsage>,
}

impl CallEnd {
    pub(super) fn new(
        state: &ThreadState,
        offer: &Offer,
        call: &ToolCallRecord,
        args: &Value,
        ran_with: Option<RanWith>,
    ) -> Self {
        Self {
            args: (!offer.pipeline.has_no_middleware()).then(|| args.clone()),
            quotas: state.write_quotas().clone(),
            usage: Arc::default(),
            info: call_info(state, offer, call),
            pipeline: offer.pipeline.clone(),
            redactor: state.redactor().clone(),
            control: state.control().clone(),
            variables: state.variables_shared().clone(),
            ran_with,
        }
    }

    /// The same end, counting the call's returned attachments in `usage` (the call's own).
    fn counted_in(mut self, usage: Arc<super::quotas::CallUsage>) -> Self {
        self.usage = usage;
        self
    }

    /// The writes that store `result` as the call's: after output middleware and hooks, with
    /// its content checked and secret values redacted.
    pub(super) fn finish(self, call: ToolCallRecord, result: ToolResult) -> Vec<Write> {
        let set = self.control.env_secrets();
        let redactor = if set.is_empty() {
            self.redactor
        } else {
            let mut values = (*self.variables).clone();
            values.merge(set.into_iter().map(|(k, v)| (k, v, VariableKind::Secret)));
            Arc::new(values.redactor())
        };
        let mut ended = None;
        let result = if self.pipeline.is_empty() {
            result
        } else {
            let args = self.args.unwrap_or(Value::Null);
            match self.pipeline.output(&self.info, &args, result, &redactor) {
                Ok((result, None)) => result,
                Ok((result, Some(reason))) => {
                    ended = Some(reason.clone());
                    self.control
                        .stop_after_call(Stop::EndedByHook { reason }, &self.info.tool);
                    result
                }
                // The run stops (see `calls`); what the tool returned is not stored.
                Err(failed) => {
                    let text = format!(
                        "the result was withheld: the run stopped because {} middleware failed",
                        failed.0.as_str()
                    );
                    self.control
                        .stop_after_call(Stop::Middleware(failed), &self.info.tool);
                    ToolResult::error(text)
                }
            }
        };
        // What the model will be sent on every later request must be something an API accepts.
        let result = checked_content(result);
        let (quotas, usage) = (self.quotas, self.usage);
        let charge_files = |bytes| {
            usage
                .charge(&quotas, Usage::FileBytes, bytes)
                .map_err(|e| e.to_string())
        };
        let mut writes = result_writes(call, result, &redactor, self.ran_with, &charge_files);
        if let Some(reason) = ended {
            mark_hook(&mut writes, HookOutcome::RunEnded { reason });
        }
        writes
    }
}

/// Runs a validated call and returns the writes that store its result and attachments; a result
/// whose content blocks an API would refuse becomes an error naming the block, and any secret
/// value in the result is redacted before it is stored.
pub(super) async fn execute(
    tool: AnyTool,
    args: Value,
    call: ToolCallRecord,
    ctx: ToolContext,
    end: CallEnd,
) -> Vec<Write> {
    tracing::debug!(tool = %call.name, call_id = %call.id, "call started");
    // What the call writes while it runs and the attachments it returns share one count.
    let end = match ctx.get::<ThreadState>() {
        Some(state) => end.counted_in(state.call_usage().clone()),
        None => end,
    };
    let started = std::time::Instant::now();
    let result = match tool.execute_validated(args, ctx).await {
        Ok(r) => r,
        Err(failure) => ToolSetError::Call {
            tool_name: call.name.clone(),
            failure,
        }
        .into_result(),
    };
    let ran_for = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    tracing::debug!(
        tool = %call.name,
        call_id = %call.id,
        success = result.is_success(),
        "call ended"
    );
    let mut writes = end.finish(call, result);
    for write in &mut writes {
        if let Write::CompleteCall { result, .. } = write {
            result.metadata.duration_ms = Some(ran_for);
        }
    }
    writes
}

/// The writes of a spawned call; a task that failed still gives its call an error result.
/// A call running in a task of its own; dropped unfinished (the run was cancelled), it is
/// aborted rather than left running with no one to store its result.
pub(super) struct CallTask(pub tokio::task::JoinHandle<Vec<Write>>);

impl Drop for CallTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(super) async fn joined(
    mut task: CallTask,
    call: &ToolCallRecord,
    redactor: &Redactor,
) -> Vec<Write> {
    (&mut task.0).await.unwrap_or_else(|e| {
        // A panic's message may quote what the tool was given.
        let failed = ToolResult::error(
            redactor.text(&format!("ToolCallError: the call's task failed: {e}")),
        );
        vec![Write::CompleteCall {
            call_id: call.id.clone(),
            result: result_message(&call.name, &failed),
        }]
    })
}

/// Records what a hook decided on the result message among `writes`.
pub(super) fn mark_hook(writes: &mut [Write], outcome: HookOutcome) {
    for write in writes {
        if let Write::CompleteCall { result, .. } = write {
            result.metadata.hook = Some(outcome.clone());
        }
    }
}
