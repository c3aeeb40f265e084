//! The general dialect: the keywords of JSON Schema 2020-12 beyond the subset, kept with their
//! subschemas canonicalized (the tools of MCP servers, or a blueprint that names the dialect).

use super::{escape, Walk};
use serde_json::{Map, Value};

/// Keywords of JSON Schema 2020-12 outside the subset whose value is one subschema.
const GENERAL_SCHEMA: [&str; 9] = [
    "not",
    "if",
    "then",
    "else",
    "contains",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
    "propertyNames",
];

/// Keywords of JSON Schema 2020-12 outside the subset whose value is a list of subschemas.
const GENERAL_SCHEMA_LISTS: [&str; 2] = ["allOf", "prefixItems"];

/// Keywords of JSON Schema 2020-12 outside the subset whose value maps names to subschemas.
const GENERAL_SCHEMA_MAPS: [&str; 2] = ["patternProperties", "dependentSchemas"];

/// Keywords of JSON Schema 2020-12 outside the subset that constrain with a plain value.
const GENERAL_VALUES: [&str; 8] = [
    "uniqueItems",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "contentEncoding",
    "contentMediaType",
];

/// Reference keywords that only name places for `$ref`s, which are inlined.
const GENERAL_DROPPED: [&str; 3] = ["$anchor", "$dynamicAnchor", "$vocabulary"];

/// The keywords a general schema may have beyond the subset's; see [`Dialect::General`](super::Dialect::General).
pub fn general_keywords() -> impl Iterator<Item = &'static str> {
    GENERAL_SCHEMA
        .into_iter()
        .chain(GENERAL_SCHEMA_LISTS)
        .chain(GENERAL_SCHEMA_MAPS)
        .chain(GENERAL_VALUES)
}

impl Walk<'_> {
    /// Canonicalizes keyword `key` of `map` when it is one of a general schema's beyond the
    /// subset's, into `out`; false when it is not (the subset's rules apply).
    pub(super) fn general_keyword(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        value: &Value,
        at: &str,
        depth: usize,
        out: &mut Map<String, Value>,
    ) -> bool {
        match key {
            k if GENERAL_DROPPED.contains(&k) => {}
            "$dynamicRef" | "$recursiveRef" => self.issue(
                at,
                format!("`{key}` cannot be resolved into a self-contained schema; use `$ref` to a local definition"),
            ),
            k if GENERAL_SCHEMA.contains(&k) => {
                let canon = self.node(value, at, depth, false);
                out.insert(key.to_owned(), canon);
            }
            // Draft 7's tuple form: 2020-12 writes it `prefixItems`, and `additionalItems` is
            // then `items`.
            "items" if value.is_array() => self.schema_list("prefixItems", value, at, depth, out),
            "additionalItems" => {
                if map.get("items").is_some_and(Value::is_array) {
                    let canon = self.node(value, at, depth + 1, false);
                    out.insert("items".to_owned(), canon);
                }
            }
            k if GENERAL_SCHEMA_LISTS.contains(&k) => {
                self.schema_list(key, value, at, depth + usize::from(k == "prefixItems"), out);
            }
            k if GENERAL_SCHEMA_MAPS.contains(&k) => match value.as_object() {
                Some(schemas) => {
                    let mut canon = Map::new();
                    for (name, schema) in schemas {
                        let p = format!("{at}/{}", escape(name));
                        canon.insert(name.clone(), self.node(schema, &p, depth + 1, false));
                    }
                    out.insert(key.to_owned(), Value::Object(canon));
                }
                None => self.issue(at, format!("`{key}` must be an object of schemas")),
            },
            k if GENERAL_VALUES.contains(&k) => self.copy(out, key, value, at),
            _ => return false,
        }
        true
    }
}
