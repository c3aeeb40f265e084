//! MCP's streamable HTTP transport on the HTTP client the embedding program gives.
//!
//! The protocol (sessions, their recovery, server-sent event streams and their resumption,
//! `server/discover`) is the SDK's (`rmcp`'s streamable HTTP client transport); this module
//! only carries its requests over a [`Fetcher`], so that the runtime links no HTTP client or
//! TLS stack of its own. A JSON answer is read whole, an event stream event by event (see
//! `http_events`), each up to [`MAX_MESSAGE_BYTES`]; an answer toolhost cannot read
//! (too large, too deep) is an error answer to the request waiting for it.

use super::envelope::{not_parsed, too_large, unread_answer};
use super::http_events::events;
use super::oauth::Authorizer;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use toolhost_providers::fetch::{FetchRequest, Fetcher, OpenResponse};

/// The header naming an MCP session.
const SESSION_ID: &str = "mcp-session-id";
/// The header resuming an event stream after the last event seen.
const LAST_EVENT_ID: &str = "last-event-id";
/// How much of an error answer is quoted.
const QUOTED_BYTES: usize = 500;
pub use super::envelope::MAX_MESSAGE_BYTES;

/// Why an HTTP exchange with an MCP server failed, in one sentence.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpExchangeError(String);

/// The SDK's HTTP client contract, carried out by a [`Fetcher`], with the server's OAuth
/// tokens when it has them.
#[derive(Clone)]
pub struct FetcherClient {
    http: Arc<dyn Fetcher>,
    authorizer: Option<Arc<Authorizer>>,
}

type Failure = StreamableHttpError<HttpExchangeError>;

fn failed(why: impl std::fmt::Display) -> Failure {
    StreamableHttpError::Client(HttpExchangeError(why.to_string()))
}

fn header<'a>(answer: &'a OpenResponse, name: &str) -> Option<&'a str> {
    answer
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn is_media(content_type: Option<&str>, media: &str) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
    })
}

/// The whole body of an answer, or `Err(bytes)` once it is over [`MAX_MESSAGE_BYTES`] (the
/// rest is not read).
async fn read_all(answer: &mut OpenResponse) -> Result<Result<Vec<u8>, usize>, Failure> {
    let mut body = Vec::new();
    while let Some(piece) = answer.body.recv().await {
        body.extend(piece.map_err(failed)?);
        if body.len() > MAX_MESSAGE_BYTES {
            return Ok(Err(body.len()));
        }
    }
    Ok(Ok(body))
}

impl FetcherClient {
    /// Carries requests over `http`.
    pub fn new(http: Arc<dyn Fetcher>) -> Self {
        FetcherClient {
            http,
            authorizer: None,
        }
    }

    /// The same client, sending the bearer tokens of `authorizer` if given.
    pub(crate) fn with_oauth(mut self, authorizer: Option<Arc<Authorizer>>) -> Self {
        self.authorizer = authorizer;
        self
    }

    /// Sends `request`; with OAuth, with the current token, and once more with a renewed one
    /// when the server refuses it (401, or 403 asking for more scope).
    async fn send(&self, request: FetchRequest) -> Result<OpenResponse, Failure> {
        let Some(authorizer) = &self.authorizer else {
            return self.http.open(request).await.map_err(failed);
        };
        let mut renewed = false;
        loop {
            let token = authorizer.bearer().await;
            let mut attempt = request.clone();
            if let Some(token) = &token {
                attempt
                    .headers
                    .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
                attempt
                    .headers
                    .push(("authorization".to_owned(), format!("Bearer {token}")));
            }
            let answer = self.http.open(attempt).await.map_err(failed)?;
            let challenge = header(&answer, "www-authenticate").map(str::to_owned);
            let wants_scope = answer.status == 403
                && challenge
                    .as_deref()
                    .is_some_and(|c| c.contains("insufficient_scope"));
            if !(answer.status == 401 || wants_scope) {
                // Let through: an earlier refusal no longer stands.
                authorizer.take_refusal();
                return Ok(answer);
            }
            if renewed {
                return Ok(answer);
            }
            authorizer
                .recover(answer.status, challenge.as_deref(), token.as_deref())
                .await
                .map_err(failed)?;
            renewed = true;
        }
    }

    /// A request to `uri` with the SDK's headers and the session's.
    fn request(
        method: &str,
        uri: &str,
        session: Option<&str>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> FetchRequest {
        let mut headers: Vec<(String, String)> = custom
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        if let Some(token) = auth {
            headers.push(("authorization".to_owned(), format!("Bearer {token}")));
        }
        if let Some(session) = session {
            headers.push((SESSION_ID.to_owned(), session.to_owned()));
        }
        FetchRequest {
            method: method.to_owned(),
            url: uri.to_owned(),
            headers,
            body: None,
        }
    }

    /// Says what an answer that is not what the SDK expects was: its status and the start of
    /// its body.
    async fn unexpected(mut answer: OpenResponse) -> Failure {
        let status = answer.status;
        let body = match read_all(&mut answer).await {
            Ok(Ok(body)) => body,
            Ok(Err(bytes)) => format!("(a body of more than {bytes} bytes)").into_bytes(),
            Err(_) => Vec::new(),
        };
        let mut quoted = String::from_utf8_lossy(&body).into_owned();
        if quoted.len() > QUOTED_BYTES {
            let mut end = QUOTED_BYTES;
            while !quoted.is_char_boundary(end) {
                end -= 1;
            }
            quoted.truncate(end);
            quoted.push('…');
        }
        StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
            "HTTP {status}: {}",
            quoted.trim()
        )))
    }
}

