//! A server-sent events parser that takes bytes in chunks split anywhere.
//!
//! Lines end in `\n`, `\r\n` or `\r` (a `\r` at the end of one chunk and a `\n` at the start of
//! the next are one line end). A line starting with `:` is a comment. `data:` lines are joined
//! with `\n`; a blank line dispatches the event. An event not closed by a blank line when the
//! stream ends is dropped, as the format requires, so a cut stream never yields half an event.
//!
//! One line, and the data of one event, are bounded ([`SseParser::with_limit`]): a server that
//! never ends a line cannot grow memory without bound, it gets an [`SseTooLong`] error instead.

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
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental parser state.
#[derive(Debug)]
pub struct SseParser {
    limit: usize,
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
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
        SseParser {
            limit,
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: None,
            data: String::new(),
            has_data: false,
        }
    }

    /// Feeds the next bytes; returns the events they complete, in order, or the limit a line
    /// or an event passed (the stream cannot be read on after that).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseTooLong> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out)?,
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out)?;
                }
                _ => {
                    if self.line.len() >= self.limit {
                        return Err(SseTooLong {
                            what: "one line",
                            limit: self.limit,
                        });
                    }
                    self.line.push(b)
                }
            }
        }
        Ok(out)
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseTooLong> {
        let mut line = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if line.starts_with(&[0xEF, 0xBB, 0xBF]) {
                line.drain(..3);
            }
        }
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event = None;
            self.has_data = false;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(SseTooLong {
                        what: "one event",
                        limit: self.limit,
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        chunks
            .iter()
            .flat_map(|c| p.feed(c).expect("within the limit"))
            .collect()
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
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
        let text =
            "event: x\r\ndata: h\u{e9}llo\r\n\r\ndata:no-space\rdata: two\r\r\ndata: end\n\n";
        let bytes = text.as_bytes();
        let whole = all(&[bytes]);
        assert_eq!(
            whole,
            vec![
                ev(Some("x"), "h\u{e9}llo"),
                ev(None, "no-space\ntwo"),
                ev(None, "end")
            ]
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
    }
}
