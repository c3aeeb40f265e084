//! The kept events of sessions' streams: an rmcp event store whose replays go on live until the
//! call's answer, bounded in streams, events and bytes.

use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    EventStore, EventStoreError, EventStream, ServerSseMessage,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The most events kept of one stream (a call's progress may be long); the oldest go first.
pub const MAX_EVENTS: usize = 10_000;
/// The most streams kept.
pub const MAX_STREAMS: usize = 10_000;
/// The most bytes of messages kept, all streams together.
pub const MAX_BYTES: usize = 256 * 1024 * 1024;
/// How long a stream that carried its answer is kept after its last event.
pub const KEPT_FOR: Duration = Duration::from_secs(10 * 60);
/// How long a stream still waiting for its answer is kept after its last event (a call may
/// wait long for a person).
pub const OPEN_KEPT_FOR: Duration = Duration::from_secs(60 * 60);
/// How often the kept streams are swept of those past their time.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The events of one stream.
struct Log {
    /// The kept events, oldest first, with their indexes and sizes.
    events: VecDeque<(u64, ServerSseMessage, usize)>,
    /// The index of the next event; also what `changed` announces.
    next: u64,
    /// Whether nothing comes after the last event: the call's answer came, or it was cancelled.
    ended: bool,
    /// When the last event came.
    touched: Instant,
    /// Wakes the replays that wait for the next event; dropped with the log, which ends them.
    changed: watch::Sender<u64>,
    /// The session whose request opened the stream, and that request's id (seen on the
    /// stream's first event): only that session may resume it.
    owner: Option<(String, String)>,
    /// The bytes of its kept messages.
    bytes: usize,
}

impl Log {
    fn new() -> Self {
        Self {
            events: VecDeque::new(),
            next: 0,
            ended: false,
            touched: Instant::now(),
            changed: watch::channel(0).0,
            owner: None,
            bytes: 0,
        }
    }

    fn kept_for(&self) -> Duration {
        if self.ended {
            KEPT_FOR
        } else {
            OPEN_KEPT_FOR
        }
    }
}

#[derive(Default)]
struct Kept {
    logs: HashMap<String, Log>,
    bytes: usize,
    swept: Option<Instant>,
}

impl Kept {
    /// Forgets the streams past their time (at most once every [`SWEEP_EVERY`]), then, while
    /// over a bound, those that ended first, oldest first; never `keep`.
    fn make_room(&mut self, keep: &str) {
        if self.swept.is_none_or(|at| at.elapsed() >= SWEEP_EVERY) {
            self.swept = Some(Instant::now());
            let stale: Vec<String> = self
                .logs
                .iter()
                .filter(|(id, log)| *id != keep && log.touched.elapsed() >= log.kept_for())
                .map(|(id, _)| id.clone())
                .collect();
            for id in stale {
                self.forget(&id);
            }
        }
        while self.logs.len() > MAX_STREAMS || self.bytes > MAX_BYTES {
            let oldest = self
                .logs
                .iter()
                .filter(|(id, _)| *id != keep)
                .min_by_key(|(_, log)| (!log.ended, log.touched))
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => self.forget(&id),
                None => break,
            }
        }
    }

    fn forget(&mut self, stream: &str) {
        if let Some(log) = self.logs.remove(stream) {
            self.bytes -= log.bytes;
        }
    }
}

/// The kept events of every session's streams; an rmcp event store.
#[derive(Clone, Default)]
pub(crate) struct StreamEvents(Arc<Mutex<Kept>>);

/// An event id: the stream and the event's index in it.
fn event_id(stream: &str, index: u64) -> String {
    format!("{stream}/{index}")
}

pub(super) fn parse_event_id(id: &str) -> Option<(&str, u64)> {
    let (stream, index) = id.rsplit_once('/')?;
    Some((stream, index.parse().ok()?))
}

/// The common stream of `session` (rmcp names it so): it serves no one request and never ends.
pub(super) fn common_stream(session: &str) -> String {
    format!("{session}:common")
}

