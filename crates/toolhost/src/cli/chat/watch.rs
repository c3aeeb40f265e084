//! What the chat shows while a turn runs: the answer text as it streams in (live events of this
//! process) and each tool call as it starts and ends. Calls are read from the store, where
//! arguments and results are kept as stored (secrets redacted); the store also shows the work of
//! another process that runs the thread.
//!
//! Live events and the store are read in one task with the run, so when the queued events have
//! been shown, every reply of this process's run that the store holds has had its text shown
//! (an answer's events are published before its reply is stored). The store may already hold
//! the next reply when an answer starts: what is shown then stops before it.

use super::screen;
use crate::cli::transcript::one_line;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;
use toolhost_runtime::engine::LiveEvent;
use toolhost_runtime::engine::LiveKind;
use toolhost_store::{CallState, Message, Role, Store, ThreadChanges};

/// How often the store is looked at for what another process stored (another process that runs
/// the thread): what this process stores is looked at as it commits.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The part of a thread already shown, and the answers of this turn.
pub(super) struct Watch {
    store: Arc<dyn Store>,
    thread: String,
    /// The last message shown.
    seen: i64,
    /// Calls whose start was shown.
    started: HashSet<String>,
    /// Calls whose end was shown.
    ended: HashSet<String>,
    /// Each call's tool and arguments, known once its reply was shown.
    calls: HashMap<String, (String, String)>,
    /// The journal's calls, with the arguments they run with (edited ones, when a person
    /// edited them), as of the last look.
    journal: HashMap<String, (String, String)>,
    /// Per answer of this process in the turn: whether its text was shown as it streamed.
    answers: Vec<bool>,
    /// How many of those answers' replies were shown.
    replies: usize,
    /// Replies stored up to this message were made before this process ran the turn.
    boundary: Rc<Cell<i64>>,
    /// False once live events were missed: stored replies are shown instead.
    live: bool,
    /// Wakes the watch as the thread's writes commit.
    changes: ThreadChanges,
}

impl Watch {
    /// Watches `thread` from what is stored now on.
    pub fn new(store: Arc<dyn Store>, thread: &str) -> Self {
        // Subscribed before the first read, so that no write falls between.
        let changes = ThreadChanges::new(store.as_ref(), thread);
        let seen = last_seq(store.as_ref(), thread, 0);
        let journal = store.calls(thread).unwrap_or_default();
        // A call still running (another process runs the thread) is shown when it ends.
        let done: HashSet<String> = journal
            .iter()
            .filter(|c| c.state == CallState::Completed)
            .map(|c| c.call_id.clone())
            .collect();
        let started: HashSet<String> = journal.into_iter().map(|c| c.call_id).collect();
        Self {
            store,
            thread: thread.to_owned(),
            seen,
            started,
            ended: done,
            calls: HashMap::new(),
            journal: HashMap::new(),
            answers: Vec::new(),
            replies: 0,
            boundary: Rc::new(Cell::new(seen)),
            live: true,
            changes,
        }
    }

    /// Starts a turn. The run moves the returned boundary to the end of the thread whenever it
    /// starts running (see [`mark_boundary`]).
    pub fn begin(&mut self) -> Rc<Cell<i64>> {
        self.answers.clear();
        self.replies = 0;
        self.live = true;
        self.boundary.set(self.seen);
        self.boundary.clone()
    }

