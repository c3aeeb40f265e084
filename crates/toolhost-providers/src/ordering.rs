//! Tool-call ordering: the check a conversation passes right before it is sent to a model.
//!
//! ## Why
//! Every API this crate speaks refuses a conversation whose tool calls and results do not pair
//! up, and the error arrives only after the request was sent. In our own words:
//! - **OpenAI chat completions**: a `tool` message must answer a call of the assistant message
//!   before it, and an assistant message with `tool_calls` must be followed by one `tool`
//!   message per call id before anything else.
//! - **Anthropic Messages**: every `tool_use` block of an assistant turn must be answered by a
//!   `tool_result` with its id in the user turn that comes right after it, and a `tool_result`
//!   must answer a `tool_use` of the turn just before.
//! - **Gemini**: the turn after a model turn with function calls must carry as many function
//!   responses as that turn made calls.
//!
//! One rule satisfies all three: right after an assistant message with tool calls come exactly
//! its results, one tool message per call id, in the order of the calls, and no tool message
//! appears anywhere else.
//!
//! ## What [`check_history`] does
//! It returns `None` when the conversation already follows the rule: one linear pass that
//! compares each result with the call it should answer, with no hashing and no allocation.
//! Otherwise it builds a repaired conversation and lists each change as a [`HistoryRepair`]:
//! - [`MissingResult`](HistoryRepairKind::MissingResult): a call has no result. An error
//!   result saying so ([`RESULT_UNAVAILABLE`]) is added, since the call may not have run; a
//!   success is never made up. (Every API: each call needs its answer.)
//! - [`MovedResult`](HistoryRepairKind::MovedResult): a result exists, but not right after its
//!   call (other messages come between, or the results are not in the order of the calls).
//!   It is moved up to its place. (OpenAI and Anthropic: results come right after the calls.)
//! - [`OrphanResult`](HistoryRepairKind::OrphanResult): a tool message names no call, or no
//!   earlier assistant message made the call it names. It is dropped. A result placed before
//!   its call counts as answering none: pairing it with a later call of the same id could show
//!   a stale result for a call that never ran. (OpenAI and Anthropic: a result must answer a
//!   call that precedes it.)
//! - [`DuplicateResult`](HistoryRepairKind::DuplicateResult): a call already has a result; the
//!   first one is kept and later ones are dropped. (Gemini: responses and calls must be equal
//!   in number; OpenAI and Anthropic: one result per id.)
//!
//! Everything else (system, user and assistant messages, their content and their order) is
//! kept as it is. Checking a repaired conversation returns `None`.
//!
//! ## Pairing
//! A tool message answers the nearest earlier call with its id that has no result yet. An
//! assistant message that names one id in several calls expects one result for that id, at
//! the place of its first call; the check never changes an assistant message (the adapters
//! already keep ids unique within an answer).

use crate::model::{ChatMessage, ChatRole, ModelToolCall};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;

/// The text a model sees in place of a result that is missing.
pub const RESULT_UNAVAILABLE: &str =
    "ToolCallError: result unavailable: this call may not have run, and no result was recorded for it.";

/// How many characters of a dropped result's text a repair's detail quotes.
const EXCERPT_CHARS: usize = 80;

/// The kind of change [`check_history`] made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryRepairKind {
    /// A call had no result; an error result saying it is unavailable was added.
    MissingResult,
    /// A result was moved to follow its call, in the order of the calls.
    MovedResult,
    /// A tool message answering no earlier call was dropped.
    OrphanResult,
    /// A second result for a call that already had one was dropped.
    DuplicateResult,
}

impl HistoryRepairKind {
    /// The kind as a short snake_case name, as it is serialized (`missing_result`...).
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryRepairKind::MissingResult => "missing_result",
            HistoryRepairKind::MovedResult => "moved_result",
            HistoryRepairKind::OrphanResult => "orphan_result",
            HistoryRepairKind::DuplicateResult => "duplicate_result",
        }
    }
}

