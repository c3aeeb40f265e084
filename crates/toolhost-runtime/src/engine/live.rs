//! Live thread events: the pieces of a model's answer, published while it streams in.
//!
//! Unlike stored events these are not durable: the stored reply is the authoritative answer, and
//! a subscriber that misses deltas (it subscribed late, or fell behind by more than
//! [`LIVE_CAPACITY`] events) loses only progress display, never data. Publishing costs nothing
//! when nobody listens.
//!
//! Kinds and their `data`:
//! - `answer_started` `{model}` and `answer_ended` `{}`: a model request begins and ends (also
//!   when it failed);
//! - `text_delta` `{text}` and `reasoning_delta` `{text}`: more of the reply or its reasoning;
//! - `tool_call_started` `{index, callId, name}`: a call begins; `callId` is the id the call is
//!   stored under once the reply is stored;
//! - `tool_call_arguments_delta` `{index, callId, fragment}`: more of its argument text;
//! - `model_restarted` `{attempt, reason}`: the request failed part-way and is tried again;
//!   forget the deltas received for it so far.
//!
//! The thread's secrets are redacted from every event before it is published (see
//! [`LiveRedaction`]): text, reasoning and each call's arguments as streams, so that a secret
//! split across deltas is caught as well.

use crate::variables::{RedactingStream, Redactor};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;
use toolhost_providers::StreamDelta;
use toolhost_store::new_id;

/// How many live events a subscriber may fall behind before it misses some.
pub const LIVE_CAPACITY: usize = 1024;

/// One live event of a thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveEvent {
    /// The thread.
    pub thread_id: String,
    /// What happened (see the module page).
    pub kind: LiveKind,
    /// Its details.
    pub data: Value,
}

/// What a live event says happened; serialized as the snake_case names of the module page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LiveKind {
    /// A model request begins.
    AnswerStarted,
    /// A model request ended (also when it failed).
    AnswerEnded,
    /// More of the reply's text.
    TextDelta,
    /// More of the reply's reasoning.
    ReasoningDelta,
    /// A tool call begins.
    ToolCallStarted,
    /// More of a tool call's argument text.
    ToolCallArgumentsDelta,
    /// The request failed part-way and is tried again.
    ModelRestarted,
}

/// The runtime's call id for each wire id of the answer in progress, assigned when the call's
/// first delta arrives so that live events and the stored reply name a call the same way.
#[derive(Default, Clone)]
pub(super) struct CallIds(Arc<Mutex<Vec<(String, String)>>>);

impl CallIds {
    /// The runtime's id for the call the answer gives `wire`: the one its deltas were
    /// published under, or a new one.
    pub fn id_for(&self, wire: &str) -> String {
        let mut ids = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, ours)) = ids.iter().find(|(w, _)| w == wire) {
            return ours.clone();
        }
        let ours = new_call_id();
        ids.push((wire.to_owned(), ours.clone()));
        ours
    }

    fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// A fresh call id owned by the runtime.
pub(super) fn new_call_id() -> String {
    format!("call_{}", new_id().replace('-', ""))
}

/// The kind and data of the live event a delta becomes.
pub(super) fn delta_event(ids: &CallIds, delta: StreamDelta) -> (LiveKind, Value) {
    match delta {
        StreamDelta::Text(text) => (LiveKind::TextDelta, json!({"text": text})),
        StreamDelta::Reasoning(text) => (LiveKind::ReasoningDelta, json!({"text": text})),
        StreamDelta::ToolCallStarted { index, id, name } => (
            LiveKind::ToolCallStarted,
            json!({"index": index, "callId": ids.id_for(&id), "name": name}),
        ),
        StreamDelta::ToolCallArguments {
            index,
            id,
            fragment,
        } => (
            LiveKind::ToolCallArgumentsDelta,
            json!({"index": index, "callId": ids.id_for(&id), "fragment": fragment}),
        ),
        StreamDelta::Restarted { attempt, reason } => {
            ids.clear();
            (
                LiveKind::ModelRestarted,
                json!({"attempt": attempt, "reason": reason}),
            )
        }
    }
}

