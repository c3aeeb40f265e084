//! The MCP transport to a server that is a program: JSON-RPC messages as lines on its standard
//! input and output.
//!
//! toolhost reads the lines itself, because every message the server writes must end somewhere:
//! - a line is held up to [`MAX_MESSAGE_BYTES`]; a longer one is read through and dropped as
//!   it comes, so memory stays bounded whatever the server writes;
//! - a line that cannot be taken (too long, nested deeper than the JSON parser goes, not the
//!   shape of a message) is still attributed by its `id` (see [`super::envelope`]): an answer
//!   becomes an error answer to the request waiting for it, at once and naming the limit; a
//!   request from the server is refused with a JSON-RPC error; anything else (a notification,
//!   a stray line) is noted in the server's log and passed over.
//!
//! The program is started in a process group of its own. Closing the transport closes its
//! standard input and gives it [`EXIT_GRACE`] to end, then SIGTERM and as long again, then
//! SIGKILL for the group; a transport dropped without closing kills the group at once.

use super::envelope::MAX_MESSAGE_BYTES;
use super::envelope::{not_parsed, too_large, unread_answer, Envelope};
use rmcp::model::{ErrorCode, ErrorData};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

/// How long a program is given to end once its standard input is closed, and again after
/// SIGTERM.
pub const EXIT_GRACE: Duration = Duration::from_secs(3);

/// A running server program as an MCP transport.
pub(crate) struct ChildTransport {
    child: Child,
    /// The program's process group (its pid), signalled as a whole.
    group: Option<u32>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    lines: LineReader,
    log: Arc<Mutex<VecDeque<String>>>,
}

impl ChildTransport {
    /// Starts `command` with piped standard streams in a process group of its own; the
    /// standard error is handed back for the caller to read. Lines toolhost passes over are
    /// noted in `log` (via `note`).
    pub(crate) fn spawn(
        mut command: tokio::process::Command,
        log: Arc<Mutex<VecDeque<String>>>,
    ) -> std::io::Result<(Self, ChildStderr)> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let taken = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (Some(stdin), Some(stdout), Some(stderr)) = taken else {
            return Err(std::io::Error::other(
                "the program's standard streams were not piped",
            ));
        };
        let group = child.id();
        Ok((
            Self {
                child,
                group,
                stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
                lines: LineReader::new(stdout),
                log,
            },
            stderr,
        ))
    }

    fn note(&self, line: String) {
        super::link::push_line(&self.log, format!("[toolhost] {line}"));
    }

    /// What to do with a line that could not be taken as a message: the error answer to pass
    /// on, if it was an answer; a request is refused to the server, anything else noted.
    fn unreadable(&self, envelope: &Envelope, why: String) -> Option<RxJsonRpcMessage<RoleClient>> {
        if let Some(id) = envelope.answers() {
            return Some(unread_answer(id, &why));
        }
        match envelope.request() {
            Some(id) => {
                self.note(format!("refused a request it could not read: {why}"));
                let refusal = TxJsonRpcMessage::<RoleClient>::error(
                    ErrorData::new(ErrorCode::INVALID_REQUEST, why, None),
                    Some(id),
                );
                // Written apart from `receive`, which may be dropped at any await: a refusal
                // cut in half would garble the next message on the server's input.
                let stdin = self.stdin.clone();
                tokio::spawn(async move { write_line(&stdin, &refusal).await });
                None
            }
            None => {
                self.note(format!("passed over a line it could not read: {why}"));
                None
            }
        }
    }
}

