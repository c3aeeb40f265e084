//! `GET /v1/threads/{id}/events`: a thread as server-sent events.
//!
//! What is stored comes first and carries an id: each message (`event: message`) and each
//! stored event (`event: event`, with its `kind`) gets `id: m<message seq>.e<event seq>`, the
//! position after it. A client that reconnects with `Last-Event-ID` gets exactly what was stored
//! after that position. The thread's status (`event: status`) is sent on connect and when it
//! changes; the live pieces of an answer (`text_delta`, `tool_call_started`, …) and the end of a
//! run of this node (`run_ended`) carry no id: they are progress, not history.
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
use serde_json::json;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::Instant;
use toolhost_runtime::engine::{LiveEvent, LiveKind};
use toolhost_store::{AsyncStore, ThreadStatus};

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
}

pub(super) async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    caller.require(Scope::Read)?;
    reachable_thread(&state, &caller, &id).await?;
    let position = match headers.get("last-event-id") {
        None => Position::default(),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(Position::parse)
            .ok_or_else(|| {
                Problem::bad_request(
                    "Last-Event-ID is not an id this server sent (`m<number>.e<number>`)",
                )
            })?,
    };
    let follower = Follower {
        thread: id,
        db: state.db.clone(),
        live: state.runtime.subscribe(),
        ended: state.runs.subscribe(),
        poll: state.config.poll_interval,
        position,
        status: None,
        queue: VecDeque::new(),
        refill: true,
        next_poll: Instant::now(),
        done: false,
    };
    let events = stream::unfold(follower, |mut f| async move {
        let event = f.next().await?;
        Some((Ok(event), f))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(state.config.keep_alive)))
}

/// One client's view of one thread.
struct Follower {
    thread: String,
    db: AsyncStore,
    live: broadcast::Receiver<LiveEvent>,
    ended: broadcast::Receiver<RunEnded>,
    poll: Duration,
    position: Position,
    status: Option<ThreadStatus>,
    queue: VecDeque<Event>,
    /// Read the store before waiting again.
    refill: bool,
    next_poll: Instant,
    /// The stream ends after what is queued.
    done: bool,
}

impl Follower {
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            if self.refill || Instant::now() >= self.next_poll {
                self.refill = false;
                self.next_poll = Instant::now() + self.poll;
                if let Err(e) = self.read_store().await {
                    tracing::warn!(thread = %self.thread, error = %e, "an event stream could not read the store");
                    self.queue.push_back(error_event(&e.to_string()));
                    self.done = true;
                }
                continue;
            }
            tokio::select! {
                live = self.live.recv() => match live {
                    Ok(event) if event.thread_id == self.thread => {
                        if matches!(event.kind, LiveKind::AnswerEnded) {
                            self.refill = true;
                        }
                        if let Ok(e) = Event::default().event(live_name(event.kind)).json_data(&event.data) {
                            self.queue.push_back(e);
                        }
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(missed)) => {
                        self.queue.push_back(error_event(&format!(
                            "this stream fell {missed} live events behind and is closed; reconnect with the last id to get everything stored"
                        )));
                        self.done = true;
                    }
                    // The runtime is gone: what is stored still shows up by polling.
                    Err(RecvError::Closed) => self.live = broadcast::channel(1).1,
                },
                ended = self.ended.recv() => match ended {
                    Ok(run) if run.thread == self.thread => {
                        self.refill = true;
                        // After what the run stored, so a client sees its last message first.
                        self.read_store().await.ok();
                        if let Ok(e) = Event::default().event("run_ended").json_data(&run.data) {
                            self.queue.push_back(e);
                        }
                    }
                    _ => {}
                },
                _ = tokio::time::sleep_until(self.next_poll) => {}
            }
        }
    }

    /// Queues what was stored after the position, and the status when it changed.
    async fn read_store(&mut self) -> Result<(), toolhost_store::StoreError> {
        let thread = self.thread.clone();
        let after = self.position.message;
        let messages = self
            .db
            .run_blocking(move |s| s.messages_after(&thread, after))
            .await?;
        for message in messages {
            self.position.message = message.seq;
            if let Ok(e) = Event::default().event("message").json_data(&message) {
                self.queue.push_back(e.id(self.position.id()));
            }
        }
        for event in self.db.events(&self.thread, self.position.event).await? {
            self.position.event = event.seq;
            let data = json!({"kind": event.kind.as_str(), "data": event.data, "at": event.at});
            if let Ok(e) = Event::default().event("event").json_data(&data) {
                self.queue.push_back(e.id(self.position.id()));
            }
        }
        let thread = self.db.thread(&self.thread).await?;
        if self.status != Some(thread.status) {
            self.status = Some(thread.status);
            if let Ok(e) = Event::default().event("status").json_data(&thread) {
                self.queue.push_back(e);
            }
        }
        Ok(())
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
