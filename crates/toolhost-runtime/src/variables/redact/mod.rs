//! Redaction: every secret value, in each of its common forms (see the `forms` module), replaced by
//! `[redacted NAME]`.
//!
//! The rule for anything that is cut (a preview, the tail of a program's error output, a capped
//! read, a stream delivered in pieces) is: redact first, cut second. Text cut *before* it could
//! be redacted whole (a read that stopped at a byte cap, a stream whose rest has not arrived)
//! may end with the beginning of a secret; [`Redactor::cut_text`] and [`RedactingStream`] drop
//! or hold back such an end, so no fragment of a secret is ever kept at a cut edge. A cut made
//! after redaction never splits a `[redacted NAME]` marker either.

mod forms;

pub use forms::ENCODED_MIN_BYTES;

use forms::{forms_of, Form, Step};
use serde_json::Value;
use std::ops::Range;

/// One secret: its name and the forms it is recognised in.
#[derive(Clone)]
struct Secret {
    name: String,
    forms: Vec<Form>,
}

impl Secret {
    /// The length of the secret's value in bytes.
    fn len(&self) -> usize {
        match self.forms.first() {
            Some(Form::Flex(v)) => v.len(),
            _ => 0,
        }
    }
}

/// Replaces secret values (and their encodings) in text, bytes and JSON by `[redacted NAME]`.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

/// Where secrets were found in a byte string.
struct Found {
    /// The matches, sorted and merged, with the index of the secret of each.
    spans: Vec<(Range<usize>, usize)>,
    /// Where the text's end begins to match a secret that it then stops short of, if it does.
    partial: Option<usize>,
}

/// Whether `c` can begin `form` (a quick test before the full match).
fn could_start(form: &Form, c: u8) -> bool {
    match form {
        Form::Flex(secret) => secret.first() == Some(&c) || matches!(c, b'%' | b'\\' | b'+'),
        Form::Hex(hex) => hex.first().is_some_and(|h| h.eq_ignore_ascii_case(&c)),
        // The character before a core, which carries its first bits, is taken by the match.
        Form::Base64 { core, .. } => core.first() == Some(&c),
    }
}

