//! A server's event stream (`text/event-stream`), read event by event, each held up to
//! [`MAX_MESSAGE_BYTES`].
//!
//! Every event the server sends ends somewhere, as on standard input and output (see
//! [`super::stdio`]): an event too large to hold is read through in bounded memory and scanned
//! for its id, an event whose data is not a message toolhost can read is looked at for one; a
//! response becomes an error answer to the request waiting for it, naming the limit. Nothing of
//! such an event reaches the SDK, which would otherwise drop it without a word (and, after an
//! error in the stream, resume it and be sent the same event again).

use super::envelope::{not_parsed, too_large, unread_answer, Envelope};
use super::http::MAX_MESSAGE_BYTES;
use futures::stream::{BoxStream, StreamExt};
use rmcp::model::{RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::SseError;
use sse_stream::{Sse, SseStream};
use tokio::sync::mpsc::Receiver;

/// The pieces of an answer's body, as the fetcher gives them.
type Body = Receiver<Result<Vec<u8>, String>>;

/// The answer's body as a stream of server-sent events. `waiting` is the request the stream
/// answers (a POST's), to which an unreadable event that names no id is attributed; `None`
/// for the stream a GET opens.
pub(super) fn events(
    body: Body,
    waiting: Option<RequestId>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let reader = EventReader {
        body,
        open: Vec::new(),
        tail: Vec::new(),
        discarding: None,
        waiting: waiting.clone(),
        ended: false,
    };
    let whole_events = futures::stream::unfold(reader, |mut reader| async move {
        let bytes = reader.next_events().await?;
        Some((bytes, reader))
    });
    SseStream::from_bytes_stream(whole_events)
        .map(move |event| event.map(|event| readable(event, waiting.as_ref())))
        .boxed()
}

/// `event` when its data is a message toolhost can read (or it has none); else an event whose
/// data is the error answer to the request it answers, if it can be told which.
fn readable(event: Sse, waiting: Option<&RequestId>) -> Sse {
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
    /// The bytes of the event under way (none of it passed on yet).
    open: Vec<u8>,
    /// The last bytes seen, to find a blank line split across two pieces.
    tail: Vec<u8>,
    /// Set while an event over the limit is read through: its scan and its size so far.
    discarding: Option<(Envelope, usize)>,
    waiting: Option<RequestId>,
    ended: bool,
}

impl EventReader {
    /// The next whole events of the stream (possibly none yet), as bytes for the SSE parser;
    /// `None` at its end.
    async fn next_events(&mut self) -> Option<Result<bytes::Bytes, std::io::Error>> {
        if self.ended {
            return None;
        }
        let piece = match self.body.recv().await {
            Some(Ok(piece)) => piece,
            Some(Err(why)) => {
                self.ended = true;
                return Some(Err(std::io::Error::other(why)));
            }
            None => {
                self.ended = true;
                // A last event without its blank line is still one, an unfinished one over the
                // limit too.
                let mut out = Vec::new();
                self.finish_event(&mut out);
                return (!out.is_empty()).then(|| Ok(bytes::Bytes::from(out)));
            }
        };
        let mut out = Vec::new();
        let mut rest = &piece[..];
        while !rest.is_empty() {
            let end = event_end(&self.tail, rest);
            let (segment, after) = rest.split_at(end.unwrap_or(rest.len()));
            self.take(segment);
            if end.is_some() {
                self.finish_event(&mut out);
            }
            rest = after;
        }
        Some(Ok(bytes::Bytes::from(out)))
    }

    /// Adds bytes of the event under way.
    fn take(&mut self, segment: &[u8]) {
        self.tail.extend_from_slice(segment);
        let keep = self.tail.len().saturating_sub(3);
        self.tail.drain(..keep);
        if let Some((envelope, bytes)) = &mut self.discarding {
            envelope.feed(segment);
            *bytes += segment.len();
        } else if self.open.len() + segment.len() > MAX_MESSAGE_BYTES {
            let mut envelope = Envelope::default();
            envelope.feed(&self.open);
            envelope.feed(segment);
            let bytes = self.open.len() + segment.len();
            self.open = Vec::new();
            self.discarding = Some((envelope, bytes));
        } else {
            self.open.extend_from_slice(segment);
        }
    }

    /// The event under way ended: passes it on, or the error answer in its place.
    fn finish_event(&mut self, out: &mut Vec<u8>) {
        self.tail.clear();
        match self.discarding.take() {
            None => out.append(&mut self.open),
            Some((envelope, bytes)) => {
                if let Some(id) = answered(&envelope, self.waiting.as_ref(), true) {
                    let answer = serde_json::to_string(&unread_answer(id, &too_large(bytes)))
                        .unwrap_or_default();
                    out.extend_from_slice(b"data: ");
                    out.extend_from_slice(answer.as_bytes());
                    out.extend_from_slice(b"\n\n");
                }
            }
        }
    }
}

/// Where in `piece` the first blank line (`\n\n` or `\n\r\n`) ends, counting the bytes seen
/// just before it (`tail`, at most 3).
fn event_end(tail: &[u8], piece: &[u8]) -> Option<usize> {
    let mut joined = Vec::with_capacity(tail.len() + 3);
    joined.extend_from_slice(tail);
    joined.extend_from_slice(&piece[..piece.len().min(3)]);
    let across = (0..joined.len()).find_map(|at| {
        let rest = &joined[at..];
        let len = if rest.starts_with(b"\n\n") {
            2
        } else if rest.starts_with(b"\n\r\n") {
            3
        } else {
            return None;
        };
        let end = at + len;
        (end > tail.len()).then(|| end - tail.len())
    });
    across.or_else(|| {
        piece.windows(2).enumerate().find_map(|(at, w)| {
            if w == b"\n\n" {
                Some(at + 2)
            } else if w == b"\n\r" && piece.get(at + 2) == Some(&b'\n') {
                Some(at + 3)
            } else {
                None
            }
        })
    })
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

    #[test]
    fn a_blank_line_is_found_within_a_piece_and_across_two() {
        assert_eq!(event_end(b"", b"data: 1\n\ndata: 2"), Some(9));
        assert_eq!(event_end(b"1\n", b"\ndata"), Some(1));
        assert_eq!(event_end(b"1\r\n", b"\r\nx"), Some(2));
        assert_eq!(event_end(b"\n", b"\r\n"), Some(2));
        assert_eq!(event_end(b"", b"data: 1\r\n"), None);
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
