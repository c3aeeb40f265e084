//! A Rust builder for exactly the spec's schema subset, emitting JSON Schema 2020-12.
//!
//! Each function here mirrors one Zod constructor of spec 002 ("Supported Zod Types"):
//!
//! ```
//! use toolhost_core::schema::builder as s;
//! let args = s::object()
//!     .field("query", s::string().min_length(1).describe("Search query"))
//!     .field("limit", s::integer().minimum(1).default_value(10).describe("Max results"));
//! let json = args.to_json();
//! assert_eq!(json["required"], serde_json::json!(["query"]));
//! ```
//!
//! Objects are closed (`additionalProperties: false`): a model that invents a property is told so,
//! instead of having it dropped silently.

use serde_json::{json, Map, Value};

/// One node of a schema in the subset. Build it with the functions of this module.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaNode {
    kind: Kind,
    description: Option<String>,
    default: Option<Value>,
    optional: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    String {
        min_length: Option<u64>,
        max_length: Option<u64>,
        pattern: Option<String>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
        exclusive_minimum: Option<f64>,
        exclusive_maximum: Option<f64>,
    },
    Boolean,
    Null,
    Literal(Value),
    Enum(Vec<String>),
    Nullable(Box<SchemaNode>),
    Array {
        items: Box<SchemaNode>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
    Object(Vec<(String, SchemaNode)>),
    Record(Box<SchemaNode>),
    Union(Vec<SchemaNode>),
}

fn node(kind: Kind) -> SchemaNode {
    SchemaNode {
        kind,
        description: None,
        default: None,
        optional: false,
    }
}

/// `z.string()`.
pub fn string() -> SchemaNode {
    node(Kind::String {
        min_length: None,
        max_length: None,
        pattern: None,
    })
}

fn number_kind(integer: bool) -> SchemaNode {
    node(Kind::Number {
        integer,
        minimum: None,
        maximum: None,
        exclusive_minimum: None,
        exclusive_maximum: None,
    })
}

/// `z.number()`.
pub fn number() -> SchemaNode {
    number_kind(false)
}

/// `z.number().int()`.
pub fn integer() -> SchemaNode {
    number_kind(true)
}

/// `z.boolean()`.
pub fn boolean() -> SchemaNode {
    node(Kind::Boolean)
}

/// `z.null()`.
pub fn null() -> SchemaNode {
    node(Kind::Null)
}

/// `z.literal(value)`: exactly this value.
pub fn literal(value: impl Into<Value>) -> SchemaNode {
    node(Kind::Literal(value.into()))
}

/// `z.enum([...])`: one of these strings.
pub fn enumeration<I, S>(values: I) -> SchemaNode
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    node(Kind::Enum(values.into_iter().map(Into::into).collect()))
}

/// `z.array(items)`.
pub fn array(items: SchemaNode) -> SchemaNode {
    node(Kind::Array {
        items: Box::new(items),
        min_items: None,
        max_items: None,
    })
}

/// `z.object({})`: add properties with [`SchemaNode::field`].
pub fn object() -> SchemaNode {
    node(Kind::Object(Vec::new()))
}

/// `z.record(z.string(), values)`: an object with free string keys.
pub fn record(values: SchemaNode) -> SchemaNode {
    node(Kind::Record(Box::new(values)))
}

/// `z.union([...])`: any one of these.
pub fn union(variants: impl IntoIterator<Item = SchemaNode>) -> SchemaNode {
    node(Kind::Union(variants.into_iter().collect()))
}

