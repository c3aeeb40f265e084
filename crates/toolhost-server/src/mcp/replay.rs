//! Resuming the event streams of 2025-11-25 sessions at `/mcp` (SEP-1699): every event a session
//! sends is kept, by stream, so a client whose stream closed (the network dropped it, or the
//! server let go of it after [`crate::ServerConfig::mcp_stream_hold`]) reconnects with a GET
//! carrying `Last-Event-ID` and gets what it missed, then the rest as it comes, until the call's
//! answer. The answer of a call whose stream is closed is kept too, so a client that reconnects
//! after the call ended still gets it (rmcp's own cache forgets a call's stream once it answers).
//!
//! Only sessions' streams are kept: a 2026-07-28 request has no session to resume, and closing its
//! stream cancels its call ([`Resumable::event_store`] is none for the transport). Kept in this
//! process's memory: [`MAX_EVENTS`] per stream (the oldest go first), [`MAX_STREAMS`] streams,
//! each for [`KEPT_FOR`] after its last event.

use rmcp::model::ClientJsonRpcMessage;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionError};
use rmcp::transport::streamable_http_server::session::{
    EventStore, EventStoreError, EventStream, RestoreOutcome, ServerSseMessage, SessionId,
    SessionManager,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The most events kept of one stream (a call's progress may be long).
pub const MAX_EVENTS: usize = 10_000;
/// The most streams kept; past it the one idle longest is forgotten.
pub const MAX_STREAMS: usize = 10_000;
/// How long a stream is kept after its last event.
pub const KEPT_FOR: Duration = Duration::from_secs(10 * 60);

/// The events of one stream.
struct Log {
    /// The kept events, oldest first, with their indexes.
    events: VecDeque<(u64, ServerSseMessage)>,
    /// The index of the next event; also what `changed` announces.
    next: u64,
    /// Whether the stream carried its call's answer (nothing comes after it).
    ended: bool,
    /// When the last event came.
    touched: Instant,
    /// Wakes the replays that wait for the next event.
    changed: watch::Sender<u64>,
    /// The session whose request opened the stream (seen on its first event): only that
    /// session may resume it.
    owner: Option<String>,
}

#[derive(Default)]
struct Logs(Mutex<HashMap<String, Log>>);

impl Logs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Log>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The kept events of every session's streams; an rmcp event store.
#[derive(Clone, Default)]
pub(crate) struct StreamEvents(Arc<Logs>);

impl StreamEvents {
    /// Records that the stream of event `event_id` belongs to `session`, unless it belongs to
    /// a session already.
    fn claim(&self, event_id: &str, session: &str) {
        if let Some((stream, _)) = parse_event_id(event_id) {
            if let Some(log) = self.0.lock().get_mut(stream) {
                log.owner.get_or_insert_with(|| session.to_owned());
            }
        }
    }

    /// Whether `session` may resume the stream of event `event_id`: its own request's stream,
    /// or its own common stream (rmcp names it after the session).
    fn may_resume(&self, event_id: &str, session: &str) -> bool {
        let Some((stream, _)) = parse_event_id(event_id) else {
            return false;
        };
        if let Some(owner) = stream.strip_suffix(":common") {
            return owner == session;
        }
        self.0
            .lock()
            .get(stream)
            .is_some_and(|log| log.owner.as_deref() == Some(session))
    }
}

/// An event id: the stream and the event's index in it.
fn event_id(stream: &str, index: u64) -> String {
    format!("{stream}/{index}")
}

fn parse_event_id(id: &str) -> Option<(&str, u64)> {
    let (stream, index) = id.rsplit_once('/')?;
    Some((stream, index.parse().ok()?))
}

/// Whether `event` is the answer of the request its stream serves. A session's common stream
/// (rmcp names it `SESSION:common`) serves no one request and never ends.
fn answers(stream: &str, event: &ServerSseMessage) -> bool {
    !stream.ends_with(":common")
        && event.message.as_deref().is_some_and(|m| {
            matches!(
                m,
                ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)
            )
        })
}

#[async_trait::async_trait]
impl EventStore for StreamEvents {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let mut logs = self.0.lock();
        logs.retain(|_, log| log.touched.elapsed() < KEPT_FOR);
        if !logs.contains_key(stream_id) && logs.len() >= MAX_STREAMS {
            let idle = logs
                .iter()
                .min_by_key(|(_, log)| log.touched)
                .map(|(id, _)| id.clone());
            if let Some(idle) = idle {
                logs.remove(&idle);
            }
        }
        let log = logs.entry(stream_id.to_owned()).or_insert_with(|| Log {
            events: VecDeque::new(),
            next: 0,
            ended: false,
            touched: Instant::now(),
            changed: watch::channel(0).0,
            owner: None,
        });
        let index = log.next;
        let id = event_id(stream_id, index);
        let mut kept = event.clone();
        kept.event_id = Some(id.clone());
        log.ended |= answers(stream_id, event);
        log.events.push_back((index, kept));
        if log.events.len() > MAX_EVENTS {
            log.events.pop_front();
        }
        log.next += 1;
        log.touched = Instant::now();
        log.changed.send_replace(log.next);
        Ok(id)
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let unknown = || format!("no stream has event {last_event_id:?}");
        let (stream, index) = parse_event_id(last_event_id).ok_or_else(unknown)?;
        let changes = {
            let logs = self.0.lock();
            let log = logs.get(stream).ok_or_else(unknown)?;
            let oldest = log.events.front().map_or(log.next, |(i, _)| *i);
            if index >= log.next || index + 1 < oldest {
                return Err(format!(
                    "event {last_event_id:?} is not among the kept events of its stream (from {oldest})"
                )
                .into());
            }
            log.changed.subscribe()
        };
        let state = (self.0.clone(), stream.to_owned(), index + 1, changes);
        Ok(Box::pin(futures_util::stream::unfold(
            state,
            |(logs, stream, want, mut changes)| async move {
                loop {
                    let next = {
                        let logs = logs.lock();
                        let log = logs.get(&stream)?;
                        match log.events.iter().find(|(i, _)| *i >= want) {
                            Some((i, event)) => Some((*i, event.clone())),
                            None if log.ended => return None,
                            None => None,
                        }
                    };
                    if let Some((i, event)) = next {
                        return Some((event, (logs, stream, i + 1, changes)));
                    }
                    // Forgotten (the sender is gone): the stream ends.
                    changes.changed().await.ok()?;
                }
            },
        )))
    }
}

