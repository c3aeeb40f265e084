//! The conversation a model sees, built from the stored messages.
//!
//! A [`ChatView`] is kept per side for the whole run and grows as messages are stored, so a step
//! costs the same at step 2,000 as at step 20: the history is appended to, never rebuilt.
//!
//! In a `dual_ai` thread each side sees itself as the assistant and the other side as the user:
//! the other side's replies arrive as user messages with their text, and its tool calls and their
//! results are not shown.
//!
//! A call whose arguments the runtime mended (see [`super::repair`]) has the repair notes put in
//! front of its result, so the model learns what was read into its call; a call that ran with
//! arguments edited at approval (or changed by middleware) has a line saying what it ran with. A tool message carries
//! its error status, and an assistant message the API's continuity data, back to the adapter.
//!
//! In spec 004's mode (a prompt with an `output` schema, see [`super::combined`]) no native
//! tool call is sent: the model sees each of its replies as the combined reply it wrote (calls
//! made for queued work as a reply of the same shape), and each result as a user message that
//! names the call (its place in the reply and its tool).

use super::repair::repair_notice;
use super::turns::{side_of, Side};
use std::collections::{HashMap, HashSet};
use toolhost_providers::{ChatMessage, ChatRole, ModelToolCall};
use toolhost_store::{ArgumentsEditor, Message, Role, ToolStatus};

/// How one side sees the stored messages; it remembers which calls belong to the other side.
pub(super) struct ChatView {
    /// The side this view is for; `None` for a thread with one side.
    side: Option<Side>,
    /// Calls made by the other side, whose results this side does not see.
    hidden_calls: HashSet<String>,
    /// The notice to put before the result of each call whose arguments were mended.
    repaired: HashMap<String, String>,
    /// Whether the side runs in spec 004's mode.
    combined: bool,
    /// In spec 004's mode: each call of the side's replies, by id, with its place in its reply
    /// (from 1) and its tool.
    combined_calls: HashMap<String, (usize, String)>,
}

impl ChatView {
    /// A view for `side`, or for the only side with `None`; `combined` for spec 004's mode.
    pub fn new(side: Option<Side>, combined: bool) -> Self {
        Self {
            side,
            hidden_calls: HashSet::new(),
            repaired: HashMap::new(),
            combined,
            combined_calls: HashMap::new(),
        }
    }

    /// The system message of a prompt's text, unless it is blank.
    pub fn system(text: &str) -> Option<ChatMessage> {
        (!text.trim().is_empty()).then(|| chat(ChatRole::System, Some(text.to_owned())))
    }

    /// One stored message as this side sees it, oldest first; `None` for what it does not see
    /// (nested and silent messages, and the other side's calls and their results).
    pub fn see(&mut self, m: &Message) -> Option<ChatMessage> {
        if m.depth != 0 || m.silent {
            return None;
        }
        let own = match (self.side, side_of(m)) {
            (Some(me), Some(author)) => author == me,
            _ => true,
        };
        match m.role {
            Role::Assistant if !own => {
                for c in &m.tool_calls {
                    self.hidden_calls.insert(c.id.clone());
                }
                // The other side speaks to this one as its user; only its words are shown.
                m.content
                    .as_deref()
                    .filter(|t| !t.is_empty())
                    .map(|t| chat(ChatRole::User, Some(t.to_owned())))
            }
            Role::Tool
                if m.tool_call_id
                    .as_ref()
                    .is_some_and(|id| self.hidden_calls.contains(id)) =>
            {
                None
            }
            Role::Assistant => {
                self.note_repairs(m);
                if !self.combined || (m.metadata.combined.is_none() && m.tool_calls.is_empty()) {
                    return Some(to_chat_message(m));
                }
                // No native call goes to an API that was offered no tools: the results of these
                // calls are told by their place in the reply (see the `Role::Tool` arm).
                for (i, c) in m.tool_calls.iter().enumerate() {
                    self.combined_calls
                        .insert(c.id.clone(), (i + 1, c.name.clone()));
                }
                let shown = match &m.metadata.combined {
                    Some(reply) => reply.to_string(),
                    // Calls the runtime made for queued work (`queueTool`): told as a reply of
                    // the same shape.
                    None => queued_as_reply(m).to_string(),
                };
                Some(chat(ChatRole::Assistant, Some(shown)))
            }
            Role::Tool => {
                let mut message = to_chat_message(m);
                let notice = m
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| self.repaired.remove(id));
                // The model learns what its call ran with when a person changed it at approval.
                // What middleware changed is for people (events, transcript): spec 003 gives the
                // model what output middleware returns, and nothing else.
                let edited = m
                    .metadata
                    .ran_with
                    .as_ref()
                    .filter(|r| r.edited_by == ArgumentsEditor::Approval)
                    .map(|r| {
                        format!(
                            "[the call ran with arguments {}: {}]",
                            r.edited_by.describe(),
                            r.arguments
                        )
                    });
                for notice in [edited, notice].into_iter().flatten() {
                    let text = message.content.unwrap_or_default();
                    message.content = Some(format!("{notice}\n{text}"));
                }
                let call = m
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| self.combined_calls.get(id));
                if let Some((place, tool)) = call {
                    // No native call was made: the result is told as what it is.
                    let failed = if message.is_error { " failed" } else { "" };
                    let text = message.content.unwrap_or_default();
                    message.content = Some(format!(
                        "[call {place} of your last reply ({tool}){failed}]\n{text}"
                    ));
                    message.role = ChatRole::User;
                    message.tool_call_id = None;
                    message.is_error = false;
                }
                Some(message)
            }
            _ => Some(to_chat_message(m)),
        }
    }

    /// Remembers the repairs a reply's metadata records, until their results are seen.
    fn note_repairs(&mut self, m: &Message) {
        for r in &m.metadata.repairs {
            self.repaired
                .insert(r.call_id.clone(), repair_notice(&r.notes));
        }
    }
}

/// Calls made without a combined reply, in its shape: `{meta, output: null, calls}`, each call
/// its arguments with `_tool`.
fn queued_as_reply(m: &Message) -> serde_json::Value {
    let calls: Vec<serde_json::Value> = m
        .tool_calls
        .iter()
        .map(|c| {
            let mut item = match serde_json::from_str(&c.arguments) {
                Ok(serde_json::Value::Object(args)) => args,
                _ => serde_json::Map::new(),
            };
            item.insert("_tool".into(), c.name.clone().into());
            serde_json::Value::Object(item)
        })
        .collect();
    serde_json::json!({"meta": {}, "output": null, "calls": calls})
}

fn chat(role: ChatRole, content: Option<String>) -> ChatMessage {
    ChatMessage {
        role,
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
        ..ChatMessage::default()
    }
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
        is_error: m.role == Role::Tool && m.status == Some(ToolStatus::Error),
        continuity: match m.role {
            Role::Assistant => m.metadata.continuity.clone(),
            _ => None,
        },
        ..ChatMessage::default()
    }
}
