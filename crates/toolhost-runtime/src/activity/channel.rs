//! The `ThreadState` channel of a process activity: toolhost opens a Unix socket for each call
//! of a process activity made in a thread, hands its other end to the program as file
//! descriptor 3 and says so in the environment (`TOOLHOST_STATE_FD=3`). The program asks, one
//! JSON line per request, and toolhost answers each with one JSON line, in order:
//!
//! ```text
//! → {"id": 1, "op": "getValue", "key": "visits"}
//! ← {"id": 1, "ok": true, "value": 3}
//! → {"id": 2, "op": "writeFile", "path": "/notes/a.txt", "data": "aGk=", "mimeType": "text/plain"}
//! ← {"id": 2, "ok": true, "value": "/notes/a.txt"}
//! → {"id": 3, "op": "nope"}
//! ← {"id": 3, "ok": false, "error": "unknown op \"nope\"; the ops are getValue, ..."}
//! ```
//!
//! Ops: `getValue {key}`, `setValue {key, value}` (a null value deletes), `readFile {path}`
//! (the bytes as base64), `writeFile {path, data (base64), mimeType?}`, `readdir {path}`,
//! `stat {path}`, `emitThreadEvent {event, data}`, `queueTool {name, arguments}` and
//! `progress {progress, total?, message?}` (how far the call is, live only): the same
//! operations, with the same checks and redaction, as a Rust tool's [`ThreadState`]. A line
//! longer than [`MAX_LINE_BYTES`] or one that is not a request gets an error answer and ends
//! the channel (the call itself goes on). The channel ends when the program closes its end or
//! the call ends.

use super::state_ops::StateOp;
use crate::engine::ThreadState;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// The file descriptor the program finds the channel at.
pub const STATE_FD: i32 = 3;

/// The environment variable that tells the program the channel is there.
pub const STATE_FD_VAR: &str = "TOOLHOST_STATE_FD";

/// The longest request line (a file to write, as base64, is the longest request there is).
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

/// Answers the program's requests on `stream` until it closes its end.
pub(super) async fn serve(stream: UnixStream, state: ThreadState) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut lines)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        let (answer, go_on) = match read {
            Ok(0) | Err(_) => return,
            Ok(_) if line.len() > MAX_LINE_BYTES => (
                json!({"id": null, "ok": false, "error": format!("a request is longer than {MAX_LINE_BYTES} bytes; the channel is closed")}),
                false,
            ),
            Ok(_) => match serde_json::from_slice::<Value>(&line) {
                Ok(request) => (answer(&state, request).await, true),
                Err(e) => (
                    json!({"id": null, "ok": false, "error": format!("a request is not JSON ({e}); the channel is closed")}),
                    false,
                ),
            },
        };
        let mut text = answer.to_string().into_bytes();
        text.push(b'\n');
        if write.write_all(&text).await.is_err() || !go_on {
            return;
        }
    }
}

/// The answer to one request.
async fn answer(state: &ThreadState, request: Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let done = match StateOp::parse(&request) {
        Ok(op) => op.perform(state).await,
        Err(e) => Err(e),
    };
    match done {
        Ok(value) => json!({"id": id, "ok": true, "value": value}),
        Err(error) => json!({"id": id, "ok": false, "error": error.to_string()}),
    }
}
