//! Reading JSON from a model or a tool without changing a value.
//!
//! `serde_json` keeps an integer exactly when it fits in 64 bits (`i64` or `u64`) and otherwise
//! turns it into the nearest `f64`: `12345678901234567890123` would become
//! `1.2345678901234568e22`, a different number, without a word. Identifiers, amounts in minor
//! units and hashes are exactly the values where that matters. So every JSON text that comes
//! from a model or a tool (arguments, repaired arguments, answers, tool results) is checked
//! with [`check_integers`]: an integer literal (no fraction, no exponent) that does not fit in
//! 64 bits is refused with an [`InexactNumber`] naming its JSON pointer and the number as
//! written. Decimal fractions and exponents are floating point by their own notation and are
//! read as `f64`, as JSON readers usually do.
//!
//! The check is a second pass over text that has already parsed: it only needs to find number
//! tokens and the path to them, so it is a small scanner rather than a second parser. (Turning
//! on `serde_json`'s `arbitrary_precision` instead would change `Value` for every crate that
//! links it, including the schema validator and the store, and what equal numbers compare as.)

use serde::de::DeserializeOwned;
use std::fmt;

/// An integer in JSON text that does not fit in 64 bits, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InexactNumber {
    /// The JSON pointer of the number (`""` for the whole text).
    pub pointer: String,
    /// The number as written.
    pub number: String,
}

impl fmt::Display for InexactNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        let shown = if self.number.len() > 60 {
            format!("{}… ({} digits)", &self.number[..40], self.number.len())
        } else {
            self.number.clone()
        };
        write!(
            f,
            "at {at}: the integer {shown} does not fit in 64 bits; it is refused rather than rounded to another number (write it as a string to pass it on exactly)"
        )
    }
}

impl std::error::Error for InexactNumber {}

/// JSON that could not be read exactly: not JSON, or holding an integer past 64 bits.
#[derive(Debug, thiserror::Error)]
pub enum ExactJsonError {
    /// Not JSON (or not of the expected shape).
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// An integer that does not fit in 64 bits.
    #[error("{0}")]
    Inexact(#[from] InexactNumber),
}

/// Parses `text` like `serde_json::from_str`, and refuses an integer that would not be kept
/// exactly.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, ExactJsonError> {
    let value = serde_json::from_str(text)?;
    check_integers(text)?;
    Ok(value)
}

/// Parses `bytes` like `serde_json::from_slice`, and refuses an integer that would not be kept
/// exactly.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ExactJsonError> {
    let value = serde_json::from_slice(bytes)?;
    // Text that parsed is UTF-8; the fallback only keeps this total.
    check_integers(std::str::from_utf8(bytes).unwrap_or_default())?;
    Ok(value)
}

/// One level of the path to the token being read.
enum Level {
    /// In an object; the key of the current member once it has been read.
    Object { key: Option<String>, want_key: bool },
    /// In an array, at this index.
    Array(usize),
}

/// Finds the first integer literal in the JSON `text` that does not fit in `i64` or `u64`.
///
/// Meant for text that parses as JSON; on other text it finds what it can and never panics.
pub fn check_integers(text: &str) -> Result<(), InexactNumber> {
    let bytes = text.as_bytes();
    let mut path: Vec<Level> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => path.push(Level::Object {
                key: None,
                want_key: true,
            }),
            b'[' => path.push(Level::Array(0)),
            b'}' | b']' => {
                path.pop();
            }
            b',' => match path.last_mut() {
                Some(Level::Array(index)) => *index += 1,
                Some(Level::Object { want_key, .. }) => *want_key = true,
                None => {}
            },
            b'"' => {
                let end = string_end(bytes, i);
                if let Some(Level::Object { key, want_key }) = path.last_mut() {
                    if *want_key {
                        *key = serde_json::from_str(&text[i..end]).ok();
                        *want_key = false;
                    }
                }
                i = end;
                continue;
            }
            b'-' | b'0'..=b'9' => {
                let end = i + bytes[i..]
                    .iter()
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .unwrap_or(bytes.len() - i);
                let number = &text[i..end];
                let integer = !number.contains(['.', 'e', 'E']);
                if integer && number.parse::<i64>().is_err() && number.parse::<u64>().is_err() {
                    return Err(InexactNumber {
                        pointer: pointer(&path),
                        number: number.to_owned(),
                    });
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The index just past the string that starts with the quote at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The JSON pointer of the value being read at `path`.
fn pointer(path: &[Level]) -> String {
    let mut out = String::new();
    for level in path {
        out.push('/');
        match level {
            Level::Object { key, .. } => {
                let key = key.as_deref().unwrap_or("");
                out.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Level::Array(index) => out.push_str(&index.to_string()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn integers_past_64_bits_are_found_with_their_pointer() {
        let text = r#"{"a": [1, {"b~/\"c": -99999999999999999999}], "d": 2}"#;
        let err = check_integers(text).unwrap_err();
        assert_eq!(err.pointer, "/a/1/b~0~1\"c");
        assert_eq!(err.number, "-99999999999999999999");
        assert!(err.to_string().contains("does not fit in 64 bits"), "{err}");
        assert_eq!(
            check_integers("18446744073709551616").unwrap_err().pointer,
            ""
        );
    }

    #[test]
    fn what_fits_and_floats_by_notation_pass() {
        for ok in [
            "18446744073709551615",
            "-9223372036854775808",
            r#"{"x": 1.5e300, "y": 123456789012345678901234.5, "s": "99999999999999999999999"}"#,
            r#"{"key 99999999999999999999999": 1}"#,
            r#"["a\"b", 3]"#,
        ] {
            assert!(check_integers(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn from_str_refuses_what_a_plain_parse_would_round() {
        let text = r#"{"id": 12345678901234567890123}"#;
        let plain: Value = serde_json::from_str(text).unwrap();
        assert!(plain["id"].is_f64(), "the plain parse rounds");
        let err = from_str::<Value>(text).unwrap_err();
        assert!(
            matches!(err, ExactJsonError::Inexact(ref n) if n.pointer == "/id"),
            "{err}"
        );
        assert!(from_slice::<Value>(b"{\"id\": 7}").is_ok());
    }

    #[test]
    fn text_that_is_not_json_never_panics() {
        for text in ["\"", "{\"a", "[[[", "}}]]", "-", "\"\\", "{,:]"] {
            let _ = check_integers(text);
        }
    }
}
