//! Server-sent events: one thread (`GET /v1/threads/{id}/events`) or every thread the token
//! may reach (`GET /v1/events`).
//!
//! What is stored comes first and carries an id: each message (`event: message`) and each
//! stored event (`event: event`, with its `kind`) gets `id: m<message seq>.e<event seq>`, the
//! position after it (positions are the store's, shared by all threads). A client that
//! reconnects with `Last-Event-ID` gets exactly what was stored after that position. A thread's
//! status (`event: status`) is sent when it changes. The end of a run the server started is
//! stored too and comes as `event: run_ended` with an id, so a client that connects after the
//! run ended still sees it. The live pieces of an answer (`text_delta`, `tool_call_started`, …)
//! carry no id: they are progress, not history. On the all-threads stream every item's data
//! says its `thread_id`. When the server shuts down, every stream ends with an `error` event.
//!
//! The store is read again every poll interval (so what other processes or nodes store shows
//! up) and at once when a run of this node ends or an answer of its model is complete. A client
//! that reads so slowly that the live events it has not taken pass the runtime's buffer is
//! dropped; it reconnects with its last id and misses nothing stored.

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::problem::Problem;
use crate::runs::RunEnded;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use tokio::time::Instant;
use toolhost_runtime::engine::{LiveEvent, LiveKind};
use toolhost_store::{AsyncStore, EventKind, StoreError, ThreadStatus};

/// How often an open stream looks whether its token was revoked: not at every poll, which
/// would add a store read per stream and poll.
const TOKEN_CHECK: Duration = Duration::from_secs(2);

/// How many stored items one read of the all-threads stream takes; more are read at once after.
const BATCH: usize = 500;

/// Where a stream is in what is stored: the last message and the last event sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Position {
    message: i64,
    event: i64,
}

impl Position {
    fn id(self) -> String {
        format!("m{}.e{}", self.message, self.event)
    }

    /// Reads a `Last-Event-ID`.
    fn parse(text: &str) -> Option<Self> {
        let (m, e) = text.strip_prefix('m')?.split_once(".e")?;
        Some(Self {
            message: m.parse().ok().filter(|n: &i64| *n >= 0)?,
            event: e.parse().ok().filter(|n: &i64| *n >= 0)?,
        })
    }

    fn from_headers(headers: &HeaderMap) -> Result<Self, Problem> {
        match headers.get("last-event-id") {
            None => Ok(Self::default()),
            Some(value) => value.to_str().ok().and_then(Self::parse).ok_or_else(|| {
                Problem::bad_request(
                    "Last-Event-ID is not an id this server sent (`m<number>.e<number>`)",
                )
            }),
        }
    }
}

/// `GET /v1/threads/{id}/events`.
#[utoipa::path(
    get, path = "/v1/threads/{id}/events", operation_id = "followThread", tag = "events",
    summary = "A thread's events, live",
    description = "A server-sent event stream. Stored items come first, each with an id: `event: message` (a stored message), `event: event` (a stored event, with its `kind`), `event: run_ended`. Then `event: status` when the thread's status changes, live progress without an id (`text_delta`, `tool_call_started`, …), and an `error` event when the server shuts down. Reconnect with `Last-Event-ID` to miss nothing stored.",
    params(("id" = String, Path, description = "The thread's id."), ("Last-Event-ID" = Option<String>, Header, description = "The id of the last stored item received (`m<number>.e<number>`): the stream goes on after it.")),
    responses(
        (status = 200, description = "The stream.", content_type = "text/event-stream", body = String),
        (status = 400, description = "A Last-Event-ID this server did not send."),
        (status = 404, description = "There is no such thread, or the token may not reach it."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn thread(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    caller.require(Scope::Read)?;
    reachable_thread(&state, &caller, &id).await?;
    let position = Position::from_headers(&headers)?;
    Ok(sse(
        &state,
        Follower::new(&state, Watched::One(id), caller, position),
    ))
}

/// `GET /v1/events`.
#[utoipa::path(
    get, path = "/v1/events", operation_id = "followAllThreads", tag = "events",
    summary = "The events of every thread the token may reach, live",
    description = "A server-sent event stream. Stored items come first, each with an id: `event: message` (a stored message), `event: event` (a stored event, with its `kind`), `event: run_ended`. Then `event: status` when the thread's status changes, live progress without an id (`text_delta`, `tool_call_started`, …), and an `error` event when the server shuts down. Reconnect with `Last-Event-ID` to miss nothing stored. Every item's data says its `thread_id`.",
    params(("Last-Event-ID" = Option<String>, Header, description = "The id of the last stored item received (`m<number>.e<number>`): the stream goes on after it.")),
    responses(
        (status = 200, description = "The stream.", content_type = "text/event-stream", body = String),
        (status = 400, description = "A Last-Event-ID this server did not send."),
    ),
    security(("bearer" = ["read"])),
)]
pub(super) async fn all(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    caller.require(Scope::Read)?;
    let position = Position::from_headers(&headers)?;
    Ok(sse(
        &state,
        Follower::new(&state, Watched::All, caller, position),
    ))
}

