//! Mending a reply's tool-call arguments before the reply is stored.
//!
//! The ladder, in order:
//! 1. arguments that parse and fit the tool's schema are kept exactly as the model wrote them;
//! 2. otherwise the syntax repairs and schema-led coercions of [`toolhost_core::repair`] are
//!    tried, and kept only when the result fits the schema;
//! 3. otherwise the call keeps its arguments and is answered, without running, with an error
//!    that lists what is wrong and asks the model to call again ([`reask_text`]).
//!
//! A kept repair replaces the stored arguments (so the journal, approvals and the tool all see
//! one value) and is recorded in the reply's metadata under `repairs` with the original text and
//! one note per repair. The model sees it too: [`super::history::ChatView`] puts the notes in
//! front of that call's result.
//!
//! Text that only a lenient parser accepts (duplicate keys, non-finite numbers, nesting past the
//! bound) is never "repaired": which of two values the model meant is not knowable.

use serde_json::Value;
use toolhost_core::repair::repair_arguments;
use toolhost_core::{parse_tool_args, AnyTool, ToolSet, ToolSetError};
use toolhost_store::{ArgumentRepair, ToolCallRecord};

/// Arguments that fit their tool, as the engine takes a call's argument text.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// The arguments as the tool receives them: validated, with defaults applied.
    pub arguments: Value,
    /// The mended value, as it is stored in place of the text; `None` when the text fit as
    /// written (it is then kept byte for byte).
    pub mended: Option<Value>,
    /// One note per kind of repair made (empty when none was needed).
    pub notes: Vec<String>,
}

/// Checks a call's argument `text` for `tool` exactly as a model's call is checked: text that
/// parses and fits is taken as written; otherwise the syntax repairs and schema-led coercions
/// are tried and kept only when the result fits. When neither works, the error says what is
/// wrong with the text as written (the model is told the same and asked to call again).
pub fn fit_arguments(tool: &AnyTool, text: &str) -> Result<Fitted, ToolSetError> {
    let tool_name = || tool.name().to_owned();
    let as_written = parse_tool_args(text)
        .map_err(|source| ToolSetError::Json {
            tool_name: tool_name(),
            source,
        })
        .and_then(|args| {
            tool.validate(args).map_err(|failure| ToolSetError::Call {
                tool_name: tool_name(),
                failure,
            })
        });
    let error = match as_written {
        Ok(arguments) => {
            return Ok(Fitted {
                arguments,
                mended: None,
                notes: Vec::new(),
            })
        }
        Err(e) => e,
    };
    // Parses leniently but not strictly (duplicate keys, ...): ambiguous, not repairable.
    let ambiguous =
        matches!(error, ToolSetError::Json { .. }) && serde_json::from_str::<Value>(text).is_ok();
    if ambiguous {
        return Err(error);
    }
    let Ok(repair) = repair_arguments(text, &tool.definition().parameters) else {
        return Err(error);
    };
    if repair.notes.is_empty() {
        return Err(error);
    }
    match tool.validate(repair.value.clone()) {
        Ok(arguments) => Ok(Fitted {
            arguments,
            mended: Some(repair.value),
            notes: repair.notes,
        }),
        Err(_) => Err(error),
    }
}

/// Mends the arguments of `calls` that do not parse or do not fit their tool's schema, where a
/// repair makes them fit, and returns what was done. Calls of tools not in `tools` are left to
/// the planner, which answers them with the list of tools that exist.
pub(super) fn repair_calls(calls: &mut [ToolCallRecord], tools: &ToolSet) -> Vec<ArgumentRepair> {
    let mut repairs = Vec::new();
    for call in calls {
        let Some(tool) = tools.get(&call.name) else {
            continue;
        };
        let Ok(Fitted {
            mended: Some(value),
            notes,
            ..
        }) = fit_arguments(tool, &call.arguments)
        else {
            continue;
        };
        let original = std::mem::replace(&mut call.arguments, value.to_string());
        repairs.push(ArgumentRepair {
            call_id: call.id.clone(),
            original,
            notes,
        });
    }
    repairs
}

/// The line a model sees before the result of a call whose arguments were mended.
pub(super) fn repair_notice(notes: &[String]) -> String {
    format!(
        "[toolhost repaired the arguments of this call before running it: {}.]",
        notes.join("; ")
    )
}

/// The error a model sees for arguments no repair could mend: what is wrong, that the call did
/// not run, and that it may call again.
pub(super) fn reask_text(error: &str, tool: &str) -> String {
    format!(
        "{error}\nThe call was not run. Call `{tool}` again with arguments that fit its schema."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_core::DynamicTool;

    fn tools() -> ToolSet {
        let tool = DynamicTool::new("add", "Adds.")
            .parameters(json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }))
            .handler(|args: serde_json::Value, _| async move {
                Ok::<_, toolhost_core::ToolError>(args.to_string())
            })
            .build()
            .unwrap();
        ToolSet::from_tools([tool])
    }

    fn call(arguments: &str) -> ToolCallRecord {
        ToolCallRecord {
            id: "call_1".into(),
            name: "add".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn fitting_arguments_are_kept_byte_for_byte() {
        let mut calls = vec![call(r#"{ "a": 1,  "b": 2 }"#)];
        assert!(repair_calls(&mut calls, &tools()).is_empty());
        assert_eq!(calls[0].arguments, r#"{ "a": 1,  "b": 2 }"#);
    }

    #[test]
    fn syntax_and_types_are_mended_and_noted() {
        let mut calls = vec![call("```json\n{'a': \"3\", 'b': 4,}\n```")];
        let repairs = repair_calls(&mut calls, &tools());
        assert_eq!(repairs.len(), 1);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&calls[0].arguments).unwrap(),
            json!({"a": 3, "b": 4})
        );
        assert_eq!(repairs[0].original, "```json\n{'a': \"3\", 'b': 4,}\n```");
        assert!(repairs[0].notes.len() >= 2, "{:?}", repairs[0].notes);
    }

    #[test]
    fn a_repair_that_still_breaks_the_schema_is_not_kept() {
        let mut calls = vec![call("{'a': 1,}")];
        assert!(repair_calls(&mut calls, &tools()).is_empty());
        assert_eq!(calls[0].arguments, "{'a': 1,}");
    }

    #[test]
    fn duplicate_keys_are_not_guessed() {
        let mut calls = vec![call(r#"{"a": 1, "a": 2, "b": 3}"#)];
        assert!(repair_calls(&mut calls, &tools()).is_empty());
    }
}
