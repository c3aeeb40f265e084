//! Session bindings (`sessionStop`, `sessionFail`, `sessionStatus`, see
//! [`SessionBinding`]): plain functions over the stored history that say whether a side's call
//! of a bound tool ended the session, and what the session's latest status is (read for a
//! caller by `session_status.rs`).
//!
//! A binding's call ends the session once every call of the reply that made it has its result,
//! so the tool's own work (and its result) is stored first. When one reply calls both the
//! `sessionStop` and the `sessionFail` tool, the first of them in call order counts.

use super::outcome::{SessionEnd, StopReason};
use super::turns::{opens_session, Position};
use crate::project::{SessionBinding, SideDef};
use serde_json::Value;
use std::collections::HashSet;
use toolhost_store::{Message, Role, ToolCallRecord};

/// Whether the turn's latest reply called the side's `sessionStop` or `sessionFail` tool and
/// every call of that reply has its result; the run then ends with that reason.
pub(super) fn session_end(
    position: &Position,
    side: &SideDef,
    history: &[Message],
    answered: &HashSet<String>,
) -> Option<StopReason> {
    if side.session_stop.is_none() && side.session_fail.is_none() {
        return None;
    }
    // The turn's latest reply, if nothing from outside came after it (a sub-prompt's first
    // message, nested, is not from outside).
    let reply = history
        .iter()
        .rev()
        .take_while(|m| !opens_session(m))
        .find(|m| m.role == Role::Assistant && m.depth == 0 && position.owns(m))?;
    if !reply.tool_calls.iter().all(|c| answered.contains(&c.id)) {
        return None;
    }
    reply.tool_calls.iter().find_map(|call| {
        if let Some(b) = bound(&side.session_stop, call) {
            return Some(StopReason::SessionStop(end_of(b, call)));
        }
        bound(&side.session_fail, call).map(|b| StopReason::SessionFail(end_of(b, call)))
    })
}

/// The binding, when `call` is a call of its tool.
fn bound<'a>(
    binding: &'a Option<SessionBinding>,
    call: &ToolCallRecord,
) -> Option<&'a SessionBinding> {
    binding.as_ref().filter(|b| b.name == call.name)
}

/// What a binding reads from a call's arguments.
fn end_of(binding: &SessionBinding, call: &ToolCallRecord) -> SessionEnd {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    SessionEnd {
        tool: call.name.clone(),
        message: binding
            .message_property
            .as_deref()
            .and_then(|p| args.get(p))
            .map(text_of),
        attachments: binding
            .attachments_property
            .as_deref()
            .and_then(|p| args.get(p))
            .and_then(Value::as_array)
            .map(|paths| {
                paths
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The status the latest answered call of a `sessionStatus` tool published: the argument its
/// binding's `messageProperty` names, or the call's whole arguments when it names none.
pub(super) fn latest_status(bindings: &[&SessionBinding], history: &[Message]) -> Option<String> {
    let answered: HashSet<&str> = history
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    history
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant && m.depth == 0)
        .flat_map(|m| m.tool_calls.iter().rev())
        .filter(|c| answered.contains(c.id.as_str()))
        .find_map(|call| {
            let binding = bindings.iter().find(|b| b.name == call.name)?;
            Some(match &binding.message_property {
                Some(_) => end_of(binding, call).message.unwrap_or_default(),
                None => call.arguments.clone(),
            })
        })
}
