//! Argument validation with a validator compiled once per schema, defaults applied first.
//!
//! [`CompiledSchema`] is built when a tool is registered and reused for every call. Validation
//! first applies the schema's `default` values to absent properties, then checks the value; the
//! fast path (a valid call) costs one `is_valid` pass, and only an invalid call pays for the
//! detailed error walk. Every violation is reported with its JSON pointer and worded so that a
//! model can correct its call.

use super::defaults::DefaultPlan;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// How many violations one report lists before it says how many more there are.
const MAX_REPORTED: usize = 20;
/// How many characters of an offending value a message quotes.
const MAX_QUOTED: usize = 80;

/// A schema compiled for validation, shared cheaply between clones.
#[derive(Clone)]
pub struct CompiledSchema {
    schema: Arc<Value>,
    validator: Arc<Validator>,
    defaults: Option<Arc<DefaultPlan>>,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// One way in which a value breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Violation {
    /// JSON pointer to the offending value (`""` is the whole value).
    pub pointer: String,
    /// What was expected there, in words a model can act on.
    pub message: String,
}

/// Every violation found in one value, in the order the validator met them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Violations {
    /// The first violations, at most twenty.
    pub items: Vec<Violation>,
    /// How many more were found but not listed.
    pub more: usize,
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            let at = if v.pointer.is_empty() {
                "/"
            } else {
                &v.pointer
            };
            write!(f, "at {at}: {}", v.message)?;
        }
        if self.more > 0 {
            write!(f, "; and {} more", self.more)?;
        }
        Ok(())
    }
}

impl CompiledSchema {
    /// Compiles a canonical schema. An error names the place in the schema and what is wrong
    /// (a pattern that is not a valid regular expression, for example).
    pub fn compile(schema: Value) -> Result<Self, super::SchemaIssue> {
        let validator = jsonschema::options()
            .with_draft(Draft::Draft202012)
            .should_validate_formats(false)
            .build(&schema)
            .map_err(|e| super::SchemaIssue {
                pointer: match e.instance_path().as_str() {
                    "" => "/".to_owned(),
                    p => p.to_owned(),
                },
                reason: format!(
                    "the schema does not compile: {}",
                    quote_limited(&e.to_string())
                ),
            })?;
        Ok(Self {
            defaults: DefaultPlan::build(&schema).map(Arc::new),
            schema: Arc::new(schema),
            validator: Arc::new(validator),
        })
    }

    /// The canonical schema this was compiled from.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether `value` is valid as it is (no defaults applied).
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// Applies defaults to `value`, then validates it. Returns the value with defaults applied.
    pub fn validate(&self, mut value: Value) -> Result<Value, Violations> {
        if let Some(plan) = &self.defaults {
            plan.apply(&mut value);
        }
        if self.validator.is_valid(&value) {
            return Ok(value);
        }
        Err(self.violations(&value))
    }

