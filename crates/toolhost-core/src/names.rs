//! Tool names: the spec's naming rule, and the mapping to names each provider accepts.
//!
//! The spec asks for snake_case names of 1 to 64 characters, and says to warn, never reject
//! (spec 000 §8.3): [`name_warning`] gives that warning. Providers do reject names: OpenAI and
//! Anthropic accept `[a-zA-Z0-9_-]{1,64}`, Gemini `[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}`. A
//! [`NameMap`] gives every tool a safe, unique, deterministic wire name and maps it back when a
//! call returns.

use crate::schema::lower::Provider;
use std::collections::HashMap;

/// The longest name any provider accepts.
pub const MAX_NAME_LEN: usize = 64;

/// The warning for a name that breaks the spec's rule (snake_case, 1 to 64 characters), if any.
pub fn name_warning(name: &str) -> Option<String> {
    // A dot separates a namespace (the MCP server of an imported tool, `notes.add`) from a
    // snake_case name; each part follows the rule.
    let snake = name.split('.').all(|part| {
        part.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    });
    let len = name.chars().count();
    if (1..=MAX_NAME_LEN).contains(&len) && snake {
        None
    } else if len == 0 {
        Some("tool name is empty; names should be snake_case, 1 to 64 characters".to_owned())
    } else {
        Some(format!(
            "tool name \"{name}\" is not snake_case of 1 to 64 characters; providers may need it renamed on the wire"
        ))
    }
}

/// Whether `provider` accepts `name` as it is.
pub fn accepted_by(provider: Provider, name: &str) -> bool {
    let len = name.len();
    if !(1..=MAX_NAME_LEN).contains(&len) {
        return false;
    }
    match provider {
        Provider::OpenAi | Provider::OpenAiStrict | Provider::Anthropic => name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        Provider::Gemini => {
            name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
        }
    }
}

/// The two-way mapping between tool names and the names sent to one provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
}

impl NameMap {
    /// Builds the mapping for `names` (in order; later duplicates are ignored).
    ///
    /// Names the provider accepts are kept, and claimed first, so a renamed tool never takes the
    /// name of one that needed no renaming.
    pub fn new<'a>(provider: Provider, names: impl IntoIterator<Item = &'a str>) -> Self {
        let names: Vec<&str> = names.into_iter().collect();
        let mut map = NameMap::default();
        for name in names.iter().filter(|n| accepted_by(provider, n)) {
            map.insert(name, name.to_string());
        }
        for name in names.iter().filter(|n| !accepted_by(provider, n)) {
            if map.to_wire.contains_key(*name) {
                continue;
            }
            let base = safe_name(provider, name);
            let mut wire = base.clone();
            let mut n = 2;
            while map.from_wire.contains_key(&wire) {
                let suffix = format!("_{n}");
                let keep = base.len().min(MAX_NAME_LEN - suffix.len());
                wire = format!("{}{suffix}", &base[..keep]);
                n += 1;
            }
            map.insert(name, wire);
        }
        map
    }

    fn insert(&mut self, name: &str, wire: String) {
        if self.to_wire.contains_key(name) {
            return;
        }
        self.from_wire.insert(wire.clone(), name.to_owned());
        self.to_wire.insert(name.to_owned(), wire);
    }

    /// The name to send for a tool.
    pub fn wire_name<'a>(&'a self, name: &'a str) -> &'a str {
        self.to_wire.get(name).map_or(name, String::as_str)
    }

    /// The tool a wire name stands for, if it is one of ours.
    pub fn tool_name(&self, wire: &str) -> Option<&str> {
        self.from_wire.get(wire).map(String::as_str)
    }

    /// The tools whose wire name differs from their own, as `(name, wire)` pairs, sorted.
    pub fn renamed(&self) -> Vec<(&str, &str)> {
        let mut out: Vec<(&str, &str)> = self
            .to_wire
            .iter()
            .filter(|(name, wire)| name != wire)
            .map(|(n, w)| (n.as_str(), w.as_str()))
            .collect();
        out.sort();
        out
    }
}

/// A name the provider accepts, derived from `name`: bad characters become `_`, a long name is
/// cut and given a hash of the whole, so two long names that share a prefix stay apart.
fn safe_name(provider: Provider, name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            let ok = match provider {
                Provider::Gemini => c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'),
                _ => c.is_ascii_alphanumeric() || c == '_' || c == '-',
            };
            if ok {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty()
        || (provider == Provider::Gemini
            && !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
    {
        out.insert(0, '_');
    }
    if out.len() > MAX_NAME_LEN {
        let hash = format!("{:08x}", fnv1a(name.as_bytes()));
        out.truncate(MAX_NAME_LEN - hash.len() - 1);
        out.push('_');
        out.push_str(&hash);
    }
    out
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_names_get_no_warning_and_others_do() {
        assert_eq!(name_warning("search_docs"), None);
        assert!(name_warning("searchDocs").is_some());
        assert!(name_warning(&"a".repeat(65)).is_some());
        assert!(name_warning("").is_some());
        // An imported tool's server is a namespace; each part follows the rule.
        assert_eq!(name_warning("notes.add_note"), None);
        assert!(name_warning("notes.addNote").is_some());
        assert!(name_warning("notes.").is_some());
    }

    #[test]
    fn refused_names_map_to_unique_safe_names_and_back() {
        let long_a = format!("{}a", "x".repeat(70));
        let long_b = format!("{}b", "x".repeat(70));
        let names = ["ok_name", "has.dot", "has_dot", &long_a, &long_b];
        let map = NameMap::new(Provider::OpenAi, names);
        assert_eq!(map.wire_name("ok_name"), "ok_name");
        assert_eq!(map.wire_name("has_dot"), "has_dot");
        let dot = map.wire_name("has.dot");
        assert_eq!(dot, "has_dot_2");
        assert_ne!(map.wire_name(&long_a), map.wire_name(&long_b));
        for name in names {
            let wire = map.wire_name(name);
            assert!(accepted_by(Provider::OpenAi, wire), "{wire}");
            assert_eq!(map.tool_name(wire), Some(name));
        }
    }

    #[test]
    fn gemini_keeps_dots_but_not_a_leading_digit() {
        let map = NameMap::new(Provider::Gemini, ["a.b", "1st"]);
        assert_eq!(map.wire_name("a.b"), "a.b");
        assert_eq!(map.wire_name("1st"), "_1st");
    }
}
