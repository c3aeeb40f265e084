//! Reading a whole chat-completions answer.

use crate::assemble::Assembly;
use crate::{FinishReason, ProviderToolResult, Usage};
use serde_json::Value;

pub(super) fn read(answer: &Value, out: &mut Assembly) -> Result<(), String> {
    let choice = answer
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or("no choices")?;
    let message = choice.get("message").ok_or("the choice has no message")?;
    if let Some(text) = text_of(message.get("content")) {
        out.push_text(&text);
    } else if let Some(refusal) = message.get("refusal").and_then(Value::as_str) {
        out.push_text(refusal);
    }
    if let Some(reasoning) = reasoning_of(message) {
        out.push_reasoning(reasoning);
    }
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function").ok_or("a tool call has no function")?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or("a tool call has no name")?;
        let id = call.get("id").and_then(Value::as_str);
        if let Some((index, _, _)) = out.start_call(id, name) {
            let arguments = match function.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            out.push_arguments(index, &arguments);
        }
    }
    annotations(message.get("annotations"), out);
    out.finish = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(finish);
    if let Some(usage) = answer.get("usage") {
        out.usage = usage_of(usage);
    }
    Ok(())
}

/// Message content as text: a string, or the text parts of an array.
pub(super) fn text_of(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            Some(text)
        }
        _ => None,
    }
}

/// The reasoning text some servers add (`reasoning_content`, `reasoning`).
pub(super) fn reasoning_of(message: &Value) -> Option<&str> {
    message
        .get("reasoning_content")
        .or_else(|| message.get("reasoning"))
        .and_then(Value::as_str)
}

/// Web-search citations, reported as the hosted search tool's result.
pub(super) fn annotations(value: Option<&Value>, out: &mut Assembly) {
    let Some(Value::Array(items)) = value else {
        return;
    };
    if items.is_empty() {
        return;
    }
    let Some(wire) = ["web_search", "web_search_preview"]
        .into_iter()
        .find(|n| out.context().hosts(n))
    else {
        return;
    };
    let name = out.context().hosted_tool_name(wire);
    match out.provider_results.iter_mut().find(|r| r.name == name) {
        Some(ProviderToolResult {
            output: Value::Array(existing),
            ..
        }) => existing.extend(items.iter().cloned()),
        _ => out.provider_results.push(ProviderToolResult {
            call_id: None,
            name,
            input: None,
            output: Value::Array(items.clone()),
            failed: false,
        }),
    }
}

pub(super) fn finish(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        _ => FinishReason::Other,
    }
}

pub(super) fn usage_of(usage: &Value) -> Usage {
    Usage {
        input_tokens: usage.get("prompt_tokens").and_then(Value::as_u64),
        output_tokens: usage.get("completion_tokens").and_then(Value::as_u64),
    }
}