/// One message as one line on the program's standard input.
async fn write_line(
    stdin: &tokio::sync::Mutex<Option<ChildStdin>>,
    message: &TxJsonRpcMessage<RoleClient>,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    line.push(b'\n');
    let mut stdin = stdin.lock().await;
    let Some(stdin) = stdin.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            "the transport is closed",
        ));
    };
    stdin.write_all(&line).await?;
    stdin.flush().await
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        async move { write_line(&stdin, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.lines.next().await {
                Line::End => return None,
                Line::Failed(e) => {
                    self.note(format!("reading the server's output failed: {e}"));
                    return None;
                }
                Line::Oversized { envelope, bytes } => {
                    if let Some(answer) = self.unreadable(&envelope, too_large(bytes)) {
                        return Some(answer);
                    }
                }
                Line::Whole => {
                    let parsed = self.lines.take_whole();
                    match parsed {
                        Parsed::Blank => {}
                        Parsed::Message(message) => return Some(*message),
                        Parsed::Unreadable { envelope, why } => {
                            if let Some(answer) = self.unreadable(&envelope, why) {
                                return Some(answer);
                            }
                        }
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The end of its input is the MCP way to ask a program to end. A send blocked on a
        // program that stopped reading holds the input: then the signals ask instead.
        if let Ok(mut stdin) = tokio::time::timeout(EXIT_GRACE, self.stdin.lock()).await {
            drop(stdin.take());
        }
        if tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_ok()
        {
            self.group = None;
            return Ok(());
        }
        if let Some(group) = self.group {
            toolhost_programs::terminate_group(group);
        }
        if tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_err()
        {
            if let Some(group) = self.group {
                toolhost_programs::kill_group(group);
            }
            self.child.wait().await?;
        }
        self.group = None;
        Ok(())
    }
}

impl Drop for ChildTransport {
    fn drop(&mut self) {
        // Not closed: nothing waits for the program, so nothing of its group may outlive it.
        if let Some(group) = self.group.take() {
            toolhost_programs::kill_group(group);
        }
    }
}

/// What the next read of a line came to.
enum Line {
    /// A whole line is in the reader's buffer.
    Whole,
    /// A line longer than the limit was read through and dropped; what it was, as scanned.
    Oversized {
        envelope: Envelope,
        bytes: usize,
    },
    End,
    Failed(std::io::Error),
}

/// A whole line, taken.
enum Parsed {
    Blank,
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    Unreadable { envelope: Envelope, why: String },
}

/// Lines of the program's output, each held up to [`MAX_MESSAGE_BYTES`]. Its state lives in
/// the struct, not in a read under way: `receive` is polled beside other work and may be
/// dropped between two reads, and the next one goes on with the same line.
struct LineReader {
    read: BufReader<ChildStdout>,
    line: Vec<u8>,
    /// Set while a line over the limit is read through: its scan and its length so far.
    oversized: Option<(Envelope, usize)>,
}

impl LineReader {
    fn new(stdout: ChildStdout) -> Self {
        Self {
            read: BufReader::new(stdout),
            line: Vec::new(),
            oversized: None,
        }
    }

    async fn next(&mut self) -> Line {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => return Line::Failed(e),
            };
            if available.is_empty() {
                // A last line without its newline is a line all the same; the next read ends.
                if let Some((envelope, bytes)) = self.oversized.take() {
                    return Line::Oversized { envelope, bytes };
                }
                if !self.line.is_empty() {
                    return Line::Whole;
                }
                return Line::End;
            }
            let (take, complete) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            let piece = &available[..take];
            if let Some((envelope, bytes)) = &mut self.oversized {
                envelope.feed(piece);
                *bytes += take;
            } else if self.line.len() + take > MAX_MESSAGE_BYTES + 1 {
                let mut envelope = Envelope::default();
                envelope.feed(&self.line);
                envelope.feed(piece);
                let bytes = self.line.len() + take;
                self.line = Vec::new();
                self.oversized = Some((envelope, bytes));
            } else {
                self.line.extend_from_slice(piece);
            }
            self.read.consume(take);
            if complete {
                return match self.oversized.take() {
                    Some((envelope, bytes)) => Line::Oversized { envelope, bytes },
                    None => Line::Whole,
                };
            }
        }
    }

    /// The whole line read last, as a message; the next read begins a new line.
    fn take_whole(&mut self) -> Parsed {
        let parsed = self.parse();
        self.line.clear();
        parsed
    }

    fn parse(&self) -> Parsed {
        let mut line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            return Parsed::Blank;
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
            Ok(message) => Parsed::Message(Box::new(message)),
            Err(e) => {
                let mut envelope = Envelope::default();
                envelope.feed(line);
                Parsed::Unreadable {
                    envelope,
                    why: not_parsed(&e),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{JsonRpcMessage, NumberOrString, RequestId};

    /// The id of an answer passed on.
    fn id_of(answer: &RxJsonRpcMessage<RoleClient>) -> Option<RequestId> {
        match answer {
            JsonRpcMessage::Error(e) => e.id.clone(),
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            _ => None,
        }
    }

    /// A transport to `sh -c script`, its log beside it.
    fn program(script: &str) -> (ChildTransport, Arc<Mutex<VecDeque<String>>>) {
        let mut command = tokio::process::Command::new("sh");
        command.arg("-c").arg(script);
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let (transport, _stderr) = ChildTransport::spawn(command, log.clone()).unwrap();
        (transport, log)
    }

    #[tokio::test]
    async fn an_answer_too_large_to_hold_is_an_error_answer_naming_the_limit() {
        // 20 MiB of result, then a small answer: the first is refused, the second still read.
        let script = r#"
            printf '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"'
            head -c 20971520 /dev/zero | tr '\0' 'x'
            printf '"}]}}\n'
            printf '{"jsonrpc":"2.0","id":4,"result":{}}\n'
        "#;
        let (mut transport, _) = program(script);
        let first = transport.receive().await.expect("an answer");
        assert_eq!(id_of(&first), Some(NumberOrString::Number(3)));
        let JsonRpcMessage::Error(error) = &first else {
            panic!("not an error: {first:?}")
        };
        assert!(
            error.error.message.contains("16777216 bytes"),
            "{}",
            error.error.message
        );
        let second = transport.receive().await.expect("the next answer");
        assert!(matches!(second, JsonRpcMessage::Response(_)), "{second:?}");
        assert!(transport.receive().await.is_none());
    }

    #[tokio::test]
    async fn an_answer_nested_too_deep_is_an_error_answer_and_a_stray_line_is_noted() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":"a","result":{{"tools":[{{"name":"t","inputSchema":{}1{}}}]}}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let script = format!("echo 'Server started'; echo '{deep}'");
        let (mut transport, log) = program(&script);
        let answer = transport.receive().await.expect("an answer");
        assert_eq!(id_of(&answer), Some(NumberOrString::String("a".into())));
        let JsonRpcMessage::Error(error) = &answer else {
            panic!("not an error: {answer:?}")
        };
        assert!(
            error.error.message.contains("128 levels"),
            "{}",
            error.error.message
        );
        let log: Vec<String> = log.lock().unwrap().iter().cloned().collect();
        assert!(
            log.iter().any(|l| l.contains("passed over a line")),
            "{log:?}"
        );
    }

    #[tokio::test]
    async fn a_last_answer_without_its_newline_is_read() {
        let (mut transport, _) = program(
            r#"printf '{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":2,"result":{}}'"#,
        );
        for id in [1, 2] {
            let answer = transport.receive().await.expect("an answer");
            assert_eq!(id_of(&answer), Some(NumberOrString::Number(id)));
        }
        assert!(transport.receive().await.is_none());
    }

    #[tokio::test]
    async fn a_receive_dropped_in_the_middle_of_a_line_loses_none_of_it() {
        // 100 KB of a line (many reads of the pipe), then nothing until the test says `go`.
        let go = std::env::temp_dir().join(format!("toolhost-stdio-go-{}", std::process::id()));
        let _ = std::fs::remove_file(&go);
        let script = format!(
            r#"printf '{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"'
            head -c 100000 /dev/zero | tr '\0' 'x'
            while [ ! -e {go} ]; do sleep 0.05; done
            printf '"}}]}}}}\n'"#,
            go = go.display()
        );
        let (mut transport, _) = program(&script);
        // However much of the line this read took, it is dropped before the line ends.
        let dropped =
            tokio::time::timeout(std::time::Duration::from_millis(300), transport.receive()).await;
        assert!(dropped.is_err(), "the line cannot have ended: {dropped:?}");
        std::fs::write(&go, "").unwrap();
        let whole = transport.receive().await.expect("the whole answer");
        let _ = std::fs::remove_file(&go);
        let JsonRpcMessage::Response(response) = whole else {
            panic!("not the answer: {whole:?}")
        };
        assert_eq!(response.id, NumberOrString::Number(1));
    }

    #[tokio::test]
    async fn a_request_it_cannot_read_is_refused_to_the_server() {
        // The server asks something too deep, then echoes what toolhost said back to stderr
        // as its answer to read; here it is read from its own output.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{}{}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let script = format!("echo '{deep}'; read refusal; echo \"$refusal\"");
        let (mut transport, _) = program(&script);
        // The refusal comes back as the program's next line: an error answer with id 9.
        let echoed = transport.receive().await.expect("the echoed refusal");
        let JsonRpcMessage::Error(error) = &echoed else {
            panic!("not an error: {echoed:?}")
        };
        assert_eq!(error.id, Some(NumberOrString::Number(9)));
        assert_eq!(error.error.code, ErrorCode::INVALID_REQUEST);
    }
}
