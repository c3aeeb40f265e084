//! `toolhost mcp`'s standard input and output: one JSON-RPC message per line, read and written
//! by toolhost rather than by the SDK's stdio transport, which drops a line that is not JSON or
//! is too long without a word. Here such a line is answered with a JSON-RPC error (-32700 for
//! what is not JSON or too long, -32600 for JSON that is no message) that says what is wrong,
//! and the session goes on. Lines are bounded ([`MAX_LINE_BYTES`]) and read as bytes. One task
//! writes every line to standard output, so answers and errors never interleave.

use futures_util::{Sink, Stream};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{json, Value};
use std::io;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest line read as a message.
pub const MAX_LINE_BYTES: u64 = 16 << 20;

/// The messages a client sends, and where the server's go.
pub type Stdio = (
    std::pin::Pin<Box<dyn Sink<TxJsonRpcMessage<RoleServer>, Error = io::Error> + Send>>,
    std::pin::Pin<Box<dyn Stream<Item = RxJsonRpcMessage<RoleServer>> + Send>>,
);

/// The standard streams as the MCP server's transport (give it to `serve`).
pub fn stdio() -> Stdio {
    let (lines, mut to_write) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(mut line) = to_write.recv().await {
            line.push('\n');
            if out.write_all(line.as_bytes()).await.is_err() || out.flush().await.is_err() {
                return;
            }
        }
    });
    let (messages, received) = mpsc::unbounded_channel();
    tokio::spawn(read(tokio::io::stdin(), messages, lines.clone()));
    let sink = futures_util::sink::unfold(
        lines,
        |lines, message: TxJsonRpcMessage<RoleServer>| async move {
            let line = serde_json::to_string(&message).map_err(io::Error::other)?;
            lines.send(line).map_err(|_| {
                io::Error::new(io::ErrorKind::BrokenPipe, "standard output is closed")
            })?;
            Ok(lines)
        },
    );
    let stream = futures_util::stream::unfold(received, |mut received| async move {
        received.recv().await.map(|message| (message, received))
    });
    (Box::pin(sink), Box::pin(stream))
}

/// Reads `input` to its end: each line that is a message goes to `messages`, each that is not
/// is answered on `lines`.
async fn read(
    input: impl tokio::io::AsyncRead + Unpin,
    messages: mpsc::UnboundedSender<RxJsonRpcMessage<RoleServer>>,
    lines: mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::new(input);
    loop {
        let mut line = Vec::new();
        // One byte past the cap tells a long line from one of the cap.
        match (&mut input)
            .take(MAX_LINE_BYTES + 2)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let complete = line.last() == Some(&b'\n');
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        if line.len() as u64 > MAX_LINE_BYTES {
            if !complete && !skip_line(&mut input).await {
                return;
            }
            let _ = lines.send(refusal(
                -32700,
                Value::Null,
                &format!("the message is longer than {MAX_LINE_BYTES} bytes"),
            ));
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse(&line) {
            Ok(message) => {
                if messages.send(message).is_err() {
                    return;
                }
            }
            Err(answer) => {
                let _ = lines.send(answer);
            }
        }
    }
}

/// A line as a message, or the error that answers it.
fn parse(line: &[u8]) -> Result<RxJsonRpcMessage<RoleServer>, String> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| refusal(-32700, Value::Null, &format!("the line is not JSON: {e}")))?;
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| {
        refusal(
            -32600,
            id,
            &format!("the line is not a JSON-RPC request, notification or response: {e}"),
        )
    })
}

/// Reads on to the end of an over-long line; whether input goes on after it.
async fn skip_line(input: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> bool {
    loop {
        let mut rest = Vec::new();
        match input.take(64 << 10).read_until(b'\n', &mut rest).await {
            Ok(0) | Err(_) => return false,
            Ok(_) if rest.last() == Some(&b'\n') => return true,
            Ok(_) => {}
        }
    }
}

/// A JSON-RPC error answer.
fn refusal(code: i64, id: Value, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_lines_are_answered_and_good_ones_go_on() {
        let mut input = b"{not json\n".to_vec();
        input.extend_from_slice(b"{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": 5}\n");
        input.extend_from_slice(&vec![b'x'; (MAX_LINE_BYTES + 10) as usize]);
        input.extend_from_slice(b"\n\n");
        input.extend_from_slice(
            b"{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}\n",
        );
        let (messages, mut received) = mpsc::unbounded_channel();
        let (lines, mut answered) = mpsc::unbounded_channel();
        read(&input[..], messages, lines).await;
        let answers: Vec<Value> = std::iter::from_fn(|| answered.try_recv().ok())
            .map(|l| serde_json::from_str(&l).unwrap())
            .collect();
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert_eq!(answers[0]["error"]["code"], -32700);
        assert_eq!(answers[0]["id"], Value::Null);
        assert_eq!(answers[1]["error"]["code"], -32600);
        assert_eq!(answers[1]["id"], 7);
        assert_eq!(answers[2]["error"]["code"], -32700);
        assert!(answers[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"));
        assert!(received.try_recv().is_ok(), "the good line went on");
        assert!(received.try_recv().is_err());
    }
}
