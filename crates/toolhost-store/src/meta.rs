//! What the engine records with a message and with a thread's events, as types: a typo in a key
//! is a compile error, not data that silently goes missing. The JSON form keeps the names the
//! engine always used, so stored threads read back unchanged; fields toolhost does not know (an
//! embedder's own) are kept in [`MessageMeta::extra`] and written back as they were.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use toolhost_core::ToolResult;

/// One side of an agent: `a`, the only side of an `ai_human` agent, or `b`, the second side of
/// a `dual_ai` agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The first side.
    A,
    /// The second side of a `dual_ai` agent.
    B,
}

impl Side {
    /// `a` or `b`, as stored and shown to tools.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }

    /// The side that answers this one.
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call whose arguments were mended before its reply was stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArgumentRepair {
    /// The call (the runtime's id).
    pub call_id: String,
    /// The arguments as the model wrote them.
    pub original: String,
    /// What was done, one note per kind of repair.
    pub notes: Vec<String>,
}

/// Who changed a call's arguments between the model's call and the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsEditor {
    /// The person (or handler) who approved the call gave other arguments.
    Approval,
    /// Input middleware changed them.
    Middleware,
}

impl ArgumentsEditor {
    /// How people read it: `edited at approval`, `changed by middleware`.
    pub fn describe(self) -> &'static str {
        match self {
            ArgumentsEditor::Approval => "edited at approval",
            ArgumentsEditor::Middleware => "changed by middleware",
        }
    }
}

/// The arguments a call ran with, on its result, when they are not the ones its call shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RanWith {
    /// The arguments the tool ran with (validated, defaults applied).
    pub arguments: Value,
    /// Who changed them.
    pub edited_by: ArgumentsEditor,
}

/// What a hook of the embedding program decided about a call, on its result (spec 003).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum HookOutcome {
    /// A hook before the call skipped it; its reason is the result the model sees.
    Skipped {
        /// Why.
        reason: String,
    },
    /// A hook before the call cancelled the run; the call did not run.
    Cancelled {
        /// Why.
        reason: String,
    },
    /// A hook after the call failed ended the run.
    RunEnded {
        /// Why.
        reason: String,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a stored message carries besides the spec's record fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageMeta {
    /// In a `dual_ai` thread: the side that wrote the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// In a `dual_ai` thread: the session turn of the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// A call the runtime made for queued work (`queueTool`), not a model's reply.
    #[serde(default, skip_serializing_if = "is_false")]
    pub queued: bool,
    /// A message that came from outside the conversation (a person's, or a parent thread's
    /// message to its sub-agent): in a `dual_ai` thread it opens a new session, answered by
    /// the side it is addressed to (an inbound assistant message is side A's voice, so side B
    /// answers it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub inbound: bool,
    /// The model that wrote the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Token usage as the API reported it (`null` when it did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// Why the model stopped, when not at a natural end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<Value>,
    /// The model's reasoning text, when the API returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// What the API needs back in later turns (thinking blocks, thought signatures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuity: Option<Value>,
    /// Calls whose arguments were mended before the reply was stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<ArgumentRepair>,
    /// What a hook decided about the call, on its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<HookOutcome>,
    /// For a reply with calls: the id the model's API gave each call, by the runtime's own id
    /// (what middleware sees as the call's `toolCallId`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub wire_ids: std::collections::BTreeMap<String, String>,
    /// A tool result: the whole result the tool returned (redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolResult>,
    /// A tool result: the arguments the call ran with, when they differ from its call's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_with: Option<RanWith>,
    /// A tool result: how long the tool ran, in milliseconds, from its start to its result
    /// (before output middleware); absent for calls that never ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// A result of a tool the provider ran while answering; stored for the record only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub provider_run: bool,
    /// A provider-run tool's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// A provider-run tool's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// A reply in spec 004's mode: the combined reply `{meta, output, calls}` as the model gave
    /// it (its calls are also the message's calls, under the runtime's ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combined: Option<Value>,
    /// Fields added by an embedding program, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What kind of thread event an [`crate::Event`] is: the engine's own, or one a tool emitted
/// (`emitThreadEvent`) under a name of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A call waits for approval.
    ApprovalRequested,
    /// A call's approval was decided.
    ApprovalDecided,
    /// The thread waits for variables.
    VariablesRequested,
    /// A request's conversation broke the tool-call ordering rules and was mended.
    HistoryRepaired,
    /// A model's answer with calls arrived after the run was asked to stop; it was not stored
    /// (none of its calls would have run) and the thread asks again when it is resumed.
    ReplyDiscarded,
    /// A run that a server started ended; its data says how (done with a reason, paused for
    /// what, or failed with the error).
    RunEnded,
    /// An event a tool emitted; never one of the names above.
    Custom(String),
}

impl EventKind {
    /// The names of the engine's own events, which a tool may not emit.
    pub const RESERVED: [&'static str; 6] = [
        "approval_requested",
        "approval_decided",
        "variables_requested",
        "history_repaired",
        "reply_discarded",
        "run_ended",
    ];

    /// The stored name.
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::ApprovalRequested => Self::RESERVED[0],
            EventKind::ApprovalDecided => Self::RESERVED[1],
            EventKind::VariablesRequested => Self::RESERVED[2],
            EventKind::HistoryRepaired => Self::RESERVED[3],
            EventKind::ReplyDiscarded => Self::RESERVED[4],
            EventKind::RunEnded => Self::RESERVED[5],
            EventKind::Custom(name) => name,
        }
    }

    /// Reads a stored name.
    pub fn parse(name: &str) -> Self {
        match name {
            "approval_requested" => EventKind::ApprovalRequested,
            "approval_decided" => EventKind::ApprovalDecided,
            "variables_requested" => EventKind::VariablesRequested,
            "history_repaired" => EventKind::HistoryRepaired,
            "reply_discarded" => EventKind::ReplyDiscarded,
            "run_ended" => EventKind::RunEnded,
            other => EventKind::Custom(other.to_owned()),
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_reads_and_writes_the_stored_names_and_keeps_unknown_fields() {
        let stored = json!({
            "side": "b", "turn": 3, "queued": true, "model": "m", "usage": null,
            "repairs": [{"callId": "c", "original": "{", "notes": ["closed"]}],
            "providerRun": true, "input": {"q": 1}, "mine": {"x": [1]}
        });
        let meta: MessageMeta = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(meta.side, Some(Side::B));
        assert_eq!(meta.turn, Some(3));
        assert!(meta.queued && meta.provider_run);
        assert_eq!(meta.repairs[0].notes, vec!["closed".to_owned()]);
        assert_eq!(meta.extra["mine"], json!({"x": [1]}));
        let mut back = serde_json::to_value(&meta).unwrap();
        // `usage: null` reads as no usage.
        back["usage"] = Value::Null;
        assert_eq!(back, stored);
    }

    #[test]
    fn event_kinds_round_trip_and_custom_names_stay_custom() {
        for name in EventKind::RESERVED {
            assert_eq!(EventKind::parse(name).as_str(), name);
            assert!(!matches!(EventKind::parse(name), EventKind::Custom(_)));
        }
        assert_eq!(
            EventKind::parse("chart_drawn"),
            EventKind::Custom("chart_drawn".into())
        );
    }
}
