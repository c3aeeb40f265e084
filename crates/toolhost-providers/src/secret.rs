//! The API key: held so that it never shows, and scrubbed from anything a server sends back.

use std::fmt;

/// What stands in for a key wherever it would otherwise appear.
pub const REDACTED: &str = "[redacted]";

/// An API key. Its `Debug` prints `[redacted]`; it has no `Display` and no `Serialize`, so it
/// cannot end up in a log line, an error or a stored record by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for the one header that carries it.
    #[cfg(feature = "http")]
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with the key, and any masked echo of it, replaced by `[redacted]`.
    ///
    /// Servers sometimes echo a key in an error (whole, or masked like `sk-ab****wxyz`): the
    /// whole key is replaced, and so is every word that shares the key's first 6 or last 4
    /// characters and contains a masking `*`.
    pub fn redact(&self, text: &str) -> String {
        redact(text, &self.0)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

fn redact(text: &str, key: &str) -> String {
    if key.is_empty() {
        return text.to_owned();
    }
    let whole = text.replace(key, REDACTED);
    if key.len() < 12 || !whole.contains('*') {
        return whole;
    }
    let (head, tail) = (prefix(key, 6), suffix(key, 4));
    let mut out = String::with_capacity(whole.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let core = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '*' || c == '-'));
        if core.contains('*') && (core.starts_with(head) || core.ends_with(tail)) {
            out.push_str(&word.replace(core, REDACTED));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in whole.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn prefix(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

fn suffix(s: &str, n: usize) -> &str {
    let count = s.chars().count();
    s.char_indices()
        .nth(count.saturating_sub(n))
        .map_or(s, |(i, _)| &s[i..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let key = ApiKey::new("sk-live-1234567890abcdef");
        assert_eq!(format!("{key:?}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(&key)), "Some([redacted])");
    }

    #[test]
    fn whole_and_masked_echoes_are_scrubbed() {
        let key = ApiKey::new("sk-live-1234567890abcdef");
        let text = "Incorrect API key provided: sk-live-1234567890abcdef.";
        assert_eq!(key.redact(text), "Incorrect API key provided: [redacted].");
        let masked = "Incorrect API key provided: sk-liv**********cdef. See the docs.";
        assert_eq!(
            key.redact(masked),
            "Incorrect API key provided: [redacted]. See the docs."
        );
        assert_eq!(key.redact("rate limited"), "rate limited");
    }
}
