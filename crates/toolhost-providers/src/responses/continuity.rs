//! What a Responses reply carries back in later turns.
//!
//! Continuity shape: `{"responses": {"output": [ENTRY, ...], "responseId": ID}}`, one entry per
//! output item of the reply, in the reply's order:
//! - `reasoning` items (with their `encrypted_content`), hosted tools' items
//!   (`web_search_call`, ...) and items of types this adapter does not know: as received, and
//!   sent back as they are;
//! - `{"type": "message"}`: where the reply's text stood;
//! - `{"type": "function_call", "call": N, "call_id": ..., "id": ...}`: where call N of the
//!   reply's `tool_calls` stood (by position, never by the runtime's id), with the wire's ids.
//!
//! So reasoning goes back right before the calls it led to, as the API requires, and the
//! thread holds all it needs itself: nothing depends on state kept by OpenAI unless the
//! definition opts in (`previous_response_id`).

use crate::api::WireTools;
use crate::ChatMessage;
use serde_json::{json, Value};

/// The key of this API in a reply's continuity.
pub(crate) const KEY: &str = "responses";

/// The output of one reply as it is kept, built item by item.
#[derive(Debug, Default)]
pub(super) struct Kept {
    /// Entries with the `output_index` they came at.
    entries: Vec<(u64, Value)>,
    /// The response's id.
    pub response_id: Option<String>,
}

impl Kept {
    /// Keeps an item as received.
    pub(super) fn item(&mut self, at: u64, item: &Value) {
        self.entries.push((at, item.clone()));
    }

    /// Keeps the place of the reply's text.
    pub(super) fn message(&mut self, at: u64) {
        self.entries.push((at, json!({"type": "message"})));
    }

    /// Keeps the place and wire ids of call `call` of the reply.
    pub(super) fn call(&mut self, at: u64, call: usize, item: &Value) {
        let mut entry = json!({"type": "function_call", "call": call});
        for key in ["call_id", "id"] {
            if let Some(v) = item.get(key).filter(|v| v.is_string()) {
                entry[key] = v.clone();
            }
        }
        self.entries.push((at, entry));
    }

    /// The continuity of the reply; `None` when it had no output and no id.
    pub(super) fn finish(mut self) -> Option<Value> {
        if self.entries.is_empty() && self.response_id.is_none() {
            return None;
        }
        // Stable: entries of one index keep their order.
        self.entries.sort_by_key(|(at, _)| *at);
        let output: Vec<Value> = self.entries.into_iter().map(|(_, v)| v).collect();
        let mut kept = json!({ "output": output });
        if let Some(id) = self.response_id {
            kept["responseId"] = id.into();
        }
        Some(json!({ KEY: kept }))
    }
}

fn output(m: &ChatMessage) -> &[Value] {
    m.continuity
        .as_ref()
        .and_then(|c| c.get(KEY))
        .and_then(|c| c.get("output"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn call_position(entry: &Value) -> Option<usize> {
    if entry.get("type").and_then(Value::as_str) != Some("function_call") {
        return None;
    }
    entry
        .get("call")
        .and_then(Value::as_u64)
        .map(|n| n as usize)
}

/// The wire `call_id` of each of an assistant message's calls, by position, where its
/// continuity keeps one.
pub(super) fn wire_call_ids(m: &ChatMessage) -> Vec<Option<String>> {
    let mut ids = vec![None; m.tool_calls.len()];
    for entry in output(m) {
        if let Some(slot) = call_position(entry).and_then(|n| ids.get_mut(n)) {
            *slot = entry
                .get("call_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    ids
}

/// The input items of an assistant message: its kept output in the reply's order, its text
/// and calls in their places; what the continuity does not place comes after.
pub(super) fn assistant_items(
    m: &ChatMessage,
    wire: &WireTools,
    wire_id: &dyn Fn(&str) -> String,
    out: &mut Vec<Value>,
) {
    let mut items = Vec::new();
    turn_items(m, wire, wire_id, &mut items);
    // Reasoning must be followed by what it led to: a turn of reasoning alone (an answer cut
    // off while thinking) is left out, as the API would refuse it.
    let reasoning = |i: &Value| i.get("type").and_then(Value::as_str) == Some("reasoning");
    if !items.iter().all(reasoning) {
        out.extend(items);
    }
}

fn turn_items(
    m: &ChatMessage,
    wire: &WireTools,
    wire_id: &dyn Fn(&str) -> String,
    out: &mut Vec<Value>,
) {
    let text = m.content.as_deref().unwrap_or_default();
    let mut text_sent = text.is_empty();
    let mut sent = vec![false; m.tool_calls.len()];
    let call_item = |n: usize, entry: Option<&Value>| {
        let c = &m.tool_calls[n];
        let arguments = if c.arguments.trim().is_empty() {
            "{}"
        } else {
            &c.arguments
        };
        let mut item = json!({"type": "function_call", "call_id": wire_id(&c.id),
                              "name": wire.context.wire_name(&c.name), "arguments": arguments});
        if let Some(id) = entry.and_then(|e| e.get("id")).filter(|v| v.is_string()) {
            item["id"] = id.clone();
        }
        item
    };
    for entry in output(m) {
        match (
            entry.get("type").and_then(Value::as_str),
            call_position(entry),
        ) {
            (Some("function_call"), Some(n)) if n < sent.len() && !sent[n] => {
                sent[n] = true;
                out.push(call_item(n, Some(entry)));
            }
            (Some("function_call"), _) => {}
            (Some("message"), _) if entry.get("content").is_none() => {
                if !text_sent {
                    text_sent = true;
                    out.push(json!({"role": "assistant", "content": text}));
                }
            }
            _ => out.push(entry.clone()),
        }
    }
    if !text_sent {
        out.push(json!({"role": "assistant", "content": text}));
    }
    for n in (0..sent.len()).filter(|n| !sent[*n]) {
        out.push(call_item(n, None));
    }
}

/// With OpenAI keeping state: the id of the last reply's response, and the messages after it
/// (all of them when no reply names one).
pub(super) fn after_last_response(messages: &[ChatMessage]) -> (Option<String>, &[ChatMessage]) {
    for (i, m) in messages.iter().enumerate().rev() {
        let id = m
            .continuity
            .as_ref()
            .and_then(|c| c.get(KEY))
            .and_then(|c| c.get("responseId"))
            .and_then(Value::as_str);
        if let Some(id) = id {
            return (Some(id.to_owned()), &messages[i + 1..]);
        }
    }
    (None, messages)
}
