//! Thinking blocks kept with a reply and given back with it in later turns.
//!
//! Continuity shape: `{"anthropic": {"blocks": [BLOCK, ...]}}`, the reply's `thinking` blocks
//! (with their `signature`) and `redacted_thinking` blocks (with their `data`), in the order
//! received and exactly as received. They refer to no call, so the runtime's own call ids do
//! not matter to them.

use crate::ChatMessage;
use serde_json::{json, Value};

/// Whether a content block of this type is kept.
pub(super) fn is_kept(kind: &str) -> bool {
    matches!(kind, "thinking" | "redacted_thinking")
}

/// The continuity of a reply with these kept blocks; `None` without any.
pub(super) fn continuity(blocks: Vec<Value>) -> Option<Value> {
    (!blocks.is_empty()).then(|| json!({"anthropic": {"blocks": blocks}}))
}

/// The kept blocks an assistant message carries back; none for another API's continuity.
pub(super) fn kept_blocks(message: &ChatMessage) -> Vec<Value> {
    message
        .continuity
        .as_ref()
        .and_then(|c| c.pointer("/anthropic/blocks"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        // Anything else in there was not written by this adapter: leave it out.
        .filter(|b| b.get("type").and_then(Value::as_str).is_some_and(is_kept))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_come_back_only_from_anthropic_continuity() {
        let block = json!({"type": "thinking", "thinking": "t", "signature": "s"});
        let mut m = ChatMessage {
            continuity: continuity(vec![block.clone()]),
            ..ChatMessage::default()
        };
        assert_eq!(kept_blocks(&m), vec![block]);
        m.continuity = Some(json!({"gemini": {"calls": ["sig"]}}));
        assert!(kept_blocks(&m).is_empty());
        assert_eq!(continuity(Vec::new()), None);
    }
}