impl Redactor {
    /// A redactor for `secrets`, given as (name, value); empty values are ignored.
    pub fn new(secrets: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut secrets: Vec<Secret> = secrets
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| Secret {
                name,
                forms: forms_of(value.as_bytes()),
            })
            .collect();
        // Longer secrets first, so a secret that contains another is named as itself.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self { secrets }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    fn find(&self, text: &[u8]) -> Found {
        self.find_from(text, 0)
    }

    /// Where the secrets of at least `min_len` bytes are found in `text`.
    fn find_from(&self, text: &[u8], min_len: usize) -> Found {
        let mut spans: Vec<(Range<usize>, usize)> = Vec::new();
        let mut partial: Option<usize> = None;
        for at in 0..text.len() {
            let c = text[at];
            for (index, secret) in self.secrets.iter().enumerate() {
                if secret.len() < min_len {
                    continue;
                }
                for form in secret.forms.iter().filter(|f| could_start(f, c)) {
                    match form.step(text, at) {
                        Step::Miss => {}
                        Step::Full { start, end } => spans.push((start..end, index)),
                        Step::Partial { start } => {
                            partial = Some(partial.map_or(start, |p| p.min(start)));
                        }
                    }
                }
            }
        }
        spans.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
        let mut merged: Vec<(Range<usize>, usize)> = Vec::with_capacity(spans.len());
        for (range, index) in spans {
            match merged.last_mut() {
                Some((last, _)) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => merged.push((range, index)),
            }
        }
        Found {
            spans: merged,
            partial,
        }
    }

    /// The name of a secret `bytes` contain in any of its forms, if any.
    pub fn found_in(&self, bytes: &[u8]) -> Option<&str> {
        if self.is_empty() {
            return None;
        }
        let found = self.find(bytes);
        let (_, index) = found.spans.first()?;
        Some(&self.secrets[*index].name)
    }

    /// A file's content as it may be stored: text (UTF-8) redacted; binary content that holds a
    /// secret refused, with the secret's name, since redacting it would break the file.
    pub fn file_content(&self, bytes: Vec<u8>) -> Result<Vec<u8>, &str> {
        match String::from_utf8(bytes) {
            Ok(text) => Ok(self.text(&text).into_bytes()),
            Err(binary) => {
                let bytes = binary.into_bytes();
                match self.found_in(&bytes) {
                    Some(secret) => Err(secret),
                    None => Ok(bytes),
                }
            }
        }
    }

    /// The name of a secret found in `data`, base64 text that is checked by decoding it (an
    /// image block's data), where no chance match is possible: one of at least
    /// [`ENCODED_MIN_BYTES`] bytes, in any of its forms. A shorter secret is left out: a few
    /// characters of base64 turn up by chance in any large image (a 4-digit PIN among them),
    /// and what such data holds is judged by its decoded bytes.
    pub fn found_in_base64_text(&self, data: &str) -> Option<&str> {
        if self.is_empty() {
            return None;
        }
        let found = self.find_from(data.as_bytes(), ENCODED_MIN_BYTES);
        let (_, index) = found.spans.first()?;
        Some(&self.secrets[*index].name)
    }

    /// `text` redacted, and where each marker stands in the result.
    fn redact_marked(&self, text: &str) -> (String, Vec<Range<usize>>) {
        if self.is_empty() {
            return (text.to_owned(), Vec::new());
        }
        let found = self.find(text.as_bytes());
        self.replace(text, &found.spans)
    }

    fn replace(&self, text: &str, spans: &[(Range<usize>, usize)]) -> (String, Vec<Range<usize>>) {
        let bytes = text.as_bytes();
        let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
        let mut marks = Vec::with_capacity(spans.len());
        let mut from = 0;
        for (range, index) in spans {
            out.extend_from_slice(&bytes[from..range.start]);
            let marker = format!("[redacted {}]", self.secrets[*index].name);
            marks.push(out.len()..out.len() + marker.len());
            out.extend_from_slice(marker.as_bytes());
            from = range.end;
        }
        out.extend_from_slice(&bytes[from..]);
        // Spans begin and end on character boundaries (a secret is whole UTF-8, its escapes and
        // encodings are ASCII); should one not, the text is still never left with a secret.
        let out = String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (out, marks)
    }

    /// `text` with every secret replaced.
    pub fn text(&self, text: &str) -> String {
        self.redact_marked(text).0
    }

    /// `value` with every secret replaced in every string (keys included).
    pub fn json(&self, value: Value) -> Value {
        if self.secrets.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.text(&s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.text(&k), self.json(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// How much of `text` can be redacted now: all of it, except an end that begins a secret
    /// (or one of its forms) and stops short of it; never the middle of a match.
    fn settled(&self, text: &str) -> (usize, Found) {
        let found = self.find(text.as_bytes());
        let mut end = found.partial.unwrap_or(text.len());
        for (range, _) in &found.spans {
            if range.start < end && end < range.end {
                end = range.start;
            }
        }
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        (end, found)
    }

    /// The part of `text` that can be redacted when its end was cut before it could be
    /// redacted whole (a read that stopped at a cap): all of it but an end that could be the
    /// beginning of a secret, in any of its forms.
    pub fn whole_part<'a>(&self, text: &'a str) -> &'a str {
        if self.is_empty() {
            return text;
        }
        &text[..self.settled(text).0]
    }

    /// `text` whose end was cut before it could be redacted whole, redacted without an end that
    /// could be the beginning of a secret.
    pub fn cut_text(&self, text: &str) -> String {
        self.text(self.whole_part(text))
    }

    /// At most `max` characters of the start of `text`, redacted before it is cut; `…` ends it
    /// when something was cut, and a marker is kept whole or left out.
    pub fn head(&self, text: &str, max: usize) -> String {
        let (text, marks) = self.redact_marked(text);
        let Some((mut cut, _)) = text.char_indices().nth(max) else {
            return text;
        };
        if let Some(mark) = marks.iter().find(|m| m.start < cut && cut < m.end) {
            cut = mark.start;
        }
        format!("{}…", &text[..cut])
    }

    /// At most `max` characters of the end of `text`, redacted before it is cut; `…` starts it
    /// when something was cut, and a marker is kept whole or left out.
    pub fn tail(&self, text: &str, max: usize) -> String {
        let (text, marks) = self.redact_marked(text);
        let count = text.chars().count();
        if count <= max {
            return text;
        }
        let Some((mut cut, _)) = text.char_indices().nth(count - max) else {
            return text;
        };
        if let Some(mark) = marks.iter().find(|m| m.start < cut && cut < m.end) {
            cut = mark.end;
        }
        format!("…{}", &text[cut..])
    }

    /// A stream redactor: text pushed in pieces comes out redacted as if it were whole.
    pub fn stream(&self) -> RedactingStream {
        RedactingStream {
            redactor: self.clone(),
            held: String::new(),
        }
    }
}

/// Redacts text that arrives in pieces (a streamed answer): what could be the beginning of a
/// secret is held back until the next piece shows whether it is one.
#[derive(Clone)]
pub struct RedactingStream {
    redactor: Redactor,
    held: String,
}

impl std::fmt::Debug for RedactingStream {
    // What is held may be the beginning of a secret: only its length is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedactingStream({} bytes held)", self.held.len())
    }
}

impl RedactingStream {
    /// Takes the next piece; returns what can be shown now, redacted (possibly nothing).
    pub fn push(&mut self, piece: &str) -> String {
        if self.redactor.is_empty() {
            return piece.to_owned();
        }
        self.held.push_str(piece);
        let (end, found) = self.redactor.settled(&self.held);
        let spans: Vec<_> = found
            .spans
            .into_iter()
            .filter(|(r, _)| r.end <= end)
            .collect();
        let out = self.redactor.replace(&self.held[..end], &spans).0;
        self.held.drain(..end);
        out
    }

    /// The end of the stream: what was held back, redacted (a beginning that never became a
    /// secret is shown as it is).
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.held);
        self.redactor.text(&rest)
    }
}

#[cfg(test)]
mod tests;
