//! Reading Responses output items, whole or streamed: a whole answer is its `output` items, each
//! taken as if it had been added then done, so both paths build the same reply.

use super::continuity::Kept;
use crate::assemble::Assembly;
use crate::delta::{DeltaSink, StreamDelta};
use crate::{FinishReason, ProviderToolResult, Usage};
use serde_json::Value;
use std::collections::HashMap;

/// What one output item (by `output_index`) has given so far.
#[derive(Default)]
struct Slot {
    /// The call it is: its index and id in the reply; `None` when not a call or dropped.
    call: Option<(usize, String)>,
    /// A duplicate call, dropped.
    dropped: bool,
    wrote_text: bool,
    wrote_reasoning: bool,
    wrote_arguments: bool,
}

/// The items of one answer.
#[derive(Default)]
pub(super) struct Items {
    slots: HashMap<u64, Slot>,
    /// What the reply keeps for later turns.
    pub kept: Kept,
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl Items {
    /// An item has started: a call is opened (and reported) at once.
    pub(super) fn added(&mut self, at: u64, item: &Value, out: &mut Assembly, sink: &DeltaSink) {
        let slot = self.slots.entry(at).or_default();
        if text(item, "type") != "function_call" || slot.call.is_some() || slot.dropped {
            return;
        }
        let id = item.get("call_id").and_then(Value::as_str);
        match out.start_call(id, text(item, "name")) {
            Some((index, id, name)) => {
                sink(StreamDelta::ToolCallStarted {
                    index,
                    id: id.clone(),
                    name,
                });
                slot.call = Some((index, id));
            }
            None => slot.dropped = true,
        }
    }

    /// A piece of reply text.
    pub(super) fn text(&mut self, at: u64, piece: &str, out: &mut Assembly, sink: &DeltaSink) {
        if piece.is_empty() {
            return;
        }
        self.slots.entry(at).or_default().wrote_text = true;
        out.push_text(piece);
        sink(StreamDelta::Text(piece.to_owned()));
    }

    /// A piece of a reasoning summary.
    pub(super) fn reasoning(&mut self, at: u64, piece: &str, out: &mut Assembly, sink: &DeltaSink) {
        if piece.is_empty() {
            return;
        }
        self.slots.entry(at).or_default().wrote_reasoning = true;
        out.push_reasoning(piece);
        sink(StreamDelta::Reasoning(piece.to_owned()));
    }

    /// A piece of a call's arguments.
    pub(super) fn arguments(&mut self, at: u64, piece: &str, out: &mut Assembly, sink: &DeltaSink) {
        let Some(slot) = self.slots.get_mut(&at) else {
            return;
        };
        let Some((index, id)) = &slot.call else {
            return;
        };
        if piece.is_empty() {
            return;
        }
        slot.wrote_arguments = true;
        out.push_arguments(*index, piece);
        sink(StreamDelta::ToolCallArguments {
            index: *index,
            id: id.clone(),
            fragment: piece.to_owned(),
        });
    }

    /// An item is done: what its deltas did not bring is taken from it, and it is kept.
    pub(super) fn done(&mut self, at: u64, item: &Value, out: &mut Assembly, sink: &DeltaSink) {
        let kind = text(item, "type");
        if kind == "function_call" {
            self.added(at, item, out, sink);
            let wrote = self.slots.get(&at).is_some_and(|s| s.wrote_arguments);
            if !wrote {
                let arguments = match item.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(other) => other.to_string(),
                };
                self.arguments(at, &arguments, out, sink);
            }
            if let Some((index, _)) = self.slots.get(&at).and_then(|s| s.call.clone()) {
                self.kept.call(at, index, item);
            }
            return;
        }
        let slot = self.slots.entry(at).or_default();
        let (wrote_text, wrote_reasoning) = (slot.wrote_text, slot.wrote_reasoning);
        match kind {
            "message" => {
                if !wrote_text {
                    for part in item
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        match text(part, "type") {
                            "output_text" => self.text(at, text(part, "text"), out, sink),
                            "refusal" => self.text(at, text(part, "refusal"), out, sink),
                            _ => {}
                        }
                    }
                }
                self.kept.message(at);
            }
            "reasoning" => {
                if !wrote_reasoning {
                    let summary = item.get("summary").and_then(Value::as_array);
                    let parts: Vec<&str> = summary
                        .into_iter()
                        .flatten()
                        .map(|p| text(p, "text"))
                        .filter(|t| !t.is_empty())
                        .collect();
                    self.reasoning(at, &parts.join("\n\n"), out, sink);
                }
                self.kept.item(at, item);
            }
            other => {
                if let Some(result) = hosted_result(other, item, out) {
                    out.provider_results.push(result);
                } else {
                    tracing::debug!(item = other, "output item of a type not read; kept as is");
                }
                // Hosted tools' items, and items this adapter does not know, go back as they
                // came: the API wrote them, and it may need them in the next turn.
                self.kept.item(at, item);
            }
        }
    }
}

/// The result of a hosted tool's item, if it is one.
fn hosted_result(kind: &str, item: &Value, out: &Assembly) -> Option<ProviderToolResult> {
    let (wire, input) = match kind {
        "web_search_call" => {
            let wire = ["web_search", "web_search_preview"]
                .into_iter()
                .find(|n| out.context().hosts(n))
                .unwrap_or("web_search");
            (wire, item.get("action").cloned())
        }
        "file_search_call" => ("file_search", item.get("queries").cloned()),
        "code_interpreter_call" => ("code_interpreter", item.get("code").cloned()),
        "mcp_call" => ("mcp", item.get("arguments").cloned()),
        "image_generation_call" => ("image_generation", None),
        _ => return None,
    };
    let failed =
        text(item, "status") == "failed" || item.get("error").is_some_and(|e| !e.is_null());
    Some(ProviderToolResult {
        call_id: item.get("id").and_then(Value::as_str).map(str::to_owned),
        name: out.context().hosted_tool_name(wire),
        input: input.filter(|v| !v.is_null()),
        output: item.clone(),
        failed,
    })
}

/// How a response ended: its status and why it is incomplete, and its usage.
pub(super) fn ended(response: &Value, out: &mut Assembly) {
    out.finish = Some(match text(response, "status") {
        "incomplete" => match response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
        {
            Some("max_output_tokens") => FinishReason::Length,
            _ => FinishReason::Other,
        },
        _ => FinishReason::Stop,
    });
    if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
        out.usage = Usage {
            input_tokens: usage.get("input_tokens").and_then(Value::as_u64),
            output_tokens: usage.get("output_tokens").and_then(Value::as_u64),
        };
    }
}

/// Reads a whole answer (a `response` object).
pub(super) fn read(answer: &Value, out: &mut Assembly) -> Result<(), String> {
    if text(answer, "status") == "failed" {
        let error = answer
            .get("error")
            .map(Value::to_string)
            .unwrap_or_default();
        return Err(format!("the response failed: {error}"));
    }
    let output = answer
        .get("output")
        .and_then(Value::as_array)
        .ok_or("no output")?;
    let mut items = Items::default();
    let quiet = |_: StreamDelta| {};
    for (at, item) in output.iter().enumerate() {
        items.added(at as u64, item, out, &quiet);
        items.done(at as u64, item, out, &quiet);
    }
    items.kept.response_id = answer.get("id").and_then(Value::as_str).map(str::to_owned);
    ended(answer, out);
    out.continuity = items.kept_continuity();
    Ok(())
}

impl Items {
    /// The reply's continuity, taken once.
    pub(super) fn kept_continuity(&mut self) -> Option<Value> {
        std::mem::take(&mut self.kept).finish()
    }
}