/// Which stream of an answer a delta belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Piece {
    Text,
    Reasoning,
    /// A call's arguments: its index and wire id.
    Arguments(usize, String),
}

/// Takes the thread's secrets out of the deltas of one answer before they are published. Each
/// stream (the text, the reasoning, each call's arguments) is redacted as one text: what could
/// begin a secret is held back until the next delta of that stream shows whether it does, and
/// what is still held when the answer ends comes out with [`LiveRedaction::flush`].
#[derive(Default)]
pub(super) struct LiveRedaction {
    redactor: Redactor,
    streams: Mutex<BTreeMap<Piece, RedactingStream>>,
}

impl LiveRedaction {
    /// Redaction of the secrets `redactor` knows.
    pub fn new(redactor: Redactor) -> Self {
        Self {
            redactor,
            streams: Mutex::default(),
        }
    }

    fn push(&self, piece: Piece, text: &str) -> String {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams
            .entry(piece)
            .or_insert_with(|| self.redactor.stream())
            .push(text)
    }

    /// The delta as it may be shown, or `None` when all of it is held back for now.
    pub fn delta(&self, delta: StreamDelta) -> Option<StreamDelta> {
        if self.redactor.is_empty() {
            return Some(delta);
        }
        let shown = match delta {
            StreamDelta::Text(text) => StreamDelta::Text(self.push(Piece::Text, &text)),
            StreamDelta::Reasoning(text) => {
                StreamDelta::Reasoning(self.push(Piece::Reasoning, &text))
            }
            StreamDelta::ToolCallStarted { index, id, name } => StreamDelta::ToolCallStarted {
                index,
                id,
                name: self.redactor.text(&name),
            },
            StreamDelta::ToolCallArguments {
                index,
                id,
                fragment,
            } => StreamDelta::ToolCallArguments {
                fragment: self.push(Piece::Arguments(index, id.clone()), &fragment),
                index,
                id,
            },
            StreamDelta::Restarted { attempt, reason } => {
                // What was held belongs to the answer that is given up.
                self.streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clear();
                StreamDelta::Restarted {
                    attempt,
                    reason: self.redactor.text(&reason),
                }
            }
        };
        let empty = match &shown {
            StreamDelta::Text(t) | StreamDelta::Reasoning(t) => t.is_empty(),
            StreamDelta::ToolCallArguments { fragment, .. } => fragment.is_empty(),
            _ => false,
        };
        (!empty).then_some(shown)
    }

    /// What is still held back at the end of the answer, redacted, as the deltas that end each
    /// stream.
    pub fn flush(&self) -> Vec<StreamDelta> {
        let streams = std::mem::take(&mut *self.streams.lock().unwrap_or_else(|e| e.into_inner()));
        streams
            .into_iter()
            .filter_map(|(piece, mut stream)| {
                let rest = stream.finish();
                if rest.is_empty() {
                    return None;
                }
                Some(match piece {
                    Piece::Text => StreamDelta::Text(rest),
                    Piece::Reasoning => StreamDelta::Reasoning(rest),
                    Piece::Arguments(index, id) => StreamDelta::ToolCallArguments {
                        index,
                        id,
                        fragment: rest,
                    },
                })
            })
            .collect()
    }
}

/// Publishes an event, when anybody listens.
pub(super) fn publish(
    live: &broadcast::Sender<LiveEvent>,
    thread_id: &str,
    kind: LiveKind,
    data: Value,
) {
    if live.receiver_count() > 0 {
        // A send fails only when every receiver is gone: nothing to do then.
        let _ = live.send(LiveEvent {
            thread_id: thread_id.to_owned(),
            kind,
            data,
        });
    }
}

/// Where live events go.
pub(super) fn channel() -> broadcast::Sender<LiveEvent> {
    broadcast::channel(LIVE_CAPACITY).0
}
