//! Checking that a JSON Schema stays inside the spec's subset, and bringing it to canonical form.
//!
//! The subset is that of spec 000 §3.2 and spec 002 ("Supported Zod Types"): string, number,
//! integer, boolean, null, literal (`const`), enum, optional (absent from `required`), nullable
//! (`type: [T, "null"]` or a union with null), default, array, object, record (an object whose
//! `additionalProperties` is a schema) and union (`anyOf`/`oneOf`), with descriptions and the usual
//! constraints. The canonical form has every local `$ref` inlined and no `$defs`, `$schema` or
//! `$id`, so that validation and provider lowering see one self-contained tree.
//!
//! Nesting is counted in containers (object, record, array) from the root object, which is level
//! 1; wrappers (nullable, optional, union) do not add a level. More than [`MAX_DEPTH`] is refused.
//! The canonical form's size and the nesting of all schemas are bounded too (see [`super::budget`]).

mod general;
mod headers;
mod refs;

use super::budget::{Budget, MAX_SCHEMA_BYTES, MAX_SCHEMA_NESTING};
pub use general::general_keywords;
use refs::RefSite;
use serde_json::{Map, Value};

/// The deepest nesting a tool schema may have (spec 000 §3.3).
pub const MAX_DEPTH: usize = 7;

/// The most issues one schema reports.
const MAX_ISSUES: usize = 50;

/// One reason a schema is outside the subset, at one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaIssue {
    /// JSON pointer into the schema as written (inside `$defs` when the problem is there).
    pub pointer: String,
    /// What is wrong, in one sentence.
    pub reason: String,
}

const TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "null", "object", "array",
];

/// Keywords that only annotate and are kept as they are.
const ANNOTATIONS: [&str; 6] = [
    "description",
    "title",
    "default",
    "examples",
    "$comment",
    "deprecated",
];

/// The keyword that names the HTTP header mirroring a property's value (MCP's SEP-2243), for
/// gateways that route on headers: kept, never sent to a model.
pub const TRANSPORT_HEADER: &str = "x-mcp-header";

/// Keywords dropped from the canonical form because they carry nothing a validator needs.
const DROPPED: [&str; 6] = [
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "readOnly",
    "writeOnly",
];

/// Which schemas a tool may have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dialect {
    /// The spec's subset: what toolhost's own tools are written in.
    #[default]
    Subset,
    /// Any JSON Schema 2020-12 (the tools of MCP servers): the keywords outside the subset
    /// (`allOf`, `not`, `if`/`then`/`else`, `prefixItems`, `patternProperties`, `true` and
    /// `false` schemas, ...) are kept, their subschemas canonicalized too; only what cannot be
    /// resolved locally (a remote or dynamic reference, recursion) or is not JSON Schema is
    /// refused. Provider lowering drops what a provider cannot take and reports it.
    General,
    /// [`Dialect::General`] for toolhost's own tools (a blueprint whose `$schema` names JSON
    /// Schema 2020-12): a keyword JSON Schema does not define is refused unless it starts with
    /// `x-` (a misspelt constraint would otherwise go unenforced), and `x-mcp-header` is checked
    /// as in the subset.
    Declared,
}

/// Checks `raw` against the subset and returns its canonical form, or every issue found.
///
/// With `object_root`, the root must be an object schema (as tool arguments are).
pub fn canonicalize(raw: &Value, object_root: bool) -> Result<Value, Vec<SchemaIssue>> {
    canonicalize_in(raw, object_root, Dialect::Subset)
}

/// [`canonicalize`] for schemas of `dialect`.
pub fn canonicalize_in(
    raw: &Value,
    object_root: bool,
    dialect: Dialect,
) -> Result<Value, Vec<SchemaIssue>> {
    let mut walk = Walk {
        dialect,
        root: raw,
        issues: Vec::new(),
        ref_stack: Vec::new(),
        budget: Budget::new(),
        limit_reported: false,
        headers: Vec::new(),
    };
    let out = walk.node(raw, "", 1, object_root);
    if walk.issues.is_empty() {
        Ok(out)
    } else {
        Err(walk.issues)
    }
}