impl fmt::Display for HistoryRepairKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the check changed, one entry per change, worded for a log and an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryRepair {
    /// The kind of change.
    pub kind: HistoryRepairKind,
    /// The call concerned; `None` for a dropped tool message that names no call.
    pub call_id: Option<String>,
    /// The position, counted from 0 in the conversation that was checked, of the message
    /// concerned: the tool message that was moved or dropped, or, for a missing result, the
    /// assistant message that made the call.
    pub message_index: usize,
    /// One line saying what was changed and why, with the call's id and tool, and for a dropped
    /// result the start of its text.
    pub detail: String,
}

impl fmt::Display for HistoryRepair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.detail)
    }
}

/// Checks that every tool call of `messages` is answered right after the message that made it,
/// and repairs the conversation where it is not. Run it right before each model request.
///
/// Returns `None` when the conversation already follows the rules (the common case: one pass,
/// no new conversation is built). Otherwise returns the repaired conversation and the changes
/// made, ordered by the position they concern in `messages`. In the repaired conversation:
/// - right after each assistant message with tool calls come exactly its results, one tool
///   message per call id, in the order of its calls, and tool messages appear nowhere else;
/// - a result found later in the conversation is moved up to its call
///   ([`HistoryRepairKind::MovedResult`]);
/// - a call without a result gets a tool message with [`RESULT_UNAVAILABLE`] and `is_error` set
///   ([`HistoryRepairKind::MissingResult`]), never a made-up success;
/// - a tool message that names no call, or a call no earlier assistant message made, is
///   dropped ([`HistoryRepairKind::OrphanResult`]), and so is a second result for a call
///   ([`HistoryRepairKind::DuplicateResult`]; the first is kept);
/// - a tool message answers the nearest earlier call with its id that has no result yet; an
///   assistant message naming one id in several calls expects one result for it;
/// - system, user and assistant messages are kept as they are, in their order.
///
/// Checking a repaired conversation returns `None`.
pub fn check_history(messages: &[ChatMessage]) -> Option<(Vec<ChatMessage>, Vec<HistoryRepair>)> {
    if is_ordered(messages) {
        return None;
    }
    let (repaired, mut repairs) = repair(messages);
    repairs.sort_by_key(|r| r.message_index);
    // The fast pass fails exactly where the repair changes something; stay quiet if not.
    debug_assert!(!repairs.is_empty(), "the fast pass and the repair disagree");
    (!repairs.is_empty()).then_some((repaired, repairs))
}

/// The calls of an assistant message that expect a result, in order: each id once, at its
/// first call.
fn answered_calls(calls: &[ModelToolCall]) -> impl Iterator<Item = &ModelToolCall> {
    calls
        .iter()
        .enumerate()
        .filter(|(k, call)| !calls[..*k].iter().any(|c| c.id == call.id))
        .map(|(_, call)| call)
}

fn answers(message: &ChatMessage, call: &ModelToolCall) -> bool {
    message.role == ChatRole::Tool && message.tool_call_id.as_deref() == Some(call.id.as_str())
}

/// The fast pass: whether the conversation already follows the rules.
fn is_ordered(messages: &[ChatMessage]) -> bool {
    let mut i = 0;
    while let Some(message) = messages.get(i) {
        i += 1;
        match message.role {
            // Every result that belongs where it is was consumed with its call below.
            ChatRole::Tool => return false,
            ChatRole::Assistant => {
                for call in answered_calls(&message.tool_calls) {
                    match messages.get(i) {
                        Some(next) if answers(next, call) => i += 1,
                        _ => return false,
                    }
                }
            }
            ChatRole::System | ChatRole::User => {}
        }
    }
    true
}

/// An assistant message with tool calls, and where its results are in the conversation.
struct Block<'a> {
    /// The assistant message's position.
    at: usize,
    /// The end (exclusive) of the tool messages that follow it directly.
    run_end: usize,
    /// The calls expecting a result, each with the position of the result chosen for it.
    slots: Vec<(&'a ModelToolCall, Option<usize>)>,
}

