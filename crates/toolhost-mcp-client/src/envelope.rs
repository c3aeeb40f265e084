//! What a JSON-RPC message is, read from its bytes without parsing it: its `id` and whether it
//! names a `method`. A message toolhost cannot take whole (too large to hold, nested too deep
//! to parse, not the shape of a message) is still answered through these: a response's waiting
//! request gets an error at once, a request from the server is refused, instead of either
//! waiting out its timeout.
//!
//! The scan keeps a few hundred bytes whatever the message's size, so it can run over a line
//! while the line is read and thrown away.

use rmcp::model::{ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};

/// The largest message read from a server (a JSON answer, an event of an event stream, a line
/// of a program's output): a server cannot make toolhost hold more than this for one message.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The `data` of an error answer toolhost made in place of one it could not read, so that a
/// call says the server answered (and what was wrong with it) rather than that it refused.
pub(crate) const UNREAD_ANSWER_MARK: &str = "toolhost:unread-answer";

/// The error answer to request `id` that stands for the server's answer toolhost could not
/// read, saying `why`.
pub(crate) fn unread_answer(id: RequestId, why: &str) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("toolhost could not read the server's answer: {why}"),
            Some(serde_json::Value::String(UNREAD_ANSWER_MARK.to_owned())),
        ),
        Some(id),
    )
}

/// Why a message of at least `bytes` bytes is not read.
pub(crate) fn too_large(bytes: usize) -> String {
    format!(
        "it is a message of more than {} bytes (at least {bytes}), toolhost's limit for one MCP message",
        MAX_MESSAGE_BYTES
    )
}

/// Why a message the JSON parser refused (`error`) is not read.
pub(crate) fn not_parsed(error: &serde_json::Error) -> String {
    if error.to_string().starts_with("recursion limit exceeded") {
        format!("its JSON is nested deeper than the parser's limit of 128 levels ({error})")
    } else {
        format!("it is not an MCP message: {error}")
    }
}

/// The most bytes of one top-level value (`id` or `method`) that are kept.
const KEPT_VALUE_BYTES: usize = 512;
/// The longest top-level key that is kept (`method` is the longest one looked for).
const KEPT_KEY_BYTES: usize = 16;

/// What the scan found so far: feed it every byte of the message in order, then read
/// [`Envelope::id`] and [`Envelope::names_method`].
#[derive(Default)]
pub(crate) struct Envelope {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1 of an object, the next string is a key.
    expect_key: bool,
    /// Inside a top-level key's string.
    in_key: bool,
    key: Vec<u8>,
    key_too_long: bool,
    /// The top-level value being kept (the key was `id` or `method`).
    value: Option<(Field, Vec<u8>)>,
    id: Option<Vec<u8>>,
    method: bool,
    /// It has a top-level `result` or `error`: it is an answer.
    outcome: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Id,
    Method,
}

