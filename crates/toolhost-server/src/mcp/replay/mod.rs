//! Resuming the event streams of 2025-11-25 sessions at `/mcp` (SEP-1699): every event a session
//! sends is kept, by stream, so a client whose stream closed (the network dropped it, or the
//! server let go of it after [`crate::ServerConfig::mcp_stream_hold`]) reconnects with a GET
//! carrying `Last-Event-ID` and gets what it missed, then the rest as it comes, until the call's
//! answer. The answer of a call whose stream is closed is kept too, so a client that reconnects
//! after the call ended still gets it (rmcp's own cache forgets a call's stream once it answers).
//!
//! Only sessions' streams are kept: a 2026-07-28 request has no session to resume, and closing its
//! stream cancels its call (the transport is told of no event store). A stream is resumed only by
//! the session whose request opened it. A cancelled call's stream ends; a closed session's
//! streams are forgotten. A new standalone GET stream starts with the newest
//! [`COMMON_REPLAYED`] events of the session's common stream (as rmcp's own cache gave them), so
//! a list change told while no GET was open still arrives. Kept in this process's memory, within
//! the bounds of [`events`].

mod events;

pub(crate) use events::StreamEvents;

use events::{common_stream, parse_event_id};
use futures_util::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionError};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use std::sync::Arc;

/// How many of the newest events of a session's common stream a new standalone stream starts
/// with (rmcp's own cache kept as many).
pub const COMMON_REPLAYED: usize = 16;

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
        self.events.forget_session(id);
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
        let request = match &message {
            ClientJsonRpcMessage::Request(r) => r.id.to_string(),
            _ => String::new(),
        };
        let stream = self.sessions.create_stream(id, message).await?;
        // The first event (the priming one) names the stream: it is this request's.
        let (events, session) = (self.events.clone(), id.to_string());
        let mut claimed = false;
        Ok(stream.inspect(move |event| {
            if let (false, Some(event_id)) = (claimed, &event.event_id) {
                events.claim(event_id, &session, request.clone());
                claimed = true;
            }
        }))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        // A cancelled call gets no answer: its stream ends.
        if let ClientJsonRpcMessage::Notification(n) = &message {
            if let ClientNotification::CancelledNotification(c) = &n.notification {
                if let Some(request) = &c.params.request_id {
                    self.events.cancelled(id, &request.to_string());
                }
            }
        }
        self.sessions.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        let live = self.sessions.create_standalone_stream(id).await?;
        let kept = self.events.newest(&common_stream(id), COMMON_REPLAYED);
        Ok(futures_util::stream::iter(kept).chain(live))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        // The id of a standalone stream's priming event (rmcp gives it no stream's id): the
        // session's common stream, from its oldest kept event.
        if parse_event_id(&last_event_id).is_none() && last_event_id == "0" {
            let common = common_stream(id);
            let from = self.events.oldest(&common);
            return Ok(self.events.replay(&common, from).left_stream());
        }
        if !self.events.may_resume(&last_event_id, id) {
            return Err(SessionError::InvalidEventId.into());
        }
        Ok(self
            .sessions
            .resume(id, last_event_id)
            .await?
            .right_stream())
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.sessions.restore_session(id).await
    }
}