struct Walk<'a> {
    dialect: Dialect,
    root: &'a Value,
    issues: Vec<SchemaIssue>,
    /// The `$ref`s being inlined, outermost first: where each is used and what it names.
    ref_stack: Vec<RefSite>,
    budget: Budget,
    /// Whether the one issue of a spent budget (size or nesting) was reported.
    limit_reported: bool,
    /// The header names `x-mcp-header` gave so far, lowercased (each names one argument).
    headers: Vec<String>,
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

impl Walk<'_> {
    /// Records an issue once: a definition inlined many times reports its problem at one
    /// pointer (inside `$defs`), and the list stops at [`MAX_ISSUES`] with a last line saying so.
    fn issue(&mut self, pointer: &str, reason: impl Into<String>) {
        let issue = SchemaIssue {
            pointer: if pointer.is_empty() {
                "/".to_owned()
            } else {
                pointer.to_owned()
            },
            reason: reason.into(),
        };
        if self.issues.len() > MAX_ISSUES || self.issues.contains(&issue) {
            return;
        }
        if self.issues.len() == MAX_ISSUES {
            self.issues.push(SchemaIssue {
                pointer: "/".to_owned(),
                reason: format!("more problems were found; only the first {MAX_ISSUES} are listed"),
            });
            return;
        }
        self.issues.push(issue);
    }

    /// Canonicalizes one schema node at `ptr`, which sits at container level `depth`, within
    /// the budget: once it is spent, nothing more is walked or copied.
    fn node(&mut self, node: &Value, ptr: &str, depth: usize, is_root: bool) -> Value {
        if self.budget.spent {
            return Value::Null;
        }
        let out = if self.budget.enter() {
            self.node_within(node, ptr, depth, is_root)
        } else {
            self.issue(
                ptr,
                format!("schemas nest more than {MAX_SCHEMA_NESTING} deep here (counting unions and `$ref`s that lead to `$ref`s); that is the limit"),
            );
            // The walk stops here; what it then cannot copy is not a second problem.
            self.budget.spent = true;
            self.limit_reported = true;
            Value::Null
        };
        self.budget.leave();
        out
    }

    /// Charges `bytes` of the canonical form; the first charge past the limit is reported at
    /// the outermost `$ref` being inlined (or at `ptr` when there is none).
    fn charge(&mut self, ptr: &str, bytes: usize) -> bool {
        if self.budget.charge(bytes) {
            return true;
        }
        self.over_budget(ptr);
        false
    }

    /// Copies `value` under `key` into `out` as it is, if the budget allows.
    fn copy(&mut self, out: &mut Map<String, Value>, key: &str, value: &Value, ptr: &str) {
        if self.budget.charge_copy(key, value) {
            out.insert(key.to_owned(), value.clone());
        } else {
            self.over_budget(ptr);
        }
    }

    fn over_budget(&mut self, ptr: &str) {
        if std::mem::replace(&mut self.limit_reported, true) {
            return;
        }
        let (at, reason) = match self.ref_stack.first() {
            Some(site) => {
                let chain: Vec<String> = self
                    .ref_stack
                    .iter()
                    .take(3)
                    .map(|r| format!("\"{}\"", r.target))
                    .collect();
                let more = if self.ref_stack.len() > 3 { " → …" } else { "" };
                (
                    site.at.clone(),
                    format!(
                        "the schema with its `$ref`s inlined ({}{more}) would be larger than {MAX_SCHEMA_BYTES} bytes, the limit: each `$ref` is copied to every place that uses it, so references that use others more than once grow exponentially",
                        chain.join(" → ")
                    ),
                )
            }
            None => (
                ptr.to_owned(),
                format!("the schema with its `$ref`s inlined would be larger than {MAX_SCHEMA_BYTES} bytes, the limit"),
            ),
        };
        self.issue(&at, reason);
    }

    fn node_within(&mut self, node: &Value, ptr: &str, depth: usize, is_root: bool) -> Value {
        if !self.charge(ptr, 2) {
            return Value::Null;
        }
        let general = self.dialect != Dialect::Subset;
        let map = match node {
            Value::Object(map) => map,
            Value::Bool(_) if general && !is_root => return node.clone(),
            Value::Bool(true) => {
                self.issue(
                    ptr,
                    "the schema `true` accepts any value; give this value a type",
                );
                return Value::Bool(true);
            }
            Value::Bool(false) => {
                self.issue(ptr, "the schema `false` accepts nothing; remove it");
                return Value::Bool(false);
            }
            _ => {
                self.issue(ptr, "a schema must be a JSON object");
                return node.clone();
            }
        };
        if let Some(reference) = map.get("$ref") {
            return self.reference(map, reference, ptr, depth, is_root);
        }

        let Some(is_object) = self.shape(map, ptr, depth, is_root) else {
            return node.clone();
        };
        let mut out = Map::new();
        for (key, value) in map {
            if self.budget.spent {
                break;
            }
            self.keyword(map, key, value, ptr, depth, &mut out);
        }
        // In general, a required name may be declared elsewhere (`patternProperties`, `allOf`).
        if is_object && !general {
            self.check_required(&out, ptr);
        }
        Value::Object(out)
    }

    /// Checks what a schema object is (its types; the root must be an object; nesting within
    /// [`MAX_DEPTH`]) and says whether it is an object schema; `None` when it nests too deep to
    /// be read further.
    fn shape(
        &mut self,
        map: &Map<String, Value>,
        ptr: &str,
        depth: usize,
        is_root: bool,
    ) -> Option<bool> {
        let general = self.dialect != Dialect::Subset;
        let types = self.types(map, ptr);
        let is_object = types.iter().any(|t| t == "object")
            || map.contains_key("properties")
            || map.contains_key("additionalProperties");
        let is_array = types.iter().any(|t| t == "array") || map.contains_key("items");
        if is_root && !(types.len() == 1 && types[0] == "object") {
            self.issue(ptr, "the arguments schema must be `\"type\": \"object\"`");
        }
        let has_shape = !types.is_empty()
            || ["const", "enum", "anyOf", "oneOf"]
                .iter()
                .any(|k| map.contains_key(*k));
        if !has_shape && !is_object && !is_array && !general {
            self.issue(
                ptr,
                "the schema names no type; add `type`, `const`, `enum` or `anyOf`",
            );
        }
        if (is_object || is_array) && depth > MAX_DEPTH {
            self.issue(
                ptr,
                format!("the schema nests {depth} levels deep; the limit is {MAX_DEPTH}"),
            );
            return None;
        }
        Some(is_object)
    }

    /// Canonicalizes keyword `key` (value `value`) of the schema object `map` at `ptr` into
    /// `out`, or says why it cannot be.
    fn keyword(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        value: &Value,
        ptr: &str,
        depth: usize,
        out: &mut Map<String, Value>,
    ) {
        let general = self.dialect != Dialect::Subset;
        let at = format!("{ptr}/{}", escape(key));
        match key {
            k if DROPPED.contains(&k) => {}
            TRANSPORT_HEADER if self.dialect != Dialect::General => {
                self.transport_header(map, value, ptr, &at);
                self.copy(out, key, value, &at);
            }
            "type" | "format" => self.copy(out, key, value, &at),
            k if ANNOTATIONS.contains(&k) => self.copy(out, key, value, &at),
            "const" => self.copy(out, key, value, &at),
            "enum" => {
                match value.as_array() {
                    Some(items) if !items.is_empty() => {}
                    _ => self.issue(&at, "`enum` must be a non-empty array"),
                }
                self.copy(out, key, value, &at);
            }
            "anyOf" | "oneOf" if !self.charge(&at, key.len() + 4) => {}
            "anyOf" | "oneOf" => self.schema_list(key, value, &at, depth, out),
            "properties" => self.properties(value, &at, depth, out),
            "required" => {
                let names_ok = value
                    .as_array()
                    .is_some_and(|names| names.iter().all(Value::is_string));
                if !names_ok {
                    self.issue(&at, "`required` must be an array of property names");
                }
                self.copy(out, key, value, &at);
            }
            "additionalProperties" => match value {
                Value::Bool(_) => self.copy(out, key, value, &at),
                _ => {
                    let canon = self.node(value, &at, depth + 1, false);
                    out.insert(key.to_owned(), canon);
                }
            },
            k if general && self.general_keyword(map, k, value, &at, depth, out) => {}
            "propertyNames" => {
                // A record's keys are strings already; only the trivial form is accepted.
                if value.get("type") != Some(&Value::from("string"))
                    || value.as_object().is_some_and(|m| m.len() > 1)
                {
                    self.issue(
                        &at,
                        "`propertyNames` may only say `{\"type\": \"string\"}`: record keys are plain strings",
                    );
                }
            }
            "items" => {
                if value.is_array() {
                    self.issue(&at, "tuple `items` (an array of schemas) is outside the supported subset; use one schema");
                } else {
                    let canon = self.node(value, &at, depth + 1, false);
                    out.insert(key.to_owned(), canon);
                }
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" => {
                if !value.is_u64() {
                    self.issue(&at, format!("`{key}` must be a non-negative integer"));
                }
                self.copy(out, key, value, &at);
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                if !value.is_number() {
                    self.issue(&at, format!("`{key}` must be a number"));
                }
                self.copy(out, key, value, &at);
            }
            "pattern" => {
                if !value.is_string() {
                    self.issue(&at, "`pattern` must be a string");
                }
                self.copy(out, key, value, &at);
            }
            "nullable" => self.issue(
                &at,
                "`nullable` is OpenAPI, not JSON Schema; write `\"type\": [T, \"null\"]`",
            ),
            // JSON Schema ignores keywords it does not know: they annotate, kept as they are.
            _ if self.dialect == Dialect::General => self.copy(out, key, value, &at),
            k if general && k.starts_with("x-") => self.copy(out, key, value, &at),
            other if general => self.issue(
                &at,
                format!("keyword `{other}` is not one of JSON Schema 2020-12 (extensions start with `x-`)"),
            ),
            other => self.issue(
                &at,
                format!("keyword `{other}` is outside the supported subset (string, number, integer, boolean, null, const, enum, array, object, record, anyOf/oneOf, with their length, pattern and bound constraints)"),
            ),
        }
    }

    /// Canonicalizes a list of subschemas under `key` into `out` (a union's branches, `allOf`,
    /// `prefixItems`), each at level `depth`.
    fn schema_list(
        &mut self,
        key: &str,
        value: &Value,
        at: &str,
        depth: usize,
        out: &mut Map<String, Value>,
    ) {
        match value.as_array() {
            Some(schemas) if !schemas.is_empty() => {
                let canon = schemas
                    .iter()
                    .enumerate()
                    .map(|(i, s)| self.node(s, &format!("{at}/{i}"), depth, false))
                    .collect();
                out.insert(key.to_owned(), Value::Array(canon));
            }
            _ => self.issue(at, format!("`{key}` must be a non-empty array of schemas")),
        }
    }

    /// Canonicalizes an object's `properties`, one nesting level down.
    fn properties(&mut self, value: &Value, at: &str, depth: usize, out: &mut Map<String, Value>) {
        let Some(props) = value.as_object() else {
            self.issue(at, "`properties` must be an object of schemas");
            return;
        };
        let mut canon = Map::new();
        for (name, schema) in props {
            let p = format!("{at}/{}", escape(name));
            if !self.charge(&p, name.len() + 4) {
                break;
            }
            canon.insert(name.clone(), self.node(schema, &p, depth + 1, false));
        }
        out.insert("properties".to_owned(), Value::Object(canon));
    }

    /// Reads `type` and reports values outside the subset.
    fn types(&mut self, map: &Map<String, Value>, ptr: &str) -> Vec<String> {
        let at = format!("{ptr}/type");
        let names: Vec<String> = match map.get("type") {
            None => return Vec::new(),
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) if !ts.is_empty() && ts.iter().all(Value::is_string) => ts
                .iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
            Some(_) => {
                self.issue(
                    &at,
                    "`type` must be a type name or a non-empty array of them",
                );
                return Vec::new();
            }
        };
        for name in &names {
            if !TYPES.contains(&name.as_str()) {
                self.issue(
                    &at,
                    format!("type \"{name}\" is not a JSON Schema type (use one of {TYPES:?})"),
                );
            }
        }
        names
    }

    /// A required name must be declared, unless the object is a record (its keys are free).
    fn check_required(&mut self, out: &Map<String, Value>, ptr: &str) {
        let Some(required) = out.get("required").and_then(Value::as_array) else {
            return;
        };
        let Some(props) = out.get("properties").and_then(Value::as_object) else {
            return;
        };
        if out
            .get("additionalProperties")
            .is_some_and(Value::is_object)
        {
            return;
        }
        for name in required.iter().filter_map(Value::as_str) {
            if !props.contains_key(name) {
                self.issue(
                    &format!("{ptr}/required"),
                    format!("required property \"{name}\" is not declared in `properties`"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
