//! Reading a blueprint's JSON, part by part, into what [`super::Blueprint`] holds: every
//! problem is noted with where it is, and the reading goes on so that one pass reports them all.

use super::{output_path_segments, BlueprintError, BlueprintMeta, META_PROPERTIES, TOOLHOST_KEYS};
use crate::schema::SchemaIssue;
use crate::tool::{ExecutionMode, ToolHints};
use crate::variables::{variables_from_tenvs, VariableDecl};
use serde_json::{Map, Value};

/// The problems found so far in one tool's blueprint.
pub(super) struct Reader {
    tool: String,
    pub(super) issues: Vec<SchemaIssue>,
}

impl Reader {
    pub(super) fn new(tool: &str) -> Self {
        Self {
            tool: tool.to_owned(),
            issues: Vec::new(),
        }
    }

    pub(super) fn issue(&mut self, pointer: impl Into<String>, reason: impl Into<String>) {
        self.issues.push(SchemaIssue {
            pointer: pointer.into(),
            reason: reason.into(),
        });
    }

    /// The problems found, as the blueprint's error.
    pub(super) fn into_error(self) -> BlueprintError {
        BlueprintError {
            tool: self.tool,
            issues: self.issues,
        }
    }

    /// The meta-properties and the arguments' properties of `properties`; `None` when it is not
    /// an object (nothing more can be read).
    pub(super) fn properties(
        &mut self,
        root: &Map<String, Value>,
        stem: &str,
    ) -> Option<(BlueprintMeta, Map<String, Value>)> {
        let mut meta = BlueprintMeta::default();
        let mut arg_props = Map::new();
        if let Some(props) = root.get("properties") {
            let Some(props) = props.as_object() else {
                self.issue("/properties", "`properties` must be an object");
                return None;
            };
            for (key, schema) in props {
                match key.as_str() {
                    "_tool" => meta.tool = self.constant(key, schema),
                    "_activity" => meta.activity = self.constant(key, schema),
                    "_outputPath" => {
                        meta.output_path = self.constant(key, schema);
                        if let Some(Err(why)) =
                            meta.output_path.as_deref().map(output_path_segments)
                        {
                            self.issue("/properties/_outputPath/const", why);
                        }
                    }
                    "_output" => meta.output = Some(schema.clone()),
                    "_delegate" => meta.delegate = Some(schema.clone()),
                    "_instance" => meta.instance = Some(schema.clone()),
                    "_reasoningForCall" => meta.reasoning_for_call = Some(schema.clone()),
                    k if k.starts_with('_') => self.issue(
                        format!("/properties/{k}"),
                        format!(
                            "unknown meta-property `{k}`; known ones are {}",
                            META_PROPERTIES.join(", ")
                        ),
                    ),
                    _ => {
                        arg_props.insert(key.clone(), schema.clone());
                    }
                }
            }
        }
        if let Some(declared) = &meta.tool {
            if declared != stem {
                self.issue(
                    "/properties/_tool/const",
                    format!("`_tool` is \"{declared}\" but the file is named {stem}.json; they must match"),
                );
            }
        }
        Some((meta, arg_props))
    }

    /// The arguments' schema: the root's schema keywords with the arguments' properties, and
    /// `required` without the meta-properties; toolhost's own keys left out.
    pub(super) fn arguments(
        &mut self,
        root: &Map<String, Value>,
        arg_props: Map<String, Value>,
    ) -> Map<String, Value> {
        let mut arguments = Map::new();
        arguments.insert("type".into(), "object".into());
        arguments.insert("properties".into(), Value::Object(arg_props));
        for (key, value) in root {
            match key.as_str() {
                "type" | "properties" | "description" | "title" => {}
                "required" => {
                    let names: Vec<Value> = value
                        .as_array()
                        .map(|names| {
                            names
                                .iter()
                                .filter(|n| n.as_str().is_some_and(|n| !n.starts_with('_')))
                                .cloned()
                                .collect()
                        })
                        .unwrap_or_default();
                    if !value.is_array() {
                        self.issue("/required", "`required` must be an array of property names");
                    }
                    if !names.is_empty() {
                        arguments.insert("required".into(), Value::Array(names));
                    }
                }
                k if TOOLHOST_KEYS.contains(&k) => {}
                _ => {
                    arguments.insert(key.clone(), value.clone());
                }
            }
        }
        arguments
    }