/// The slow path: pairs results with calls, then writes the conversation in order.
fn repair(messages: &[ChatMessage]) -> (Vec<ChatMessage>, Vec<HistoryRepair>) {
    let (blocks, dropped) = pair(messages);
    rebuild(messages, blocks, dropped)
}

/// Each assistant message with calls, with the result chosen for each call; and the tool
/// messages dropped, in the order of the conversation.
fn pair(messages: &[ChatMessage]) -> (Vec<Block<'_>>, Vec<HistoryRepair>) {
    let mut blocks: Vec<Block> = Vec::new();
    // For each call id, the (block, slot) of every call with it, oldest first.
    let mut calls_by_id: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    // Dropped tool messages, in the order of the conversation.
    let mut dropped: Vec<HistoryRepair> = Vec::new();

    for (i, message) in messages.iter().enumerate() {
        match message.role {
            ChatRole::Assistant if !message.tool_calls.is_empty() => {
                let b = blocks.len();
                let slots: Vec<_> = answered_calls(&message.tool_calls)
                    .map(|call| (call, None))
                    .collect();
                for (s, (call, _)) in slots.iter().enumerate() {
                    calls_by_id
                        .entry(call.id.as_str())
                        .or_default()
                        .push((b, s));
                }
                let run = messages[i + 1..]
                    .iter()
                    .take_while(|m| m.role == ChatRole::Tool)
                    .count();
                blocks.push(Block {
                    at: i,
                    run_end: i + 1 + run,
                    slots,
                });
            }
            ChatRole::Tool => {
                if let Some(repair) = place_result(&mut blocks, &calls_by_id, message, i) {
                    dropped.push(repair);
                }
            }
            ChatRole::System | ChatRole::User | ChatRole::Assistant => {}
        }
    }
    (blocks, dropped)
}

