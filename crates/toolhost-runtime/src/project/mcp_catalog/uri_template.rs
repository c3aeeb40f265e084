//! URI templates of served resources: RFC 6570 simple expressions, each one path segment, and
//! the percent-decoding of the values a URI gives them.

use std::collections::BTreeMap;

/// Why a text is not a URI template toolhost takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `}` with no `{` before it.
    #[error("a `}}` closes no expression")]
    UnopenedClose,
    /// A `{` with no `}` after it.
    #[error("an expression `{{` is not closed")]
    Unclosed,
    /// Two expressions with nothing between them.
    #[error("two expressions follow each other with nothing between them, so a URI could be split either way")]
    Adjacent,
    /// An expression that is not a plain name (operators of RFC 6570 levels 2-4 are not taken).
    #[error("expression {{{0}}} is not a simple one: write {{NAME}} with letters, digits and `_`")]
    NotSimple(String),
    /// The same name twice.
    #[error("expression {{{0}}} is used twice")]
    Repeated(String),
    /// No expression at all.
    #[error("a template needs at least one {{NAME}} expression; a fixed URI goes in `uri`")]
    NoExpression,
}

/// A URI template of simple expressions: literal text and `{name}`, each expression taking one
/// non-empty path segment (no `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum TemplatePart {
    Literal(String),
    Variable(String),
}

impl UriTemplate {
    /// Reads `text`; an error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if rest[..open].contains('}') {
                return Err(TemplateError::UnopenedClose);
            }
            if open > 0 {
                parts.push(TemplatePart::Literal(rest[..open].to_owned()));
            } else if matches!(parts.last(), Some(TemplatePart::Variable(_))) {
                return Err(TemplateError::Adjacent);
            }
            let close = rest[open..].find('}').ok_or(TemplateError::Unclosed)?;
            let name = &rest[open + 1..open + close];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(TemplateError::NotSimple(name.to_owned()));
            }
            if parts.contains(&TemplatePart::Variable(name.to_owned())) {
                return Err(TemplateError::Repeated(name.to_owned()));
            }
            parts.push(TemplatePart::Variable(name.to_owned()));
            rest = &rest[open + close + 1..];
        }
        if rest.contains('}') {
            return Err(TemplateError::UnopenedClose);
        }
        if !rest.is_empty() {
            parts.push(TemplatePart::Literal(rest.to_owned()));
        }
        if !parts.iter().any(|p| matches!(p, TemplatePart::Variable(_))) {
            return Err(TemplateError::NoExpression);
        }
        Ok(Self { parts })
    }

    /// The names of its expressions, in order.
    pub fn variables(&self) -> Vec<&str> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                TemplatePart::Variable(name) => Some(name.as_str()),
                TemplatePart::Literal(_) => None,
            })
            .collect()
    }

    /// The values of its expressions if `uri` matches it (percent-decoded), else `None`. A
    /// value is one path segment: it holds no `/`, `?` or `#`, escaped or not.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut values = BTreeMap::new();
        matched(&self.parts, uri, &mut values).then_some(values)
    }
}

/// Whether `uri` matches `parts`, putting the values of their expressions in `values`. A value
/// runs to an occurrence of the literal after it; each occurrence is tried in turn.
fn matched(parts: &[TemplatePart], uri: &str, values: &mut BTreeMap<String, String>) -> bool {
    match parts {
        [] => uri.is_empty(),
        [TemplatePart::Literal(text), rest @ ..] => uri
            .strip_prefix(text.as_str())
            .is_some_and(|uri| matched(rest, uri, values)),
        [TemplatePart::Variable(name), rest @ ..] => {
            let ends: Vec<usize> = match rest.first() {
                Some(TemplatePart::Literal(next)) => {
                    uri.match_indices(next.as_str()).map(|(i, _)| i).collect()
                }
                _ => vec![uri.len()],
            };
            ends.into_iter().any(|end| {
                let raw = &uri[..end];
                let Some(value) = percent_decoded(raw) else {
                    return false;
                };
                if value.is_empty() || value.contains(['/', '?', '#']) || raw.contains(['?', '#']) {
                    return false;
                }
                values.insert(name.clone(), value);
                matched(rest, &uri[end..], values)
            })
        }
    }
}

/// `text` with `%XX` escapes decoded; `None` when an escape is broken or the bytes are not
/// UTF-8 afterwards.
pub fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // Two hex digits exactly (`from_str_radix` alone would take `+F`).
            let hex = text
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
