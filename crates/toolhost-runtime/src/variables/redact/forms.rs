//! The forms a secret value is recognised in, and how each is matched in a byte string.
//!
//! Every secret is matched
//! - as itself, also where some of its bytes are URL-encoded (`%2F` or `%2f`, `+` for a space)
//!   or escaped as in a JSON string (`\"`, `\\`, `\/`, `\n`, `\u0041`): one matcher accepts any
//!   mix of these per byte, since it decodes to exactly the secret;
//! - from [`ENCODED_MIN_BYTES`] bytes on, also as hexadecimal (either case) and as base64, in the
//!   standard and the URL-safe alphabet, at each of the three byte offsets a secret can have
//!   inside a longer base64 stream, also where the stream is wrapped in lines (MIME, PEM).
//!
//! Base64 at an offset: a secret that starts at byte `k` (mod 3) of an encoded stream shares its
//! first and last base64 characters with the unknown bytes around it, so the characters differ
//! from one stream to the next. What stays the same is the *core*: the characters whose six bits
//! all come from the secret. Each offset has its own core, and a match of a core also takes the
//! one neighbouring character on each side that carries a few bits of the secret, so no bit of it
//! is left behind.
//!
//! Why the minimum: an encoded form is written in a small alphabet and, at an offset, only its
//! core is matched; for a short secret that core is a few characters that turn up by chance in
//! any hex dump or base64 image (a 4-byte secret's core is 4 base64 characters: about one
//! chance match per 16 million characters, so several in a large image). From 8 bytes on, the
//! shortest core carries 60 bits (1 chance in 2^60 per position), so a match is the secret.
//! Shorter secrets are still matched as themselves and URL-encoded or JSON-escaped, which need
//! every byte of the secret. Base64 text that is checked by decoding it (an image block's data)
//! is not searched for them as text: there a short secret written as itself is just as much a
//! matter of chance (see `Redactor::found_in_base64_text`).

/// From this length (in bytes) on, a secret is also recognised as hex and as base64.
pub const ENCODED_MIN_BYTES: usize = 8;

/// One form of one secret. Its `Debug` shows the kind and length, never the bytes.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Form {
    /// The secret, each byte as itself, URL-encoded or JSON-escaped.
    Flex(Vec<u8>),
    /// The secret in hexadecimal (lowercase here; matched in either case).
    Hex(Vec<u8>),
    /// A base64 core; `lead`/`trail`: the character before/after it carries bits of the secret.
    Base64 {
        core: Vec<u8>,
        lead: bool,
        trail: bool,
    },
}

impl std::fmt::Debug for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Form::Flex(v) => write!(f, "Flex({} bytes)", v.len()),
            Form::Hex(v) => write!(f, "Hex({} digits)", v.len()),
            Form::Base64 { core, .. } => write!(f, "Base64({} characters)", core.len()),
        }
    }
}

/// How a form matches at a position of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// It does not.
    Miss,
    /// It matches from `start` to `end` (`start` may lie before the position: see `lead`).
    Full { start: usize, end: usize },
    /// The text ends while it still matches: what is there from `start` is the beginning of it.
    Partial { start: usize },
}

