//! Assembling one answer from what an API sends, whole or in pieces, and the call-id policy.
//!
//! Call ids: a call keeps the id the API issued. A call whose id repeats one already seen in
//! this answer is dropped (the first wins: it is the one whose arguments the model wrote
//! first). An id that is missing gets a fresh `call_th...` id; an id that repeats one already
//! in the conversation (some compatible servers count `call_0`, `call_1` anew every turn) gets
//! a `_2`, `_3`... suffix, so that an id names one call in a whole thread.

use crate::api::CallContext;
use crate::{FinishReason, ModelResponse, ModelToolCall, ProviderToolResult, Usage};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The prefix of ids toolhost makes up for calls that came without one.
pub(crate) const MADE_UP_ID_PREFIX: &str = "call_th";

struct Call {
    id: String,
    wire_name: String,
    arguments: String,
}

/// One answer being put together.
pub(crate) struct Assembly {
    context: CallContext,
    text: Option<String>,
    reasoning: Option<String>,
    calls: Vec<Call>,
    wire_ids: HashSet<String>,
    given_ids: HashSet<String>,
    /// Bytes of text, reasoning, call ids, names and arguments taken in so far.
    size: usize,
    /// Results of hosted tools, in order.
    pub provider_results: Vec<ProviderToolResult>,
    /// Token counts.
    pub usage: Usage,
    /// Why the model stopped, once known.
    pub finish: Option<FinishReason>,
    /// What the API needs back with this reply in later turns (see
    /// [`ModelResponse::continuity`]); set by the API's reader.
    pub continuity: Option<Value>,
}

impl Assembly {
    /// An empty answer to a request with this context.
    pub(crate) fn new(context: CallContext) -> Self {
        Assembly {
            context,
            text: None,
            reasoning: None,
            calls: Vec::new(),
            wire_ids: HashSet::new(),
            given_ids: HashSet::new(),
            size: 0,
            provider_results: Vec::new(),
            usage: Usage::default(),
            finish: None,
            continuity: None,
        }
    }

    /// The request's context.
    pub(crate) fn context(&self) -> &CallContext {
        &self.context
    }

    /// How many bytes of text, reasoning, call ids, names and arguments it holds: what a size
    /// limit on the reply is checked against.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Appends reply text.
    pub(crate) fn push_text(&mut self, text: &str) {
        self.size += text.len();
        self.text.get_or_insert_with(String::new).push_str(text);
    }

    /// Appends reasoning text.
    pub(crate) fn push_reasoning(&mut self, text: &str) {
        self.size += text.len();
        self.reasoning
            .get_or_insert_with(String::new)
            .push_str(text);
    }

    /// Starts a call; returns its index in this answer, its id and its tool's name, or `None`
    /// when its wire id repeats one of this answer (the call is then dropped).
    pub(crate) fn start_call(
        &mut self,
        wire_id: Option<&str>,
        wire_name: &str,
    ) -> Option<(usize, String, String)> {
        let wire_id = wire_id.filter(|id| !id.is_empty());
        if let Some(id) = wire_id {
            if !self.wire_ids.insert(id.to_owned()) {
                return None;
            }
        }
        let id = match wire_id {
            Some(id) if !self.taken(id) => id.to_owned(),
            Some(id) => (2..)
                .map(|n| format!("{id}_{n}"))
                .find(|c| !self.taken(c))
                .unwrap_or_else(made_up_id),
            None => made_up_id(),
        };
        self.given_ids.insert(id.clone());
        self.size += id.len() + wire_name.len();
        self.calls.push(Call {
            id: id.clone(),
            wire_name: wire_name.to_owned(),
            arguments: String::new(),
        });
        Some((self.calls.len() - 1, id, self.context.tool_name(wire_name)))
    }

    fn taken(&self, id: &str) -> bool {
        self.context.history_ids.contains(id) || self.given_ids.contains(id)
    }

    /// Appends argument text to call `index`.
    pub(crate) fn push_arguments(&mut self, index: usize, fragment: &str) {
        if let Some(call) = self.calls.get_mut(index) {
            self.size += fragment.len();
            call.arguments.push_str(fragment);
        }
    }

    /// Sets a call's name where the API sends it after the call started.
    pub(crate) fn set_wire_name(&mut self, index: usize, wire_name: &str) {
        if let Some(call) = self.calls.get_mut(index) {
            call.wire_name = wire_name.to_owned();
        }
    }

    /// The finished answer: names mapped back, strict arguments lifted, and the finish reason
    /// `tool_calls` whenever calls were made and the API said only that it stopped.
    pub(crate) fn finish(self) -> ModelResponse {
        let context = self.context;
        let tool_calls: Vec<ModelToolCall> = self
            .calls
            .into_iter()
            .map(|c| {
                let name = context.tool_name(&c.wire_name);
                let arguments = context.lift(&name, c.arguments);
                ModelToolCall {
                    id: c.id,
                    name,
                    arguments,
                }
            })
            .collect();
        let finish = match self.finish.unwrap_or(FinishReason::Stop) {
            FinishReason::Stop if !tool_calls.is_empty() => FinishReason::ToolCalls,
            other => other,
        };
        ModelResponse {
            text: self
                .text
                .filter(|t| !t.is_empty())
                .map(|t| context.lift_structured(t)),
            tool_calls,
            usage: self.usage,
            finish,
            reasoning: self.reasoning.filter(|t| !t.is_empty()),
            provider_results: self.provider_results,
            continuity: self.continuity,
        }
    }
}

/// A fresh id: the clock and a process-wide counter.
fn made_up_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{MADE_UP_ID_PREFIX}{nanos:x}_{n}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_of_a_repeated_id_wins_and_history_ids_are_not_reused() {
        let mut context = CallContext::default();
        context.history_ids.insert("call_0".to_owned());
        let mut a = Assembly::new(context);
        let (i, id, _) = a.start_call(Some("call_0"), "t").unwrap();
        a.push_arguments(i, "{\"a\":1}");
        assert_eq!(id, "call_0_2");
        assert!(a.start_call(Some("call_0"), "t").is_none());
        let (_, made, _) = a.start_call(None, "t").unwrap();
        assert!(made.starts_with(MADE_UP_ID_PREFIX));
        let r = a.finish();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(r.finish, FinishReason::ToolCalls);
    }
}
