//! Thought signatures kept with a reply and put back on its parts in later turns.
//!
//! Continuity shape: `{"gemini": {"calls": [SIG or null, ...], "text": SIG}}`. `calls` goes
//! by the call's position in the reply's tool calls (the runtime keeps their order but not
//! their ids), up to the last signed call; `text` is the signature that came on a part other
//! than a call (text, thought or empty text; the last one wins). Each key only when present.

use crate::ChatMessage;
use serde_json::{json, Map, Value};

/// The signatures of one reply.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Signatures {
    calls: Vec<Option<String>>,
    text: Option<String>,
}

impl Signatures {
    /// The signature of call `index`.
    pub(super) fn set_call(&mut self, index: usize, signature: &str) {
        if self.calls.len() <= index {
            self.calls.resize(index + 1, None);
        }
        self.calls[index] = Some(signature.to_owned());
    }

    /// A signature that came on a part other than a call.
    pub(super) fn set_text(&mut self, signature: &str) {
        self.text = Some(signature.to_owned());
    }

    /// The signature of call `index`, if it had one.
    pub(super) fn call(&self, index: usize) -> Option<&str> {
        self.calls.get(index)?.as_deref()
    }

    /// The signature of the text, if it had one.
    pub(super) fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The reply's continuity; `None` without any signature.
    pub(super) fn continuity(&self) -> Option<Value> {
        let mut kept = Map::new();
        if !self.calls.is_empty() {
            kept.insert("calls".into(), json!(self.calls));
        }
        if let Some(text) = &self.text {
            kept.insert("text".into(), text.clone().into());
        }
        (!kept.is_empty()).then(|| json!({ "gemini": kept }))
    }

    /// What an assistant message carries back; nothing for another API's continuity.
    pub(super) fn of(message: &ChatMessage) -> Self {
        let Some(kept) = message.continuity.as_ref().and_then(|c| c.get("gemini")) else {
            return Signatures::default();
        };
        let calls = kept
            .get("calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| s.as_str().map(str::to_owned))
            .collect();
        let text = kept.get("text").and_then(Value::as_str).map(str::to_owned);
        Signatures { calls, text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_signed_calls_up_to_the_last_are_listed() {
        let mut s = Signatures::default();
        assert_eq!(s.continuity(), None);
        s.set_call(1, "b");
        s.set_text("t");
        let value = s.continuity();
        assert_eq!(
            value,
            Some(json!({"gemini": {"calls": [null, "b"], "text": "t"}}))
        );
        let back = Signatures::of(&ChatMessage {
            continuity: value,
            ..ChatMessage::default()
        });
        assert_eq!(back, s);
        assert_eq!(
            (back.call(0), back.call(1), back.call(2)),
            (None, Some("b"), None)
        );
        let other = ChatMessage {
            continuity: Some(json!({"anthropic": {"blocks": []}})),
            ..ChatMessage::default()
        };
        assert_eq!(Signatures::of(&other), Signatures::default());
    }
}
