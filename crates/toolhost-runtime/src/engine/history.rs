//! The conversation a model sees, built from the stored messages.

use toolhost_providers::{ChatMessage, ChatRole, ModelToolCall};
use toolhost_store::{Message, Role};

/// The prompt's system text, then the thread's own (depth 0, not silent) messages.
pub(super) fn to_chat(system: &str, messages: &[Message]) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.trim().is_empty() {
        out.push(ChatMessage {
            role: ChatRole::System,
            content: Some(system.to_owned()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        });
    }
    out.extend(
        messages
            .iter()
            .filter(|m| m.depth == 0 && !m.silent)
            .map(to_chat_message),
    );
    out
}

fn to_chat_message(m: &Message) -> ChatMessage {
    ChatMessage {
        role: match m.role {
            Role::System => ChatRole::System,
            Role::User => ChatRole::User,
            Role::Assistant => ChatRole::Assistant,
            Role::Tool => ChatRole::Tool,
        },
        content: m.content.clone(),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| ModelToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect(),
        tool_call_id: m.tool_call_id.clone(),
    }
}
