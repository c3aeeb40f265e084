//! The request state of a call whose tool asked its client in an `input_required` result
//! (2026-07-28): the answers the client gave in earlier rounds and what each was given to, what
//! the last round asked, and the round's number ([`Sealed`]), bound to the tool and the
//! arguments of the call, sealed with this server's key (HMAC-SHA256) and good for
//! [`STATE_TTL`]. The client keeps it and echoes it; the server remembers nothing of it, but the
//! key is made when the server starts, so a retry must come back to the same process.
//!
//! A state that was changed, that is for another tool or other arguments, or that is too old,
//! is refused. The state is signed, not encrypted: the answers in it are readable by whoever
//! sees the request (the client gave them).

use ring::hmac;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use toolhost_runtime::engine::canonical_hash;

/// How long a sealed state is taken.
pub const STATE_TTL: Duration = Duration::from_secs(30 * 60);

/// What every sealed state starts with (a remembered round's state is a bare id).
const PREFIX: &str = "sealed.v1.";

/// The key states are sealed with: random, made when the server starts.
pub(super) struct StateKey(hmac::Key);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl Default for StateKey {
    fn default() -> Self {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            .expect("the system's random number generator works");
        Self(key)
    }
}

/// What a sealed state carries.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Sealed {
    /// The answers taken so far, by key: the fingerprint of the question each answered, and the
    /// answer.
    pub taken: BTreeMap<String, (String, Value)>,
    /// What the last round asked, by key: the question's fingerprint.
    pub asked: BTreeMap<String, String>,
    /// How many rounds the call went.
    pub round: u32,
}

/// Whether `state` is one this module seals (rather than a remembered round's id).
pub(super) fn is_sealed(state: &str) -> bool {
    state.starts_with(PREFIX)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn encoded(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn decoded(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()
}

impl StateKey {
    /// The state carrying `sealed`, for a call of `tool` with `arguments`.
    pub(super) fn seal(&self, tool: &str, arguments: &Value, sealed: &Sealed) -> String {
        let payload = json!({
            "tool": tool,
            "arguments": canonical_hash(arguments),
            "sealed": sealed,
            "expires": now() + STATE_TTL.as_secs(),
        })
        .to_string();
        let tag = hmac::sign(&self.0, payload.as_bytes());
        format!(
            "{PREFIX}{}.{}",
            encoded(payload.as_bytes()),
            encoded(tag.as_ref())
        )
    }

    /// What `state` carries, if this server sealed it for a call of `tool` with `arguments`
    /// and it is not too old; otherwise why not.
    pub(super) fn open(
        &self,
        state: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Sealed, &'static str> {
        const FORGED: &str = "the request state was not given by this server, or was changed";
        let rest = state.strip_prefix(PREFIX).ok_or(FORGED)?;
        let (payload, tag) = rest.split_once('.').ok_or(FORGED)?;
        let payload = decoded(payload).ok_or(FORGED)?;
        let tag = decoded(tag).ok_or(FORGED)?;
        hmac::verify(&self.0, &payload, &tag).map_err(|_| FORGED)?;
        let payload: Value = serde_json::from_slice(&payload).map_err(|_| FORGED)?;
        if payload["expires"].as_u64().unwrap_or(0) < now() {
            return Err("the request state is too old; call the tool again");
        }
        if payload["tool"] != tool || payload["arguments"] != canonical_hash(arguments).as_str() {
            return Err(
                "the request state was given for another call (another tool or other arguments)",
            );
        }
        serde_json::from_value(payload["sealed"].clone()).map_err(|_| FORGED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_only_unchanged_and_for_its_own_call() {
        let key = StateKey::default();
        let answers = Sealed {
            taken: BTreeMap::from([(
                "name".to_owned(),
                ("f1".to_owned(), json!({"action": "accept"})),
            )]),
            asked: BTreeMap::from([("mail".to_owned(), "f2".to_owned())]),
            round: 2,
        };
        let args = json!({"b": 1, "a": [1, {"y": 2, "x": 1}]});
        let state = key.seal("greet", &args, &answers);
        assert!(is_sealed(&state));
        // The same arguments in another order are the same call.
        let reordered = json!({"a": [1, {"x": 1, "y": 2}], "b": 1});
        assert_eq!(key.open(&state, "greet", &reordered).unwrap(), answers);
        assert!(key.open(&state, "other", &args).is_err());
        assert!(key.open(&state, "greet", &json!({"b": 2})).is_err());
        // One character changed anywhere, or another server's key, and it does not open.
        let mut changed = state.clone().into_bytes();
        let at = PREFIX.len() + 5;
        changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        assert!(key.open(&changed, "greet", &args).is_err());
        assert!(StateKey::default().open(&state, "greet", &args).is_err());
        assert!(key.open("sealed.v1.nonsense", "greet", &args).is_err());
        assert!(!is_sealed("a-remembered-round-id"));
    }
}