    /// Lists the violations of a value known to be invalid.
    pub fn violations(&self, value: &Value) -> Violations {
        let mut items = Vec::new();
        let mut more = 0;
        for error in self.validator.iter_errors(value) {
            if items.len() < MAX_REPORTED {
                items.push(describe(&error));
            } else {
                more += 1;
            }
        }
        Violations { items, more }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Shortens text for quoting inside a message, on a character boundary.
pub(crate) fn quote_limited(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((cut, _)) => format!("{}… ({} characters)", &text[..cut], text.chars().count()),
        None => text.to_owned(),
    }
}

fn quote(value: &Value) -> String {
    match value {
        Value::String(s) if s.len() > MAX_QUOTED * 4 => {
            format!("a string of {} characters", s.chars().count())
        }
        Value::Array(a) if a.len() > 8 => format!("an array of {} items", a.len()),
        Value::Object(o) if o.len() > 8 => format!("an object with {} properties", o.len()),
        other => quote_limited(&other.to_string()),
    }
}

fn describe(error: &ValidationError<'_>) -> Violation {
    let instance = error.instance();
    let got = || format!("{} {}", json_type(instance), quote(instance));
    let message = match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            format!("expected {expected}, got {}", got())
        }
        ValidationErrorKind::Required { property } => {
            format!("missing required property {property}")
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => format!(
            "unexpected propert{} {}; only the declared properties are accepted",
            if unexpected.len() == 1 { "y" } else { "ies" },
            unexpected
                .iter()
                .map(|u| format!("\"{}\"", quote_limited(u)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ValidationErrorKind::Enum { options } => {
            format!(
                "expected one of {}, got {}",
                quote_limited(&options.to_string()),
                got()
            )
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!(
                "expected exactly {}, got {}",
                quote_limited(&expected_value.to_string()),
                got()
            )
        }
        ValidationErrorKind::MinLength { limit } => {
            format!("expected at least {limit} characters, got {}", got())
        }
        ValidationErrorKind::MaxLength { limit } => format!(
            "expected at most {limit} characters, got {} characters",
            instance.as_str().map_or(0, |s| s.chars().count())
        ),
        ValidationErrorKind::Pattern { pattern } => {
            format!(
                "expected a string matching the pattern {pattern}, got {}",
                got()
            )
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("expected at least {limit} items, got {}", quote(instance))
        }
        ValidationErrorKind::MaxItems { limit } => format!(
            "expected at most {limit} items, got {}",
            instance.as_array().map_or(0, Vec::len)
        ),
        ValidationErrorKind::Minimum { limit } => {
            format!("expected a number ≥ {limit}, got {}", got())
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("expected a number ≤ {limit}, got {}", got())
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("expected a number > {limit}, got {}", got())
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("expected a number < {limit}, got {}", got())
        }
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
            format!("{} matches none of the allowed shapes", got())
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            format!("{} matches more than one of the allowed shapes", got())
        }
        _ => quote_limited(&error.to_string()),
    };
    Violation {
        pointer: error.instance_path().as_str().to_owned(),
        message,
    }
}

/// Builds an empty closed object schema: the arguments of a tool that takes none.
pub fn no_arguments_schema() -> Value {
    let mut map = Map::new();
    map.insert("type".into(), "object".into());
    map.insert("properties".into(), Value::Object(Map::new()));
    map.insert("additionalProperties".into(), false.into());
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compiled(schema: Value) -> CompiledSchema {
        CompiledSchema::compile(schema).unwrap()
    }

    #[test]
    fn defaults_are_applied_before_validation() {
        let s = compiled(json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "default": 10}},
            "required": ["q"]
        }));
        assert_eq!(
            s.validate(json!({"q": "x"})).unwrap(),
            json!({"q": "x", "limit": 10})
        );
        assert_eq!(
            s.validate(json!({"q": "x", "limit": 3})).unwrap(),
            json!({"q": "x", "limit": 3})
        );
    }

    #[test]
    fn every_violation_has_a_pointer_and_an_actionable_message() {
        let s = compiled(json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["q"],
            "additionalProperties": false
        }));
        let v = s.validate(json!({"limit": "3", "extra": 1})).unwrap_err();
        let text = v.to_string();
        assert!(
            text.contains("at /limit: expected integer, got string \"3\""),
            "{text}"
        );
        assert!(text.contains("missing required property \"q\""), "{text}");
        assert!(text.contains("unexpected property \"extra\""), "{text}");
    }

    #[test]
    fn huge_values_are_not_quoted_whole() {
        let s = compiled(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        let v = s.validate(json!({"n": "x".repeat(1_000_000)})).unwrap_err();
        assert!(v.to_string().len() < 200, "{}", v.to_string().len());
    }

    #[test]
    fn a_bad_pattern_is_refused_at_compile_time() {
        let err = CompiledSchema::compile(
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(("}}}),
        )
        .unwrap_err();
        assert!(err.reason.contains("does not compile"), "{err:?}");
    }
}
