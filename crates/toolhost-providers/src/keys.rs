//! Property keys a provider refuses, renamed on the wire and mapped back.
//!
//! Anthropic (and Bedrock, which serves its models) refuse a whole request when a property key
//! anywhere in a tool's input schema does not match `^[a-zA-Z0-9_.-]{1,64}$`, and real tools
//! have keys such as `año_vehiculo`, `filter[id]`, `$top` or longer than 64 characters. A
//! [`KeyMap`] gives each such key of one tool a wire key the provider accepts, the same at every
//! depth (nested objects, array items, union branches, `$defs`, `required` lists), and maps the
//! keys of a call's arguments back, so the tool, the journal and the transcript only ever see
//! the original keys.
//!
//! Renaming is deterministic (it depends on the schema alone) and collision-free: keys the
//! provider accepts keep their name and are claimed first, and a wire key never equals another
//! key of the same tool. Arguments are mapped back by walking them along the schema, so a key
//! of a free-form object (a record's entry) is data and never renamed.

mod walk;

use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use toolhost_core::schema::lower::Provider;
use walk::ArgumentWalk;

/// The longest property key Anthropic accepts.
pub const MAX_KEY_LEN: usize = 64;

/// Whether `provider` accepts `key` as a property key of a tool's input schema.
pub fn key_accepted(provider: Provider, key: &str) -> bool {
    match provider {
        Provider::Anthropic => {
            (1..=MAX_KEY_LEN).contains(&key.len())
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        }
        Provider::OpenAi | Provider::OpenAiStrict | Provider::Gemini => true,
    }
}

/// One property key sent under another name, at one place of the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRenaming {
    /// JSON pointer of the property in the tool's schema, e.g. `/properties/filter[id]`.
    pub pointer: String,
    /// The key as the tool declares it.
    pub key: String,
    /// The key the provider is sent.
    pub wire: String,
}

/// The renamed property keys of one tool's schema for one provider (empty when it needs none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyMap {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
    renamings: Vec<KeyRenaming>,
}

/// Which way keys are mapped.
#[derive(Clone, Copy)]
pub(crate) enum Way {
    ToWire,
    FromWire,
}

impl KeyMap {
    /// The renamings `schema` (a tool's argument schema) needs for `provider`.
    pub fn new(provider: Provider, schema: &Value) -> Self {
        let mut places = Vec::new();
        collect(schema, "", &mut places);
        let keys: BTreeSet<&str> = places.iter().map(|(_, k)| k.as_str()).collect();
        let mut claimed: BTreeSet<String> = keys
            .iter()
            .filter(|k| key_accepted(provider, k))
            .map(|k| (*k).to_owned())
            .collect();
        let mut map = KeyMap::default();
        // Sorted, so the same schema always gives the same wire keys.
        for key in keys.iter().filter(|k| !key_accepted(provider, k)) {
            let base = safe_key(key);
            let mut wire = base.clone();
            let mut n = 2;
            while claimed.contains(&wire) {
                let suffix = format!("_{n}");
                let keep = base.len().min(MAX_KEY_LEN - suffix.len());
                wire = format!("{}{suffix}", &base[..keep]);
                n += 1;
            }
            claimed.insert(wire.clone());
            map.from_wire.insert(wire.clone(), (*key).to_owned());
            map.to_wire.insert((*key).to_owned(), wire);
        }
        map.renamings = places
            .into_iter()
            .filter_map(|(pointer, key)| {
                let wire = map.to_wire.get(&key)?.clone();
                Some(KeyRenaming { pointer, key, wire })
            })
            .collect();
        map
    }

    /// Whether no key needs renaming.
    pub fn is_empty(&self) -> bool {
        self.to_wire.is_empty()
    }

    /// Every place a key is renamed, in the schema's order.
    pub fn renamings(&self) -> &[KeyRenaming] {
        &self.renamings
    }

    /// The wire key of `key` (the key itself when it is not renamed).
    pub fn wire_key<'a>(&'a self, key: &'a str) -> &'a str {
        self.to_wire.get(key).map_or(key, String::as_str)
    }

