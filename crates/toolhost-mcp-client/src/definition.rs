//! What a server's tool is pinned by: the hashes of the parts of its definition a model is
//! shown or a call is checked against (description, input and output schema).

use rmcp::model::Tool;
use serde_json::{json, Value};
use toolhost_core::canonical::canonical_hash;

/// What an imported tool's pin holds: one hash per part of the definition, so that a change can
/// be named.
pub fn definition_pin(tool: &Tool) -> Value {
    let part = |v: Option<Value>| canonical_hash(&v.unwrap_or(Value::Null));
    json!({
        "description": part(tool.description.as_deref().map(|d| json!(d))),
        "inputSchema": part(Some(Value::Object((*tool.input_schema).clone()))),
        "outputSchema": part(tool.output_schema.as_deref().map(|s| Value::Object(s.clone()))),
    })
}

/// The parts of `now` that differ from `pinned`, in words.
pub fn definition_parts_changed(pinned: &Value, now: &Value) -> Vec<&'static str> {
    ["description", "inputSchema", "outputSchema"]
        .into_iter()
        .filter(|part| pinned.get(part) != now.get(part))
        .collect()
}
