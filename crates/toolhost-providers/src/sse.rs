//! The server-sent events parser of toolhost (model streams and MCP's event streams alike): it
//! takes bytes in chunks split anywhere and holds at most a bounded amount of them.
//!
//! Lines end in `\n`, `\r\n` or `\r` (a `\r` at the end of one chunk and a `\n` at the start of
//! the next are one line end). A line starting with `:` is a comment; a line without `:` is a
//! field with an empty value; a field this parser does not know is passed over, as the format
//! requires. `data:` lines are joined with `\n`; `id:` (unless it holds a NUL) and `retry:`
//! (digits only) are kept with their event; a blank line dispatches the event when it has any
//! of those fields. An event not closed by a blank line when the stream ends is dropped, so a
//! cut stream never yields half an event.
//!
//! One line, and the data of one event, are bounded by the parser's limit. What happens past it
//! is the parser's [`Overflow`]: a model stream refuses it ([`SseTooLong`], the stream cannot be
//! read on), an MCP stream reads the event through in pieces ([`SseItem::OversizedData`]) and
//! learns of its end with its other fields ([`SseItem::OversizedEnd`]), so that an answer too
//! large to hold can still be matched to its request.

/// The default bound on one line and on the data of one event: 16 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// A line or an event longer than the parser's limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} of the event stream passed the limit of {limit} bytes")]
pub struct SseTooLong {
    /// `one line` or `one event`.
    pub what: &'static str,
    /// The limit, in bytes.
    pub limit: usize,
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`; `None` when the event had no `data:` line.
    pub data: Option<String>,
    /// The event's `id:` field, if any.
    pub id: Option<String>,
    /// The event's `retry:` field (milliseconds), if any.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// The event's data, empty when it had none.
    pub fn text(&self) -> &str {
        self.data.as_deref().unwrap_or_default()
    }
}

/// What a parser does with a line or an event past its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Refuse it: [`SseParser::feed`] returns [`SseTooLong`].
    Refuse,
    /// Read it through: its data is given in pieces as it arrives, its end with its fields.
    PassThrough,
}

/// What a parser found in the bytes it was fed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A whole event within the limit.
    Event(SseEvent),
    /// The next bytes of the data of an event past the limit (`\n` between its lines), in
    /// order; the first piece starts with what the event had before it passed the limit.
    OversizedData(Vec<u8>),
    /// The end of an event past the limit: its fields other than the data (which is `None`),
    /// and how many bytes its data had.
    OversizedEnd(SseEvent, usize),
}

/// Incremental parser state.
#[derive(Debug)]
pub struct SseParser {
    limit: usize,
    overflow: Overflow,
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    event: SseEvent,
    /// Whether the event under way has any field that dispatches it.
    dispatches: bool,
    /// Set while the event under way is past the limit: the bytes of its data so far.
    oversized: Option<usize>,
    /// Set while the line under way is past the limit (pass-through only): whether it is a
    /// `data:` line, whose rest streams out; any other such line is passed over.
    long_line: Option<bool>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser at the start of a stream, with [`DEFAULT_MAX_EVENT_BYTES`] as its limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser at the start of a stream that refuses a line, or an event's data, longer than
    /// `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        Self::with_overflow(limit, Overflow::Refuse)
    }

    /// A parser at the start of a stream that treats a line, or an event's data, longer than
    /// `limit` bytes as `overflow` says.
    pub fn with_overflow(limit: usize, overflow: Overflow) -> Self {
        SseParser {
            limit,
            overflow,
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: SseEvent::default(),
            dispatches: false,
            oversized: None,
            long_line: None,
        }
    }

    /// Feeds the next bytes; returns the events they complete, in order, or the limit a line
    /// or an event passed (the stream cannot be read on after that). A refusing parser's
    /// items are all [`SseItem::Event`].
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseItem>, SseTooLong> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while let Some((&b, after)) = rest.split_first() {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    rest = after;
                    continue;
                }
            }
            let run = rest
                .iter()
                .position(|&c| c == b'\n' || c == b'\r')
                .unwrap_or(rest.len());
            if run > 0 {
                self.take(&rest[..run], &mut out)?;
                rest = &rest[run..];
                continue;
            }
            self.after_cr = b == b'\r';
            self.end_line(&mut out)?;
            rest = after;
        }
        Ok(out)
    }

    /// The end of the stream: an event under way is dropped, but one already past the limit
    /// (pass-through only) ends here, cut, so that whoever waits for it hears of it.
    pub fn finish(&mut self) -> Option<SseItem> {
        self.line.clear();
        self.long_line = None;
        let event = std::mem::take(&mut self.event);
        self.dispatches = false;
        self.oversized
            .take()
            .map(|bytes| SseItem::OversizedEnd(event, bytes))
    }

    /// The events completed so far as whole events only (a refusing parser's items).
    pub fn feed_events(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseTooLong> {
        Ok(self
            .feed(bytes)?
            .into_iter()
            .filter_map(|item| match item {
                SseItem::Event(event) => Some(event),
                _ => None,
            })
            .collect())
    }

    /// Adds bytes of the line under way (no line end among them).
    fn take(&mut self, bytes: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseTooLong> {
        match self.long_line {
            Some(true) => {
                *self.oversized.get_or_insert(0) += bytes.len();
                out.push(SseItem::OversizedData(bytes.to_vec()));
                return Ok(());
            }
            Some(false) => return Ok(()),
            None => {}
        }
        if self.line.len() + bytes.len() <= self.limit {
            self.line.extend_from_slice(bytes);
            return Ok(());
        }
        if self.overflow == Overflow::Refuse {
            return Err(SseTooLong {
                what: "one line",
                limit: self.limit,
            });
        }
        // A line past the limit: a data line's value streams out from here on, any other line
        // (an endless comment, a huge id) is passed over.
        self.line.extend_from_slice(bytes);
        let line = std::mem::take(&mut self.line);
        let line = self.without_bom(line);
        let (field, value) = split_field(&line);
        let is_data = field == b"data";
        self.long_line = Some(is_data);
        if is_data {
            self.oversized_line(value, out);
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseItem>) -> Result<(), SseTooLong> {
        if self.long_line.take().is_some() {
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        let line = self.without_bom(line);
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = split_field(&line);
        match field {
            b"data" => self.data_line(value, out)?,
            b"event" => {
                self.event.event = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"id" if !value.contains(&0) => {
                self.event.id = Some(String::from_utf8_lossy(value).into_owned());
                self.dispatches = true;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or_default().parse() {
                    self.event.retry = Some(ms);
                    self.dispatches = true;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A whole `data:` line's value.
    fn data_line(&mut self, value: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseTooLong> {
        let had = self.event.data.as_ref().map_or(0, |d| d.len() + 1);
        if self.oversized.is_some() || had + value.len() > self.limit {
            if self.overflow == Overflow::Refuse {
                return Err(SseTooLong {
                    what: "one event",
                    limit: self.limit,
                });
            }
            self.oversized_line(value, out);
            return Ok(());
        }
        let data = self.event.data.get_or_insert_with(String::new);
        if had > 0 {
            data.push('\n');
        }
        data.push_str(&String::from_utf8_lossy(value));
        self.dispatches = true;
        Ok(())
    }

    /// Gives `value`, a data line's value (or its first piece), as data of an event past the
    /// limit; the first time, what the event held of its data goes out before it.
    fn oversized_line(&mut self, value: &[u8], out: &mut Vec<SseItem>) {
        let mut piece = match self.oversized {
            Some(_) => b"\n".to_vec(),
            None => match self.event.data.take() {
                Some(held) => {
                    let mut held = held.into_bytes();
                    held.push(b'\n');
                    held
                }
                None => Vec::new(),
            },
        };
        piece.extend_from_slice(value);
        *self.oversized.get_or_insert(0) += piece.len();
        self.dispatches = true;
        out.push(SseItem::OversizedData(piece));
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        let event = std::mem::take(&mut self.event);
        let dispatches = std::mem::take(&mut self.dispatches);
        match self.oversized.take() {
            Some(bytes) => out.push(SseItem::OversizedEnd(event, bytes)),
            None if dispatches => out.push(SseItem::Event(event)),
            None => {}
        }
    }

    /// The first line of the stream without the byte order mark it may start with.
    fn without_bom(&mut self, mut line: Vec<u8>) -> Vec<u8> {
        if !self.started {
            self.started = true;
            if line.starts_with(&[0xEF, 0xBB, 0xBF]) {
                line.drain(..3);
            }
        }
        line
    }
}

/// A line's field name and value (one space after the colon dropped); a line without a colon
/// is a field with an empty value.
fn split_field(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&b| b == b':') {
        Some(at) => {
            let value = &line[at + 1..];
            (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        chunks
            .iter()
            .flat_map(|c| p.feed_events(c).expect("within the limit"))
            .collect()
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: Some(data.to_owned()),
            ..SseEvent::default()
        }
    }

    #[test]
    fn data_comments_events_and_multiline() {
        let text = b": keep-alive\n\nevent: ping\ndata: {}\n\ndata: a\ndata: b\n\ndata: [DONE]\n\n";
        assert_eq!(
            all(&[text]),
            vec![ev(Some("ping"), "{}"), ev(None, "a\nb"), ev(None, "[DONE]")]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let text = "event: x\r\nid: 7\r\ndata: h\u{e9}llo\r\n\r\ndata:no-space\rdata: two\r\r\ndata: end\n\n";
        let bytes = text.as_bytes();
        let whole = all(&[bytes]);
        let first = SseEvent {
            id: Some("7".to_owned()),
            ..ev(Some("x"), "h\u{e9}llo")
        };
        assert_eq!(
            whole,
            vec![first, ev(None, "no-space\ntwo"), ev(None, "end")]
        );
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                assert_eq!(
                    all(&[&bytes[..i], &bytes[i..j], &bytes[j..]]),
                    whole,
                    "{i} {j}"
                );
            }
        }
    }

    #[test]
    fn ids_and_retry_times_are_kept_and_unknown_fields_passed_over() {
        let text = b"id: p1\nretry: 500\n\nid: a\0b\nretry: 5s\nfoo: bar\ndata\n\nevent: only\n\n";
        let got = all(&[text]);
        assert_eq!(
            got,
            vec![
                // A priming event: an id and a retry time, no data.
                SseEvent {
                    id: Some("p1".to_owned()),
                    retry: Some(500),
                    ..SseEvent::default()
                },
                // An id with a NUL and a retry time that is not digits are ignored; `data` alone
                // is a data line with an empty value.
                ev(None, ""),
            ]
        );
        assert_eq!(got[0].text(), "");
    }

    #[test]
    fn a_line_or_an_event_past_the_limit_is_refused() {
        let mut p = SseParser::with_limit(8);
        assert_eq!(p.feed(b"data: 12\n").unwrap(), vec![]);
        assert_eq!(
            p.feed(b"data: 123456789"),
            Err(SseTooLong {
                what: "one line",
                limit: 8
            })
        );
        // Every line within the limit, the event's data together past it.
        let mut p = SseParser::with_limit(10);
        assert_eq!(
            p.feed(b"data: 1234\ndata: 5678\ndata: 9abc\n"),
            Err(SseTooLong {
                what: "one event",
                limit: 10
            })
        );
        // Comments count too: an endless one is an endless line.
        let mut p = SseParser::with_limit(8);
        assert!(p.feed(b": keep-alive forever").is_err());
    }

    #[test]
    fn an_unfinished_event_is_dropped() {
        assert_eq!(
            all(&[b"data: {\"a\":1}\n\ndata: {\"b\""]),
            vec![ev(None, "{\"a\":1}")]
        );
        let mut p = SseParser::new();
        p.feed(b"data: {\"b\"").unwrap();
        assert_eq!(p.finish(), None);
    }

    /// The items of `chunks` through a pass-through parser of limit 16, with the pieces of each
    /// oversized event joined: (events, oversized data with its end).
    fn passed(chunks: &[&[u8]]) -> Vec<(Option<Vec<u8>>, SseEvent, usize)> {
        let mut p = SseParser::with_overflow(16, Overflow::PassThrough);
        let mut out = Vec::new();
        let mut pieces: Option<Vec<u8>> = None;
        let mut take = |item: SseItem, out: &mut Vec<_>| match item {
            SseItem::Event(e) => out.push((None, e, 0)),
            SseItem::OversizedData(bytes) => pieces
                .get_or_insert_with(Vec::new)
                .extend_from_slice(&bytes),
            SseItem::OversizedEnd(e, n) => out.push((pieces.take(), e, n)),
        };
        for chunk in chunks {
            for item in p
                .feed(chunk)
                .expect("a pass-through parser refuses nothing")
            {
                take(item, &mut out);
            }
        }
        if let Some(item) = p.finish() {
            take(item, &mut out);
        }
        out
    }

    #[test]
    fn an_event_past_the_limit_is_read_through_in_pieces_with_its_fields() {
        let text = b"data: 0123456789\nid: big\ndata: abcdefghijklmnopqrstuvwxyz\ndata: end\n\n: a comment far longer than sixteen bytes\ndata: small\n\n";
        let whole = passed(&[text]);
        let data = b"0123456789\nabcdefghijklmnopqrstuvwxyz\nend".to_vec();
        assert_eq!(
            whole,
            vec![
                (
                    Some(data.clone()),
                    SseEvent {
                        id: Some("big".to_owned()),
                        ..SseEvent::default()
                    },
                    data.len()
                ),
                (None, ev(None, "small"), 0),
            ]
        );
        for i in 0..=text.len() {
            for j in i..=text.len() {
                assert_eq!(
                    passed(&[&text[..i], &text[i..j], &text[j..]]),
                    whole,
                    "{i} {j}"
                );
            }
        }
    }

    #[test]
    fn an_oversized_event_cut_by_the_end_of_the_stream_still_ends() {
        let got = passed(&[b"id: 9\ndata: 0123456789abcdefghij"]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.as_deref(), Some(&b"0123456789abcdefghij"[..]));
        assert_eq!(got[0].1.id.as_deref(), Some("9"));
        assert_eq!(got[0].2, 20);
    }
}