impl SchemaNode {
    /// `.describe(text)`: shown to the model.
    pub fn describe(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// `.optional()`: the property may be absent from its object.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    /// `.nullable()`: `null` is accepted too.
    pub fn nullable(self) -> Self {
        let SchemaNode {
            description,
            default,
            optional,
            ..
        } = self.clone();
        let mut inner = self;
        inner.description = None;
        inner.default = None;
        inner.optional = false;
        SchemaNode {
            kind: Kind::Nullable(Box::new(inner)),
            description,
            default,
            optional,
        }
    }

    /// `.default(value)`: used when the property is absent (which makes it optional).
    pub fn default_value(mut self, value: impl Into<Value>) -> Self {
        self.default = Some(value.into());
        self.optional = true;
        self
    }

    /// Adds a property to an object; ignored on other kinds.
    pub fn field(mut self, name: impl Into<String>, schema: SchemaNode) -> Self {
        if let Kind::Object(fields) = &mut self.kind {
            fields.push((name.into(), schema));
        }
        self
    }

    /// `.min(n)` on strings: at least `n` characters.
    pub fn min_length(mut self, n: u64) -> Self {
        if let Kind::String { min_length, .. } = &mut self.kind {
            *min_length = Some(n);
        }
        self
    }

    /// `.max(n)` on strings: at most `n` characters.
    pub fn max_length(mut self, n: u64) -> Self {
        if let Kind::String { max_length, .. } = &mut self.kind {
            *max_length = Some(n);
        }
        self
    }

    /// `.regex(re)` on strings (ECMA-262 syntax, unanchored as in JSON Schema).
    pub fn pattern(mut self, re: impl Into<String>) -> Self {
        if let Kind::String { pattern, .. } = &mut self.kind {
            *pattern = Some(re.into());
        }
        self
    }

    /// `.min(n)` on numbers: `≥ n`.
    pub fn minimum(mut self, n: impl Into<f64>) -> Self {
        if let Kind::Number { minimum, .. } = &mut self.kind {
            *minimum = Some(n.into());
        }
        self
    }

    /// `.max(n)` on numbers: `≤ n`.
    pub fn maximum(mut self, n: impl Into<f64>) -> Self {
        if let Kind::Number { maximum, .. } = &mut self.kind {
            *maximum = Some(n.into());
        }
        self
    }

    /// `.gt(n)` on numbers: `> n`.
    pub fn exclusive_minimum(mut self, n: impl Into<f64>) -> Self {
        if let Kind::Number {
            exclusive_minimum, ..
        } = &mut self.kind
        {
            *exclusive_minimum = Some(n.into());
        }
        self
    }

    /// `.lt(n)` on numbers: `< n`.
    pub fn exclusive_maximum(mut self, n: impl Into<f64>) -> Self {
        if let Kind::Number {
            exclusive_maximum, ..
        } = &mut self.kind
        {
            *exclusive_maximum = Some(n.into());
        }
        self
    }

    /// `.min(n)` on arrays: at least `n` items.
    pub fn min_items(mut self, n: u64) -> Self {
        if let Kind::Array { min_items, .. } = &mut self.kind {
            *min_items = Some(n);
        }
        self
    }

    /// `.max(n)` on arrays: at most `n` items.
    pub fn max_items(mut self, n: u64) -> Self {
        if let Kind::Array { max_items, .. } = &mut self.kind {
            *max_items = Some(n);
        }
        self
    }

    /// Whether the property may be absent from its object.
    pub fn is_optional(&self) -> bool {
        self.optional
    }

    /// Emits the JSON Schema 2020-12 form.
    pub fn to_json(&self) -> Value {
        let mut out = match &self.kind {
            Kind::String {
                min_length,
                max_length,
                pattern,
            } => {
                let mut m = Map::new();
                m.insert("type".into(), "string".into());
                put(&mut m, "minLength", min_length.map(Value::from));
                put(&mut m, "maxLength", max_length.map(Value::from));
                put(&mut m, "pattern", pattern.clone().map(Value::from));
                m
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
                exclusive_minimum,
                exclusive_maximum,
            } => {
                let mut m = Map::new();
                m.insert(
                    "type".into(),
                    if *integer { "integer" } else { "number" }.into(),
                );
                put(&mut m, "minimum", minimum.map(number_value));
                put(&mut m, "maximum", maximum.map(number_value));
                put(
                    &mut m,
                    "exclusiveMinimum",
                    exclusive_minimum.map(number_value),
                );
                put(
                    &mut m,
                    "exclusiveMaximum",
                    exclusive_maximum.map(number_value),
                );
                m
            }
            Kind::Boolean => typed("boolean"),
            Kind::Null => typed("null"),
            Kind::Literal(v) => obj(json!({ "const": v })),
            Kind::Enum(values) => obj(json!({"type": "string", "enum": values})),
            Kind::Nullable(inner) => {
                let inner = inner.to_json();
                match inner.get("type").and_then(Value::as_str) {
                    // `null` made nullable is still just `null`.
                    Some("null") => obj(inner.clone()),
                    // A plain typed node: widen its type; keeps the schema readable.
                    Some(t) if inner.get("enum").is_none() && inner.get("const").is_none() => {
                        let mut m = obj(inner.clone());
                        m.insert("type".into(), json!([t, "null"]));
                        m
                    }
                    _ => obj(json!({"anyOf": [inner, {"type": "null"}]})),
                }
            }
            Kind::Array {
                items,
                min_items,
                max_items,
            } => {
                let mut m = typed("array");
                m.insert("items".into(), items.to_json());
                put(&mut m, "minItems", min_items.map(Value::from));
                put(&mut m, "maxItems", max_items.map(Value::from));
                m
            }
            Kind::Object(fields) => {
                let mut m = typed("object");
                let props: Map<String, Value> = fields
                    .iter()
                    .map(|(name, schema)| (name.clone(), schema.to_json()))
                    .collect();
                let required: Vec<Value> = fields
                    .iter()
                    .filter(|(_, schema)| !schema.optional)
                    .map(|(name, _)| Value::from(name.clone()))
                    .collect();
                m.insert("properties".into(), Value::Object(props));
                if !required.is_empty() {
                    m.insert("required".into(), Value::Array(required));
                }
                m.insert("additionalProperties".into(), false.into());
                m
            }
            Kind::Record(values) => {
                let mut m = typed("object");
                m.insert("additionalProperties".into(), values.to_json());
                m
            }
            Kind::Union(variants) => {
                obj(json!({"anyOf": variants.iter().map(SchemaNode::to_json).collect::<Vec<_>>()}))
            }
        };
        if let Some(d) = &self.description {
            out.insert("description".into(), d.clone().into());
        }
        if let Some(d) = &self.default {
            out.insert("default".into(), d.clone());
        }
        Value::Object(out)
    }
}

fn put(m: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        m.insert(key.into(), v);
    }
}

fn typed(t: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), t.into());
    m
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Whole numbers print as integers (`10`, not `10.0`), so bounds read as written.
fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_example_emits_the_expected_schema() {
        let schema = object()
            .field("query", string().describe("Search query"))
            .field(
                "limit",
                number()
                    .optional()
                    .default_value(10)
                    .describe("Max results"),
            )
            .to_json();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Search query"},
                    "limit": {"type": "number", "description": "Max results", "default": 10}
                },
                "required": ["query"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn nullable_widens_plain_types_and_wraps_the_rest() {
        assert_eq!(
            string().nullable().to_json(),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            enumeration(["a"]).nullable().to_json(),
            json!({"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]})
        );
    }
}
