//! Lowering one canonical schema to the tool declarations each provider accepts.
//!
//! | provider | declaration | what it cannot carry |
//! |---|---|---|
//! | `openai` | `{"type":"function","function":{name, description, parameters}}` | nothing |
//! | `openai-strict` | the same with `"strict": true` | string lengths, `default`, most `format`s, `oneOf` (relaxed to `anyOf`); optional properties become required and nullable; records make the tool non-strict |
//! | `anthropic` | `{name, description, input_schema}` | nothing |
//! | `gemini` | `{name, description, parameters}` in its OpenAPI subset | `additionalProperties`, exclusive bounds, `multipleOf`, non-string `enum`/`const`, most `format`s |
//!
//! Every guarantee a lowering drops is reported as a [`Dropped`] note; local validation against
//! the canonical schema still enforces it, so what a model may send is only ever relaxed on the
//! wire, never on the tool. Strict mode's "optional becomes nullable" is undone by
//! [`LoweredTool::lift_arguments`] before validation: a `null` the provider forced for an absent
//! optional property is removed again.

use super::subset::TRANSPORT_HEADER;
use serde_json::{json, Map, Value};
use std::fmt;
use std::str::FromStr;

/// A model API family whose tool declarations differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI chat-completions function tools (and every compatible server).
    OpenAi,
    /// OpenAI function tools in strict mode (structured outputs).
    OpenAiStrict,
    /// Anthropic Messages API tools.
    Anthropic,
    /// Google Gemini function declarations.
    Gemini,
}

impl Provider {
    /// Every provider, in the order the CLI lists them.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAi,
        Provider::OpenAiStrict,
        Provider::Anthropic,
        Provider::Gemini,
    ];

    /// The name used on the command line and in model definitions.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::OpenAiStrict => "openai-strict",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is not one of [`Provider::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider \"{0}\"; expected one of openai, openai-strict, anthropic, gemini")]
pub struct UnknownProvider(pub String);

impl FromStr for Provider {
    type Err = UnknownProvider;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProvider(s.to_owned()))
    }
}

/// A guarantee of the canonical schema that a provider's declaration does not carry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Dropped {
    /// JSON pointer into the tool's canonical schema.
    pub pointer: String,
    /// What was dropped or changed, e.g. "pattern removed".
    pub what: String,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{} at {at}", self.what)
    }
}

/// One tool lowered for one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct LoweredTool {
    /// The declaration to send, in the provider's own shape.
    pub declaration: Value,
    /// What the declaration does not guarantee (local validation still does).
    pub dropped: Vec<Dropped>,
    /// Whether the declaration uses OpenAI strict mode.
    pub strict: bool,
    canonical: Value,
}

impl LoweredTool {
    /// Brings arguments that came back from the provider to the canonical shape: in strict
    /// mode, removes the `null` standing for an absent optional property that is not nullable.
    pub fn lift_arguments(&self, args: Value) -> Value {
        if self.strict {
            let mut args = args;
            lift(&self.canonical, &mut args);
            args
        } else {
            args
        }
    }

    /// The provider-side schema of the arguments inside the declaration.
    pub fn parameters(&self) -> Option<&Value> {
        let d = &self.declaration;
        d.pointer("/function/parameters")
            .or_else(|| d.get("input_schema"))
            .or_else(|| d.get("parameters"))
    }
}

/// Lowers one tool (its wire name, description and canonical arguments schema) for `provider`.
pub fn lower_tool(
    provider: Provider,
    wire_name: &str,
    description: &str,
    canonical: &Value,
) -> LoweredTool {
    let mut dropped = Vec::new();
    let (declaration, strict) = match provider {
        Provider::OpenAi => (
            openai(wire_name, description, strip_meta(canonical), None),
            false,
        ),
        Provider::OpenAiStrict => {
            let mut notes = Vec::new();
            match strict_node(canonical, "", &mut notes) {
                Ok(params) => {
                    dropped = notes;
                    (openai(wire_name, description, params, Some(true)), true)
                }
                Err(blocker) => {
                    dropped.push(Dropped {
                        pointer: blocker.pointer,
                        what: format!("strict mode disabled for this tool: {}", blocker.what),
                    });
                    (
                        openai(wire_name, description, strip_meta(canonical), Some(false)),
                        false,
                    )
                }
            }
        }
        Provider::Anthropic => (
            json!({"name": wire_name, "description": description, "input_schema": strip_meta(canonical)}),
            false,
        ),
        Provider::Gemini => {
            let params = gemini_node(canonical, "", &mut dropped);
            let mut decl = json!({"name": wire_name, "description": description});
            // Gemini refuses an object with no properties; a tool without arguments omits them.
            let has_props = params
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty());
            if has_props {
                decl["parameters"] = params;
            }
            (decl, false)
        }
    };
    LoweredTool {
        declaration,
        dropped,
        strict,
        canonical: canonical.clone(),
    }
}

