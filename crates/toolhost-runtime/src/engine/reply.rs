//! Asking a side's model and turning its answer into the writes that store the reply.
//!
//! The answer streams in: its pieces go out as [`LiveEvent`]s while it arrives. The reply is
//! stored before any of its calls runs, with the runtime's own call ids (each API's wire ids
//! stay on the wire), its arguments mended where [`repair_calls`] could, and in its metadata:
//! the model, usage, finish reason, reasoning, the API's continuity data and the repairs.
//! Results of provider-run tools are stored right before it as silent tool messages: the
//! provider ran them while answering and already gave them to the model, and their tool's
//! `execute` never runs.
//!
//! Before the request goes out, the conversation is checked against the APIs' tool-call
//! ordering rules ([`check_history`]): a call without a result is sent with an error result that
//! says it may not have run, never with an invented success; a result without a call is left
//! out. A repair is stored as a `history_repaired` event, once while the same fault stays.

use super::answer::malformed;
use super::events::{HistoryRepaired, ThreadEvent};
use super::live::{delta_event, new_call_id, CallIds, LiveHub, LiveKind, LiveRedaction};
use super::middleware::{middleware_error, StepInfo};
use super::offer::Offer;
use super::ownership::OwnerId;
use super::redaction::redacted_reply;
use super::repair::repair_calls;
use super::side::SideRun;
use super::turns::Position;
use super::work_state::WorkState;
use super::{Runtime, RuntimeError};
use crate::variables::Redactor;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use toolhost_core::tool::AbortSignal;
use toolhost_providers::{
    check_history, ChatMessage, ChatRole, FinishReason, HistoryRepair, ModelRequest, ModelResponse,
    ProviderToolResult, StreamDelta,
};
use toolhost_store::{
    MessageMeta, NewMessage, Role, ThreadStatus, ToolCallRecord, ToolStatus, Write,
};

