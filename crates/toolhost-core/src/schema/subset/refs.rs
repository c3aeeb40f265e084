//! Local `$ref`s, inlined where they are used: a cycle, or a reference that is not local, is
//! refused.

use super::Walk;
use serde_json::{Map, Value};

/// A `$ref` being inlined: the pointer of its use and its target.
pub(super) struct RefSite {
    pub(super) at: String,
    pub(super) target: String,
}

impl Walk<'_> {
    /// Inlines a local `$ref`, keeping sibling annotations (they win over the target's).
    pub(super) fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &Value,
        ptr: &str,
        depth: usize,
        is_root: bool,
    ) -> Value {
        let at = format!("{ptr}/$ref");
        let Some(target) = reference.as_str() else {
            self.issue(&at, "`$ref` must be a string");
            return Value::Null;
        };
        let Some(target_ptr) = target.strip_prefix('#') else {
            self.issue(
                &at,
                format!("only local references (\"#/$defs/...\") are supported, not \"{target}\""),
            );
            return Value::Null;
        };
        if self.ref_stack.iter().any(|r| r.target == target) {
            self.issue(
                &at,
                format!("the reference \"{target}\" is recursive; a tool schema must be finite"),
            );
            return Value::Null;
        }
        let Some(resolved) = self.root.pointer(target_ptr) else {
            self.issue(&at, format!("the reference \"{target}\" points to nothing"));
            return Value::Null;
        };
        let mut merged = match resolved {
            Value::Object(m) => m.clone(),
            other => {
                let mut m = Map::new();
                m.insert("$inline".into(), other.clone());
                m
            }
        };
        for (k, v) in map {
            if k != "$ref" {
                merged.insert(k.clone(), v.clone());
            }
        }
        self.ref_stack.push(RefSite {
            at: at.clone(),
            target: target.to_owned(),
        });
        let merged = if let Some(inner) = merged.remove("$inline") {
            inner
        } else {
            Value::Object(merged)
        };
        let out = self.node(&merged, target_ptr, depth, is_root);
        self.ref_stack.pop();
        out
    }
}
