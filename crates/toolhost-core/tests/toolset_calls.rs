//! The ToolSet contract of spec 003: unique names with last-one-wins, insertion order, and calls
//! from an argument string that fail as ToolNotFoundError, ToolJsonError or ToolCallError.

use futures_executor::block_on;
use serde_json::{json, Value};
use toolhost_core::think::think_tool;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{AnyTool, ToolContext, ToolSet, ToolSetError, ToolStatus};

fn returning(name: &str, output: Value) -> AnyTool {
    DynamicTool::new(name, format!("Returns {output}."))
        .parameters(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
        .handler(move |_, _| {
            let output = output.clone();
            async move { Ok::<_, ToolError>(output) }
        })
        .build()
        .unwrap()
}

fn ctx() -> ToolContext {
    ToolContext::new("call-1")
}

#[test]
fn the_last_definition_of_a_name_wins_and_the_earlier_one_is_gone() {
    let mut set = ToolSet::from_tools([returning("a", json!(1)), returning("b", json!(2))]);
    let replaced = set.add(returning("a", json!(3)));
    assert!(replaced.is_some());
    assert_eq!(set.len(), 2);
    let names: Vec<&str> = set.values().map(AnyTool::name).collect();
    assert_eq!(names, ["b", "a"]);
    assert_eq!(block_on(set.call("a", "", ctx())).unwrap(), "3");
    let defs = set.definitions();
    assert_eq!(defs.iter().filter(|d| d.name == "a").count(), 1);
    assert_eq!(defs[1].description, "Returns 3.");
}

#[test]
fn delete_contains_and_get_behave_as_a_set() {
    let mut set = ToolSet::new();
    set.add_many([returning("a", json!(1)), returning("b", json!(2))]);
    assert!(set.contains("a") && set.get("b").is_some());
    assert!(set.delete("a"));
    assert!(!set.delete("a"));
    assert!(!set.contains("a") && set.get("a").is_none());
    assert_eq!(set.len(), 1);
}

#[test]
fn an_unknown_name_is_tool_not_found_and_the_result_lists_the_tools() {
    let set = ToolSet::from_tools([returning("alpha", json!(1)), returning("beta", json!(2))]);
    let err = block_on(set.call("gamma", "{}", ctx())).unwrap_err();
    assert_eq!(err.to_string(), "Tool not found: gamma");
    assert_eq!(err.kind(), "ToolNotFoundError");
    assert!(matches!(&err, ToolSetError::NotFound { tool_name, .. } if tool_name == "gamma"));
    let result = block_on(set.execute("gamma", "{}", ctx()));
    assert_eq!(result.status, ToolStatus::Error);
    assert_eq!(
        result.model_text(),
        "ToolNotFoundError: Tool not found: gamma. Available tools: alpha, beta"
    );
}

#[test]
fn unparsable_arguments_are_a_tool_json_error() {
    let set = ToolSet::from_tools([returning("a", json!(1))]);
    let err = block_on(set.call("a", "{\"n\": ", ctx())).unwrap_err();
    assert_eq!(err.kind(), "ToolJsonError");
    assert!(
        err.to_string()
            .starts_with("arguments for `a` are not valid JSON: "),
        "{err}"
    );
    let text = block_on(set.execute("a", "{'n': 1}", ctx()))
        .model_text()
        .to_owned();
    assert!(text.starts_with("ToolJsonError: "), "{text}");
}

#[test]
fn blank_arguments_are_the_empty_object() {
    let set = ToolSet::from_tools([returning("a", json!("done"))]);
    assert_eq!(block_on(set.call("a", "", ctx())).unwrap(), "done");
    assert_eq!(block_on(set.call("a", "  \n ", ctx())).unwrap(), "done");
}

#[test]
fn invalid_arguments_and_tool_failures_are_tool_call_errors() {
    let failing = DynamicTool::new("boom", "Fails.")
        .handler(|_, _| async { Err::<String, _>(ToolError::new("disk full")) })
        .build()
        .unwrap();
    let silent = DynamicTool::new("silent", "Fails without a word.")
        .handler(|_, _| async { Ok::<_, ToolError>(toolhost_core::ToolResult::error("")) })
        .build()
        .unwrap();
    let set = ToolSet::from_tools([returning("a", json!(1)), failing, silent]);
    let err = block_on(set.call("a", r#"{"n": "three"}"#, ctx())).unwrap_err();
    assert_eq!(err.kind(), "ToolCallError");
    assert!(
        err.to_string()
            .contains("at /n: expected integer, got string \"three\""),
        "{err}"
    );
    let err = block_on(set.call("boom", "{}", ctx())).unwrap_err();
    assert_eq!(err.to_string(), "disk full");
    assert_eq!(
        block_on(set.execute("boom", "{}", ctx())).model_text(),
        "ToolCallError: disk full"
    );
    let err = block_on(set.call("silent", "{}", ctx())).unwrap_err();
    assert_eq!(err.to_string(), "Tool silent failed");
}

#[test]
fn string_output_is_unquoted_and_other_values_are_json() {
    let set = ToolSet::from_tools([
        returning("s", json!("plain text")),
        returning("o", json!({"ok": true})),
        returning("n", json!(null)),
    ]);
    assert_eq!(block_on(set.call("s", "{}", ctx())).unwrap(), "plain text");
    assert_eq!(
        block_on(set.call("o", "{}", ctx())).unwrap(),
        r#"{"ok":true}"#
    );
    assert_eq!(block_on(set.call("n", "{}", ctx())).unwrap(), "null");
}

#[test]
fn structured_content_keeps_its_blocks_and_renders_images_as_placeholders() {
    let set = ToolSet::from_tools([returning(
        "shot",
        json!([{"type": "text", "text": "Here it is"}, {"type": "image", "data": "iVBO", "mimeType": "image/png"}]),
    )]);
    let result = block_on(set.execute("shot", "{}", ctx()));
    assert_eq!(result.model_text(), "Here it is\n[image:image/png]");
    assert_eq!(result.content.as_ref().map(Vec::len), Some(2));
}

#[test]
fn an_image_block_whose_data_is_not_base64_is_a_call_error() {
    let set = ToolSet::from_tools([returning(
        "shot",
        json!([{"type": "image", "data": "not-base64!", "mimeType": "image/png"}]),
    )]);
    let refused = block_on(set.call("shot", "{}", ctx())).unwrap_err();
    let text = refused.to_string();
    assert!(text.contains("block 1"), "{text}");
    assert!(text.contains("not base64"), "{text}");
    let result = block_on(set.execute("shot", "{}", ctx()));
    assert!(!result.is_success());
    assert!(
        !result.model_text().contains("[image:"),
        "{}",
        result.model_text()
    );
}

#[test]
fn the_think_tool_returns_its_thought_and_validates_input() {
    let set = ToolSet::from_tools([think_tool().unwrap()]);
    let def = &set.definitions()[0];
    assert_eq!(def.name, "think");
    assert_eq!(def.parameters["required"], json!(["thought"]));
    assert_eq!(
        block_on(set.call("think", r#"{"thought": "first, check the logs"}"#, ctx())).unwrap(),
        "first, check the logs"
    );
    let err = block_on(set.call("think", r#"{"idea": 1}"#, ctx())).unwrap_err();
    assert_eq!(err.kind(), "ToolCallError");
}
