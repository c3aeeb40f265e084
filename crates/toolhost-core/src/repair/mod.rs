//! Argument repair: pure functions that mend what a model wrote before it is validated.
//!
//! The ladder, each rung tried only when the one before did not give valid JSON:
//! 1. [`repair_json`], syntax: a Markdown code fence or prose around the JSON is dropped;
//!    single-quoted strings become double-quoted; Python's `True`/`False`/`None` become JSON's;
//!    trailing commas go; raw line breaks inside strings are escaped; JSON cut off at the end is
//!    closed; unquoted property names are quoted; arguments double-encoded as a JSON string are
//!    decoded.
//! 2. [`coerce_to_schema`], types, only where the schema leaves no doubt: `"3"` → `3` for an
//!    integer, `"2.5"` → `2.5` for a number, `"true"` → `true` for a
//!    boolean, a string holding a JSON object or array where the schema wants one, and a single
//!    value → `[value]` where an array of that value's type is wanted. Nothing is coerced inside
//!    a union (`anyOf`/`oneOf`), where the intent is not clear.
//!
//! An integer past 64 bits is never read into a rounded number by any rung (see
//! [`crate::exact`]): text holding one is unrepairable, and a string holding one is not coerced.
//!
//! Every repair is reported as a note worded for a person and for the model. Text that is
//! already valid JSON is never changed by rung 1, and a value that already fits its schema is
//! never changed by rung 2. Asking the model again is the caller's job.

mod coerce;
mod mend;
#[cfg(test)]
mod tests;

use crate::exact::{self, ExactJsonError};
pub use coerce::coerce_to_schema;
use mend::mend;
use serde_json::{Map, Value};

/// The repaired value and what was done to it (empty when nothing was needed).
#[derive(Debug, Clone, PartialEq)]
pub struct Repair {
    /// The value after repair.
    pub value: Value,
    /// One human-readable note per kind of repair, in the order they were made.
    pub notes: Vec<String>,
}

/// Arguments that are not JSON even after syntax repair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the arguments are not valid JSON even after repair: {reason}")]
pub struct Unrepairable {
    /// The parser's complaint about the mended text.
    pub reason: String,
    /// The repairs tried.
    pub notes: Vec<String>,
}

/// Both rungs: syntax repair, then coercion to `schema`.
pub fn repair_arguments(text: &str, schema: &Value) -> Result<Repair, Unrepairable> {
    let syntax = repair_json(text)?;
    let coerced = coerce_to_schema(syntax.value, schema);
    let mut notes = syntax.notes;
    notes.extend(coerced.notes);
    Ok(Repair {
        value: coerced.value,
        notes,
    })
}

/// Rung 1: mends the syntax of `text` until it parses as JSON.
pub fn repair_json(text: &str) -> Result<Repair, Unrepairable> {
    let mut notes = Vec::new();
    if text.trim().is_empty() {
        notes.push("empty arguments were read as {}".to_owned());
        return Ok(Repair {
            value: Value::Object(Map::new()),
            notes,
        });
    }
    // An integer past 64 bits is refused at every rung: no repair may round it (see
    // `crate::exact`).
    let refuse = |e: ExactJsonError, notes: &Vec<String>| Unrepairable {
        reason: e.to_string(),
        notes: notes.clone(),
    };
    let value = match exact::from_str::<Value>(text) {
        Ok(value) => value,
        Err(e @ ExactJsonError::Inexact(_)) => return Err(refuse(e, &notes)),
        Err(ExactJsonError::Json(_)) => {
            let unfenced = strip_fence(text, &mut notes);
            match exact::from_str::<Value>(unfenced) {
                Ok(value) => value,
                Err(e @ ExactJsonError::Inexact(_)) => return Err(refuse(e, &notes)),
                Err(ExactJsonError::Json(_)) => {
                    let mended = mend(unfenced, &mut notes);
                    exact::from_str::<Value>(&mended).map_err(|e| refuse(e, &notes))?
                }
            }
        }
    };
    let value = match value {
        Value::String(inner) => match decode_nested(&inner) {
            Some(decoded) => {
                notes.push(
                    "the arguments were a JSON string holding JSON; it was decoded".to_owned(),
                );
                decoded
            }
            None => Value::String(inner),
        },
        other => other,
    };
    Ok(Repair { value, notes })
}

/// A string's content as an object or array, if it is one (itself repaired if need be).
fn decode_nested(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    repair_json(trimmed)
        .ok()
        .map(|inner| inner.value)
        .filter(|v| v.is_object() || v.is_array())
}

/// The text inside a Markdown code fence, if there is one.
fn strip_fence<'a>(text: &'a str, notes: &mut Vec<String>) -> &'a str {
    let trimmed = text.trim();
    let Some(start) = trimmed.find("```") else {
        return trimmed;
    };
    let after = &trimmed[start + 3..];
    // Skip the info string (`json`) up to the end of the line.
    let body = after.split_once('\n').map_or(after, |(_, rest)| rest);
    let body = body.rfind("```").map_or(body, |end| &body[..end]);
    notes.push("a Markdown code fence around the arguments was removed".to_owned());
    body.trim()
}
