//! A definition whose schema leaves the subset, nests deeper than seven levels or does not
//! compile is refused at registration, with the tool, the JSON pointer and the reason.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_core::schema::builder as s;
use toolhost_core::tool::{AnyTool, DynamicTool, Tool, ToolContext, ToolError};

fn register(schema: Value) -> Result<AnyTool, toolhost_core::SchemaError> {
    DynamicTool::new("probe", "A probe.")
        .parameters(schema)
        .handler(|_, _| async { Ok::<_, ToolError>("ok") })
        .build()
}

fn nested_builder(levels: usize) -> s::SchemaNode {
    let mut node = s::object().field("leaf", s::string());
    for _ in 1..levels {
        node = s::object().field("x", node);
    }
    node
}

#[test]
fn seven_levels_register_and_eight_are_refused_naming_tool_and_pointer() {
    assert!(register(nested_builder(7).to_json()).is_ok());
    let err = register(nested_builder(8).to_json()).unwrap_err();
    assert_eq!(err.tool, "probe");
    assert_eq!(err.issues.len(), 1);
    assert_eq!(err.issues[0].pointer, "/properties/x".repeat(7));
    assert!(
        err.to_string()
            .starts_with("tool `probe`: arguments schema refused: at /properties/x"),
        "{err}"
    );
    assert!(err.to_string().contains("the limit is 7"), "{err}");
}

#[test]
fn arrays_and_records_count_as_levels() {
    let mut node = s::string();
    for i in 0..7 {
        node = if i % 2 == 0 {
            s::array(node)
        } else {
            s::record(node)
        };
    }
    let schema = s::object().field("deep", node).to_json();
    let err = register(schema).unwrap_err();
    assert!(err.issues[0].reason.contains("8 levels"), "{err}");
}

#[test]
fn every_keyword_outside_the_subset_is_named_at_its_pointer() {
    let err = register(json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "allOf": [{"minLength": 1}]},
            "b": {"type": "array", "items": [{"type": "string"}]},
            "c": {"type": "date"},
            "d": true,
            "e": {"description": "no type at all"}
        }
    }))
    .unwrap_err();
    let pointers: Vec<&str> = err.issues.iter().map(|i| i.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            "/properties/a/allOf",
            "/properties/b/items",
            "/properties/c/type",
            "/properties/d",
            "/properties/e"
        ],
        "{err}"
    );
}

#[test]
fn a_pattern_that_is_not_a_regular_expression_is_refused() {
    let err = register(
        json!({"type": "object", "properties": {"z": {"type": "string", "pattern": "[a-"}}}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("does not compile"), "{err}");
}

#[test]
fn the_arguments_must_be_an_object() {
    let err = register(json!({"type": "array", "items": {"type": "string"}})).unwrap_err();
    assert_eq!(err.issues[0].pointer, "/");
    assert!(
        err.issues[0].reason.contains("\"type\": \"object\""),
        "{err}"
    );
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct Node {
    value: i32,
    children: Vec<Node>,
}

struct TreeTool;

impl Tool for TreeTool {
    type Args = Node;
    type Output = String;
    fn name(&self) -> &str {
        "tree"
    }
    fn description(&self) -> String {
        "Takes a tree.".into()
    }
    async fn call(&self, _: Node, _: ToolContext) -> Result<String, ToolError> {
        Ok(String::new())
    }
}

#[test]
fn a_recursive_rust_type_is_refused_because_its_depth_has_no_bound() {
    let err = AnyTool::from_tool(TreeTool).unwrap_err();
    assert_eq!(err.tool, "tree");
    assert!(err.to_string().contains("recursive"), "{err}");
}

#[test]
fn names_outside_the_rule_register_with_a_warning() {
    let tool = DynamicTool::new("Fetch-Page", "Fetches.").build().unwrap();
    assert_eq!(tool.name(), "Fetch-Page");
    assert_eq!(tool.warnings().len(), 1);
    assert!(tool.warnings()[0].contains("snake_case"));
    let fine = DynamicTool::new("fetch_page", "Fetches.").build().unwrap();
    assert!(fine.warnings().is_empty());
}