fn sse(state: &AppState, follower: Follower) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let events = stream::unfold(follower, |mut f| async move {
        let event = f.next().await?;
        Some((Ok(event), f))
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(state.config.keep_alive))
}

/// What a stream follows.
enum Watched {
    One(String),
    All,
}

/// One client's view of one thread or of all it may reach.
struct Follower {
    watched: Watched,
    caller: Caller,
    db: AsyncStore,
    /// Live events; `None` once the runtime's channel closed (what is stored still shows up).
    live: Option<broadcast::Receiver<LiveEvent>>,
    ended: Option<broadcast::Receiver<RunEnded>>,
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
    fn new(state: &AppState, watched: Watched, caller: Caller, position: Position) -> Self {
        // A thread's own channel: another thread's deltas never make this stream lag.
        let live = match &watched {
            Watched::One(id) => state.runtime.subscribe_thread(id),
            Watched::All => state.runtime.subscribe(),
        };
        Self {
            watched,
            caller,
            db: state.db.clone(),
            live: Some(live),
            ended: Some(state.runs.subscribe()),
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

    async fn next(&mut self) -> Option<Event> {
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
                if Instant::now() >= self.next_token_check && !self.token_still_valid().await {
                    self.queue.push_back(error_event(
                        "the token of this stream was revoked; the stream is closed",
                    ));
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

    /// Whether the stream's token still exists unrevoked: a revoked token reaches nothing, an
    /// open stream included. A store that cannot be read says nothing against it.
    async fn token_still_valid(&mut self) -> bool {
        self.next_token_check = Instant::now() + TOKEN_CHECK;
        let id = self.caller.token_id.clone();
        match self.db.run_blocking(move |s| s.token(&id)).await {
            Ok(Some(token)) => token.revoked_at.is_none(),
            Ok(None) => false,
            Err(_) => true,
        }
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
                let thread = id.clone();
                let messages = self
                    .db
                    .run_blocking(move |s| s.message_page(&thread, after_m, BATCH))
                    .await?;
                let events = self.db.events(id, after_e).await?;
                // A full page: more is waiting.
                self.refill = messages.len() == BATCH;
                let with = |id: &String| id.clone();
                (
                    messages.into_iter().map(|m| (with(id), m)).collect(),
                    events.into_iter().map(|e| (with(id), e)).collect(),
                )
            }
            Watched::All => {
                let messages = self
                    .db
                    .run_blocking(move |s| s.messages_since(after_m, BATCH))
                    .await?;
                let events = self
                    .db
                    .run_blocking(move |s| s.events_since(after_e, BATCH))
                    .await?;
                // A full batch: more is waiting.
                self.refill = messages.len() == BATCH || events.len() == BATCH;
                (messages, events)
            }
        };
        let mut touched: Vec<String> = Vec::new();
        let items: Vec<(String, toolhost_store::Message)> = messages;
        for (thread, message) in items {
            self.position.message = message.seq;
            if !self.follows(&thread).await {
                continue;
            }
            let data = self.wrap(&thread, serde_json::to_value(&message).unwrap_or_default());
            self.push("message", &data, true);
            touched.push(thread);
        }
        let events: Vec<(String, toolhost_store::Event)> = events;
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
    }
}

#[cfg(test)]
mod tests {
    use super::Position;

    #[test]
    fn an_event_id_reads_back_as_the_position_it_names() {
        let p = Position {
            message: 12,
            event: 3,
        };
        assert_eq!(p.id(), "m12.e3");
        assert_eq!(Position::parse("m12.e3"), Some(p));
        for bad in ["", "12.3", "m12", "m-1.e3", "m1.e", "mx.e1", "m1.e2.e3"] {
            assert_eq!(Position::parse(bad), None, "{bad}");
        }
    }
}
