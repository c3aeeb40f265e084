//! What a prompt tool's call starts its sub-prompt with, and what it returns, as plain
//! functions over the call's arguments and the sub-prompt's stored messages.

use crate::project::{SubpromptConfig, DEFAULT_MESSAGE_PROPERTY};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use toolhost_core::ToolResult;
use toolhost_store::{Message, Role, ToolStatus};

/// How a sub-prompt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::engine) enum Ending {
    /// Its model answered without calls.
    Response,
    /// It used its step budget without answering.
    MaxSteps(u32),
    /// The run was asked to stop.
    Stopped,
}

/// The first message of a sub-prompt and the attachment paths it carries: the argument
/// `initUserMessageProperty` names (a string as it is, anything else as JSON), else the default
/// `message` argument of a prompt without `requiredSchema`, else the whole arguments as JSON.
pub(in crate::engine) fn first_message(
    config: &SubpromptConfig,
    has_schema: bool,
    args: &Value,
) -> Result<(String, Vec<String>), String> {
    let property = config
        .init_user_message_property
        .as_deref()
        .or((!has_schema).then_some(DEFAULT_MESSAGE_PROPERTY));
    let text = match property {
        Some(p) => match args.get(p) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        },
        None => args.to_string(),
    };
    let paths = match &config.init_attachments_property {
        Some(p) => attachment_paths(args, p)?,
        None => Vec::new(),
    };
    Ok((text, paths))
}

/// The attachment paths the argument `property` holds (a list of strings; absent or null is
/// none), or what is wrong with it.
pub(in crate::engine) fn attachment_paths(
    args: &Value,
    property: &str,
) -> Result<Vec<String>, String> {
    match args.get(property) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    format!("`{property}` holds {item}, which is not an attachment path")
                })
            })
            .collect(),
        Some(other) => Err(format!(
            "`{property}` is {other}, not a list of attachment paths"
        )),
    }
}

/// The result of a prompt tool's call from its sub-prompt's messages, as `config` selects:
/// the text response alone is returned as text; any other selection is a JSON object with the
/// selected keys (`response`, `toolCalls`, `errors`). The call fails when the sub-prompt ended
/// without a response.
pub(in crate::engine) fn call_result(
    config: &SubpromptConfig,
    messages: &[Message],
    ending: &Ending,
) -> ToolResult {
    let response = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
        .filter(|_| *ending == Ending::Response)
        .and_then(|m| m.content.clone())
        .unwrap_or_default();
    let results: HashMap<&str, &Message> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| Some((m.tool_call_id.as_deref()?, m)))
        .collect();
    let mut calls = Vec::new();
    let mut errors = Vec::new();
    for m in messages.iter().filter(|m| m.role == Role::Assistant) {
        for c in &m.tool_calls {
            let result = results.get(c.id.as_str());
            let failed = result.is_some_and(|r| r.status == Some(ToolStatus::Error));
            let text = result.and_then(|r| r.content.clone());
            calls.push(json!({
                "name": c.name,
                "arguments": serde_json::from_str::<Value>(&c.arguments)
                    .unwrap_or_else(|_| Value::String(c.arguments.clone())),
                "status": if failed { "error" } else { "success" },
                "result": text,
            }));
            if failed {
                errors.push(json!({"tool": c.name, "error": text}));
            }
        }
    }
    let ended_early = match ending {
        Ending::Response => None,
        Ending::MaxSteps(n) => Some(format!(
            "the sub-prompt used its {n} steps without answering"
        )),
        Ending::Stopped => Some("the sub-prompt was stopped before it answered".to_owned()),
    };
    if let Some(why) = &ended_early {
        errors.push(json!({"error": why}));
    }
    let only_text =
        config.include_text_response && !config.include_tool_calls && !config.include_errors;
    let text = if only_text {
        match &ended_early {
            // Said even without `includeErrors`: an empty text would read as an answer.
            Some(why) => why.clone(),
            None => response,
        }
    } else {
        let mut out = Map::new();
        if config.include_text_response {
            out.insert("response".into(), Value::String(response));
        }
        if config.include_tool_calls {
            out.insert("toolCalls".into(), Value::Array(calls));
        }
        if config.include_errors {
            out.insert("errors".into(), Value::Array(errors));
        }
        Value::Object(out).to_string()
    };
    match ended_early {
        None => ToolResult::success(text),
        Some(_) => ToolResult::error(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_message_comes_from_the_named_argument_or_the_whole_arguments() {
        let mut config = SubpromptConfig::named("p");
        let args = json!({"message": "hi", "topic": {"a": 1}, "files": ["/attachments/x"]});
        assert_eq!(first_message(&config, false, &args).unwrap().0, "hi");
        assert_eq!(
            first_message(&config, true, &args).unwrap().0,
            args.to_string()
        );
        config.init_user_message_property = Some("topic".into());
        config.init_attachments_property = Some("files".into());
        let (text, paths) = first_message(&config, true, &args).unwrap();
        assert_eq!(text, r#"{"a":1}"#);
        assert_eq!(paths, ["/attachments/x"]);
        let bad = json!({"files": [3]});
        assert!(first_message(&config, true, &bad).is_err());
    }
}