    /// Shows live events and looks at the store until the future is dropped.
    pub async fn follow(&mut self, events: &mut Receiver<LiveEvent>) {
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(e) => self.event(e),
                    Err(RecvError::Lagged(_)) => self.live = false,
                    // Never while the runtime lives; the store is still looked at.
                    Err(RecvError::Closed) => {
                        self.changes.next(LOOK_EVERY).await;
                        self.show_stored(None);
                    }
                },
                () = self.changes.next(LOOK_EVERY) => {
                    self.drain(events);
                    self.show_stored(None);
                }
            }
        }
    }

    /// Shows the events still queued, then everything stored that was not shown yet.
    pub fn finish(&mut self, events: &mut Receiver<LiveEvent>) {
        self.drain(events);
        self.show_stored(None);
        screen::end_line();
    }

    fn drain(&mut self, events: &mut Receiver<LiveEvent>) {
        loop {
            match events.try_recv() {
                Ok(e) => self.event(e),
                Err(TryRecvError::Lagged(_)) => self.live = false,
                Err(_) => return,
            }
        }
    }

    fn event(&mut self, event: LiveEvent) {
        if event.thread_id != self.thread {
            return;
        }
        match event.kind {
            LiveKind::AnswerStarted => {
                // What came before this answer is stored by now; its own reply may be too.
                self.show_stored(Some(self.answers.len()));
                self.answers.push(false);
            }
            LiveKind::TextDelta if self.live => {
                let text = event.data["text"].as_str().unwrap_or("");
                if let Some(streamed) = self.answers.last_mut() {
                    *streamed |= !text.is_empty();
                }
                screen::text(text);
            }
            LiveKind::ModelRestarted => {
                if let Some(streamed) = self.answers.last_mut().filter(|s| **s) {
                    screen::line("  (the answer was cut off and starts again)");
                    *streamed = false;
                }
            }
            _ => {}
        }
    }

    /// Shows what was stored since the last look, in order, stopping before the reply of this
    /// turn's answer number `before` (its text has not streamed in yet).
    fn show_stored(&mut self, before: Option<usize>) {
        // A look that may stop early keeps the commits heard: they wake the next full look.
        if before.is_none() {
            self.changes.mark();
        }
        self.journal = self
            .store
            .calls(&self.thread)
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.call_id, (c.tool, c.arguments)))
            .collect();
        let new = self
            .store
            .messages_after(&self.thread, self.seen)
            .unwrap_or_default();
        for m in new {
            let reply = m.depth == 0 && m.role == Role::Assistant && !m.metadata.queued;
            let ours = reply && m.seq > self.boundary.get();
            if ours && before.is_some_and(|n| self.replies >= n) {
                break;
            }
            self.seen = m.seq;
            if m.depth != 0 {
                continue;
            }
            let streamed = if ours {
                self.replies += 1;
                self.live && self.answers.get(self.replies - 1) == Some(&true)
            } else {
                false
            };
            self.show(&m, streamed);
        }
        // Calls of shown replies that started since (their intent is journaled as they start).
        let waiting: Vec<String> = self
            .calls
            .keys()
            .filter(|id| self.journal.contains_key(*id) && !self.started.contains(*id))
            .cloned()
            .collect();
        for id in waiting {
            self.show_start(&id);
        }
    }

    fn show(&mut self, m: &Message, streamed: bool) {
        match m.role {
            // The person's own messages are on screen already.
            Role::System | Role::User => {}
            Role::Assistant => {
                let text = m.content.as_deref().unwrap_or("").trim();
                if !streamed && !text.is_empty() {
                    screen::text(text);
                }
                screen::end_line();
                for call in &m.tool_calls {
                    self.calls
                        .insert(call.id.clone(), (call.name.clone(), call.arguments.clone()));
                }
            }
            Role::Tool => {
                let Some(id) = &m.tool_call_id else { return };
                if !self.ended.insert(id.clone()) {
                    return;
                }
                let by_provider = m.metadata.provider_run;
                if !by_provider {
                    self.show_start(id);
                }
                let ok = m.status == Some(toolhost_store::ToolStatus::Success);
                let tool = m
                    .name
                    .clone()
                    .or_else(|| self.calls.get(id).map(|c| c.0.clone()))
                    .unwrap_or_else(|| "tool".to_owned());
                screen::line(&format!(
                    "  {} {tool}{}: {}",
                    if ok { "✓" } else { "✗" },
                    if by_provider {
                        " (run by the provider)"
                    } else {
                        ""
                    },
                    one_line(m.content.as_deref().unwrap_or(""), 200)
                ));
            }
        }
    }

    fn show_start(&mut self, id: &str) {
        if !self.started.insert(id.to_owned()) {
            return;
        }
        let (tool, mut args) = self
            .journal
            .get(id)
            .or_else(|| self.calls.get(id))
            .cloned()
            .unwrap_or_else(|| ("tool".to_owned(), String::new()));
        // A person may have edited the arguments it runs with.
        let edited = self
            .store
            .approvals(&self.thread)
            .unwrap_or_default()
            .into_iter()
            .find(|a| a.request.call_id == id)
            .and_then(|a| a.decision?.edited_arguments);
        if let Some(edited) = edited {
            args = format!("{edited} (edited)");
        }
        screen::line(&format!("  → {tool} {}", one_line(&args, 200)));
    }
}

/// Moves `boundary` to the last message of the thread: replies stored after it are this
/// process's. Called as this process starts running the thread.
pub(super) fn mark_boundary(store: &dyn Store, thread: &str, boundary: &Cell<i64>) {
    boundary.set(last_seq(store, thread, boundary.get()));
}

/// The last message's position, looking after `from`.
fn last_seq(store: &dyn Store, thread: &str, from: i64) -> i64 {
    store
        .messages_after(thread, from)
        .ok()
        .and_then(|m| m.last().map(|m| m.seq))
        .unwrap_or(from)
}
