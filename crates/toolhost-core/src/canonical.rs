//! One JSON value, one text: the canonical form of a value (object keys sorted, no spaces) and
//! its SHA-256, so that two equal values hash alike whatever order their keys came in. Approval
//! decisions are bound to the hash of the arguments, pins to the hash of a definition.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The hex SHA-256 of the canonical form of `value` (object keys sorted, no spaces).
pub fn canonical_hash(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}
