//! Variables: values that prompts, agents and threads give the tools that declare them.
//!
//! Values merge prompt → agent → thread, the later winning. Text values may come from definition
//! files; secret values only from the thread, where they are stored sealed (see [`secrets`]) and
//! opened only for the call of a tool that declared them. Whatever a tool returns, emits or
//! stores is passed through a [`Redactor`] first, so a secret that a tool echoes, in clear or in
//! a common encoding, is replaced by `[redacted NAME]` before it reaches the store, a model or a
//! screen (see [`redact`]).

pub mod redact;
/// Sealing at rest lives with the store that keeps sealed values.
pub use toolhost_store::secrets;

pub use redact::{RedactingStream, Redactor};

use std::collections::BTreeMap;
use toolhost_core::variables::VariableKind;

/// A value given to a thread.
#[derive(Clone, PartialEq, Eq)]
pub struct VariableValue {
    /// The variable's name.
    pub name: String,
    /// The value.
    pub value: String,
    /// Whether it is a secret (it is also one when any definition declares it secret).
    pub secret: bool,
}

impl std::fmt::Debug for VariableValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = if self.secret {
            "[redacted]"
        } else {
            &self.value
        };
        write!(f, "{}={shown}", self.name)
    }
}

impl VariableValue {
    /// A text value.
    pub fn text(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
            secret: false,
        }
    }

    /// A secret value.
    pub fn secret(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            secret: true,
            ..Self::text(name, value)
        }
    }
}

/// The values a thread has, after merging, with secrets opened (kept in memory only).
#[derive(Clone, Default)]
pub struct Resolved {
    values: BTreeMap<String, (String, VariableKind)>,
}

impl Resolved {
    /// Adds values, replacing earlier ones of the same name.
    pub fn merge(&mut self, values: impl IntoIterator<Item = (String, String, VariableKind)>) {
        for (name, value, kind) in values {
            self.values.insert(name, (value, kind));
        }
    }

    /// Every value with its name and kind, by name.
    pub fn entries(&self) -> impl Iterator<Item = (String, String, VariableKind)> + '_ {
        self.values
            .iter()
            .map(|(k, (v, kind))| (k.clone(), v.clone(), *kind))
    }

    /// The value of `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(|(v, _)| v.as_str())
    }

    /// The text values, for prompts.
    pub fn texts(&self) -> BTreeMap<String, String> {
        self.values
            .iter()
            .filter(|(_, (_, kind))| *kind == VariableKind::Text)
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect()
    }

    /// A redactor for every secret value.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(
            self.values
                .iter()
                .filter(|(_, (_, kind))| *kind == VariableKind::Secret)
                .map(|(k, (v, _))| (k.clone(), v.clone())),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_replaced_in_text_and_in_every_json_string() {
        let mut r = Resolved::default();
        r.merge([
            ("TOKEN".into(), "tok-123".into(), VariableKind::Secret),
            ("REGION".into(), "eu".into(), VariableKind::Text),
        ]);
        let red = r.redactor();
        assert_eq!(
            red.text("auth tok-123 failed"),
            "auth [redacted TOKEN] failed"
        );
        assert_eq!(
            red.json(json!({"e": ["x tok-123"], "tok-123": 1, "region": "eu"})),
            json!({"e": ["x [redacted TOKEN]"], "[redacted TOKEN]": 1, "region": "eu"})
        );
        assert_eq!(r.texts().get("REGION").map(String::as_str), Some("eu"));
        assert!(!r.texts().contains_key("TOKEN"));
        assert_eq!(
            format!("{:?}", VariableValue::secret("TOKEN", "tok-123")),
            "TOKEN=[redacted]"
        );
    }
}
