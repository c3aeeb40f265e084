//! The combined request schema `{meta, output, calls}` (spec 004): one schema that lets a model
//! call tools, give the final output, or both, in one reply.

use crate::tool::ToolDefinition;
use serde_json::{json, Map, Value};

/// Builds the combined schema from tool definitions (their model-facing parameters, so explicit
/// tools carry no `_output`) and the schema of the final output.
///
/// `output` is made nullable: the loop goes on while it is `null`. Without an output schema the
/// final output is free text. `meta`, `calls` and `output` are all required.
pub fn request_schema(tools: &[ToolDefinition], output: Option<&Value>) -> Value {
    let output = match output {
        Some(schema) => nullable_output(schema),
        None => {
            json!({"type": ["string", "null"], "description": "The final answer; null while tool calls are still needed."})
        }
    };
    let items: Vec<Value> = tools.iter().map(call_item).collect();
    let calls_items = match items.len() {
        0 => json!({"not": {}}),
        1 => items.into_iter().next().unwrap_or(Value::Null),
        _ => json!({"anyOf": items}),
    };
    json!({
        "type": "object",
        "properties": {
            "meta": {
                "type": "object",
                "description": "Information about the work itself, like its version. Update it when you do work.",
                "properties": {"path": {"type": "string"}, "version": {"type": "string"}}
            },
            "output": output,
            "calls": {"type": "array", "items": calls_items}
        },
        "required": ["meta", "calls", "output"]
    })
}

/// The keywords of a call item made here rather than copied from the tool's schema.
const ITEM_OWN: [&str; 7] = [
    "type",
    "description",
    "title",
    "properties",
    "required",
    "additionalProperties",
    "$schema",
];

fn call_item(tool: &ToolDefinition) -> Value {
    let mut props = Map::new();
    props.insert("_tool".into(), json!({"const": tool.name}));
    let mut required = vec![Value::from("_tool")];
    if let Some(params) = tool.parameters.get("properties").and_then(Value::as_object) {
        for (k, v) in params {
            props.insert(k.clone(), v.clone());
        }
    }
    if let Some(names) = tool.parameters.get("required").and_then(Value::as_array) {
        required.extend(names.iter().cloned());
    }
    let mut item = Map::new();
    item.insert("type".into(), "object".into());
    item.insert("description".into(), tool.description.clone().into());
    item.insert("properties".into(), Value::Object(props));
    item.insert("required".into(), Value::Array(required));
    if let Some(extra) = tool.parameters.get("additionalProperties") {
        item.insert("additionalProperties".into(), extra.clone());
    }
    // A schema in all of JSON Schema 2020-12 keeps what constrains it besides its properties
    // (`allOf`, `if`/`then`/`else`, ...); self-contained when the definition's `$ref`s are
    // inlined, as in a compiled tool's schema.
    if let Some(params) = tool.parameters.as_object() {
        for (key, value) in params {
            if !ITEM_OWN.contains(&key.as_str()) {
                item.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    Value::Object(item)
}

fn nullable_output(schema: &Value) -> Value {
    let mut out = schema.clone();
    match out.get("type").cloned() {
        Some(Value::String(t)) if out.get("enum").is_none() && out.get("const").is_none() => {
            out["type"] = json!([t, "null"]);
            if t == "object" && out.get("additionalProperties").is_none() {
                out["additionalProperties"] = Value::Bool(false);
            }
            out
        }
        _ => json!({"anyOf": [out, {"type": "null"}]}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ExecutionMode;

    /// A local tool named `name` taking `parameters`.
    fn tool(name: &str, parameters: Value) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: format!("{name} something"),
            parameters,
            output_schema: None,
            execution_mode: ExecutionMode::Local,
            execution_provider: None,
            variables: vec![],
            idempotent: false,
            hints: Default::default(),
        }
    }

    /// `value` without its `description`s (texts toolhost words its own way).
    fn without_descriptions(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| k.as_str() != "description")
                    .map(|(k, v)| (k.clone(), without_descriptions(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(without_descriptions).collect()),
            other => other.clone(),
        }
    }

    /// Spec 004's worked example ("Putting the Blueprints Together for the AI"), `greetUser`
    /// given the `description` spec 000 requires of a tool: the combined schema is the one the
    /// spec shows, key for key, its texts aside.
    #[test]
    fn the_spec_example_is_the_combined_schema_the_spec_shows() {
        let greet = tool(
            "greetUser",
            json!({"type": "object", "properties": {"userName": {"type": "string"}}, "required": ["userName"]}),
        );
        let output = json!({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]});
        let shown = json!({
            "type": "object",
            "properties": {
                "meta": {
                    "type": "object",
                    "description": "Information about the idea itself, like its version. The AI is expected to update this when it does work.",
                    "properties": {"path": {"type": "string"}, "version": {"type": "string"}}
                },
                "output": {
                    "type": ["object", "null"],
                    "properties": {"summary": {"type": "string"}},
                    "required": ["summary"],
                    "additionalProperties": false
                },
                "calls": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"_tool": {"const": "greetUser"}, "userName": {"type": "string"}},
                        "required": ["_tool", "userName"]
                    }
                }
            },
            "required": ["meta", "calls", "output"]
        });
        let made = request_schema(&[greet], Some(&output));
        assert_eq!(without_descriptions(&made), without_descriptions(&shown));
        // The call item tells the model what the tool does.
        assert_eq!(
            made["properties"]["calls"]["items"]["description"],
            "greetUser something"
        );
    }

    #[test]
    fn a_call_item_keeps_what_constrains_a_schema_besides_its_properties() {
        let contact = tool(
            "contact",
            json!({"type": "object",
                "properties": {"phone": {"type": "string"}, "email": {"type": "string"}},
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"required": ["phone"]}, "then": {"properties": {"email": {"maxLength": 0}}}}),
        );
        // One tool: the call item is the schema of `calls`' items itself.
        let item = &request_schema(&[contact], None)["properties"]["calls"]["items"];
        assert!(
            item.get("allOf").is_some() && item.get("if").is_some() && item.get("then").is_some(),
            "{item}"
        );
        assert_eq!(item["properties"]["_tool"]["const"], "contact");
    }
}
