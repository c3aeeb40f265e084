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

mod follower;

use super::reachable_thread;
use crate::auth::{Caller, Scope};
use crate::problem::Problem;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use follower::{Follower, Watched};
use futures_util::stream::{self, Stream};
use std::convert::Infallible;

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