    /// `schema` with its property keys renamed, in `properties`, `required`,
    /// `dependentRequired`, `dependentSchemas` and local `$ref`s, at every depth.
    pub fn rename_schema(&self, schema: &Value) -> Value {
        if self.is_empty() {
            return schema.clone();
        }
        self.rename_node(schema)
    }

    /// Renames the argument schema inside a provider's tool declaration (its `input_schema`,
    /// `parameters` or `function.parameters`).
    pub fn rename_declaration(&self, declaration: &mut Value) {
        if self.is_empty() {
            return;
        }
        let slot = if declaration.pointer("/function/parameters").is_some() {
            declaration.pointer_mut("/function/parameters")
        } else if declaration.get("input_schema").is_some() {
            declaration.get_mut("input_schema")
        } else {
            declaration.get_mut("parameters")
        };
        if let Some(slot) = slot {
            *slot = self.rename_node(slot);
        }
    }

    /// A call's arguments as the provider sent them (wire keys), with the tool's own keys.
    /// `schema` is the tool's argument schema as declared (original keys).
    pub fn arguments_from_wire(&self, schema: &Value, arguments: Value) -> Value {
        self.map_arguments(schema, arguments, Way::FromWire)
    }

    /// A call's arguments with the tool's own keys, as the provider must see them again in a
    /// later turn (wire keys).
    pub fn arguments_to_wire(&self, schema: &Value, arguments: Value) -> Value {
        self.map_arguments(schema, arguments, Way::ToWire)
    }

    /// The same as [`KeyMap::arguments_from_wire`] for argument text: JSON is walked along
    /// the schema; text that does not parse (to be mended by the runtime) has each quoted wire
    /// key that is followed by a colon put back, so the mending sees the tool's own keys.
    pub fn arguments_text_from_wire(&self, schema: &Value, arguments: String) -> String {
        if self.is_empty() {
            return arguments;
        }
        match serde_json::from_str::<Value>(&arguments) {
            Ok(value) => self.arguments_from_wire(schema, value).to_string(),
            Err(_) => {
                let mut text = arguments;
                for (wire, key) in &self.from_wire {
                    text = replace_key(&text, wire, key);
                }
                text
            }
        }
    }

    fn map_arguments(&self, schema: &Value, arguments: Value, way: Way) -> Value {
        if self.is_empty() {
            return arguments;
        }
        let walk = ArgumentWalk {
            map: self,
            root: schema,
            way,
        };
        walk.value(&[schema], arguments)
    }

    fn rename_node(&self, node: &Value) -> Value {
        let Value::Object(map) = node else {
            return match node {
                Value::Array(items) => {
                    Value::Array(items.iter().map(|i| self.rename_node(i)).collect())
                }
                other => other.clone(),
            };
        };
        let mut out = Map::new();
        for (k, v) in map {
            let v = match k.as_str() {
                "properties" | "dependentSchemas" => rename_keys(v, |key| {
                    (self.wire_key(key).to_owned(), self.rename_node(&v[key]))
                }),
                "required" => match v {
                    Value::Array(names) => Value::Array(
                        names
                            .iter()
                            .map(|n| match n.as_str() {
                                Some(n) => Value::String(self.wire_key(n).to_owned()),
                                None => n.clone(),
                            })
                            .collect(),
                    ),
                    other => other.clone(),
                },
                "dependentRequired" => rename_keys(v, |key| {
                    let wire = self.wire_key(key).to_owned();
                    (wire, self.rename_node_list(&v[key]))
                }),
                "$ref" => match v.as_str() {
                    Some(target) => Value::String(self.rename_ref(target)),
                    None => v.clone(),
                },
                // Keywords whose value is data, not schema: never renamed.
                "enum" | "const" | "default" | "examples" | "description" | "title" => v.clone(),
                _ => self.rename_node(v),
            };
            out.insert(k.clone(), v);
        }
        Value::Object(out)
    }