/// Gives tool message `i` to the call it answers (the latest unanswered call of its id), or says
/// why it is dropped: it names no call, no earlier message made its call, or its call is answered
/// already.
fn place_result(
    blocks: &mut [Block<'_>],
    calls_by_id: &HashMap<&str, Vec<(usize, usize)>>,
    message: &ChatMessage,
    i: usize,
) -> Option<HistoryRepair> {
    let Some(id) = message.tool_call_id.as_deref() else {
        return Some(HistoryRepair {
            kind: HistoryRepairKind::OrphanResult,
            call_id: None,
            message_index: i,
            detail: format!(
                "dropped tool message {i}: it names no call; its text: {}",
                excerpt(message)
            ),
        });
    };
    let Some(candidates) = calls_by_id.get(id) else {
        return Some(HistoryRepair {
            kind: HistoryRepairKind::OrphanResult,
            call_id: Some(id.to_owned()),
            message_index: i,
            detail: format!(
                "dropped tool message {i}: no earlier assistant message made call \
                 {id:?}; its text: {}",
                excerpt(message)
            ),
        });
    };
    let open = candidates
        .iter()
        .rev()
        .find(|&&(b, s)| blocks[b].slots[s].1.is_none());
    match open {
        Some(&(b, s)) => {
            blocks[b].slots[s].1 = Some(i);
            None
        }
        None => {
            // Every call with this id is answered; the nearest one took the result
            // this one repeats.
            let (b, s) = candidates[candidates.len() - 1];
            let (call, kept) = blocks[b].slots[s];
            let kept = kept.map_or_else(String::new, |k| format!(" in message {k}"));
            Some(HistoryRepair {
                kind: HistoryRepairKind::DuplicateResult,
                call_id: Some(id.to_owned()),
                message_index: i,
                detail: format!(
                    "dropped tool message {i}: a second result for call {id:?} \
                     ({}), whose first result{kept} is kept; its text: {}",
                    call.name,
                    excerpt(message)
                ),
            })
        }
    }
}

/// The conversation in order: each call followed by its result (moved there, or an error result
/// for a missing one), with every change said.
fn rebuild(
    messages: &[ChatMessage],
    blocks: Vec<Block<'_>>,
    dropped: Vec<HistoryRepair>,
) -> (Vec<ChatMessage>, Vec<HistoryRepair>) {
    let missing = blocks
        .iter()
        .flat_map(|b| &b.slots)
        .filter(|(_, r)| r.is_none())
        .count();
    let mut out = Vec::with_capacity(messages.len() + missing);
    let mut repairs = Vec::with_capacity(dropped.len() + missing);
    let mut dropped = dropped.into_iter().peekable();
    let mut blocks = blocks.into_iter().peekable();

    for (i, message) in messages.iter().enumerate() {
        if message.role == ChatRole::Tool {
            // Kept results are written after their calls; this one may have been dropped.
            if let Some(repair) = dropped.next_if(|r| r.message_index == i) {
                repairs.push(repair);
            }
            continue;
        }
        out.push(message.clone());
        let Some(block) = blocks.next_if(|b| b.at == i) else {
            continue;
        };
        // A result is in place when it already sits in the tool messages right after the
        // call, after the results of the earlier calls.
        let mut last_in_place = block.at;
        for (call, result) in block.slots {
            match result {
                Some(r) => {
                    if r < block.run_end && r > last_in_place {
                        last_in_place = r;
                    } else {
                        repairs.push(HistoryRepair {
                            kind: HistoryRepairKind::MovedResult,
                            call_id: Some(call.id.clone()),
                            message_index: r,
                            detail: format!(
                                "moved the result of call {:?} ({}) from message {r} to follow \
                                 message {}, which made the call, in the order of its calls",
                                call.id, call.name, block.at
                            ),
                        });
                    }
                    out.push(messages[r].clone());
                }
                None => {
                    repairs.push(HistoryRepair {
                        kind: HistoryRepairKind::MissingResult,
                        call_id: Some(call.id.clone()),
                        message_index: block.at,
                        detail: format!(
                            "call {:?} ({}) of message {} has no result; added an error result \
                             saying it is unavailable",
                            call.id, call.name, block.at
                        ),
                    });
                    out.push(unavailable_result(&call.id));
                }
            }
        }
    }
    (out, repairs)
}

/// The error result that stands for a missing one.
fn unavailable_result(call_id: &str) -> ChatMessage {
    ChatMessage {
        role: ChatRole::Tool,
        content: Some(RESULT_UNAVAILABLE.to_owned()),
        tool_call_id: Some(call_id.to_owned()),
        is_error: true,
        ..ChatMessage::default()
    }
}

/// The start of a message's text, quoted and escaped to stay on one line.
fn excerpt(message: &ChatMessage) -> String {
    let Some(text) = message.content.as_deref() else {
        return "(none)".to_owned();
    };
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{:?}", format!("{}…", &text[..cut])),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ModelToolCall {
        ModelToolCall {
            id: id.to_owned(),
            name: "t".to_owned(),
            arguments: "{}".to_owned(),
        }
    }

    #[test]
    fn a_repeated_id_in_one_message_expects_one_result() {
        let calls = [call("a"), call("b"), call("a")];
        let ids: Vec<_> = answered_calls(&calls).map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
    }

    #[test]
    fn excerpts_are_cut_on_a_character_boundary() {
        let message = ChatMessage {
            role: ChatRole::Tool,
            content: Some("é".repeat(100)),
            ..ChatMessage::default()
        };
        let quoted = excerpt(&message);
        assert_eq!(quoted.chars().count(), EXCERPT_CHARS + 3);
        assert!(quoted.ends_with("…\""));
        let line = ChatMessage {
            content: Some("a\nb".to_owned()),
            ..message
        };
        assert_eq!(excerpt(&line), "\"a\\nb\"");
    }
}