/// The forms of `secret` (see the module page).
pub(super) fn forms_of(secret: &[u8]) -> Vec<Form> {
    let mut forms = vec![Form::Flex(secret.to_vec())];
    if secret.len() < ENCODED_MIN_BYTES {
        return forms;
    }
    let hex: Vec<u8> = secret
        .iter()
        .flat_map(|b| {
            let digits = b"0123456789abcdef";
            [digits[usize::from(b >> 4)], digits[usize::from(b & 15)]]
        })
        .collect();
    forms.push(Form::Hex(hex));
    let engines = [
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    for engine in &engines {
        for offset in 0..3 {
            let form = base64_core(engine, secret, offset);
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
    }
    forms
}

/// The characters of `secret`'s base64 encoding, when it starts at byte `offset` of a stream,
/// that depend on no other byte of the stream.
fn base64_core(engine: &impl base64::Engine, secret: &[u8], offset: usize) -> Form {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(secret);
    padded.extend_from_slice(&[0, 0]);
    let encoded = engine.encode(&padded).into_bytes();
    let first_bit = 8 * offset;
    let end_bit = 8 * (offset + secret.len());
    let start = first_bit.div_ceil(6);
    let end = end_bit / 6;
    Form::Base64 {
        core: encoded[start..end].to_vec(),
        lead: !first_bit.is_multiple_of(6),
        trail: !end_bit.is_multiple_of(6),
    }
}

fn is_base64_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_')
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

impl Form {
    /// Whether this form can start at `text[at]` and how far it goes.
    pub(super) fn step(&self, text: &[u8], at: usize) -> Step {
        match self {
            Form::Flex(secret) => flex(secret, text, at),
            Form::Hex(hex) => exact(hex, text, at, true),
            Form::Base64 { core, lead, trail } => {
                let mut step = wrapped(core, text, at);
                // The neighbour that shares bits with the secret, across a line break.
                let before = |start: usize| {
                    let mut q = start;
                    while let Some(n) = break_before(text, q) {
                        q -= n;
                    }
                    if *lead && q > 0 && is_base64_char(text[q - 1]) {
                        q - 1
                    } else {
                        start
                    }
                };
                let after = |end: usize| {
                    let mut q = end;
                    while let Break::Whole(n) = line_break(text, q) {
                        q += n;
                    }
                    if *trail && text.get(q).copied().is_some_and(is_base64_char) {
                        q + 1
                    } else {
                        end
                    }
                };
                match &mut step {
                    Step::Full { start, end } => {
                        *start = before(*start);
                        *end = after(*end);
                    }
                    Step::Partial { start } => *start = before(*start),
                    Step::Miss => {}
                }
                step
            }
        }
    }
}

/// A line break at a position of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Break {
    /// None starts there.
    None,
    /// One of this many bytes.
    Whole(usize),
    /// The text ends inside what may be one.
    Cut,
}

/// What ends a line of wrapped base64 in text: a raw `\n` or `\r`, or one escaped as JSON
/// writes it (`\n`, `\r`, `\u000a`, `\u000d`) behind any number of backslashes (JSON text inside
/// JSON text), since a tool may return `JSON.stringify` of a wrapped value.
const ESCAPED_BREAKS: [&[u8]; 4] = [b"n", b"r", b"u000a", b"u000d"];

/// The line break that starts at `text[p]`, if any.
fn line_break(text: &[u8], p: usize) -> Break {
    match text.get(p) {
        Some(b'\n' | b'\r') => Break::Whole(1),
        Some(b'\\') => {
            let mut q = p;
            while text.get(q) == Some(&b'\\') {
                q += 1;
            }
            let rest = &text[q..];
            if rest.is_empty() {
                return Break::Cut;
            }
            for tail in ESCAPED_BREAKS {
                let n = tail.len().min(rest.len());
                if rest[..n].eq_ignore_ascii_case(&tail[..n]) {
                    return if n == tail.len() {
                        Break::Whole(q - p + n)
                    } else {
                        Break::Cut
                    };
                }
            }
            Break::None
        }
        _ => Break::None,
    }
}

/// The length of the line break that ends just before `text[q]`, if any.
fn break_before(text: &[u8], q: usize) -> Option<usize> {
    let head = &text[..q];
    if head.last().is_some_and(|c| matches!(c, b'\n' | b'\r')) {
        return Some(1);
    }
    ESCAPED_BREAKS.iter().find_map(|tail| {
        let body = head.len().checked_sub(tail.len())?;
        if !head[body..].eq_ignore_ascii_case(tail) {
            return None;
        }
        let slashes = head[..body]
            .iter()
            .rev()
            .take_while(|&&c| c == b'\\')
            .count();
        (slashes > 0).then_some(tail.len() + slashes)
    })
}

/// `pattern` at `at`, where base64 wrapped in lines (MIME, PEM) may break it anywhere after its
/// first character.
fn wrapped(pattern: &[u8], text: &[u8], at: usize) -> Step {
    let mut p = at;
    for (i, &want) in pattern.iter().enumerate() {
        if i > 0 {
            loop {
                match line_break(text, p) {
                    Break::Whole(n) => p += n,
                    Break::Cut => return Step::Partial { start: at },
                    Break::None => break,
                }
            }
        }
        match text.get(p) {
            None => return Step::Partial { start: at },
            Some(&c) if c == want => p += 1,
            Some(_) => return Step::Miss,
        }
    }
    Step::Full { start: at, end: p }
}

fn exact(pattern: &[u8], text: &[u8], at: usize, ignore_case: bool) -> Step {
    let same = |a: u8, b: u8| {
        if ignore_case {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    for (i, &p) in pattern.iter().enumerate() {
        match text.get(at + i) {
            None => return Step::Partial { start: at },
            Some(&c) if same(c, p) => {}
            Some(_) => return Step::Miss,
        }
    }
    Step::Full {
        start: at,
        end: at + pattern.len(),
    }
}

/// One byte of text read as one byte of the secret: raw, `%XX`, `+` (a space) or a JSON escape.
/// `None`: it cannot be; `Some(None)`: the text ends inside it.
fn decode_one(text: &[u8], at: usize) -> Option<Option<(u8, usize)>> {
    let c = *text.get(at)?;
    let rest = &text[at + 1..];
    match c {
        b'%' => {
            let digits: Vec<u8> = rest.iter().take(2).copied().collect();
            if digits.iter().any(|&d| hex_value(d).is_none()) {
                return None;
            }
            if digits.len() < 2 {
                return Some(None);
            }
            Some(Some((
                hex_value(digits[0])? * 16 + hex_value(digits[1])?,
                3,
            )))
        }
        b'\\' => {
            let Some(&e) = rest.first() else {
                return Some(None);
            };
            let simple = match e {
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'/' => Some(b'/'),
                b'n' => Some(b'\n'),
                b't' => Some(b'\t'),
                b'r' => Some(b'\r'),
                b'b' => Some(8),
                b'f' => Some(12),
                _ => None,
            };
            if let Some(byte) = simple {
                return Some(Some((byte, 2)));
            }
            if e != b'u' {
                return None;
            }
            // \u00XX for an ASCII byte.
            let digits: Vec<u8> = rest[1..].iter().take(4).copied().collect();
            if digits.iter().any(|&d| hex_value(d).is_none()) {
                return None;
            }
            if digits.len() < 4 {
                return Some(None);
            }
            let value = digits
                .iter()
                .try_fold(0u32, |acc, &d| Some(acc * 16 + u32::from(hex_value(d)?)))?;
            u8::try_from(value)
                .ok()
                .filter(u8::is_ascii)
                .map(|b| Some((b, 6)))
        }
        _ => None,
    }
}

/// Matches the secret from `at`, each byte raw or decoded. A `%` or `\\` in the secret may stand
/// for itself or start an escape, so every way of reading is followed at once (the set of text
/// positions reached after each byte of the secret), never by backtracking.
fn flex(secret: &[u8], text: &[u8], at: usize) -> Step {
    let mut reached = vec![at];
    let mut partial = false;
    for &b in secret {
        let mut next = Vec::with_capacity(reached.len());
        for &p in &reached {
            let Some(&c) = text.get(p) else {
                partial = true;
                continue;
            };
            if c == b || (c == b'+' && b == b' ') {
                next.push(p + 1);
            }
            match decode_one(text, p) {
                Some(Some((byte, len))) if byte == b => next.push(p + len),
                Some(None) => partial = true,
                _ => {}
            }
        }
        next.sort_unstable();
        next.dedup();
        if next.is_empty() {
            return if partial {
                Step::Partial { start: at }
            } else {
                Step::Miss
            };
        }
        reached = next;
    }
    match reached.iter().max() {
        Some(&end) => Step::Full { start: at, end },
        None => Step::Miss,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn core_of(form: &Form) -> &[u8] {
        match form {
            Form::Base64 { core, .. } => core,
            _ => &[],
        }
    }

    #[test]
    fn a_base64_core_is_found_in_a_stream_at_every_offset() {
        let secret = b"sk-live-4f9a8b7c6d5e";
        let forms = forms_of(secret);
        for prefix in 0..6 {
            let mut stream = b"header: ".repeat(prefix);
            stream.extend_from_slice(secret);
            stream.extend_from_slice(b" trailer");
            for engine in [
                base64::engine::general_purpose::STANDARD,
                base64::engine::general_purpose::URL_SAFE,
            ] {
                let encoded = engine.encode(&stream).into_bytes();
                let found = forms.iter().any(|f| {
                    !core_of(f).is_empty()
                        && (0..encoded.len())
                            .any(|at| matches!(f.step(&encoded, at), Step::Full { .. }))
                });
                assert!(
                    found,
                    "prefix {prefix}: {}",
                    String::from_utf8_lossy(&encoded)
                );
            }
        }
    }

    #[test]
    fn flex_reads_url_encoding_and_json_escapes_in_any_mix() {
        let secret = b"a/b c\"d";
        let form = &forms_of(secret)[0];
        for text in [
            &b"a/b c\"d"[..],
            b"a%2Fb+c%22d",
            b"a%2fb%20c\\\"d",
            b"a\\/b c\\u0022d",
        ] {
            assert_eq!(
                form.step(text, 0),
                Step::Full {
                    start: 0,
                    end: text.len()
                },
                "{}",
                String::from_utf8_lossy(text)
            );
        }
        assert_eq!(form.step(b"a%2", 0), Step::Partial { start: 0 });
        assert_eq!(form.step(b"a%2G", 0), Step::Miss);
    }

    #[test]
    fn base64_wrapped_in_lines_is_matched_across_the_breaks() {
        let secret = b"sk-live-4f9a8b7c6d5e";
        let mut stream = b"x".repeat(50);
        stream.extend_from_slice(secret);
        let encoded = base64::engine::general_purpose::STANDARD.encode(&stream);
        // Broken every 70 characters, which falls inside the secret's characters.
        let wrapped: Vec<u8> = encoded
            .as_bytes()
            .chunks(70)
            .collect::<Vec<_>>()
            .join(&b"\r\n"[..]);
        let forms = forms_of(secret);
        let found = forms.iter().skip(2).any(|f| {
            (0..wrapped.len()).any(|at| matches!(f.step(&wrapped, at), Step::Full { .. }))
        });
        assert!(found, "{}", String::from_utf8_lossy(&wrapped));
    }

    #[test]
    fn base64_wrapped_in_lines_is_matched_inside_json_text() {
        let secret = b"sk-live-4f9a8b7c6d5e";
        let mut stream = b"x".repeat(40);
        stream.extend_from_slice(secret);
        stream.extend_from_slice(&b"y".repeat(40));
        let encoded = base64::engine::general_purpose::STANDARD.encode(&stream);
        let lines: Vec<&str> = encoded
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let wrapped = lines.join("\n");
        // As `JSON.stringify({key: wrapped})` writes it, once and twice.
        let once = serde_json::json!({ "key": wrapped }).to_string();
        let twice = serde_json::to_string(&once).unwrap();
        let unicode = lines.join("\\u000A");
        let forms = forms_of(secret);
        for text in [&once, &twice, &unicode] {
            let text = text.as_bytes();
            let found = forms
                .iter()
                .skip(2)
                .any(|f| (0..text.len()).any(|at| matches!(f.step(text, at), Step::Full { .. })));
            assert!(found, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn a_text_that_ends_inside_an_escaped_break_may_go_on() {
        assert_eq!(line_break(b"ab\\", 2), Break::Cut);
        assert_eq!(line_break(b"ab\\u00", 2), Break::Cut);
        assert_eq!(line_break(b"ab\\u000a", 2), Break::Whole(6));
        assert_eq!(line_break(b"ab\\\\n", 2), Break::Whole(3));
        assert_eq!(line_break(b"ab\\t", 2), Break::None);
        assert_eq!(break_before(b"x\\\\n", 4), Some(3));
        assert_eq!(break_before(b"xn", 2), None);
    }

    #[test]
    fn short_secrets_have_no_encoded_forms() {
        assert_eq!(forms_of(b"1234567").len(), 1);
        assert!(forms_of(b"12345678").len() > 2);
    }
}