    /// The variables the tool declares: `variables` (spec 001), then `tenvs` (spec 000).
    pub(super) fn variables(&mut self, root: &Map<String, Value>) -> Vec<VariableDecl> {
        let mut variables = Vec::new();
        if let Some(v) = root.get("variables") {
            match serde_json::from_value::<Vec<VariableDecl>>(v.clone()) {
                Ok(decls) => variables.extend(decls),
                Err(e) => self.issue("/variables", format!("`variables` must be a list of {{name, type: text|secret, required, scoped, description}}: {e}")),
            }
        }
        if let Some(t) = root.get("tenvs") {
            match variables_from_tenvs(t) {
                Ok(decls) => variables.extend(decls),
                Err(e) => self.issue("/tenvs", e.to_string()),
            }
        }
        variables
    }

    /// `executionMode`: `local` (the default) or `provider`.
    pub(super) fn execution_mode(&mut self, root: &Map<String, Value>) -> ExecutionMode {
        match root.get("executionMode").and_then(Value::as_str) {
            None | Some("local") => ExecutionMode::Local,
            Some("provider") => ExecutionMode::Provider,
            Some(other) => {
                self.issue(
                    "/executionMode",
                    format!("`executionMode` is \"{other}\"; expected \"local\" or \"provider\""),
                );
                ExecutionMode::Local
            }
        }
    }

    /// `idempotent`: true or false (the default).
    pub(super) fn idempotent(&mut self, root: &Map<String, Value>) -> bool {
        match root.get("idempotent") {
            None => false,
            Some(Value::Bool(yes)) => *yes,
            Some(_) => {
                self.issue("/idempotent", "`idempotent` must be true or false");
                false
            }
        }
    }

    /// `annotations`: MCP's hints.
    pub(super) fn hints(&mut self, root: &Map<String, Value>) -> ToolHints {
        match root.get("annotations").map(hints_of) {
            None => ToolHints::default(),
            Some(Ok(hints)) => hints,
            Some(Err((pointer, reason))) => {
                self.issue(&pointer, reason);
                ToolHints::default()
            }
        }
    }

    /// The string constant of a meta-property (`const`, or a one-value `enum`).
    fn constant(&mut self, key: &str, schema: &Value) -> Option<String> {
        let at = format!("/properties/{key}");
        let value = schema.get("const").or_else(|| {
            schema
                .get("enum")
                .and_then(Value::as_array)
                .filter(|e| e.len() == 1)
                .and_then(|e| e.first())
        });
        match value {
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.issue(
                    format!("{at}/const"),
                    format!("`{key}` must be a string constant"),
                );
                None
            }
            None => {
                self.issue(at, format!("`{key}` must give its value as `const`"));
                None
            }
        }
    }
}

/// The `annotations` of a blueprint: `readOnlyHint`, `destructiveHint` and `openWorldHint`, each
/// a boolean; anything else is refused with its pointer (`idempotentHint` is the `idempotent`
/// key's).
fn hints_of(value: &Value) -> Result<ToolHints, (String, String)> {
    let Some(map) = value.as_object() else {
        return Err((
            "/annotations".to_owned(),
            "`annotations` must be an object of readOnlyHint, destructiveHint and openWorldHint"
                .to_owned(),
        ));
    };
    let mut hints = ToolHints::default();
    for (key, v) in map {
        let pointer = format!("/annotations/{key}");
        let slot = match key.as_str() {
            "readOnlyHint" => &mut hints.read_only,
            "destructiveHint" => &mut hints.destructive,
            "openWorldHint" => &mut hints.open_world,
            "idempotentHint" => {
                return Err((
                    pointer,
                    "say `\"idempotent\": true` at the blueprint's root instead: it also decides whether a call is run again after a crash".to_owned(),
                ))
            }
            other => {
                return Err((
                    pointer,
                    format!("unknown annotation `{other}`; expected readOnlyHint, destructiveHint or openWorldHint"),
                ))
            }
        };
        *slot = Some(
            v.as_bool()
                .ok_or_else(|| (pointer.clone(), format!("`{key}` must be true or false")))?,
        );
    }
    Ok(hints)
}
