//! A server's event stream (`text/event-stream`), read event by event with the workspace's one
//! event-stream parser ([`toolhost_providers::sse`]), each held up to [`MAX_MESSAGE_BYTES`].
//!
//! Every event the server sends ends somewhere, as on standard input and output (see
//! [`super::stdio`]): an event too large to hold is read through in bounded memory and scanned
//! for its id, an event whose data is not a message toolhost can read is looked at for one; a
//! response becomes an error answer to the request waiting for it, naming the limit. Nothing of
//! such an event reaches the SDK, which would otherwise drop it without a word (and, after an
//! error in the stream, resume it and be sent the same event again).

use super::envelope::MAX_MESSAGE_BYTES;
use super::envelope::{not_parsed, too_large, unread_answer, Envelope};
use futures::stream::{BoxStream, StreamExt};
use rmcp::model::{RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::SseError;
use sse_stream::Sse;
use std::collections::VecDeque;
use tokio::sync::mpsc::Receiver;
use toolhost_providers::fetch::FetchError;
use toolhost_providers::sse::{Overflow, SseEvent, SseItem, SseParser};

/// The pieces of an answer's body, as the fetcher gives them.
type Body = Receiver<Result<Vec<u8>, FetchError>>;

/// The answer's body as a stream of server-sent events. `waiting` is the request the stream
/// answers (a POST's), to which an unreadable event that names no id is attributed; `None`
/// for the stream a GET opens.
pub(super) fn events(
    body: Body,
    waiting: Option<RequestId>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let reader = EventReader {
        body,
        parser: SseParser::with_overflow(MAX_MESSAGE_BYTES, Overflow::PassThrough),
        scan: None,
        waiting,
        ready: VecDeque::new(),
        ended: false,
    };
    futures::stream::unfold(reader, |mut reader| async move {
        let next = reader.next().await?;
        Some((next, reader))
    })
    .boxed()
}

/// `event` as the SDK takes it when its data is a message toolhost can read (or it has none);
/// else an event whose data is the error answer to the request it answers, if it can be told
/// which.
fn readable(event: SseEvent, waiting: Option<&RequestId>) -> Sse {
    let event = Sse {
        event: event.event,
        data: event.data,
        id: event.id,
        retry: event.retry,
    };
    // An event without data (a stream's priming event, which only carries its id and the
    // retry time) is no message.
    let Some(data) = event.data.as_deref().filter(|d| !d.trim().is_empty()) else {
        return event;
    };
    let Err(e) = serde_json::from_str::<ServerJsonRpcMessage>(data) else {
        return event;
    };
    let mut envelope = Envelope::default();
    envelope.feed(data.as_bytes());
    match answered(&envelope, waiting, false) {
        // In the event's place, with its id and retry time: the stream resumes after it.
        Some(id) => Sse {
            data: serde_json::to_string(&unread_answer(id, &not_parsed(&e))).ok(),
            ..event
        },
        // A request or notification: the SDK drops what it cannot read; nobody waits for it.
        None => event,
    }
}

/// The request an unreadable message answers: one with a top-level `result` or `error` and no
/// method answers its own id, else (its id unreadable) the waiting request; so does an event
/// too large to hold that names no method (a stream opened for a request answers it). Anything
/// else (a request, a notification, data that is no message at all) answers nothing: the SDK
/// passes it over, as before.
fn answered(
    envelope: &Envelope,
    waiting: Option<&RequestId>,
    oversized: bool,
) -> Option<RequestId> {
    if envelope.names_method() || !(envelope.has_outcome() || oversized) {
        return None;
    }
    envelope.answers().or_else(|| waiting.cloned())
}

struct EventReader {
    body: Body,
    /// The workspace's one event-stream parser, reading an event past the limit through.
    parser: SseParser,
    /// Set while an event past the limit is read through: the scan of its data so far.
    scan: Option<Envelope>,
    waiting: Option<RequestId>,
    /// Events read and not yet taken.
    ready: VecDeque<Sse>,
    ended: bool,
}

impl EventReader {
    /// The next event of the stream; `None` at its end.
    async fn next(&mut self) -> Option<Result<Sse, SseError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            if self.ended {
                return None;
            }
            let items = match self.body.recv().await {
                Some(Ok(piece)) => match self.parser.feed(&piece) {
                    Ok(items) => items,
                    Err(e) => {
                        self.ended = true;
                        return Some(Err(SseError::Body(Box::new(e))));
                    }
                },
                Some(Err(why)) => {
                    self.ended = true;
                    return Some(Err(SseError::Body(Box::new(why))));
                }
                None => {
                    self.ended = true;
                    // An event past the limit cut by the end still answers whoever waits.
                    self.parser.finish().into_iter().collect()
                }
            };
            for item in items {
                self.take(item);
            }
        }
    }

    fn take(&mut self, item: SseItem) {
        match item {
            SseItem::Event(event) => {
                let event = readable(event, self.waiting.as_ref());
                self.ready.push_back(event);
            }
            SseItem::OversizedData(bytes) => {
                self.scan.get_or_insert_with(Envelope::default).feed(&bytes);
            }
            // In the event's place, with its id and retry time: the stream resumes after it.
            SseItem::OversizedEnd(event, bytes) => {
                let scan = self.scan.take().unwrap_or_default();
                if let Some(id) = answered(&scan, self.waiting.as_ref(), true) {
                    let answer = unread_answer(id, &too_large(bytes));
                    self.ready.push_back(Sse {
                        event: event.event,
                        data: serde_json::to_string(&answer).ok(),
                        id: event.id,
                        retry: event.retry,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{JsonRpcMessage, NumberOrString};

    fn body(pieces: Vec<Vec<u8>>) -> Body {
        let (send, receive) = tokio::sync::mpsc::channel(pieces.len().max(1));
        for piece in pieces {
            send.try_send(Ok(piece)).unwrap();
        }
        receive
    }

    async fn all(pieces: Vec<Vec<u8>>, waiting: Option<RequestId>) -> Vec<Sse> {
        events(body(pieces), waiting)
            .map(|e| e.unwrap())
            .collect()
            .await
    }

    fn message(event: &Sse) -> ServerJsonRpcMessage {
        serde_json::from_str(event.data.as_deref().unwrap()).unwrap()
    }

    #[tokio::test]
    async fn events_split_anywhere_are_passed_on_whole() {
        let text = b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\nid: e2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\r\n\r\n";
        for split in 1..text.len() {
            let pieces = vec![text[..split].to_vec(), text[split..].to_vec()];
            let got = all(pieces, None).await;
            assert_eq!(got.len(), 2, "split at {split}");
            assert_eq!(got[1].id.as_deref(), Some("e2"));
        }
    }

    #[tokio::test]
    async fn an_event_over_the_limit_is_an_error_answer_to_its_request() {
        let head = b"data: {\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"".to_vec();
        let filler = vec![b'x'; MAX_MESSAGE_BYTES / 4];
        let end = b"\"}]},\"jsonrpc\":\"2.0\",\"id\":12}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":13,\"result\":{}}\n\n".to_vec();
        let mut pieces = vec![head];
        pieces.extend(std::iter::repeat_n(filler, 5));
        pieces.push(end);
        let got = all(pieces, Some(NumberOrString::Number(12))).await;
        assert_eq!(got.len(), 2);
        let JsonRpcMessage::Error(error) = message(&got[0]) else {
            panic!("{:?}", got[0])
        };
        assert_eq!(error.id, Some(NumberOrString::Number(12)));
        assert!(
            error.error.message.contains("16777216 bytes"),
            "{}",
            error.error.message
        );
        assert!(matches!(message(&got[1]), JsonRpcMessage::Response(_)));
    }

    #[tokio::test]
    async fn an_event_over_the_limit_keeps_its_id_and_bare_carriage_returns_end_events() {
        let head = b"id: e7\rdata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"t\":\"".to_vec();
        let mut pieces = vec![head];
        pieces.extend(std::iter::repeat_n(vec![b'x'; MAX_MESSAGE_BYTES / 4], 5));
        pieces.push(b"\"}}\r\rdata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\r\r".to_vec());
        let got = all(pieces, None).await;
        assert_eq!(got.len(), 2, "{got:?}");
        // The stream resumes after the replaced event, not before it.
        assert_eq!(got[0].id.as_deref(), Some("e7"));
        let JsonRpcMessage::Error(error) = message(&got[0]) else {
            panic!("{:?}", got[0])
        };
        assert_eq!(error.id, Some(NumberOrString::Number(4)));
        assert!(matches!(message(&got[1]), JsonRpcMessage::Response(_)));
    }

    #[tokio::test]
    async fn a_priming_event_without_data_is_passed_on_as_it_is() {
        let got = all(
            vec![b"id: p1\nretry: 500\ndata: \n\n".to_vec()],
            Some(NumberOrString::Number(1)),
        )
        .await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].id.as_deref(), Some("p1"));
        assert_eq!(got[0].retry, Some(500));
        assert_eq!(got[0].data.as_deref().map(str::trim), Some(""));
    }

    #[tokio::test]
    async fn an_endless_event_answers_the_waiting_request_when_the_stream_ends() {
        let endless = vec![b'x'; MAX_MESSAGE_BYTES / 2 + 1];
        let pieces = vec![b"data: ".to_vec(), endless.clone(), endless];
        let got = all(pieces, Some(NumberOrString::Number(5))).await;
        let JsonRpcMessage::Error(error) = message(&got[0]) else {
            panic!("{:?}", got[0])
        };
        assert_eq!(error.id, Some(NumberOrString::Number(5)));
    }

    #[tokio::test]
    async fn data_that_is_no_message_is_passed_over_as_before() {
        let pieces = vec![b"data: ping\n\ndata: {\"id\":3,\"status\":\"ok\"}\n\n".to_vec()];
        let got = all(pieces, Some(NumberOrString::Number(3))).await;
        assert_eq!(got[0].data.as_deref(), Some("ping"));
        assert_eq!(got[1].data.as_deref(), Some("{\"id\":3,\"status\":\"ok\"}"));
    }

    #[tokio::test]
    async fn an_event_nested_too_deep_answers_the_waiting_request() {
        let deep = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"result\":{{\"x\":{}{}}}}}\n\n",
            "[".repeat(5_000),
            "]".repeat(5_000)
        );
        let got = all(vec![deep.into_bytes()], None).await;
        let JsonRpcMessage::Error(error) = message(&got[0]) else {
            panic!("{:?}", got[0])
        };
        assert_eq!(error.id, Some(NumberOrString::String("r".into())));
        assert!(
            error.error.message.contains("128 levels"),
            "{}",
            error.error.message
        );
    }
}
