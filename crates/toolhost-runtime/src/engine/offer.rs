//! What a prompt offers the calls of its model's replies: its tools and how they run (in
//! parallel or not, with which middleware and hooks), the prompts and agents among them, and,
//! for a sub-prompt, where its messages go. Plain data, built when a run starts (see
//! [`super::side`]) and read by everything that carries a call out.

use super::middleware::Pipeline;
use crate::project::{SubagentToolConfig, SubpromptConfig};
use std::collections::HashMap;
use std::sync::Arc;
use toolhost_core::ToolSet;
use toolhost_store::{Message, Write};

/// What a prompt offers its calls: its tools, whether they run in parallel, and the middleware
/// and hooks that apply to it.
#[derive(Clone)]
pub(super) struct Offer {
    pub tools: Arc<ToolSet>,
    pub parallel: bool,
    pub pipeline: Arc<Pipeline>,
    pub prompt: String,
    /// The offered prompt tools' settings, by tool name (see [`super::subprompt`]).
    pub subprompts: Arc<HashMap<String, SubpromptConfig>>,
    /// The offered agent tools' settings, by tool name (see [`super::subagent`]).
    pub subagents: Arc<HashMap<String, AgentOffer>>,
    /// For a sub-prompt's offer: where the messages it stores go.
    pub nest: Option<Nest>,
    /// The id the model's API gave each call seen so far, by the runtime's id.
    pub wire_ids: Arc<std::sync::Mutex<HashMap<String, String>>>,
}

impl Offer {
    /// Learns the API ids of the calls of a stored reply.
    pub(super) fn learn_wire_ids(&self, message: &Message) {
        if message.metadata.wire_ids.is_empty() {
            return;
        }
        let mut known = self.wire_ids.lock().unwrap_or_else(|p| p.into_inner());
        for (ours, wire) in &message.metadata.wire_ids {
            known.insert(ours.clone(), wire.clone());
        }
    }

    /// The id the model's API gave the call `id`, if it came from a model's reply.
    pub(super) fn wire_id(&self, id: &str) -> Option<String> {
        self.wire_ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// `writes` placed where this offer's messages go.
    pub(super) fn placed(&self, writes: Vec<Write>) -> Vec<Write> {
        match &self.nest {
            Some(nest) => nest.place(writes),
            None => writes,
        }
    }

    /// The depth of the messages of the prompt that makes this offer.
    pub(super) fn depth(&self) -> u32 {
        self.nest.as_ref().map_or(0, |n| n.depth)
    }
}

/// What a call of an offered agent does: run a `dual_ai` agent as a sub-agent in a child
/// thread, or hand the thread over to an `ai_human` agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AgentOffer {
    /// A sub-agent, with its entry's settings.
    Sub(SubagentToolConfig),
    /// A handoff.
    Handoff,
    /// `subagent_create`, for the resumable agents that may take one more instance.
    Create(Vec<SubagentToolConfig>),
    /// `subagent_message`, for the resumable agents offered.
    Message(Vec<SubagentToolConfig>),
}

/// Where the messages of a sub-prompt go: under the call it answers, one level deeper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Nest {
    /// The call whose sub-prompt this is.
    pub call_id: String,
    /// Its messages' depth.
    pub depth: u32,
}

impl Nest {
    /// `writes` with every message they store put under the call.
    pub fn place(&self, mut writes: Vec<Write>) -> Vec<Write> {
        for write in &mut writes {
            let message = match write {
                Write::AppendMessage(m) => m,
                Write::CompleteCall { result, .. } => result,
                _ => continue,
            };
            message.parent_id = Some(self.call_id.clone());
            message.depth = self.depth;
        }
        writes
    }

    /// Whether `m` is one of this sub-prompt's messages.
    pub(super) fn holds(&self, m: &Message) -> bool {
        m.depth == self.depth && m.parent_id.as_deref() == Some(self.call_id.as_str())
    }
}