/// Whether `event` is the answer of the request its stream serves.
fn answers(stream: &str, event: &ServerSseMessage) -> bool {
    !stream.ends_with(":common")
        && event.message.as_deref().is_some_and(|m| {
            matches!(
                m,
                ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)
            )
        })
}

impl StreamEvents {
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that the stream of event `event_id` serves request `request` of `session`,
    /// unless it serves one already.
    pub(super) fn claim(&self, event_id: &str, session: &str, request: String) {
        if let Some((stream, _)) = parse_event_id(event_id) {
            if let Some(log) = self.lock().logs.get_mut(stream) {
                log.owner
                    .get_or_insert_with(|| (session.to_owned(), request));
            }
        }
    }

    /// Whether `session` may resume the stream of event `event_id`: its own request's stream,
    /// or its own common stream.
    pub(super) fn may_resume(&self, event_id: &str, session: &str) -> bool {
        let Some((stream, _)) = parse_event_id(event_id) else {
            return false;
        };
        if let Some(owner) = stream.strip_suffix(":common") {
            return owner == session;
        }
        self.lock()
            .logs
            .get(stream)
            .is_some_and(|log| log.owner.as_ref().is_some_and(|(s, _)| s == session))
    }

    /// Ends the stream of request `request` of `session` (cancelled: no answer will come), so
    /// its replays end.
    pub(super) fn cancelled(&self, session: &str, request: &str) {
        let mut kept = self.lock();
        for log in kept.logs.values_mut() {
            if log
                .owner
                .as_ref()
                .is_some_and(|(s, r)| s == session && r == request)
            {
                log.ended = true;
                log.changed.send_replace(log.next);
            }
        }
    }

