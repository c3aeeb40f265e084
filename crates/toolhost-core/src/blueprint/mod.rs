//! Blueprint tools (spec 004): a tool written as one JSON Schema file.
//!
//! A blueprint is an object schema whose properties are the tool's arguments, plus
//! meta-properties that start with `_` and steer the runtime instead: `_tool` (the name, which must
//! equal the file stem), `_output` (what a result looks like), `_activity` (the program that does
//! the work), `_delegate`, `_outputPath`, `_instance` and `_reasoningForCall`. They are parsed
//! here and kept apart from the arguments.
//!
//! A blueprint is *explicit* when an activity runs it: an explicit non-empty `_activity` names it,
//! otherwise an activity registered under the tool's name binds. Otherwise it is *latent*: the
//! model answers the call itself. A latent tool shows the model its `_output` schema; an explicit
//! one does not (the activity produces the result).
//!
//! A blueprint is written in the spec's subset of JSON Schema, which every provider takes, unless
//! its `$schema` names JSON Schema 2020-12 ([`GENERAL_DIALECT`]): then it may use all of that
//! dialect (`allOf`, `if`/`then`/`else`, `$anchor`, ...; MCP's SEP-2106 lets tools do so), held
//! to the rules of an MCP server's tool ([`Dialect::Declared`]): validated locally, lowered for
//! each provider with a report of what that provider cannot take; a keyword JSON Schema does not
//! define is refused, as in the subset.
//!
//! Beside the schema, a blueprint may carry toolhost's own keys at its root: `variables` (spec 001
//! declarations), `tenvs` (spec 000's alias, an object schema), `executionMode`,
//! `executionProvider`, `idempotent` and `annotations` (MCP's `readOnlyHint`, `destructiveHint`
//! and `openWorldHint`, served by `toolhost mcp`). They are not shown to the model.

mod activity;
mod latent;
mod output_path;
mod reader;
mod request;

pub use activity::Activities;
pub use output_path::output_path_segments;
pub use request::request_schema;

use crate::schema::{Dialect, SchemaIssue};
use crate::tool::{ExecutionMode, ToolHints};
use crate::variables::VariableDecl;
use reader::Reader;
use serde_json::{Map, Value};
use std::fmt;

/// The meta-properties a blueprint may declare.
pub const META_PROPERTIES: [&str; 7] = [
    "_tool",
    "_output",
    "_activity",
    "_delegate",
    "_outputPath",
    "_instance",
    "_reasoningForCall",
];

/// The `$schema` that lets a blueprint use all of JSON Schema 2020-12, not only the subset.
pub const GENERAL_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Root keys that are toolhost's own and never reach the model.
const TOOLHOST_KEYS: [&str; 6] = [
    "variables",
    "tenvs",
    "executionMode",
    "executionProvider",
    "idempotent",
    "annotations",
];

/// A blueprint file that could not be read as a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlueprintError {
    /// The tool (the file stem).
    pub tool: String,
    /// Every problem, each with its JSON pointer into the file.
    pub issues: Vec<SchemaIssue>,
}

impl fmt::Display for BlueprintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "at {}: {}", issue.pointer, issue.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for BlueprintError {}

/// The meta-properties of a blueprint, kept apart from its arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlueprintMeta {
    /// The `_tool` constant, when declared.
    pub tool: Option<String>,
    /// The `_output` schema.
    pub output: Option<Value>,
    /// The `_activity` constant; empty means none.
    pub activity: Option<String>,
    /// The `_delegate` schema or constant, kept as written.
    pub delegate: Option<Value>,
    /// The `_outputPath` constant.
    pub output_path: Option<String>,
    /// The `_instance` schema, kept as written.
    pub instance: Option<Value>,
    /// The `_reasoningForCall` schema: where the model says why it calls.
    pub reasoning_for_call: Option<Value>,
}

/// How a blueprint's calls are answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// The model answers the call itself.
    Latent,
    /// An activity runs the call.
    Explicit {
        /// The activity's name.
        activity: String,
    },
}

/// A parsed blueprint tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Blueprint {
    /// The tool name (the file stem).
    pub name: String,
    /// The `title`, when given.
    pub title: Option<String>,
    /// The `description` shown to the model.
    pub description: String,
    /// The argument schema: the object schema without meta-properties.
    pub arguments: Value,
    /// The meta-properties.
    pub meta: BlueprintMeta,
    /// Declared variables (from `variables`, or `tenvs`).
    pub variables: Vec<VariableDecl>,
    /// Local or provider execution.
    pub execution_mode: ExecutionMode,
    /// The provider of a provider-mode tool.
    pub execution_provider: Option<String>,
    /// Whether a call may be re-run safely with the same idempotency key.
    pub idempotent: bool,
    /// What the tool says about its effects (`annotations`).
    pub hints: ToolHints,
    /// Which JSON Schema its schemas are written in: the subset, or all of 2020-12 when its
    /// `$schema` says so.
    pub dialect: Dialect,
}

