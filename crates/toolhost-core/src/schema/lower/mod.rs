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

mod gemini;
mod strict;
#[cfg(test)]
mod tests;

use super::subset::TRANSPORT_HEADER;
use gemini::gemini_node;
use serde_json::{json, Value};
use std::fmt;
use std::str::FromStr;
use strict::{lift, strict_node};

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

/// Lowers the schema of a structured reply (spec 004's combined request) for `provider`, like a
/// tool's arguments: OpenAI (strict or not) and Anthropic as tools are; Gemini takes JSON
/// Schema as it is for a reply (`responseJsonSchema`), so only what no API takes is stripped.
/// [`LoweredTool::parameters`] is the schema to send.
pub fn lower_response_format(provider: Provider, name: &str, schema: &Value) -> LoweredTool {
    let lowering = match provider {
        Provider::Gemini => Provider::Anthropic,
        other => other,
    };
    lower_tool(lowering, name, "", schema)
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

pub(super) fn note(dropped: &mut Vec<Dropped>, pointer: &str, what: impl Into<String>) {
    dropped.push(Dropped {
        pointer: pointer.to_owned(),
        what: what.into(),
    });
}

/// Whether a schema node accepts `null`.
pub(super) fn accepts_null(node: &Value) -> bool {
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
