//! Variable declarations on tools (spec 001 §3), with spec 000's `tenvs` as an alias.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whether a variable's value may be shown (text) or must stay hidden and encrypted (secret).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VariableKind {
    /// A plain value; may be interpolated into prompts.
    Text,
    /// A sensitive value: encrypted at rest, never shown to a model or written in plain text.
    Secret,
}

/// One variable a tool (or prompt, or agent) needs at run time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariableDecl {
    /// The variable's name, e.g. `VECTOR_STORE_ID`.
    pub name: String,
    /// Text or secret.
    #[serde(rename = "type")]
    pub kind: VariableKind,
    /// Execution cannot continue until a value resolves.
    #[serde(default)]
    pub required: bool,
    /// Not inherited from the parent thread.
    #[serde(default)]
    pub scoped: bool,
    /// What the value is, for the person who supplies it.
    #[serde(default)]
    pub description: String,
}

impl VariableDecl {
    /// A required text variable.
    pub fn text(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind: VariableKind::Text,
            required: true,
            scoped: false,
            description: String::new(),
        }
    }

    /// A required secret variable.
    pub fn secret(name: impl Into<String>) -> Self {
        Self {
            kind: VariableKind::Secret,
            ..Self::text(name)
        }
    }

    /// Sets the description.
    pub fn describe(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    /// Makes the variable optional.
    pub fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    /// Stops inheritance from the parent thread.
    pub fn scoped(mut self) -> Self {
        self.scoped = true;
        self
    }
}

/// Why a `tenvs` schema could not be read as variable declarations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tenvs must be an object schema with `properties`: {0}")]
pub struct TenvsError(pub String);

/// Reads spec 000's `tenvs` (an object schema) as declarations: each property is a text
/// variable, required when listed in `required`, described by its `description`.
pub fn variables_from_tenvs(schema: &Value) -> Result<Vec<VariableDecl>, TenvsError> {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| TenvsError("no `properties` object found".to_owned()))?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Ok(props
        .iter()
        .map(|(name, prop)| VariableDecl {
            name: name.clone(),
            kind: VariableKind::Text,
            required: required.contains(&name.as_str()),
            scoped: false,
            description: prop
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tenvs_become_text_variables_required_as_listed() {
        let vars = variables_from_tenvs(&json!({
            "type": "object",
            "properties": {"vectorStoreId": {"type": "string", "description": "store"}, "loc": {"type": "string"}},
            "required": ["vectorStoreId"]
        }))
        .unwrap();
        assert_eq!(
            vars[0],
            VariableDecl::text("vectorStoreId").describe("store")
        );
        assert!(!vars[1].required);
    }

    #[test]
    fn declarations_read_the_spec_shape() {
        let d: VariableDecl = serde_json::from_value(json!({
            "name": "API_KEY", "type": "secret", "required": true, "description": "key"
        }))
        .unwrap();
        assert_eq!(d, VariableDecl::secret("API_KEY").describe("key"));
    }
}