impl Envelope {
    /// Scans the next bytes of the message.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if self.in_string {
            if self.in_key {
                if !self.escaped && byte == b'"' {
                    self.in_string = false;
                    self.in_key = false;
                } else if self.key.len() < KEPT_KEY_BYTES {
                    self.key.push(byte);
                } else {
                    self.key_too_long = true;
                }
            } else {
                self.keep(byte);
                if !self.escaped && byte == b'"' {
                    self.in_string = false;
                }
            }
            self.escaped = !self.escaped && byte == b'\\';
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.in_key = true;
                    self.key.clear();
                    self.key_too_long = false;
                } else {
                    self.keep(byte);
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = byte == b'{';
                } else {
                    self.keep(byte);
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                } else {
                    self.keep(byte);
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b',' if self.depth == 1 => {
                self.end_value();
                self.expect_key = true;
            }
            b':' if self.depth == 1 => {
                self.expect_key = false;
                let field = match (&self.key[..], self.key_too_long) {
                    (b"id", false) => Some(Field::Id),
                    (b"method", false) => Some(Field::Method),
                    (b"result" | b"error", false) => {
                        self.outcome = true;
                        None
                    }
                    _ => None,
                };
                self.value = field.map(|field| (field, Vec::new()));
            }
            _ => self.keep(byte),
        }
    }

    /// Keeps a byte of the top-level value under way, if it is one of those looked for.
    fn keep(&mut self, byte: u8) {
        if let Some((_, value)) = &mut self.value {
            if value.len() < KEPT_VALUE_BYTES {
                value.push(byte);
            }
        }
    }

    fn end_value(&mut self) {
        match self.value.take() {
            Some((Field::Id, value)) => self.id = Some(value),
            Some((Field::Method, _)) => self.method = true,
            None => {}
        }
    }

    /// The message's `id`, when it has one that is a JSON-RPC id (a number or a string).
    pub(crate) fn id(&self) -> Option<RequestId> {
        serde_json::from_slice(self.id.as_deref()?.trim_ascii()).ok()
    }

    /// Whether the message names a `method` (a request or a notification, not a response).
    pub(crate) fn names_method(&self) -> bool {
        self.method
    }

    /// Whether the message has a top-level `result` or `error`.
    pub(crate) fn has_outcome(&self) -> bool {
        self.outcome
    }

    /// The request the message answers: its id, when it has a top-level `result` or `error`
    /// and names no method. A line that merely has an `id` (a server's log line, say) answers
    /// nothing.
    pub(crate) fn answers(&self) -> Option<RequestId> {
        (self.outcome && !self.method).then(|| self.id()).flatten()
    }

    /// The id of the request the message is, when it names a method and has an id.
    pub(crate) fn request(&self) -> Option<RequestId> {
        self.method.then(|| self.id()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn scan(text: &str) -> Envelope {
        let mut envelope = Envelope::default();
        // Fed in pieces, as a line is read.
        for piece in text.as_bytes().chunks(3) {
            envelope.feed(piece);
        }
        envelope
    }

    #[test]
    fn the_id_is_found_before_or_after_the_result() {
        let first = scan(r#"{"jsonrpc":"2.0","id":7,"result":{"id":99,"x":[1,{"id":3}]}}"#);
        assert_eq!(first.id(), Some(NumberOrString::Number(7)));
        assert!(!first.names_method());
        let last = scan(
            r#"{"result":{"content":[{"text":"a \"id\": 5, }"}]}, "jsonrpc":"2.0", "id" : "k-1" }"#,
        );
        assert_eq!(last.id(), Some(NumberOrString::String("k-1".into())));
    }

    #[test]
    fn a_request_names_its_method_and_a_notification_has_no_id() {
        let request = scan(r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}"#);
        assert!(request.names_method());
        assert_eq!(request.id(), Some(NumberOrString::Number(1)));
        let notification = scan(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#);
        assert!(notification.names_method());
        assert_eq!(notification.id(), None);
    }

    #[test]
    fn nesting_far_past_any_parser_limit_costs_nothing() {
        let deep = format!(
            r#"{{"id":4,"result":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let envelope = scan(&deep);
        assert_eq!(envelope.id(), Some(NumberOrString::Number(4)));
    }

    #[test]
    fn only_a_message_with_a_result_or_an_error_answers() {
        assert_eq!(
            scan(r#"{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"x"}}"#).answers(),
            Some(NumberOrString::Number(5))
        );
        assert_eq!(scan(r#"{"id":5,"status":"ok"}"#).answers(), None);
        assert_eq!(
            scan(r#"{"id":5,"method":"ping","result":1}"#).answers(),
            None
        );
        assert_eq!(
            scan(r#"{"id":5,"method":"ping"}"#).request(),
            Some(NumberOrString::Number(5))
        );
    }

    #[test]
    fn an_id_that_is_no_json_rpc_id_is_none() {
        assert_eq!(scan(r#"{"id":{"a":1},"result":{}}"#).id(), None);
        assert_eq!(scan(r#"[{"id":1}]"#).id(), None);
        assert_eq!(scan("not json at all").id(), None);
    }
}
