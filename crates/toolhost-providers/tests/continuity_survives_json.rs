//! A chat message's error flag and continuity survive a JSON round trip unchanged, and messages
//! serialized before these fields existed still read. (The runtime keeps them in its own
//! records, `status` and `metadata.continuity`; its replay tests cover that path.)

use serde_json::json;
use toolhost_providers::{ChatMessage, ChatRole, ModelToolCall};

#[test]
fn continuity_and_the_error_flag_survive_a_serde_round_trip() {
    let reply = ChatMessage {
        role: ChatRole::Assistant,
        content: Some("Looking.".into()),
        tool_calls: vec![ModelToolCall {
            id: "rt_call_0".into(),
            name: "get_weather".into(),
            arguments: "{\"location\":\"Oslo\"}".into(),
        }],
        continuity: Some(json!({
            "anthropic": {"blocks": [
                {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "ZGF0YQ=="}
            ]},
            "gemini": {"calls": [null, "c2ln"], "text": "dA=="}
        })),
        ..ChatMessage::default()
    };
    let failed = ChatMessage {
        role: ChatRole::Tool,
        content: Some("error: timed out".into()),
        tool_call_id: Some("rt_call_0".into()),
        is_error: true,
        ..ChatMessage::default()
    };
    for message in [reply, failed] {
        let stored = serde_json::to_string(&message).expect("to json");
        let back: ChatMessage = serde_json::from_str(&stored).expect("from json");
        assert_eq!(back, message);
    }
}

#[test]
fn unset_fields_are_left_out_and_old_messages_still_read() {
    let plain = ChatMessage {
        role: ChatRole::Tool,
        content: Some("12 C".into()),
        tool_call_id: Some("rt_call_0".into()),
        ..ChatMessage::default()
    };
    let stored = serde_json::to_value(&plain).expect("to json");
    assert_eq!(
        stored,
        json!({"role": "tool", "content": "12 C", "tool_call_id": "rt_call_0"})
    );
    let old: ChatMessage =
        serde_json::from_value(json!({"role": "assistant", "content": "Hi."})).expect("old");
    assert!(!old.is_error);
    assert_eq!(old.continuity, None);
}
