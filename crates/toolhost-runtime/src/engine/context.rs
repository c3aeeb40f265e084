//! What of the thread a side's model sees: its prompt's `includeChat` and `includePastTools`
//! (the rules are on [`PromptDef`]). The current turn is always shown whole; an earlier
//! message is shown as it is, without its tool calls, or not at all.
//!
//! Plain functions over stored messages; the loop applies them when it builds a side's
//! request, and builds it again when a new turn starts (only for prompts that do not show
//! everything, so the common case still appends each message once).

use super::history::ChatView;
use super::images::{images_of, ImageBudget};
use super::side::{index_of, SideRun};
use super::turns::{opens_session, side_of, Position};
use super::Runtime;
use crate::project::PromptDef;
use std::borrow::Cow;
use toolhost_providers::ChatRole;
use toolhost_store::{Message, Role};

/// A prompt's choice of what of earlier turns its model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Context {
    include_chat: bool,
    include_past_tools: bool,
}

impl Context {
    /// The choice `prompt` makes.
    pub fn of(prompt: &PromptDef) -> Self {
        Self {
            include_chat: prompt.include_chat,
            include_past_tools: prompt.include_past_tools,
        }
    }

    /// Whether earlier turns are shown whole, so where a turn starts does not matter.
    pub fn shows_all(&self) -> bool {
        self.include_chat && self.include_past_tools
    }

    /// How `m`, a message of an earlier turn, is shown: as it is, without its tool calls (and
    /// the API data bound to them), or not at all.
    pub fn earlier<'m>(&self, m: &'m Message) -> Option<Cow<'m, Message>> {
        if !self.include_chat {
            return None;
        }
        if self.include_past_tools {
            return Some(Cow::Borrowed(m));
        }
        match m.role {
            Role::Tool => None,
            Role::Assistant if !m.tool_calls.is_empty() => {
                if m.content.as_deref().is_none_or(|t| t.trim().is_empty()) {
                    return None;
                }
                let mut text_only = m.clone();
                text_only.tool_calls.clear();
                // A combined reply (spec 004) shows its calls in its own text too.
                if let Some(reply) = text_only.metadata.combined.as_mut() {
                    reply["calls"] = serde_json::Value::Array(Vec::new());
                }
                // Continuity data (thinking signatures) belongs to the reply as the API sent
                // it, calls included; a reply shown without them goes without it.
                text_only.metadata.continuity = None;
                text_only.metadata.repairs.clear();
                Some(Cow::Owned(text_only))
            }
            _ => Some(Cow::Borrowed(m)),
        }
    }
}

/// The messages of the current turn at `position`: from where it starts in `history` (in an
/// `ai_human` thread just after the last reply before the person's latest message, in a
/// `dual_ai` thread just after the side's own last reply of an earlier turn, so the other
/// side's words it answers are in it), and in a `dual_ai` thread also the message that opened
/// the session, so a side always sees its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Turn {
    start: usize,
    task: Option<usize>,
}

impl Turn {
    /// The current turn at `position`.
    pub fn at(history: &[Message], position: &Position) -> Self {
        let reply = |m: &Message| m.role == Role::Assistant && m.depth == 0;
        let user = |m: &Message| m.role == Role::User && m.depth == 0;
        // The results of the earlier turn's last reply belong to it, not to this turn: shown
        // without their calls they would be orphans.
        let past_results = |mut start: usize| {
            while history.get(start).is_some_and(|m| m.role == Role::Tool) {
                start += 1;
            }
            start
        };
        if position.is_dual() {
            let earlier = history.iter().rposition(|m| {
                reply(m)
                    && side_of(m) == Some(position.side)
                    && m.metadata.turn.is_some_and(|t| t < position.turn)
            });
            return Self {
                start: earlier.map_or(0, |i| past_results(i + 1)),
                // The message that opened the session (see `turns`).
                task: history.iter().rposition(opens_session),
            };
        }
        let start = match history.iter().rposition(user) {
            Some(last_user) => history[..last_user]
                .iter()
                .rposition(reply)
                .map_or(0, |i| past_results(i + 1)),
            None => 0,
        };
        Self { start, task: None }
    }

    /// Whether the message at `index` of the history is in the turn.
    pub fn holds(&self, index: usize) -> bool {
        index >= self.start || self.task == Some(index)
    }
}

impl Runtime {
    /// At the start of a turn, builds again the request of the side whose turn it is when its
    /// prompt does not show earlier turns whole (see [`Context`]): the turn that just ended
    /// is now an earlier one.
    pub(super) async fn refocus(
        &self,
        thread_id: &str,
        sides: &mut [SideRun<'_>],
        history: &[Message],
        position: &Position,
    ) {
        let at = index_of(sides, position.side);
        let run = &mut sides[at];
        if run.context.shows_all() {
            return;
        }
        let turn = Turn::at(history, position);
        let system = run
            .request
            .messages
            .first()
            .filter(|m| m.role == ChatRole::System)
            .cloned();
        run.request.messages = system.into_iter().collect();
        run.view = ChatView::new(
            position.is_dual().then_some(position.side),
            run.combined.is_some(),
        );
        run.images = ImageBudget::new(run.recent_images);
        run.checked = 0;
        for (i, m) in history.iter().enumerate() {
            let m = if turn.holds(i) {
                Cow::Borrowed(m)
            } else {
                match run.context.earlier(m) {
                    Some(m) => m,
                    None => continue,
                }
            };
            let shown = images_of(&self.services.db, thread_id, &m).await;
            run.see(&m, || shown);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_store::{MessageMeta, ToolCallRecord};

    fn message(role: Role, call: Option<&str>) -> Message {
        Message {
            id: toolhost_store::new_id(),
            seq: 0,
            role,
            content: Some("x".into()),
            name: None,
            tool_calls: call
                .filter(|_| role == Role::Assistant)
                .map(|id| ToolCallRecord {
                    id: id.into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                })
                .into_iter()
                .collect(),
            tool_call_id: call.filter(|_| role == Role::Tool).map(str::to_owned),
            created_at: 0,
            parent_id: None,
            depth: 0,
            silent: false,
            metadata: MessageMeta::default(),
            status: None,
        }
    }

    #[test]
    fn a_turn_ended_by_a_call_leaves_its_results_in_the_earlier_turn() {
        let agent: crate::project::AgentDef =
            serde_json::from_str(r#"{"sideA": {"prompt": "p"}}"#).unwrap();
        // The first turn ended on a reply with a call (a stop tool, or the step budget).
        let history = vec![
            message(Role::User, None),
            message(Role::Assistant, Some("c1")),
            message(Role::Tool, Some("c1")),
            message(Role::User, None),
        ];
        let position = Position::from_history(&agent, &history);
        let turn = Turn::at(&history, &position);
        let held: Vec<usize> = (0..history.len()).filter(|i| turn.holds(*i)).collect();
        assert_eq!(held, [3]);
    }
}
