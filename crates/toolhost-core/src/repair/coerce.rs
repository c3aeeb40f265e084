//! Rung 2: coercion toward the schema where the intent is unambiguous.

use super::Repair;
use serde_json::Value;

/// Rung 2: coerces `value` toward `schema` where the intent is unambiguous.
pub fn coerce_to_schema(value: Value, schema: &Value) -> Repair {
    let mut notes = Vec::new();
    let value = coerce(value, schema, "", &mut notes);
    Repair { value, notes }
}

fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn fits(value: &Value, t: &str) -> bool {
    match t {
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => value.is_number(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

fn coerce(value: Value, schema: &Value, at: &str, notes: &mut Vec<String>) -> Value {
    let wanted = types(schema);
    let value = if wanted.is_empty() || wanted.iter().any(|t| fits(&value, t)) {
        value
    } else {
        let targets: Vec<&str> = wanted.into_iter().filter(|t| *t != "null").collect();
        match targets.as_slice() {
            [only] => convert(value, only, schema, at, notes),
            _ => value,
        }
    };
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let rest = schema.get("additionalProperties").filter(|s| s.is_object());
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let sub = props.and_then(|p| p.get(&k)).or(rest);
                        let v = match sub {
                            Some(sub) => coerce(v, sub, &format!("{at}/{}", escape(&k)), notes),
                            None => v,
                        };
                        (k, v)
                    })
                    .collect(),
            )
        }
        Value::Array(items) => match schema.get("items").filter(|s| s.is_object()) {
            Some(item) => Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| coerce(v, item, &format!("{at}/{i}"), notes))
                    .collect(),
            ),
            None => Value::Array(items),
        },
        other => other,
    }
}

/// Converts `value` to type `to`, or leaves it as it is when that is not clear-cut.
fn convert(value: Value, to: &str, schema: &Value, at: &str, notes: &mut Vec<String>) -> Value {
    let shown = value.to_string();
    let converted = match (&value, to) {
        (Value::String(s), "integer") => s.trim().parse::<i64>().ok().map(Value::from),
        (Value::String(s), "number") => crate::exact::from_str::<Value>(s.trim())
            .ok()
            .filter(Value::is_number),
        (Value::String(s), "boolean") => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        (Value::String(s), "object" | "array") => crate::exact::from_str::<Value>(s.trim())
            .ok()
            .filter(|v| fits(v, to)),
        _ => None,
    };
    let converted = converted.or_else(|| {
        // A single value where an array of exactly that kind of value is wanted.
        let item_types = schema.get("items").map(types).unwrap_or_default();
        (to == "array" && !value.is_null() && item_types.iter().any(|t| fits(&value, t)))
            .then(|| Value::Array(vec![value.clone()]))
    });
    match converted {
        Some(v) => {
            let place = if at.is_empty() { "/" } else { at };
            notes.push(format!(
                "at {place}: {shown} became {v} (the schema asks for {})",
                article(to)
            ));
            v
        }
        None => value,
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        other => format!("a {other}"),
    }
}

/// A property name as a JSON-pointer token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