/// The meta-properties of one call, split from its arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallMeta {
    /// `_output` as the model wrote it (latent calls).
    pub output: Option<Value>,
    /// `_reasoningForCall` as the model wrote it.
    pub reasoning_for_call: Option<Value>,
    /// Any other `_`-prefixed values of the call, by name.
    pub other: Map<String, Value>,
}

/// Splits a call's `_`-prefixed values from its arguments.
pub fn split_call(call: Value) -> (Value, CallMeta) {
    let Value::Object(map) = call else {
        return (call, CallMeta::default());
    };
    let mut args = Map::new();
    let mut meta = CallMeta::default();
    for (key, value) in map {
        match key.as_str() {
            "_output" => meta.output = Some(value),
            "_reasoningForCall" => meta.reasoning_for_call = Some(value),
            k if k.starts_with('_') => {
                meta.other.insert(key, value);
            }
            _ => {
                args.insert(key, value);
            }
        }
    }
    (Value::Object(args), meta)
}

impl Blueprint {
    /// Parses a blueprint file's text; `stem` is the file name without `.json`.
    pub fn parse(stem: &str, text: &str) -> Result<Self, BlueprintError> {
        // Read exactly: a bound or constant past 64 bits is refused, not rounded.
        let value: Value = crate::exact::from_str(text).map_err(|e| {
            let (pointer, reason) = match e {
                crate::exact::ExactJsonError::Json(e) => {
                    ("/".to_owned(), format!("the file is not valid JSON: {e}"))
                }
                crate::exact::ExactJsonError::Inexact(n) => (
                    if n.pointer.is_empty() {
                        "/".to_owned()
                    } else {
                        n.pointer.clone()
                    },
                    format!(
                        "the integer {} does not fit in 64 bits; it is refused rather than rounded",
                        n.number
                    ),
                ),
            };
            BlueprintError {
                tool: stem.to_owned(),
                issues: vec![SchemaIssue { pointer, reason }],
            }
        })?;
        Self::from_value(stem, &value)
    }

    /// Reads a blueprint from its JSON value; `stem` is the tool name from the file name.
    pub fn from_value(stem: &str, value: &Value) -> Result<Self, BlueprintError> {
        let mut r = Reader::new(stem);
        let Some(root) = value.as_object() else {
            r.issue("/", "a blueprint must be a JSON object (an object schema)");
            return Err(r.into_error());
        };
        if root.get("type").is_some_and(|t| t != "object") {
            r.issue("/type", "a blueprint's `type` must be \"object\"");
        }
        let description = match root.get("description") {
            Some(Value::String(d)) if !d.trim().is_empty() => d.clone(),
            _ => {
                r.issue(
                    "/description",
                    "a non-empty `description` is required: it tells the model what the tool does",
                );
                String::new()
            }
        };
        let title = root.get("title").and_then(Value::as_str).map(str::to_owned);
        let Some((meta, arg_props)) = r.properties(root, stem) else {
            return Err(r.into_error());
        };
        let arguments = r.arguments(root, arg_props);
        let variables = r.variables(root);
        let execution_mode = r.execution_mode(root);
        let execution_provider = root
            .get("executionProvider")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let idempotent = r.idempotent(root);
        let hints = r.hints(root);
        let dialect = match root.get("$schema").and_then(Value::as_str) {
            Some(uri) if uri.trim_end_matches('#') == GENERAL_DIALECT => Dialect::Declared,
            _ => Dialect::Subset,
        };
        if !r.issues.is_empty() {
            return Err(r.into_error());
        }
        Ok(Blueprint {
            name: stem.to_owned(),
            title,
            description,
            arguments: Value::Object(arguments),
            meta,
            variables,
            execution_mode,
            execution_provider,
            idempotent,
            hints,
            dialect,
        })
    }

    /// How this blueprint's calls are answered, given which activities are registered.
    pub fn binding(&self, is_registered: impl Fn(&str) -> bool) -> Binding {
        match self.meta.activity.as_deref() {
            Some(activity) if !activity.is_empty() => Binding::Explicit {
                activity: activity.to_owned(),
            },
            _ if is_registered(&self.name) => Binding::Explicit {
                activity: self.name.clone(),
            },
            _ => Binding::Latent,
        }
    }

    /// The schema the model fills in for a call: the arguments, `_reasoningForCall` when
    /// declared, and `_output` for a latent tool only, where it is required: it is the call's
    /// result, which the model writes itself.
    pub fn model_parameters(&self, binding: &Binding) -> Value {
        let mut schema = self.arguments.clone();
        let latent_output = match binding {
            Binding::Latent => self.meta.output.as_ref(),
            Binding::Explicit { .. } => None,
        };
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            if let Some(reasoning) = &self.meta.reasoning_for_call {
                props.insert("_reasoningForCall".into(), reasoning.clone());
            }
            if let Some(output) = latent_output {
                props.insert("_output".into(), output.clone());
            }
        }
        if let (Some(_), Some(root)) = (latent_output, schema.as_object_mut()) {
            let required = root
                .entry("required")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(names) = required.as_array_mut() {
                names.push(Value::String("_output".into()));
            }
        }
        schema
    }
}

#[cfg(test)]
mod tests;
