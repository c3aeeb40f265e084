//! A server-sent events parser that takes bytes in chunks split anywhere.
//!
//! Lines end in `\n`, `\r\n` or `\r` (a `\r` at the end of one chunk and a `\n` at the start of
//! the next are one line end). A line starting with `:` is a comment. `data:` lines are joined
//! with `\n`; a blank line dispatches the event. An event not closed by a blank line when the
//! stream ends is dropped, as the format requires, so a cut stream never yields half an event.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes; returns the events they complete, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
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
            return;
        }
        if line[0] == b':' {
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        chunks.iter().flat_map(|c| p.feed(c)).collect()
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
    fn an_unfinished_event_is_dropped() {
        assert_eq!(
            all(&[b"data: {\"a\":1}\n\ndata: {\"b\""]),
            vec![ev(None, "{\"a\":1}")]
        );
    }
}