impl StreamableHttpClient for FetcherClient {
    type Error = HttpExchangeError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let mut request = Self::request(
            "POST",
            &uri,
            session_id.as_deref(),
            auth_header,
            custom_headers,
        );
        request
            .headers
            .push(("content-type".to_owned(), "application/json".to_owned()));
        request.headers.push((
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ));
        request.body = Some(serde_json::to_vec(&message)?);
        let waiting = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let mut answer = self.send(request).await?;
        let status = answer.status;
        if status == 202 || status == 204 {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == 404 && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = header(&answer, SESSION_ID).map(str::to_owned);
        let content_type = header(&answer, "content-type").map(str::to_owned);
        if (200..300).contains(&status) && is_media(content_type.as_deref(), "text/event-stream") {
            return Ok(StreamableHttpPostResponse::Sse(
                events(answer.body, waiting),
                session,
            ));
        }
        if is_media(content_type.as_deref(), "application/json") {
            // An answer toolhost cannot read is still the answer to the request: an error
            // answer to it at once, rather than a failure the SDK retries or reports as a
            // transport's.
            let unread = |why: String| match &waiting {
                Some(id) => Ok(StreamableHttpPostResponse::Json(
                    unread_answer(id.clone(), &why),
                    session.clone(),
                )),
                None => Err(failed(format!(
                    "toolhost could not read the server's answer: {why}"
                ))),
            };
            let body = match read_all(&mut answer).await? {
                Ok(body) => body,
                Err(bytes) => return unread(too_large(bytes)),
            };
            // A failure may still be a JSON-RPC error the SDK reports as the server's.
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(message) => Ok(StreamableHttpPostResponse::Json(message, session)),
                Err(_) if body.is_empty() && (200..300).contains(&status) => {
                    Ok(StreamableHttpPostResponse::Accepted)
                }
                Err(e) if (200..300).contains(&status) => unread(not_parsed(&e)),
                Err(_) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!(
                        "HTTP {status}: {}",
                        String::from_utf8_lossy(&body[..body.len().min(QUOTED_BYTES)])
                    ),
                ))),
            };
        }
        if (200..300).contains(&status) {
            let Ok(body) = read_all(&mut answer).await? else {
                return Err(StreamableHttpError::UnexpectedContentType(content_type));
            };
            if body.is_empty() {
                return Ok(StreamableHttpPostResponse::Accepted);
            }
            return Err(StreamableHttpError::UnexpectedContentType(content_type));
        }
        Err(Self::unexpected(answer).await)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        let request = Self::request(
            "DELETE",
            &uri,
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        let answer = self.send(request).await?;
        match answer.status {
            405 => Err(StreamableHttpError::ServerDoesNotSupportDeleteSession),
            // Gone already is what was asked.
            200..=299 | 404 => Ok(()),
            _ => Err(Self::unexpected(answer).await),
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        let mut request = Self::request(
            "GET",
            &uri,
            session_id.as_deref(),
            auth_header,
            custom_headers,
        );
        request
            .headers
            .push(("accept".to_owned(), "text/event-stream".to_owned()));
        if let Some(last) = last_event_id {
            request.headers.push((LAST_EVENT_ID.to_owned(), last));
        }
        let answer = self.send(request).await?;
        if answer.status == 405 {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if answer.status == 404 && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = header(&answer, "content-type").map(str::to_owned);
        if (200..300).contains(&answer.status)
            && is_media(content_type.as_deref(), "text/event-stream")
        {
            return Ok(events(answer.body, None));
        }
        if (200..300).contains(&answer.status) {
            return Err(StreamableHttpError::UnexpectedContentType(content_type));
        }
        Err(Self::unexpected(answer).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn answer(pieces: Vec<Vec<u8>>) -> OpenResponse {
        let (sender, receiver) = tokio::sync::mpsc::channel(pieces.len().max(1));
        for piece in pieces {
            sender.try_send(Ok(piece)).unwrap();
        }
        OpenResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: receiver,
        }
    }

    #[tokio::test]
    async fn events_are_read_across_pieces() {
        let mut stream = events(
            answer(vec![
                b"data: {\"a\":".to_vec(),
                b"1}\r\n\r\ndata: 2\n\n".to_vec(),
            ])
            .body,
            None,
        );
        assert_eq!(
            stream.next().await.unwrap().unwrap().data.as_deref(),
            Some("{\"a\":1}")
        );
        assert_eq!(
            stream.next().await.unwrap().unwrap().data.as_deref(),
            Some("2")
        );
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn a_json_answer_larger_than_the_cap_is_refused() {
        let mut big = answer(vec![vec![b' '; MAX_MESSAGE_BYTES], b"{}".to_vec()]);
        assert_eq!(
            read_all(&mut big).await.unwrap(),
            Err(MAX_MESSAGE_BYTES + 2)
        );
        let mut small = answer(vec![b"{}".to_vec()]);
        assert_eq!(read_all(&mut small).await.unwrap(), Ok(b"{}".to_vec()));
    }
}