fn openai(name: &str, description: &str, parameters: Value, strict: Option<bool>) -> Value {
    let mut function = json!({"name": name, "description": description, "parameters": parameters});
    if let Some(strict) = strict {
        function["strict"] = Value::Bool(strict);
    }
    json!({"type": "function", "function": function})
}

/// Removes keywords that only annotate for people (`$comment`) or for the transport
/// (`x-mcp-header`) from a schema sent as is.
fn strip_meta(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "$comment" | TRANSPORT_HEADER))
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "properties" => Value::Object(
                            v.as_object()
                                .map(|p| {
                                    p.iter().map(|(n, s)| (n.clone(), strip_meta(s))).collect()
                                })
                                .unwrap_or_default(),
                        ),
                        "items" | "additionalProperties" => strip_meta(v),
                        "anyOf" | "oneOf" => Value::Array(
                            v.as_array()
                                .map(|b| b.iter().map(strip_meta).collect())
                                .unwrap_or_default(),
                        ),
                        _ => v.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn note(dropped: &mut Vec<Dropped>, pointer: &str, what: impl Into<String>) {
    dropped.push(Dropped {
        pointer: pointer.to_owned(),
        what: what.into(),
    });
}

/// Whether a schema node accepts `null`.
fn accepts_null(node: &Value) -> bool {
    match node.get("type") {
        Some(Value::String(t)) if t == "null" => return true,
        Some(Value::Array(ts)) if ts.iter().any(|t| t == "null") => return true,
        _ => {}
    }
    if node.get("const") == Some(&Value::Null) {
        return true;
    }
    if node
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.contains(&Value::Null))
    {
        return true;
    }
    ["anyOf", "oneOf"].iter().any(|k| {
        node.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|bs| bs.iter().any(accepts_null))
    })
}

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
fn strict_node(node: &Value, ptr: &str, dropped: &mut Vec<Dropped>) -> Result<Value, Dropped> {
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
    }
    Ok(Value::Object(out))
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
fn lift(schema: &Value, value: &mut Value) {
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

const GEMINI_FORMATS: [&str; 6] = ["enum", "date-time", "int32", "int64", "float", "double"];

/// Lowers a node to Gemini's OpenAPI subset.
fn gemini_node(node: &Value, ptr: &str, dropped: &mut Vec<Dropped>) -> Value {
    let Some(map) = node.as_object() else {
        // `true` or `false` (a general schema's): Gemini takes typed schemas only.
        note(dropped, ptr, format!("the schema `{node}` removed"));
        return json!({});
    };
    let mut out = Map::new();
    // Types: one name plus `nullable`; several non-null types become a union.
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
            "const" => match value {
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
            },
            "enum" => {
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
            "anyOf" | "oneOf" => {
                if key == "oneOf" {
                    note(dropped, ptr, "oneOf relaxed to anyOf (exactly-one is checked locally)");
                }
                let branches = value.as_array().cloned().unwrap_or_default();
                let non_null: Vec<(usize, &Value)> = branches
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.get("type") != Some(&Value::from("null")) || b.as_object().is_some_and(|m| m.len() > 1))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical() -> Value {
        json!({
            "type": "object",
            "properties": {
                "zip": {"type": "string", "pattern": "^[0-9]{5}$", "minLength": 5},
                "limit": {"type": "integer", "default": 10, "exclusiveMinimum": 0},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
            },
            "required": ["zip"],
            "additionalProperties": false
        })
    }

    #[test]
    fn strict_requires_everything_and_makes_optional_nullable() {
        let l = lower_tool(Provider::OpenAiStrict, "t", "d", &canonical());
        assert!(l.strict);
        let p = l.parameters().unwrap();
        assert_eq!(p["required"], json!(["zip", "limit", "tags"]));
        assert_eq!(p["properties"]["limit"]["type"], json!(["integer", "null"]));
        assert_eq!(p["additionalProperties"], json!(false));
        assert!(p["properties"]["zip"].get("minLength").is_none());
        assert!(l
            .dropped
            .iter()
            .any(|d| d.to_string() == "minLength removed at /properties/zip"));
        let lifted = l.lift_arguments(json!({"zip": "12345", "limit": null, "tags": null}));
        assert_eq!(lifted, json!({"zip": "12345"}));
    }

    #[test]
    fn a_header_annotation_never_reaches_a_model() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"],
            "additionalProperties": false});
        for provider in Provider::ALL {
            let l = lower_tool(provider, "t", "d", &schema);
            let sent = l.parameters().unwrap().to_string();
            assert!(!sent.contains("x-mcp-header"), "{provider}: {sent}");
            assert!(
                !l.dropped.iter().any(|d| d.pointer.contains("region")),
                "{provider}: the annotation relaxes nothing: {:?}",
                l.dropped
            );
        }
    }

    #[test]
    fn records_turn_strict_off_with_a_note() {
        let schema = json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}});
        let l = lower_tool(Provider::OpenAiStrict, "t", "d", &schema);
        assert!(!l.strict);
        assert_eq!(l.declaration["function"]["strict"], json!(false));
        assert!(
            l.dropped[0].to_string().contains("strict mode disabled"),
            "{:?}",
            l.dropped
        );
    }

    #[test]
    fn gemini_drops_what_its_subset_lacks_and_reports_it() {
        let l = lower_tool(Provider::Gemini, "t", "d", &canonical());
        let p = l.parameters().unwrap();
        assert!(p.get("additionalProperties").is_none());
        assert!(p["properties"]["limit"].get("exclusiveMinimum").is_none());
        let notes: Vec<String> = l.dropped.iter().map(ToString::to_string).collect();
        assert!(
            notes.contains(&"exclusiveMinimum removed at /properties/limit".to_owned()),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("additionalProperties: false removed")),
            "{notes:?}"
        );
    }

    #[test]
    fn gemini_turns_type_arrays_into_nullable() {
        let schema = json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}});
        let l = lower_tool(Provider::Gemini, "t", "d", &schema);
        assert_eq!(
            l.parameters().unwrap()["properties"]["a"],
            json!({"type": "string", "nullable": true})
        );
    }

    #[test]
    fn anthropic_and_openai_keep_the_schema() {
        let a = lower_tool(Provider::Anthropic, "t", "d", &canonical());
        assert_eq!(a.declaration["input_schema"], canonical());
        assert!(a.dropped.is_empty());
        let o = lower_tool(Provider::OpenAi, "t", "d", &canonical());
        assert_eq!(o.declaration["function"]["parameters"], canonical());
    }

    /// A general schema's keywords (an MCP server's tool), canonical already.
    fn general() -> Value {
        json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": true, "uniqueItems": true}
            },
            "allOf": [{"required": ["tags"]}]
        })
    }

    #[test]
    fn a_general_schema_is_kept_whole_where_it_can_be_and_reported_where_not() {
        let a = lower_tool(Provider::Anthropic, "t", "d", &general());
        assert_eq!(a.declaration["input_schema"], general());
        assert!(a.dropped.is_empty());
        let strict = lower_tool(Provider::OpenAiStrict, "t", "d", &general());
        assert!(!strict.strict);
        assert_eq!(strict.declaration["function"]["parameters"], general());
        assert!(
            strict.dropped[0]
                .what
                .contains("cannot be expressed in strict mode"),
            "{:?}",
            strict.dropped
        );
        let g = lower_tool(Provider::Gemini, "t", "d", &general());
        let said: Vec<String> = g.dropped.iter().map(ToString::to_string).collect();
        assert!(said.contains(&"allOf removed at /".to_owned()), "{said:?}");
        assert!(
            said.contains(&"the schema `true` removed at /properties/tags/items".to_owned()),
            "{said:?}"
        );
        assert!(
            said.iter().any(|s| s.starts_with("uniqueItems removed")),
            "{said:?}"
        );
        assert_eq!(
            g.declaration["parameters"]["properties"]["tags"]["items"],
            json!({})
        );
    }
}
