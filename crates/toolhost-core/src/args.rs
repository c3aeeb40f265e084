//! Parsing the argument string a model sends into JSON, strictly.
//!
//! Models send arguments as text. [`parse_tool_args`] turns that text into a JSON value with the
//! rules of spec 003 (`parseToolArgs`): blank text is `{}`. It is stricter than a plain JSON parse
//! in the ways that protect the tool: duplicate keys are refused (a plain parse silently keeps the
//! last one, so the model and the tool would disagree on the value), numbers must be finite,
//! integers must fit in 64 bits (a plain parse rounds a larger one to a different number; see
//! [`crate::exact`]), and nesting is bounded, so hostile input ends in an error, never a stack
//! overflow.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Why an argument string could not be parsed into JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("arguments {}: {reason}", self.what())]
pub struct ArgsParseError {
    /// What is wrong, with the line and column where the parser stopped, or the pointer of a
    /// number that cannot be kept exactly.
    pub reason: String,
    /// Whether the text is JSON but holds an integer past 64 bits.
    pub inexact: bool,
}

impl ArgsParseError {
    /// What is wrong with the arguments, as a predicate ("are not valid JSON").
    pub fn what(&self) -> &'static str {
        if self.inexact {
            "hold a number that cannot be kept exactly"
        } else {
            "are not valid JSON"
        }
    }
}

/// Parses a model's argument string.
///
/// Blank or whitespace-only text parses to `{}`. Duplicate object keys, non-finite numbers,
/// integers past 64 bits, trailing characters and nesting deeper than 128 levels are errors
/// naming where they occur.
pub fn parse_tool_args(text: &str) -> Result<Value, ArgsParseError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value = StrictValue
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| ArgsParseError {
            reason: e.to_string(),
            inexact: false,
        })?;
    crate::exact::check_integers(text).map_err(|e| ArgsParseError {
        reason: e.to_string(),
        inexact: true,
    })?;
    Ok(value)
}

/// A seed that builds a `serde_json::Value` and refuses duplicate keys and non-finite numbers.
struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("number {v} is not finite")))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictValue)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(StrictValue)?;
            match object.entry(key) {
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                serde_json::map::Entry::Occupied(taken) => {
                    return Err(de::Error::custom(format!(
                        "duplicate key \"{}\"",
                        taken.key()
                    )));
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blank_text_is_an_empty_object() {
        assert_eq!(parse_tool_args("").unwrap(), json!({}));
        assert_eq!(parse_tool_args("  \n\t").unwrap(), json!({}));
    }

    #[test]
    fn duplicate_keys_are_refused_with_the_key_named() {
        let err = parse_tool_args(r#"{"a":1,"a":2}"#).unwrap_err();
        assert!(err.reason.contains("duplicate key \"a\""), "{err}");
    }

    #[test]
    fn numbers_out_of_range_and_trailing_text_are_refused() {
        assert!(parse_tool_args("1e400").is_err());
        assert!(parse_tool_args(r#"{"a":1} x"#).is_err());
        assert!(parse_tool_args("NaN").is_err());
    }

    #[test]
    fn integers_past_64_bits_are_refused_with_pointer_and_number() {
        let err = parse_tool_args(r#"{"order": {"ids": [1, 123456789012345678901234567890]}}"#)
            .unwrap_err();
        assert!(err.inexact);
        assert_eq!(
            err.to_string(),
            "arguments hold a number that cannot be kept exactly: at /order/ids/1: the integer 123456789012345678901234567890 does not fit in 64 bits; it is refused rather than rounded to another number (write it as a string to pass it on exactly)"
        );
        assert_eq!(
            parse_tool_args(r#"{"n": 18446744073709551615}"#).unwrap(),
            json!({"n": 18446744073709551615u64})
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let text = "[".repeat(10_000) + &"]".repeat(10_000);
        let err = parse_tool_args(&text).unwrap_err();
        assert!(err.reason.contains("recursion limit"), "{err}");
    }
}
