//! The messages the engine writes for what happened: a call's result, and the message queued
//! work becomes. Plain functions from values to records, below the loop that stores them.

use super::events::{ReplyDiscarded, ThreadEvent};
use super::live::new_call_id;
use super::turns::{Position, Side};
use super::RuntimeError;
use toolhost_core::ToolResult;
use toolhost_store::{
    Applied, Message, MessageMeta, NewMessage, QueueItem, Role, StoreError, ToolCallRecord, Write,
};

/// The one message a result batch stores.
pub(super) fn stored_result(applied: Applied) -> Result<Message, RuntimeError> {
    applied.messages.into_iter().next().ok_or_else(|| {
        RuntimeError::Store(StoreError::Corrupt(
            "a result was written but no message came back".to_owned(),
        ))
    })
}

/// The message a queued item becomes: a user message, or a call the runtime makes on the
/// thread's behalf (an assistant message whose call the next step runs).
pub(super) fn queued_message(item: QueueItem, position: &Position) -> NewMessage {
    match item {
        // In a `dual_ai` thread a queued message opens a new session (see `turns`).
        QueueItem::Message { role, content } => NewMessage {
            role: Some(role),
            content: Some(content),
            metadata: MessageMeta {
                inbound: position.is_dual(),
                // An assistant message from outside is side A's voice, which side B answers.
                side: (position.is_dual() && role == Role::Assistant).then_some(Side::A),
                ..MessageMeta::default()
            },
            ..NewMessage::default()
        },
        QueueItem::Tool { name, arguments } => NewMessage {
            role: Some(Role::Assistant),
            tool_calls: vec![ToolCallRecord {
                id: new_call_id(),
                name,
                arguments: arguments.to_string(),
            }],
            metadata: {
                let mut metadata = MessageMeta {
                    queued: true,
                    ..MessageMeta::default()
                };
                position.mark(&mut metadata);
                metadata
            },
            ..NewMessage::default()
        },
    }
}

/// The tool message storing a result: the text the model sees, the status, and the whole result.
pub(super) fn result_message(tool: &str, result: &ToolResult) -> NewMessage {
    NewMessage {
        content: Some(result.model_text().to_owned()),
        name: Some(tool.to_owned()),
        status: Some(result.status),
        metadata: MessageMeta {
            result: Some(result.clone()),
            ..MessageMeta::default()
        },
        ..NewMessage::default()
    }
}

/// The event that records a reply the run does not keep because it was asked to stop while the
/// model answered: none of its calls would run, and a reply stored with calls that never get a
/// real result would read as cut off. `None` when the reply makes no calls (it is kept: there is
/// nothing to answer). The reply's writes are the ones [`super::reply`] made.
pub(super) fn discarded_reply(writes: &[Write]) -> Option<Write> {
    let reply = writes.iter().find_map(|w| match w {
        Write::AppendMessage(m) if m.role == Some(Role::Assistant) => Some(m),
        _ => None,
    })?;
    if reply.tool_calls.is_empty() {
        return None;
    }
    let tools = reply.tool_calls.iter().map(|c| c.name.clone()).collect();
    let event = ReplyDiscarded {
        model: reply.metadata.model.clone(),
        tools,
        reason: "the run was asked to stop while the model answered; the thread asks again when it is resumed".to_owned(),
    };
    Some(event.write())
}
