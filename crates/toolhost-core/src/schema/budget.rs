//! Bounds on the work of canonicalizing a schema.
//!
//! Inlining `$ref`s copies each target to every place that uses it, so a few kilobytes of
//! `$defs` that refer to each other twice per level grow exponentially (40 levels is 2^40
//! copies). [`Budget`] charges every byte the canonical form will hold as it is built, and the
//! walk stops at the first charge past [`MAX_SCHEMA_BYTES`]; the work done is therefore bounded
//! by the limit, not by the size the schema would have had. Nesting (unions in unions, `$ref`s
//! to `$ref`s, which the container depth of [`MAX_DEPTH`](super::MAX_DEPTH) does not count) is
//! bounded by [`MAX_SCHEMA_NESTING`], so that no schema can exhaust the stack.

use serde_json::Value;
use std::io;

/// The largest canonical schema, in bytes of compact JSON with every `$ref` inlined.
///
/// A model is shown the schema on every request; one mebibyte is about a quarter of a million
/// tokens, already more than any model's context, so no usable tool comes near it.
pub const MAX_SCHEMA_BYTES: usize = 1024 * 1024;

/// The most schemas nested in one another, counting unions and each `$ref` followed.
pub const MAX_SCHEMA_NESTING: usize = 128;

/// What is left of the byte budget and how deep the walk is.
#[derive(Debug)]
pub(super) struct Budget {
    left: usize,
    nesting: usize,
    /// Set at the first charge past the limit; from then on the walk does nothing.
    pub(super) spent: bool,
}

impl Budget {
    pub(super) fn new() -> Self {
        Self {
            left: MAX_SCHEMA_BYTES,
            nesting: 0,
            spent: false,
        }
    }

    /// Charges `bytes`; false (and spent from then on) when that goes past the limit.
    pub(super) fn charge(&mut self, bytes: usize) -> bool {
        match self.left.checked_sub(bytes) {
            Some(left) if !self.spent => {
                self.left = left;
                true
            }
            _ => {
                self.spent = true;
                false
            }
        }
    }

    /// Charges a key and the value copied under it as they are.
    pub(super) fn charge_copy(&mut self, key: &str, value: &Value) -> bool {
        // `"key":` plus a separator.
        self.charge(key.len() + 4) && self.charge(json_len(value))
    }

    /// Enters one level of schema nesting; false when that is deeper than allowed.
    pub(super) fn enter(&mut self) -> bool {
        self.nesting += 1;
        self.nesting <= MAX_SCHEMA_NESTING
    }

    /// Leaves a level entered with [`Budget::enter`] (also when entering failed).
    pub(super) fn leave(&mut self) {
        self.nesting -= 1;
    }
}

/// The length of `value` as compact JSON, counted without building the text.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn copies_are_charged_their_compact_size() {
        assert_eq!(json_len(&json!({"a": [1, "x"]})), 13);
        let mut budget = Budget::new();
        assert!(budget.charge(MAX_SCHEMA_BYTES - 1));
        assert!(budget.charge(1));
        assert!(!budget.charge(1));
        assert!(budget.spent);
        assert!(!budget.charge(0), "a spent budget stays spent");
    }
}