    /// A list of key names (`dependentRequired` values) renamed.
    fn rename_node_list(&self, names: &Value) -> Value {
        match names {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|n| match n.as_str() {
                        Some(n) => Value::String(self.wire_key(n).to_owned()),
                        None => n.clone(),
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// A local `$ref` whose path goes through renamed properties, renamed along.
    fn rename_ref(&self, target: &str) -> String {
        let Some(pointer) = target.strip_prefix('#') else {
            return target.to_owned();
        };
        let segments: Vec<String> = pointer.split('/').map(unescape).collect();
        let mut out = String::from("#");
        for (i, segment) in segments.iter().enumerate() {
            if i == 0 && segment.is_empty() {
                continue;
            }
            let after_properties = i > 0 && segments[i - 1] == "properties";
            let segment = if after_properties {
                self.wire_key(segment)
            } else {
                segment
            };
            out.push('/');
            out.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        }
        out
    }
}

/// A JSON object's keys renamed (and values rewritten) by `f`, order kept.
fn rename_keys(value: &Value, f: impl Fn(&str) -> (String, Value)) -> Value {
    match value {
        Value::Object(map) => Value::Object(map.keys().map(|k| f(k)).collect()),
        other => other.clone(),
    }
}

/// Every `(pointer, key)` of a declared property, in the schema's order.
fn collect(node: &Value, pointer: &str, out: &mut Vec<(String, String)>) {
    match node {
        Value::Object(map) => {
            for (k, v) in map {
                let here = format!("{pointer}/{}", escape(k));
                match k.as_str() {
                    "properties" | "dependentSchemas" => {
                        if let Value::Object(props) = v {
                            for (key, schema) in props {
                                let at = format!("{here}/{}", escape(key));
                                out.push((at.clone(), key.clone()));
                                collect(schema, &at, out);
                            }
                        }
                    }
                    "enum" | "const" | "default" | "examples" | "required"
                    | "dependentRequired" => {}
                    _ => collect(v, &here, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect(item, &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A key the provider accepts, derived from `key`: Latin letters with accents lose them,
/// other refused characters become `_`, and a long key is cut and given a hash of the whole,
/// so two long keys that share a prefix stay apart.
fn safe_key(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
            out.push(c);
        } else {
            out.push_str(fold(c).unwrap_or("_"));
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    if out.len() > MAX_KEY_LEN {
        let hash = format!("{:08x}", fnv1a(key.as_bytes()));
        out.truncate(MAX_KEY_LEN - hash.len() - 1);
        out.push('_');
        out.push_str(&hash);
    }
    out
}

/// The ASCII letters an accented Latin letter stands for, if it is one.
fn fold(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => "a",
        'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' => "A",
        'ç' => "c",
        'Ç' => "C",
        'è' | 'é' | 'ê' | 'ë' => "e",
        'È' | 'É' | 'Ê' | 'Ë' => "E",
        'ì' | 'í' | 'î' | 'ï' => "i",
        'Ì' | 'Í' | 'Î' | 'Ï' => "I",
        'ñ' => "n",
        'Ñ' => "N",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' => "o",
        'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' => "O",
        'ù' | 'ú' | 'û' | 'ü' => "u",
        'Ù' | 'Ú' | 'Û' | 'Ü' => "U",
        'ý' | 'ÿ' => "y",
        'Ý' => "Y",
        'ß' => "ss",
        'æ' => "ae",
        'Æ' => "AE",
        'œ' => "oe",
        'Œ' => "OE",
        _ => return None,
    })
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// A key as a JSON pointer segment.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A JSON pointer segment as a key.
fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// `text` with each `"wire"` that a colon follows (an object key) written as `"key"`.
fn replace_key(text: &str, wire: &str, key: &str) -> String {
    let quoted = Value::String(wire.to_owned()).to_string();
    let original = Value::String(key.to_owned()).to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&quoted) {
        let after = &rest[at + quoted.len()..];
        out.push_str(&rest[..at]);
        if after.trim_start().starts_with(':') {
            out.push_str(&original);
        } else {
            out.push_str(&quoted);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
