//! Gemini's OpenAPI subset: a schema lowered to the declarations `generateContent` accepts.

use super::{note, Dropped};
use crate::schema::subset::TRANSPORT_HEADER;
use serde_json::{json, Map, Value};

const GEMINI_FORMATS: [&str; 6] = ["enum", "date-time", "int32", "int64", "float", "double"];

/// Lowers a node to Gemini's OpenAPI subset.
pub(super) fn gemini_node(node: &Value, ptr: &str, dropped: &mut Vec<Dropped>) -> Value {
    let Some(map) = node.as_object() else {
        // `true` or `false` (a general schema's): Gemini takes typed schemas only.
        note(dropped, ptr, format!("the schema `{node}` removed"));
        return json!({});
    };
    let mut out = Map::new();
    types(map, &mut out);
    for (key, value) in map {
        let at = format!("{ptr}/{key}");
        match key.as_str() {
            "type" => {}
            "description" | "title" | "default" | "minItems" | "maxItems" | "minLength"
            | "maxLength" | "pattern" | "minimum" | "maximum" | "required" => {
                out.insert(key.clone(), value.clone());
            }
            "format" => {
                if value.as_str().is_some_and(|f| GEMINI_FORMATS.contains(&f)) {
                    out.insert(key.clone(), value.clone());
                } else {
                    note(dropped, ptr, format!("format {value} removed"));
                }
            }
            "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                note(dropped, ptr, format!("{key} removed"));
            }
            "examples" | "$comment" | "deprecated" | TRANSPORT_HEADER => {}
            "const" => constant(value, ptr, dropped, &mut out),
            "enum" => enumeration(value, ptr, dropped, &mut out),
            "anyOf" | "oneOf" => union(key, value, ptr, &at, dropped, &mut out),
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(n, s)| (n.clone(), gemini_node(s, &format!("{at}/{n}"), dropped)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert("propertyOrdering".into(), Value::Array(props.keys().cloned().map(Value::from).collect()));
                out.insert("properties".into(), Value::Object(props));
            }
            "items" => {
                out.insert("items".into(), gemini_node(value, &at, dropped));
            }
            "additionalProperties" => match value {
                Value::Bool(false) => note(
                    dropped,
                    ptr,
                    "additionalProperties: false removed (undeclared properties are refused locally)",
                ),
                Value::Bool(true) => {}
                _ => note(dropped, ptr, "record value schema removed (additionalProperties)"),
            },
            other => note(dropped, ptr, format!("{other} removed")),
        }
    }
    if out.get("type") == Some(&Value::from("object"))
        && out.get("properties").is_none()
        && !map.contains_key("properties")
    {
        // A record or a free object: Gemini needs an object with properties to say anything.
        out.remove("required");
    }
    Value::Object(out)
}

/// Gemini's form of `type`: one name plus `nullable`; several non-null types become a union.
fn types(map: &Map<String, Value>, out: &mut Map<String, Value>) {
    match map.get("type") {
        Some(Value::String(t)) => {
            out.insert("type".into(), t.clone().into());
        }
        Some(Value::Array(ts)) => {
            let non_null: Vec<&Value> = ts.iter().filter(|t| *t != "null").collect();
            if non_null.len() < ts.len() {
                out.insert("nullable".into(), true.into());
            }
            match non_null.as_slice() {
                [] => {
                    out.insert("type".into(), "null".into());
                }
                [one] => {
                    out.insert("type".into(), (*one).clone());
                }
                many => {
                    let branches: Vec<Value> = many.iter().map(|t| json!({"type": t})).collect();
                    out.insert("anyOf".into(), Value::Array(branches));
                }
            }
        }
        _ => {}
    }
}

/// A `const`: a string becomes a one-value `enum`, a number a range of one; others are dropped.
fn constant(value: &Value, ptr: &str, dropped: &mut Vec<Dropped>, out: &mut Map<String, Value>) {
    match value {
        Value::String(_) => {
            out.insert("type".into(), "string".into());
            out.insert("enum".into(), json!([value]));
        }
        Value::Null => {
            out.insert("type".into(), "null".into());
        }
        Value::Number(_) => {
            let t = if value.is_f64() { "number" } else { "integer" };
            out.insert("type".into(), t.into());
            out.insert("minimum".into(), value.clone());
            out.insert("maximum".into(), value.clone());
        }
        _ => {
            if let Value::Bool(_) = value {
                out.insert("type".into(), "boolean".into());
            }
            note(dropped, ptr, format!("const {value} removed"));
        }
    }
}

/// An `enum`: strings only (with `null` as `nullable`); others are dropped.
fn enumeration(value: &Value, ptr: &str, dropped: &mut Vec<Dropped>, out: &mut Map<String, Value>) {
    let values = value.as_array().cloned().unwrap_or_default();
    let strings: Vec<Value> = values.iter().filter(|v| v.is_string()).cloned().collect();
    let has_null = values.iter().any(Value::is_null);
    if strings.len() + usize::from(has_null) == values.len() && !strings.is_empty() {
        out.insert("type".into(), "string".into());
        out.insert("enum".into(), Value::Array(strings));
        if has_null {
            out.insert("nullable".into(), true.into());
        }
    } else {
        note(dropped, ptr, "enum of non-string values removed");
    }
}

/// A union (`anyOf`, or `oneOf` relaxed to it): `T | null` becomes T with `nullable`.
fn union(
    key: &str,
    value: &Value,
    ptr: &str,
    at: &str,
    dropped: &mut Vec<Dropped>,
    out: &mut Map<String, Value>,
) {
    if key == "oneOf" {
        note(
            dropped,
            ptr,
            "oneOf relaxed to anyOf (exactly-one is checked locally)",
        );
    }
    let branches = value.as_array().cloned().unwrap_or_default();
    let non_null: Vec<(usize, &Value)> = branches
        .iter()
        .enumerate()
        .filter(|(_, b)| {
            b.get("type") != Some(&Value::from("null"))
                || b.as_object().is_some_and(|m| m.len() > 1)
        })
        .collect();
    if non_null.len() < branches.len() {
        out.insert("nullable".into(), true.into());
    }
    if non_null.is_empty() {
        out.insert("type".into(), "null".into());
    } else if let [(i, only)] = non_null.as_slice() {
        // `T | null`: Gemini's form is T with `nullable`.
        let lowered = gemini_node(only, &format!("{at}/{i}"), dropped);
        if let Value::Object(inner) = lowered {
            for (k, v) in inner {
                out.entry(k).or_insert(v);
            }
        }
    } else {
        let lowered: Vec<Value> = non_null
            .iter()
            .map(|(i, b)| gemini_node(b, &format!("{at}/{i}"), dropped))
            .collect();
        out.insert("anyOf".into(), Value::Array(lowered));
    }
}