impl Runtime {
    /// Asks the side's model with its request (after the offer's request middleware) and
    /// returns the writes that store its reply. A malformed answer (see [`super::answer`]) is
    /// refused and the request sent again, within the model's attempt bound, unless the run was
    /// stopped meanwhile (then there are no writes). A model failure, or malformed answers to
    /// the last attempt, mark the thread failed.
    pub(super) async fn ask(
        &self,
        thread_id: &str,
        run: &mut SideRun<'_>,
        position: &Position,
        owner: &OwnerId,
        redactor: &Redactor,
        abort: &AbortSignal,
    ) -> Result<Vec<Write>, RuntimeError> {
        let step = StepInfo {
            thread_id: thread_id.to_owned(),
            agent: run.agent.clone(),
            prompt: run.offer.prompt.clone(),
            turn: position.turn,
        };
        let mut changed = match run.offer.pipeline.request(&step, &run.request) {
            Ok(changed) => changed,
            Err(failed) => {
                return Err(self
                    .failed_in(thread_id, owner, failed, None, redactor)
                    .await)
            }
        };
        // The runtime's own request only grows, so what passed before is not checked again; a
        // request that middleware changed is checked whole.
        let (request, from) = match &changed {
            Some(r) => (r, 0),
            None => (&run.request, run.checked.min(run.request.messages.len())),
        };
        let mut mended = self
            .mend_order(thread_id, owner, request, from, &mut run.last_repairs)
            .await?;
        if changed.is_none() && mended.is_none() {
            run.checked = run.request.messages.len();
        }
        // Spec 004: the state of the work goes last in every request, as it is now. The side's
        // own request carries it for this request only (no copy of the conversation is made).
        let state = run.state.as_ref().and_then(WorkState::document);
        let state_in_place = match (
            state.map(state_message),
            mended.as_mut().or(changed.as_mut()),
        ) {
            (Some(message), Some(copy)) => {
                copy.messages.push(message);
                false
            }
            (Some(message), None) => {
                run.request.messages.push(message);
                true
            }
            (None, _) => false,
        };
        let request = mended.as_ref().or(changed.as_ref()).unwrap_or(&run.request);
        let (model, offer) = (&run.model, &run.offer);
        let ids = CallIds::default();
        let redaction = Arc::new(LiveRedaction::new(redactor.clone()));
        let sink = live_sink(
            thread_id,
            self.process.live.clone(),
            ids.clone(),
            redaction.clone(),
        );
        self.process.live.publish(
            thread_id,
            LiveKind::AnswerStarted,
            json!({"model": model.name()}),
        );
        let attempts = model.max_attempts().max(1);
        let mut attempt = 1;
        let outcome = loop {
            let response = match model.complete_streaming(request, &sink).await {
                Ok(r) => match offer.pipeline.response(&step, request, r) {
                    Ok(r) => r,
                    Err(failed) => break Err(middleware_error(failed, None, redactor)),
                },
                Err(e) => break Err(RuntimeError::from(e)),
            };
            // In spec 004's mode the reply is read into calls and text first.
            let read = match &run.combined {
                Some(combined) => combined
                    .read(response)
                    .map(|(response, kept)| (response, Some(kept)))
                    .map_err(|why| redactor.text(&why)),
                None => Ok((response, None)),
            };
            // A malformed answer is neither stored nor run: the same request goes again.
            let reason = match &read {
                Ok((response, _)) => malformed(response, redactor),
                Err(why) => Some(why.clone()),
            };
            let Some(reason) = reason else {
                break Ok(read.ok());
            };
            tracing::warn!(thread = thread_id, model = model.name(), attempt, %reason, "malformed answer refused");
            // A stop between attempts ends them: no answer is kept (no writes).
            if abort.is_aborted() {
                break Ok(None);
            }
            if attempt >= attempts {
                break Err(RuntimeError::MalformedAnswer {
                    model: model.name().to_owned(),
                    attempts: attempt,
                    reason,
                });
            }
            attempt += 1;
            sink(StreamDelta::Restarted {
                attempt,
                reason: format!("the answer was malformed: {reason}"),
            });
        };
        if state_in_place {
            run.request.messages.pop();
        }
        for rest in redaction.flush() {
            let (kind, data) = delta_event(&ids, rest);
            self.process.live.publish(thread_id, kind, data);
        }
        self.process
            .live
            .publish(thread_id, LiveKind::AnswerEnded, json!({}));
        match outcome {
            Ok(Some((response, combined))) => {
                let mut writes = reply_writes(model.name(), response, offer, &ids, position);
                if let Some(Write::AppendMessage(reply)) = writes.last_mut() {
                    reply.metadata.combined = combined;
                }
                Ok(redacted_reply(redactor, writes))
            }
            Ok(None) => Ok(Vec::new()),
            Err(e) => {
                self.commit(
                    thread_id,
                    owner,
                    vec![Write::SetStatus(ThreadStatus::Failed)],
                )
                .await?;
                Err(e)
            }
        }
    }

    /// The request with its conversation from `from` on mended to follow the tool-call
    /// ordering rules, or `None` when it already does. What middleware or an edited store left
    /// out of order is mended for this request only and logged; the stored history is not
    /// changed. A repair is stored as an event unless it is the one `last` holds (a fault that
    /// stays is recorded once).
    async fn mend_order(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        request: &ModelRequest,
        from: usize,
        last: &mut Vec<HistoryRepair>,
    ) -> Result<Option<ModelRequest>, RuntimeError> {
        let Some((tail, repairs)) = check_history(&request.messages[from..]) else {
            last.clear();
            return Ok(None);
        };
        // The same fault seen again sits at a new position as the conversation grows: it is
        // the same when the kinds and calls are.
        let same = repairs.len() == last.len()
            && repairs
                .iter()
                .zip(last.iter())
                .all(|(a, b)| a.kind == b.kind && a.call_id == b.call_id);
        if !same {
            tracing::warn!(
                thread = thread_id,
                repairs = repairs.len(),
                "the conversation broke the tool-call ordering rules and was mended for the request"
            );
            // Positions in the repairs count from `offset`, where the checked part begins.
            self.commit(
                thread_id,
                owner,
                vec![HistoryRepaired {
                    offset: from,
                    repairs: repairs.clone(),
                }
                .write()],
            )
            .await?;
            *last = repairs;
        }
        let mut messages = request.messages[..from].to_vec();
        messages.extend(tail);
        Ok(Some(ModelRequest {
            messages,
            tools: request.tools.clone(),
            tool_choice: request.tool_choice.clone(),
            parallel_tool_calls: request.parallel_tool_calls,
            response_format: request.response_format.clone(),
        }))
    }
}