/// rmcp's in-memory session manager with its streams' events kept in [`StreamEvents`]; the
/// transport is told of no event store, so stateless requests stay tied to their connection.
/// A stream is resumed only by the session whose request opened it (a session id is no
/// credential, and a common stream's id holds it).
pub(crate) struct Resumable {
    sessions: LocalSessionManager,
    events: StreamEvents,
}

impl Resumable {
    pub(crate) fn new(events: StreamEvents) -> Self {
        Self {
            sessions: LocalSessionManager::default().with_event_store(Arc::new(events.clone())),
            events,
        }
    }
}

impl SessionManager for Resumable {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.sessions.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.sessions.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.sessions.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.sessions.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        let stream = self.sessions.create_stream(id, message).await?;
        // The first event (the priming one) names the stream: it is this session's.
        let (events, session) = (self.events.clone(), id.to_string());
        let mut claimed = false;
        Ok(futures_util::StreamExt::inspect(stream, move |event| {
            if let (false, Some(event_id)) = (claimed, &event.event_id) {
                events.claim(event_id, &session);
                claimed = true;
            }
        }))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.sessions.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        self.sessions.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        if !self.events.may_resume(&last_event_id, id) {
            return Err(SessionError::InvalidEventId.into());
        }
        self.sessions.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.sessions.restore_session(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use rmcp::model::{JsonRpcResponse, RequestId, ServerResult};

    fn answer() -> ServerSseMessage {
        ServerSseMessage::from_message(ServerJsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: Default::default(),
            id: RequestId::Number(1),
            result: ServerResult::empty(()),
        }))
    }

    #[tokio::test]
    async fn a_replay_gives_what_came_after_then_waits_for_the_answer() {
        let events = StreamEvents::default();
        let priming = ServerSseMessage::retry(Duration::from_millis(10));
        let first = events.store_event("call", &priming).await.unwrap();
        let second = events.store_event("call", &priming).await.unwrap();
        let mut replay = events.replay_events_after(&first).await.unwrap();
        assert_eq!(replay.next().await.unwrap().event_id, Some(second));
        // Nothing more yet: the replay waits, and gets the answer once it comes, then ends.
        let waiting = tokio::spawn(async move {
            let answer = replay.next().await.unwrap();
            (answer, replay.next().await.is_none())
        });
        tokio::task::yield_now().await;
        events.store_event("call", &answer()).await.unwrap();
        let (got, ended) = waiting.await.unwrap();
        assert!(got.message.is_some() && ended);
        // After the answer, a late replay still gets it.
        let late: Vec<_> = events
            .replay_events_after(&first)
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(late.len(), 2);
        // An id of no stream, or past the stream's end, is refused.
        assert!(events.replay_events_after("other/0").await.is_err());
        assert!(events.replay_events_after("call/9").await.is_err());
        assert!(events.replay_events_after("nonsense").await.is_err());
    }

    #[tokio::test]
    async fn a_common_stream_does_not_end_at_an_answer() {
        let events = StreamEvents::default();
        let id = events.store_event("s:common", &answer()).await.unwrap();
        events.store_event("s:common", &answer()).await.unwrap();
        let mut replay = events.replay_events_after(&id).await.unwrap();
        assert!(replay.next().await.is_some());
        let more = tokio::time::timeout(Duration::from_millis(50), replay.next()).await;
        assert!(more.is_err(), "the common stream waits for more");
    }
}