    /// Forgets every stream of `session` (it was closed); their replays end.
    pub(super) fn forget_session(&self, session: &str) {
        let common = common_stream(session);
        let mut kept = self.lock();
        let gone: Vec<String> = kept
            .logs
            .iter()
            .filter(|(id, log)| {
                **id == common || log.owner.as_ref().is_some_and(|(s, _)| s == session)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in gone {
            kept.forget(&id);
        }
    }

    /// The newest `at_most` kept events of `stream`.
    pub(super) fn newest(&self, stream: &str, at_most: usize) -> Vec<ServerSseMessage> {
        let kept = self.lock();
        let Some(log) = kept.logs.get(stream) else {
            return Vec::new();
        };
        let skip = log.events.len().saturating_sub(at_most);
        log.events
            .iter()
            .skip(skip)
            .map(|(_, event, _)| event.clone())
            .collect()
    }

    /// The index of the oldest kept event of `stream` (0 when it has none yet).
    pub(super) fn oldest(&self, stream: &str) -> u64 {
        self.lock()
            .logs
            .get(stream)
            .map_or(0, |log| log.events.front().map_or(log.next, |(i, _, _)| *i))
    }

    /// The events of `stream` from index `from` on, then each as it comes until the stream
    /// ends or is forgotten. A replay that wants an event no longer kept ends, rather than
    /// skip what it missed.
    pub(super) fn replay(&self, stream: &str, from: u64) -> EventStream {
        let changes = {
            let mut kept = self.lock();
            kept.logs
                .entry(stream.to_owned())
                .or_insert_with(Log::new)
                .changed
                .subscribe()
        };
        let state = (self.clone(), stream.to_owned(), from, changes);
        Box::pin(futures_util::stream::unfold(
            state,
            |(events, stream, want, mut changes)| async move {
                loop {
                    let next = {
                        let kept = events.lock();
                        let log = kept.logs.get(&stream)?;
                        match log.events.iter().find(|(i, _, _)| *i >= want) {
                            // What it wants was dropped: it cannot be given whole.
                            Some((i, _, _)) if *i > want => return None,
                            Some((i, event, _)) => Some((*i, event.clone())),
                            None if log.ended => return None,
                            None => None,
                        }
                    };
                    if let Some((i, event)) = next {
                        return Some((event, (events, stream, i + 1, changes)));
                    }
                    changes.changed().await.ok()?;
                }
            },
        ))
    }
}

#[async_trait::async_trait]
impl EventStore for StreamEvents {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<String, EventStoreError> {
        let size = event
            .message
            .as_deref()
            .and_then(|m| serde_json::to_vec(m).ok())
            .map_or(0, |bytes| bytes.len());
        let mut kept = self.lock();
        let log = kept
            .logs
            .entry(stream_id.to_owned())
            .or_insert_with(Log::new);
        let index = log.next;
        let id = event_id(stream_id, index);
        let mut event = event.clone();
        event.event_id = Some(id.clone());
        log.ended |= answers(stream_id, &event);
        log.events.push_back((index, event, size));
        log.bytes += size;
        let mut freed = 0;
        if log.events.len() > MAX_EVENTS {
            freed = log.events.pop_front().map_or(0, |(_, _, size)| size);
            log.bytes -= freed;
        }
        log.next += 1;
        log.touched = Instant::now();
        log.changed.send_replace(log.next);
        kept.bytes = kept.bytes + size - freed;
        kept.make_room(stream_id);
        Ok(id)
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let unknown = || format!("no stream has event {last_event_id:?}");
        let (stream, index) = parse_event_id(last_event_id).ok_or_else(unknown)?;
        {
            let kept = self.lock();
            let log = kept.logs.get(stream).ok_or_else(unknown)?;
            if index >= log.next {
                return Err(unknown().into());
            }
        }
        Ok(self.replay(stream, index + 1))
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

    fn priming() -> ServerSseMessage {
        ServerSseMessage::retry(Duration::from_millis(10))
    }

    #[tokio::test]
    async fn a_replay_gives_what_came_after_then_waits_for_the_answer() {
        let events = StreamEvents::default();
        let first = events.store_event("call", &priming()).await.unwrap();
        let second = events.store_event("call", &priming()).await.unwrap();
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

    #[tokio::test]
    async fn a_cancelled_call_or_a_closed_session_ends_its_replays() {
        let events = StreamEvents::default();
        let first = events.store_event("call", &priming()).await.unwrap();
        events.claim(&first, "s", "7".to_owned());
        let other = events.store_event("other", &priming()).await.unwrap();
        events.claim(&other, "s", "8".to_owned());
        let mut replay = events.replay_events_after(&first).await.unwrap();
        let mut replay_other = events.replay_events_after(&other).await.unwrap();
        events.cancelled("s", "7");
        assert!(replay.next().await.is_none(), "cancelled: no answer comes");
        events.forget_session("s");
        assert!(replay_other.next().await.is_none(), "the session is gone");
        assert!(!events.may_resume(&other, "s"));
    }

    #[tokio::test]
    async fn a_replay_that_fell_behind_what_is_kept_ends_rather_than_skip() {
        let events = StreamEvents::default();
        let first = events.store_event("call", &priming()).await.unwrap();
        for _ in 0..MAX_EVENTS + 1 {
            events.store_event("call", &priming()).await.unwrap();
        }
        let replayed: Vec<_> = events
            .replay_events_after(&first)
            .await
            .unwrap()
            .collect()
            .await;
        assert!(replayed.is_empty());
    }

    #[tokio::test]
    async fn past_the_bound_on_streams_ended_ones_go_first_and_never_the_one_written() {
        let events = StreamEvents::default();
        let open = events.store_event("open", &priming()).await.unwrap();
        for i in 0..MAX_STREAMS {
            events
                .store_event(&format!("done{i}"), &answer())
                .await
                .unwrap();
        }
        // Over the bound by one: an ended stream went, not the open one.
        assert_eq!(events.lock().logs.len(), MAX_STREAMS);
        assert!(events.replay_events_after(&open).await.is_ok());
        assert!(events.lock().bytes > 0);
    }
}
