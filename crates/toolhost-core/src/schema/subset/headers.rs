//! `x-mcp-header`: a property whose value an MCP request also carries in an HTTP header. Only a
//! plain header name, on a property reached from the root through `properties` alone, once.

use super::{Walk, TRANSPORT_HEADER};
use serde_json::{Map, Value};

/// Whether the schema at `ptr` is a property reached from the root through `properties` alone.
fn on_properties_path(ptr: &str) -> bool {
    let segments: Vec<&str> = ptr.split('/').skip(1).collect();
    !segments.is_empty()
        && segments.len() % 2 == 0
        && segments.chunks(2).all(|pair| pair[0] == "properties")
}

/// What is wrong with `x-mcp-header: value` on the schema `map`, if anything: it names a
/// header (an RFC 9110 token) and marks a string, integer or boolean property, whose value
/// fits in a header.
fn header_annotation_problem(map: &Map<String, Value>, value: &Value) -> Option<String> {
    let token = value.as_str().filter(|t| {
        !t.is_empty()
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
    });
    if token.is_none() {
        return Some(format!(
            "`{TRANSPORT_HEADER}` must name an HTTP header (letters, digits and !#$%&'*+-.^_`|~)"
        ));
    }
    let primitive = map
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| matches!(t, "string" | "integer" | "boolean"));
    (!primitive).then(|| {
        format!("`{TRANSPORT_HEADER}` marks a property of type string, integer or boolean, whose value fits in a header")
    })
}

impl Walk<'_> {
    /// Checks a property's `x-mcp-header` (spec: the header that carries its value): a plain
    /// header name, on a property reached from the root through `properties` alone, named once.
    pub(super) fn transport_header(
        &mut self,
        map: &Map<String, Value>,
        value: &Value,
        ptr: &str,
        at: &str,
    ) {
        if let Some(why) = header_annotation_problem(map, value) {
            self.issue(at, why);
        } else if !on_properties_path(ptr) {
            self.issue(at, format!("`{TRANSPORT_HEADER}` marks a property reached from the root through `properties` alone (not in items, unions or records), whose one value a header can carry"));
        } else if let Some(name) = value.as_str() {
            let name = name.to_ascii_lowercase();
            if self.headers.contains(&name) {
                self.issue(at, format!("header {name:?} is already given by another property's `{TRANSPORT_HEADER}` (names are compared ignoring case)"));
            }
            self.headers.push(name);
        }
    }
}
