//! Mapping the keys of a call's arguments by walking them along the schema that declares them:
//! only keys declared in `properties` where they stand are mapped, so a record's keys stay data.

use super::{KeyMap, Way};
use serde_json::{Map, Value};

/// Walks arguments along the schemas that describe them, mapping declared keys.
pub(super) struct ArgumentWalk<'a> {
    pub(super) map: &'a KeyMap,
    pub(super) root: &'a Value,
    pub(super) way: Way,
}

impl<'a> ArgumentWalk<'a> {
    pub(super) fn value(&self, schemas: &[&'a Value], value: Value) -> Value {
        let schemas = self.flatten(schemas);
        match value {
            Value::Object(object) => Value::Object(self.object(&schemas, object)),
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let inner: Vec<&Value> = schemas
                            .iter()
                            .filter_map(|s| match (s.get("prefixItems"), s.get("items")) {
                                (Some(Value::Array(p)), _) if i < p.len() => p.get(i),
                                (_, Some(Value::Array(tuple))) => tuple.get(i),
                                (_, Some(items)) => Some(items),
                                _ => None,
                            })
                            .collect();
                        self.value(&inner, item)
                    })
                    .collect(),
            ),
            other => other,
        }
    }

    fn object(&self, schemas: &[&'a Value], object: Map<String, Value>) -> Map<String, Value> {
        let declared = |key: &str| {
            schemas
                .iter()
                .filter_map(|s| s.get("properties")?.get(key))
                .collect::<Vec<&Value>>()
        };
        let mut out = Map::new();
        for (key, value) in object {
            // The key as the tool declares it, if this key is one of the declared ones here.
            let original = match self.way {
                Way::FromWire => self.map.from_wire.get(&key).cloned().unwrap_or(key.clone()),
                Way::ToWire => key.clone(),
            };
            let inner = declared(&original);
            let (new_key, inner) = if inner.is_empty() {
                // Not declared here: a record's entry, whose key is data.
                let rest: Vec<&Value> = schemas
                    .iter()
                    .filter_map(|s| s.get("additionalProperties"))
                    .filter(|s| s.is_object())
                    .collect();
                (key, rest)
            } else {
                let new_key = match self.way {
                    Way::FromWire => original,
                    Way::ToWire => self.map.wire_key(&original).to_owned(),
                };
                (new_key, inner)
            };
            let value = self.value(&inner, value);
            // A key the model sent twice (once under each name) keeps the first.
            out.entry(new_key).or_insert(value);
        }
        out
    }

    /// The schemas plus their union branches and the targets of their local `$ref`s.
    fn flatten(&self, schemas: &[&'a Value]) -> Vec<&'a Value> {
        let mut out: Vec<&'a Value> = Vec::new();
        let mut stack: Vec<&'a Value> = schemas.to_vec();
        while let Some(s) = stack.pop() {
            // Bounded: a recursive `$ref` is followed once per distinct target.
            if out.iter().any(|seen| std::ptr::eq(*seen, s)) || out.len() > 256 {
                continue;
            }
            out.push(s);
            for k in ["anyOf", "oneOf", "allOf"] {
                if let Some(Value::Array(branches)) = s.get(k) {
                    stack.extend(branches.iter());
                }
            }
            for k in ["then", "else"] {
                if let Some(branch) = s.get(k) {
                    stack.push(branch);
                }
            }
            if let Some(target) = s.get("$ref").and_then(Value::as_str) {
                if let Some(resolved) = target.strip_prefix('#').and_then(|p| self.root.pointer(p))
                {
                    stack.push(resolved);
                }
            }
        }
        out
    }
}
