//! Reading a whole Messages answer, and what its streamed form shares with it.

use super::thinking;
use crate::assemble::Assembly;
use crate::{FinishReason, ProviderToolResult, Usage};
use serde_json::Value;
use std::collections::HashMap;

pub(super) fn read(answer: &Value, out: &mut Assembly) -> Result<(), String> {
    let content = answer
        .get("content")
        .and_then(Value::as_array)
        .ok_or("no content")?;
    let mut server_calls = ServerCalls::default();
    let mut kept = Vec::new();
    for block in content {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if thinking::is_kept(kind) {
            kept.push(block.clone());
        }
        match kind {
            "text" => out.push_text(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            "thinking" => out.push_reasoning(
                block
                    .get("thinking")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            "tool_use" => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("a tool_use block has no name")?;
                let id = block.get("id").and_then(Value::as_str);
                if let Some((index, _, _)) = out.start_call(id, name) {
                    let input = block
                        .get("input")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Default::default()));
                    out.push_arguments(index, &input.to_string());
                }
            }
            "server_tool_use" => server_calls.started(block),
            kind if kind.ends_with("_tool_result") => server_calls.result(block, out),
            _ => {}
        }
    }
    out.finish = answer
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(finish);
    if let Some(usage) = answer.get("usage") {
        update_usage(&mut out.usage, usage);
    }
    out.continuity = thinking::continuity(kept);
    Ok(())
}

/// Calls of hosted tools seen so far, by id, waiting for their results.
#[derive(Default)]
pub(super) struct ServerCalls {
    calls: HashMap<String, (String, Value)>,
}

impl ServerCalls {
    /// A `server_tool_use` block (its input complete).
    pub(super) fn started(&mut self, block: &Value) {
        let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
        let name = block
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let input = block.get("input").cloned().unwrap_or(Value::Null);
        self.calls.insert(id.to_owned(), (name.to_owned(), input));
    }

    /// A `..._tool_result` block: reported with the call it answers.
    pub(super) fn result(&mut self, block: &Value, out: &mut Assembly) {
        let id = block.get("tool_use_id").and_then(Value::as_str);
        let (wire_name, input) = id
            .and_then(|id| self.calls.remove(id))
            .map_or((None, None), |(n, i)| (Some(n), Some(i)));
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let wire_name =
            wire_name.unwrap_or_else(|| kind.trim_end_matches("_tool_result").to_owned());
        let output = block.get("content").cloned().unwrap_or(Value::Null);
        // A failed run comes as content of an `..._error` type.
        let failed = output
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("_error"));
        out.provider_results.push(ProviderToolResult {
            call_id: id.map(str::to_owned),
            name: out.context().hosted_tool_name(&wire_name),
            input: input.filter(|i| !i.is_null()),
            output,
            failed,
        });
    }
}

pub(super) fn finish(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        _ => FinishReason::Other,
    }
}

/// Takes the counts a usage object reports; input is the sum of fresh and cached input.
pub(super) fn update_usage(usage: &mut Usage, value: &Value) {
    let input: Vec<u64> = [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ]
    .iter()
    .filter_map(|k| value.get(*k).and_then(Value::as_u64))
    .collect();
    if !input.is_empty() {
        usage.input_tokens = Some(input.iter().sum());
    }
    if let Some(n) = value.get("output_tokens").and_then(Value::as_u64) {
        usage.output_tokens = Some(n);
    }
}
