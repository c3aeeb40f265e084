//! What the engine's own thread events carry: one type per kind, so that what the engine writes
//! is what the event stream, the web page and the API read (a tool's own events,
//! `emitThreadEvent`, carry whatever it gives).

use serde::{Deserialize, Serialize};
use toolhost_providers::HistoryRepair;
use toolhost_store::{EventKind, Write};

/// An event of the engine's own, of one kind.
pub trait ThreadEvent: Serialize {
    /// The kind it is stored under.
    const KIND: EventKind;

    /// The write that records it on its thread.
    fn write(&self) -> Write {
        Write::Event {
            kind: Self::KIND,
            // Plain strings, numbers and lists: they always have a JSON form.
            data: serde_json::to_value(self).unwrap_or_default(),
        }
    }
}

/// A call waits for a person's approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequested {
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// Why approval is asked, when the tool's policy says.
    pub reason: Option<String>,
}

impl ThreadEvent for ApprovalRequested {
    const KIND: EventKind = EventKind::ApprovalRequested;
}

/// A call's approval was decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecided {
    /// The call.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// Whether it may run.
    pub approved: bool,
    /// Whether the decision stands for later calls of the tool in the thread.
    pub always: bool,
    /// Who decided.
    pub decided_by: String,
    /// Whether the person changed the call's arguments.
    pub edited: bool,
}

impl ThreadEvent for ApprovalDecided {
    const KIND: EventKind = EventKind::ApprovalDecided;
}

/// The thread waits for values of variables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariablesRequested {
    /// The request, which the values answer.
    pub request_id: String,
    /// The variables wanted (never their values).
    pub names: Vec<String>,
}

impl ThreadEvent for VariablesRequested {
    const KIND: EventKind = EventKind::VariablesRequested;
}

/// A request's conversation broke the tool-call ordering rules and was mended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRepaired {
    /// Where the checked part of the conversation begins: the repairs' positions count from it.
    pub offset: usize,
    /// What was changed, one entry per change.
    pub repairs: Vec<HistoryRepair>,
}

impl ThreadEvent for HistoryRepaired {
    const KIND: EventKind = EventKind::HistoryRepaired;
}

/// A model's answer with calls came after the run was asked to stop, and was not kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyDiscarded {
    /// The model that answered, when it said.
    pub model: Option<String>,
    /// The tools the answer called.
    pub tools: Vec<String>,
    /// Why it was not kept, and what happens next.
    pub reason: String,
}

impl ThreadEvent for ReplyDiscarded {
    const KIND: EventKind = EventKind::ReplyDiscarded;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_event_is_written_under_its_kind_with_the_fields_readers_know() {
        let Write::Event { kind, data } = ApprovalRequested {
            call_id: "c1".into(),
            tool: "pay".into(),
            reason: None,
        }
        .write() else {
            panic!("an event")
        };
        assert_eq!(kind, EventKind::ApprovalRequested);
        assert_eq!(data, json!({"callId": "c1", "tool": "pay", "reason": null}));
        let Write::Event { data, .. } = VariablesRequested {
            request_id: "r1".into(),
            names: vec!["TOKEN".into()],
        }
        .write() else {
            panic!("an event")
        };
        assert_eq!(data, json!({"requestId": "r1", "names": ["TOKEN"]}));
    }
}
