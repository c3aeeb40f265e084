//! Applying `default` values to absent properties, planned once per schema.
//!
//! [`DefaultPlan::build`] walks a canonical schema when it is compiled and keeps only the paths
//! that lead to a default, so that applying defaults to a call touches nothing else. Unions are
//! entered only when exactly one branch is not `null`, so that a default is never applied on a
//! guess about which branch a value meant.

use serde_json::Value;

/// Where the defaults of a schema go; empty parts are left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DefaultPlan {
    /// The plan of the one non-null branch of a union.
    union: Option<Box<DefaultPlan>>,
    /// Properties to insert when absent, with their default.
    fill: Vec<(String, Value)>,
    /// Plans of present properties.
    props: Vec<(String, DefaultPlan)>,
    /// The plan for a record's values, and the declared names it does not apply to.
    extra: Option<(Box<DefaultPlan>, Vec<String>)>,
    /// The plan for array items.
    items: Option<Box<DefaultPlan>>,
}

impl DefaultPlan {
    /// The plan for `schema`, or `None` when nothing under it has a default.
    pub(crate) fn build(schema: &Value) -> Option<DefaultPlan> {
        let map = schema.as_object()?;
        let mut plan = DefaultPlan::default();
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = map.get(key).and_then(Value::as_array) {
                let non_null: Vec<&Value> = branches.iter().filter(|b| !is_null_only(b)).collect();
                if let [only] = non_null.as_slice() {
                    plan.union = DefaultPlan::build(only).map(Box::new);
                }
            }
        }
        let declared = map.get("properties").and_then(Value::as_object);
        if let Some(props) = declared {
            for (name, prop) in props {
                if let Some(default) = prop.get("default") {
                    plan.fill.push((name.clone(), default.clone()));
                }
                if let Some(sub) = DefaultPlan::build(prop) {
                    plan.props.push((name.clone(), sub));
                }
            }
        }
        if let Some(extra) = map.get("additionalProperties").filter(|s| s.is_object()) {
            if let Some(sub) = DefaultPlan::build(extra) {
                let names = declared
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                plan.extra = Some((Box::new(sub), names));
            }
        }
        if let Some(items) = map.get("items") {
            plan.items = DefaultPlan::build(items).map(Box::new);
        }
        (plan != DefaultPlan::default()).then_some(plan)
    }

    /// Inserts the defaults into `value`.
    pub(crate) fn apply(&self, value: &mut Value) {
        if let Some(branch) = &self.union {
            if !value.is_null() {
                branch.apply(value);
            }
        }
        match value {
            Value::Object(object) => {
                for (name, sub) in &self.props {
                    if let Some(present) = object.get_mut(name) {
                        sub.apply(present);
                    }
                }
                for (name, default) in &self.fill {
                    if !object.contains_key(name) {
                        object.insert(name.clone(), default.clone());
                    }
                }
                if let Some((sub, declared)) = &self.extra {
                    for (name, item) in object.iter_mut() {
                        if !declared.contains(name) {
                            sub.apply(item);
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = &self.items {
                    for item in items {
                        sub.apply(item);
                    }
                }
            }
            _ => {}
        }
    }
}

fn is_null_only(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// Applies the defaults of `schema` to `value` (plans and applies in one go; compiled schemas
/// keep their plan instead).
pub fn apply_defaults(schema: &Value, value: &mut Value) {
    if let Some(plan) = DefaultPlan::build(schema) {
        plan.apply(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_paths_to_defaults_are_planned() {
        assert_eq!(
            DefaultPlan::build(&json!({"type": "object", "properties": {"a": {"type": "string"}}})),
            None
        );
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "integer", "default": 1},
            "o": {"anyOf": [{"type": "object", "properties": {"b": {"type": "string", "default": "x"}}}, {"type": "null"}]},
            "l": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "boolean", "default": true}}}}
        }});
        let mut v = json!({"o": {}, "l": [{}, {"c": false}]});
        apply_defaults(&schema, &mut v);
        assert_eq!(
            v,
            json!({"o": {"b": "x"}, "l": [{"c": true}, {"c": false}], "a": 1})
        );
        let mut null_branch = json!({"o": null});
        apply_defaults(&schema, &mut null_branch);
        assert_eq!(null_branch, json!({"o": null, "a": 1}));
    }
}