/// The message that tells the model the state document of spec 004's mode.
fn state_message(document: Value) -> ChatMessage {
    ChatMessage {
        role: ChatRole::User,
        content: Some(format!(
            "[the state of the work: each result whose call named an `_outputPath`, at that path]\n{document}"
        )),
        ..ChatMessage::default()
    }
}

/// Publishes each delta as a live event, secrets redacted, when anybody listens.
fn live_sink(
    thread_id: &str,
    live: LiveHub,
    ids: CallIds,
    redaction: Arc<LiveRedaction>,
) -> impl Fn(StreamDelta) + Send + Sync {
    let thread_id = thread_id.to_owned();
    move |delta| {
        if live.is_followed(&thread_id) {
            if let Some(shown) = redaction.delta(delta) {
                let (kind, data) = delta_event(&ids, shown);
                live.publish(&thread_id, kind, data);
            }
        }
    }
}

/// The reply message and the silent results of provider-run tools.
fn reply_writes(
    model: &str,
    response: ModelResponse,
    offer: &Offer,
    ids: &CallIds,
    position: &Position,
) -> Vec<Write> {
    let mut seen = HashSet::new();
    let mut wire_ids = std::collections::BTreeMap::new();
    let mut tool_calls: Vec<ToolCallRecord> = response
        .tool_calls
        .into_iter()
        // A wire id repeated in one response is executed once.
        .filter(|c| seen.insert(c.id.clone()))
        .map(|c| {
            let id = ids.id_for(&c.id);
            wire_ids.insert(id.clone(), c.id);
            ToolCallRecord {
                id,
                name: c.name,
                arguments: c.arguments,
            }
        })
        .collect();
    let repairs = repair_calls(&mut tool_calls, &offer.tools);
    let mut metadata = MessageMeta {
        model: Some(model.to_owned()),
        usage: Some(json!(response.usage)),
        finish: (response.finish != FinishReason::Stop).then(|| json!(response.finish)),
        reasoning: response.reasoning,
        continuity: response.continuity,
        repairs,
        wire_ids,
        ..MessageMeta::default()
    };
    position.mark(&mut metadata);
    // The provider ran its tools while answering: their results come before the reply, which
    // stays the last message of the step.
    let mut writes: Vec<Write> = response
        .provider_results
        .into_iter()
        .map(|r| Write::AppendMessage(provider_result_message(r)))
        .collect();
    writes.push(Write::AppendMessage(NewMessage {
        role: Some(Role::Assistant),
        content: response.text,
        tool_calls,
        metadata,
        ..NewMessage::default()
    }));
    writes
}

/// A provider-run tool's result, stored for the record and not shown to the model again.
fn provider_result_message(result: ProviderToolResult) -> NewMessage {
    let text = match &result.output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    NewMessage {
        role: Some(Role::Tool),
        content: Some(text),
        name: Some(result.name),
        tool_call_id: Some(result.call_id.unwrap_or_else(new_call_id)),
        silent: true,
        status: Some(if result.failed {
            ToolStatus::Error
        } else {
            ToolStatus::Success
        }),
        metadata: MessageMeta {
            provider_run: true,
            input: result.input,
            output: Some(result.output),
            ..MessageMeta::default()
        },
        ..NewMessage::default()
    }
}
