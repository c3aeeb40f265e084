//! One client's stream: what is stored, read in order from its position, then live progress and
//! status changes, until the client goes, its token is revoked or the server shuts down.

use super::Position;
use crate::auth::{Caller, Lapsed};
use crate::runs::RunEnded;
use crate::state::AppState;
use axum::response::sse::Event;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use tokio::time::Instant;
use toolhost_runtime::engine::{LiveEvent, LiveKind};
use toolhost_store::{AsyncStore, Committed, EventKind, StoreError, ThreadStatus};

/// How often an open stream looks whether its token was revoked or expired: not at every poll,
/// which would add a store read per stream and poll.
const TOKEN_CHECK: Duration = Duration::from_secs(2);

/// How many stored items one read of the all-threads stream takes; more are read at once after.
const BATCH: usize = 500;

/// What a stream follows.
pub(super) enum Watched {
    One(String),
    All,
}

/// How soon after a commit another node made the store is read: the commits of a burst share
/// one read.
const COMMIT_GAP: Duration = Duration::from_millis(20);

/// One client's view of one thread or of all it may reach.
pub(super) struct Follower {
    watched: Watched,
    caller: Caller,
    db: AsyncStore,
    /// Live events; `None` once the runtime's channel closed (what is stored still shows up).
    live: Option<broadcast::Receiver<LiveEvent>>,
    ended: Option<broadcast::Receiver<RunEnded>>,
    /// Notices of the commits of every node of a shared database (`None` for a store that
    /// cannot tell): what another node stored is read at once rather than at the next poll.
    commits: Option<broadcast::Receiver<Arc<Committed>>>,
    /// Turns true when the server shuts down: the stream ends.
    closing: watch::Receiver<bool>,
    poll: Duration,
    position: Position,
    /// The last status sent per thread, and whether the caller may reach it.
    threads: HashMap<String, (bool, Option<ThreadStatus>)>,
    queue: VecDeque<Event>,
    /// Read the store before waiting again.
    refill: bool,
    next_poll: Instant,
    /// The stream ends after what is queued.
    done: bool,
    /// When the token is looked at again.
    next_token_check: Instant,
}

impl Follower {
    pub(super) fn new(
        state: &AppState,
        watched: Watched,
        caller: Caller,
        position: Position,
    ) -> Self {
        // A thread's own channel: another thread's deltas never make this stream lag.
        let live = match &watched {
            Watched::One(id) => state.runtime().subscribe_thread(id),
            Watched::All => state.runtime().subscribe(),
        };
        Self {
            watched,
            caller,
            db: state.db.clone(),
            live: Some(live),
            ended: Some(state.runs.subscribe()),
            commits: state.db.blocking().commits(),
            closing: state.closing.clone(),
            poll: state.config.poll_interval,
            position,
            threads: HashMap::new(),
            queue: VecDeque::new(),
            refill: true,
            next_poll: Instant::now(),
            done: false,
            next_token_check: Instant::now() + TOKEN_CHECK,
        }
    }

