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
//!   forget the deltas received for it so far;
//! - `tool_progress` `{callId, progress, total?, message?}`: a running call says how far it is
//!   ([`super::ThreadState::progress`]); `progress` grows, `total` is what it counts towards
//!   when the tool knows.
//!
//! The thread's secrets are redacted from every event before it is published (see
//! [`LiveRedaction`]): text, reasoning and each call's arguments as streams, so that a secret
//! split across deltas is caught as well.

use crate::variables::{RedactingStream, Redactor};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
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
    /// A running call says how far it is.
    ToolProgress,
    /// A running call wrote to its console.
    ToolLog,
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

/// Where live events go: one channel for every thread (for followers of all threads) and one
/// per followed thread, so that a busy thread never makes another thread's follower fall
/// behind. Cheap to clone.
#[derive(Clone)]
pub(crate) struct LiveHub {
    all: broadcast::Sender<LiveEvent>,
    threads: Arc<Mutex<HashMap<String, broadcast::Sender<LiveEvent>>>>,
}

impl LiveHub {
    pub(crate) fn new() -> Self {
        Self {
            all: broadcast::channel(LIVE_CAPACITY).0,
            threads: Arc::default(),
        }
    }

    /// The live events of every thread from now on.
    pub(crate) fn subscribe_all(&self) -> broadcast::Receiver<LiveEvent> {
        self.all.subscribe()
    }

    /// The live events of one thread from now on.
    pub(crate) fn subscribe_thread(&self, thread_id: &str) -> broadcast::Receiver<LiveEvent> {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        // Channels nobody follows any more go, so the map stays as small as the followers.
        threads.retain(|_, sender| sender.receiver_count() > 0);
        threads
            .entry(thread_id.to_owned())
            .or_insert_with(|| broadcast::channel(LIVE_CAPACITY).0)
            .subscribe()
    }

    /// Whether anybody follows `thread_id` (or every thread).
    pub(crate) fn is_followed(&self, thread_id: &str) -> bool {
        self.all.receiver_count() > 0 || self.thread_sender(thread_id).is_some()
    }

    fn thread_sender(&self, thread_id: &str) -> Option<broadcast::Sender<LiveEvent>> {
        let threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        threads
            .get(thread_id)
            .filter(|s| s.receiver_count() > 0)
            .cloned()
    }

    /// Publishes an event of `thread_id` to whoever follows it; costs nothing when nobody does.
    pub(crate) fn publish(&self, thread_id: &str, kind: LiveKind, data: Value) {
        let one = self.thread_sender(thread_id);
        if self.all.receiver_count() == 0 && one.is_none() {
            return;
        }
        let event = LiveEvent {
            thread_id: thread_id.to_owned(),
            kind,
            data,
        };
        // A send fails only when every receiver is gone: nothing to do then.
        if let Some(one) = one {
            let _ = one.send(event.clone());
        }
        let _ = self.all.send(event);
    }
}

#[cfg(test)]
mod hub_tests {
    use super::*;

    #[test]
    fn a_follower_of_one_thread_never_lags_behind_another_busy_thread() {
        let hub = LiveHub::new();
        let mut a = hub.subscribe_thread("a");
        let mut all = hub.subscribe_all();
        for i in 0..(LIVE_CAPACITY * 2) {
            hub.publish("b", LiveKind::TextDelta, json!({"text": i.to_string()}));
        }
        hub.publish("a", LiveKind::TextDelta, json!({"text": "mine"}));
        let got = a.try_recv().expect("a's event");
        assert_eq!(
            (got.thread_id.as_str(), got.data["text"].as_str()),
            ("a", Some("mine"))
        );
        assert!(a.try_recv().is_err(), "nothing of b");
        // The all-threads follower did fall behind: that is what the per-thread channels avoid.
        assert!(matches!(
            all.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
    }

    #[test]
    fn nobody_following_costs_nothing_and_leaves_no_channel() {
        let hub = LiveHub::new();
        assert!(!hub.is_followed("a"));
        hub.publish("a", LiveKind::AnswerStarted, json!({}));
        let a = hub.subscribe_thread("a");
        assert!(hub.is_followed("a"));
        drop(a);
        assert!(!hub.is_followed("a"));
        let _b = hub.subscribe_thread("b");
        assert_eq!(hub.threads.lock().unwrap().len(), 1, "a's channel went");
    }
}
