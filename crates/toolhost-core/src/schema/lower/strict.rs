//! OpenAI's strict mode: a schema lowered to what strict function calling accepts, and the
//! arguments a strict model sent lifted back to the canonical schema's shape (a `null` it was
//! made to send for an absent optional property removed again).

use super::{accepts_null, note, Dropped};
use crate::schema::subset::TRANSPORT_HEADER;
use serde_json::{json, Map, Value};

const STRICT_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The subset's keywords strict mode takes as they are.
const STRICT_KEPT: [&str; 13] = [
    "type",
    "description",
    "title",
    "const",
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Lowers a node for OpenAI strict mode, or says why the tool cannot be strict.
pub(super) fn strict_node(
    node: &Value,
    ptr: &str,
    dropped: &mut Vec<Dropped>,
) -> Result<Value, Dropped> {
    let Some(map) = node.as_object() else {
        // `true` or `false` (a general schema's): strict mode takes typed schemas only.
        return Err(Dropped {
            pointer: ptr.to_owned(),
            what: format!("the schema `{node}` cannot be expressed in strict mode"),
        });
    };
    let mut out = Map::new();
    for (key, value) in map {
        let at = format!("{ptr}/{key}");
        match key.as_str() {
            "minLength" | "maxLength" | "default" => note(dropped, ptr, format!("{key} removed")),
            "examples" | "$comment" | "deprecated" | TRANSPORT_HEADER => {}
            "format" => {
                if value.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) {
                    out.insert(key.clone(), value.clone());
                } else {
                    note(dropped, ptr, format!("format {value} removed"));
                }
            }
            "oneOf" | "anyOf" => {
                if key == "oneOf" {
                    note(
                        dropped,
                        ptr,
                        "oneOf relaxed to anyOf (exactly-one is checked locally)",
                    );
                }
                let branches = value
                    .as_array()
                    .map(|bs| {
                        bs.iter()
                            .enumerate()
                            .map(|(i, b)| strict_node(b, &format!("{at}/{i}"), dropped))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .transpose()?
                    .unwrap_or_default();
                out.insert("anyOf".into(), Value::Array(branches));
            }
            "items" => {
                out.insert(key.clone(), strict_node(value, &at, dropped)?);
            }
            "properties" | "required" | "additionalProperties" => {}
            k if STRICT_KEPT.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            // A general schema's keyword (an MCP server's tool): strict mode has no room for it.
            other => {
                return Err(Dropped {
                    pointer: ptr.to_owned(),
                    what: format!("keyword `{other}` cannot be expressed in strict mode"),
                })
            }
        }
    }
    let is_object = map.get("type") == Some(&Value::from("object"))
        || map.contains_key("properties")
        || map.contains_key("additionalProperties");
    if is_object {
        strict_object(map, ptr, dropped, &mut out)?;
    }
    Ok(Value::Object(out))
}

/// An object in strict mode: closed, every property required, an optional one made nullable
/// (so that `null` says it is absent); a record cannot be expressed.
fn strict_object(
    map: &Map<String, Value>,
    ptr: &str,
    dropped: &mut Vec<Dropped>,
    out: &mut Map<String, Value>,
) -> Result<(), Dropped> {
    if map
        .get("additionalProperties")
        .is_some_and(Value::is_object)
    {
        return Err(Dropped {
            pointer: ptr.to_owned(),
            what: "a record (free keys) cannot be expressed in strict mode".to_owned(),
        });
    }
    if map.get("additionalProperties") != Some(&Value::Bool(false)) {
        note(
            dropped,
            ptr,
            "closed: undeclared properties are not offered to the model",
        );
    }
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut props = Map::new();
    if let Some(declared) = map.get("properties").and_then(Value::as_object) {
        for (name, schema) in declared {
            let at = format!("{ptr}/properties/{name}");
            let mut lowered = strict_node(schema, &at, dropped)?;
            if !required.contains(&name.as_str()) {
                if accepts_null(&lowered) {
                    note(dropped, &at, "optional property sent as required: the model must give it (null is a value here, so its absence cannot be expressed)");
                } else {
                    lowered = make_nullable(lowered);
                    note(
                        dropped,
                        &at,
                        "optional property sent as required and nullable (null means absent)",
                    );
                }
            }
            props.insert(name.clone(), lowered);
        }
    }
    out.insert(
        "required".into(),
        Value::Array(props.keys().cloned().map(Value::from).collect()),
    );
    out.insert("properties".into(), Value::Object(props));
    out.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}

fn make_nullable(node: Value) -> Value {
    let Value::Object(mut map) = node else {
        return node;
    };
    let plain = !map.contains_key("enum") && !map.contains_key("const");
    match map.get_mut("type") {
        Some(Value::String(t)) if plain => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
            Value::Object(map)
        }
        Some(Value::Array(ts)) if plain => {
            ts.push("null".into());
            Value::Object(map)
        }
        _ => {
            let description = map.remove("description");
            let mut wrapper = json!({"anyOf": [Value::Object(map), {"type": "null"}]});
            if let Some(d) = description {
                wrapper["description"] = d;
            }
            wrapper
        }
    }
}

/// Removes the `null` that strict mode makes a model send for an absent optional property.
pub(super) fn lift(schema: &Value, value: &mut Value) {
    let branches = union_branches(schema);
    if !branches.is_empty() {
        lift_union(&branches, value);
        return;
    }
    match value {
        Value::Object(object) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            object.retain(|name, v| {
                !(v.is_null()
                    && !required.contains(&name.as_str())
                    && props.get(name).is_some_and(|p| !accepts_null(p)))
            });
            for (name, v) in object.iter_mut() {
                if let Some(p) = props.get(name) {
                    lift(p, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    lift(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// The branches of a union, nested unions flattened; empty when `schema` is not a union.
fn union_branches(schema: &Value) -> Vec<&Value> {
    let Some(branches) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    branches
        .iter()
        .flat_map(|b| {
            let inner = union_branches(b);
            if inner.is_empty() {
                vec![b]
            } else {
                inner
            }
        })
        .collect()
}

/// A value some branch accepts as it is stays as it is (its `null`s may be meant); otherwise the
/// first branch that accepts the lifted value decides. Only unions in strict mode come here, and
/// only on calls, so compiling the branch on the spot is cheap enough.
fn lift_union(branches: &[&Value], value: &mut Value) {
    let accepts =
        |branch: &Value, v: &Value| jsonschema::validator_for(branch).is_ok_and(|c| c.is_valid(v));
    if branches.iter().any(|b| accepts(b, value)) {
        return;
    }
    for branch in branches {
        let mut candidate = value.clone();
        lift(branch, &mut candidate);
        if accepts(branch, &candidate) {
            *value = candidate;
            return;
        }
    }
}