    pub(super) async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            if *self.closing.borrow() {
                self.done = true;
                continue;
            }
            if self.refill || Instant::now() >= self.next_poll {
                self.refill = false;
                self.next_poll = Instant::now() + self.poll;
                if let Some(lapsed) = self.token_lapsed().await {
                    let why = lapsed.what();
                    let detail = format!("the token of this stream {why}; the stream is closed");
                    self.queue.push_back(error_event(&detail));
                    self.done = true;
                    continue;
                }
                if let Err(e) = self.read_store().await {
                    tracing::warn!(error = %e, "an event stream could not read the store");
                    self.queue.push_back(error_event(&e.to_string()));
                    self.done = true;
                }
                continue;
            }
            tokio::select! {
                live = next_of(&mut self.live) => match live {
                    Ok(event) => self.take_live(event).await,
                    Err(RecvError::Lagged(missed)) => {
                        self.queue.push_back(error_event(&format!(
                            "this stream fell {missed} live events behind and is closed; reconnect with the last id to get everything stored"
                        )));
                        self.done = true;
                    }
                    Err(RecvError::Closed) => self.live = None,
                },
                ended = next_of(&mut self.ended) => match ended {
                    // The run stored how it ended: read it now rather than at the next poll.
                    Ok(run) => {
                        if self.follows(&run.thread).await {
                            self.refill = true;
                        }
                    }
                    Err(RecvError::Lagged(_)) => self.refill = true,
                    Err(RecvError::Closed) => self.ended = None,
                },
                notice = next_of(&mut self.commits) => match notice {
                    Ok(notice) => {
                        if self.wakes_for(&notice) {
                            // Commits come in bursts: one read shortly after covers many.
                            self.next_poll = self.next_poll.min(Instant::now() + COMMIT_GAP);
                        }
                    }
                    Err(RecvError::Lagged(_)) => self.refill = true,
                    Err(RecvError::Closed) => self.commits = None,
                },
                _ = self.closing.changed() => {
                    self.queue.push_back(error_event(
                        "the server is shutting down; reconnect with the last id to go on",
                    ));
                    self.done = true;
                }
                _ = tokio::time::sleep_until(self.next_poll) => {}
            }
        }
    }

    /// How the stream's token lapsed, if it did: a lapsed token reaches nothing, an open stream
    /// included. Looked up once per [`TOKEN_CHECK`].
    async fn token_lapsed(&mut self) -> Option<Lapsed> {
        if Instant::now() < self.next_token_check {
            return None;
        }
        self.next_token_check = Instant::now() + TOKEN_CHECK;
        Lapsed::look_up(&self.db, &self.caller.token_id).await
    }

    async fn take_live(&mut self, event: LiveEvent) {
        if !self.follows(&event.thread_id).await {
            return;
        }
        if matches!(event.kind, LiveKind::AnswerEnded) {
            self.refill = true;
        }
        let data = self.wrap(&event.thread_id, event.data);
        self.push(live_name(event.kind), &data, false);
    }

    /// Whether a commit concerns this stream: one of the thread it follows, or any for a stream
    /// of every thread.
    fn wakes_for(&self, notice: &Committed) -> bool {
        match &self.watched {
            Watched::One(id) => notice.touches(id),
            Watched::All => true,
        }
    }

    /// Whether this stream shows `thread`: the one it follows, or one the caller may reach.
    async fn follows(&mut self, thread: &str) -> bool {
        match &self.watched {
            Watched::One(id) => id == thread,
            Watched::All => self.reachable(thread).await,
        }
    }

    async fn reachable(&mut self, thread: &str) -> bool {
        if let Some((reach, _)) = self.threads.get(thread) {
            return *reach;
        }
        let reach = match self.db.thread(thread).await {
            Ok(t) => self.caller.may_reach(&t.agent),
            Err(_) => false,
        };
        self.threads.insert(thread.to_owned(), (reach, None));
        reach
    }

    /// The data of an item of `thread`: as it is on a thread's own stream, with its
    /// `thread_id` on the all-threads stream.
    fn wrap(&self, thread: &str, data: Value) -> Value {
        match self.watched {
            Watched::One(_) => data,
            Watched::All => match data {
                Value::Object(mut map) => {
                    map.insert("thread_id".into(), json!(thread));
                    Value::Object(map)
                }
                other => json!({"thread_id": thread, "data": other}),
            },
        }
    }

    fn push(&mut self, name: &str, data: &impl Serialize, with_id: bool) {
        if let Ok(mut event) = Event::default().event(name).json_data(data) {
            if with_id {
                event = event.id(self.position.id());
            }
            self.queue.push_back(event);
        }
    }

    /// Queues what was stored after the position, and the statuses that changed.
    async fn read_store(&mut self) -> Result<(), StoreError> {
        let (after_m, after_e) = (self.position.message, self.position.event);
        let (messages, events) = match &self.watched {
            Watched::One(id) => {
                // Events are read before messages: every message stored before one of these
                // events is then in the page, so a run's last message never comes after its
                // `run_ended`.
                let events = self.db.events(id, after_e).await?;
                let thread = id.clone();
                let messages = self
                    .db
                    .run_blocking(move |s| s.message_page(&thread, after_m, BATCH))
                    .await?;
                let with = |id: &String| id.clone();
                (
                    messages.into_iter().map(|m| (with(id), m)).collect(),
                    events.into_iter().map(|e| (with(id), e)).collect(),
                )
            }
            Watched::All => {
                // Events first, as for one thread.
                let events = self
                    .db
                    .run_blocking(move |s| s.events_since(after_e, BATCH))
                    .await?;
                let messages = self
                    .db
                    .run_blocking(move |s| s.messages_since(after_m, BATCH))
                    .await?;
                self.refill = events.len() == BATCH;
                (messages, events)
            }
        };
        let mut touched: Vec<String> = Vec::new();
        let items: Vec<(String, toolhost_store::Message)> = messages;
        let messages_full = items.len() == BATCH;
        for (thread, message) in items {
            self.position.message = message.seq;
            if !self.follows(&thread).await {
                continue;
            }
            let data = self.wrap(&thread, serde_json::to_value(&message).unwrap_or_default());
            self.push("message", &data, true);
            touched.push(thread);
        }
        // A full page of messages: more are waiting, some perhaps stored before these events,
        // which wait for the next read so that they never overtake a message.
        let events: Vec<(String, toolhost_store::Event)> = if messages_full {
            self.refill = true;
            Vec::new()
        } else {
            events
        };
        for (thread, event) in events {
            self.position.event = event.seq;
            if !self.follows(&thread).await {
                continue;
            }
            if event.kind == EventKind::RunEnded {
                let data = self.wrap(&thread, event.data);
                self.push("run_ended", &data, true);
            } else {
                let data = self.wrap(
                    &thread,
                    json!({"kind": event.kind.as_str(), "data": event.data, "at": event.at}),
                );
                self.push("event", &data, true);
            }
            touched.push(thread);
        }
        if let Watched::One(id) = &self.watched {
            touched.push(id.clone());
        }
        touched.sort();
        touched.dedup();
        for thread in touched {
            self.send_status_if_changed(&thread).await?;
        }
        Ok(())
    }

    async fn send_status_if_changed(&mut self, id: &str) -> Result<(), StoreError> {
        let thread = self.db.thread(id).await?;
        let entry = self.threads.entry(id.to_owned()).or_insert((true, None));
        if entry.1 != Some(thread.status) {
            entry.1 = Some(thread.status);
            let data = self.wrap(id, serde_json::to_value(&thread).unwrap_or_default());
            self.push("status", &data, false);
        }
        Ok(())
    }
}

/// The next item of a channel that may be gone; a gone one never yields.
async fn next_of<T: Clone>(channel: &mut Option<broadcast::Receiver<T>>) -> Result<T, RecvError> {
    match channel {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

fn error_event(detail: &str) -> Event {
    Event::default()
        .event("error")
        .json_data(json!({"detail": detail}))
        .unwrap_or_default()
}

/// The SSE event name of a live event: its kind's snake_case name.
fn live_name(kind: LiveKind) -> &'static str {
    match kind {
        LiveKind::AnswerStarted => "answer_started",
        LiveKind::AnswerEnded => "answer_ended",
        LiveKind::TextDelta => "text_delta",
        LiveKind::ReasoningDelta => "reasoning_delta",
        LiveKind::ToolCallStarted => "tool_call_started",
        LiveKind::ToolCallArgumentsDelta => "tool_call_arguments_delta",
        LiveKind::ModelRestarted => "model_restarted",
        LiveKind::ToolProgress => "tool_progress",
        LiveKind::ToolLog => "tool_log",
    }
}
