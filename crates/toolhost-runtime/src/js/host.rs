//! The door between a JavaScript tool's run and its thread: the run's thread asks (blocking,
//! it has that thread to itself) over a channel, and the call's async task answers with the
//! call's [`ThreadState`] while it waits for the run, so every operation runs on the async
//! runtime like a Rust tool's.
//!
//! Ops: those of a process activity's state channel (`getValue`, `setValue`, `readFile`,
//! `writeFile`, `readdir`, `stat`, `emitThreadEvent`, `queueTool`; see
//! [`crate::activity::channel`]), plus `readText` and `writeText` (UTF-8 text), `aborted` (the
//! call's abort signal), `runCode` (the sandbox of `state.runCode`), `fetch` (through the
//! runtime's [`crate::engine::FetchPolicy`], refused when it allows no host), `log` (each
//! `console` entry as it is written, published live), and `elicit`, `sample` and `roots` (asking
//! whoever made the call, see [`crate::engine::Answerer`]).

use crate::activity::channel::{perform, text};
use crate::engine::ThreadState;
use base64::Engine as _;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use toolhost_core::tool::AbortSignal;
use toolhost_providers::fetch::FetchRequest;
use toolhost_sandbox::{Host, RunCode, RunHandle, RunResult};

/// How often a waiting call looks whether it was asked to stop at once.
const STOP_POLL: Duration = Duration::from_millis(50);

/// One request from the run.
pub(super) struct Request {
    op: String,
    args: String,
    reply: oneshot::Sender<Result<String, String>>,
}

/// The run's side of the door.
struct Door {
    requests: mpsc::UnboundedSender<Request>,
}

impl Host for Door {
    fn call(&self, op: &str, args: &str) -> Result<String, String> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request {
                op: op.to_owned(),
                args: args.to_owned(),
                reply,
            })
            .map_err(|_| "the tool's call has ended".to_owned())?;
        answer
            .blocking_recv()
            .map_err(|_| "the tool's call has ended".to_owned())?
    }

    /// A person's form, a model's completion or a client's roots: the time they take is theirs.
    fn waits_for_someone(&self, op: &str) -> bool {
        matches!(op, "elicit" | "sample" | "roots")
    }
}

/// A door for one run, and where its requests arrive.
pub(super) fn door() -> (Arc<dyn Host>, mpsc::UnboundedReceiver<Request>) {
    let (requests, arrive) = mpsc::unbounded_channel();
    (Arc::new(Door { requests }), arrive)
}

/// Answers the run's requests until it ends; stops it when the call is asked to stop at once.
pub(super) async fn serve_while(
    handle: RunHandle,
    mut requests: mpsc::UnboundedReceiver<Request>,
    state: Option<&ThreadState>,
    abort: &AbortSignal,
) -> RunResult {
    let terminator = handle.terminator();
    tokio::pin!(handle);
    loop {
        tokio::select! {
            result = &mut handle => return result,
            Some(request) = requests.recv() => {
                let answer = answer(state, abort, &request.op, &request.args).await;
                // The run may have ended meanwhile (terminated): nobody waits for the answer.
                let _ = request.reply.send(answer);
            }
            () = tokio::time::sleep(STOP_POLL), if !abort.is_interrupted() => {}
        }
        if abort.is_interrupted() {
            terminator.terminate();
        }
    }
}

async fn answer(
    state: Option<&ThreadState>,
    abort: &AbortSignal,
    op: &str,
    args: &str,
) -> Result<String, String> {
    let args: Value =
        serde_json::from_str(args).map_err(|e| format!("{op}: the request is not JSON: {e}"))?;
    if op == "aborted" {
        return Ok(abort.is_aborted().to_string());
    }
    let Some(state) = state else {
        return Err(format!(
            "{op}: this call has no thread (it was made outside a thread's run)"
        ));
    };
    let value = match op {
        "readText" => {
            let path = text(&args, "path")?;
            let bytes = state.read_file(path).await.map_err(|e| e.to_string())?;
            Value::String(
                String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8 text"))?,
            )
        }
        "writeText" => {
            let path = text(&args, "path")?;
            let mime = args.get("mimeType").and_then(Value::as_str);
            let written = state
                .write_file(path, text(&args, "text")?.as_bytes().to_vec(), mime)
                .await
                .map_err(|e| e.to_string())?;
            Value::String(written.as_str().to_owned())
        }
        "fetch" => fetch(state, args).await?,
        "log" => {
            state.log(text(&args, "level")?, text(&args, "message")?);
            Value::Null
        }
        "elicit" => {
            let schema = args.get("requestedSchema").cloned().unwrap_or(Value::Null);
            state
                .elicit(text(&args, "message")?, schema, key_of(&args))
                .await?
        }
        "sample" => {
            let request = args.get("request").cloned().unwrap_or(Value::Null);
            state.sample(request, key_of(&args)).await?
        }
        "roots" => state.roots(key_of(&args)).await?,
        "runCode" => {
            let code: RunCode = serde_json::from_value(args).map_err(|e| {
                let hint = if e.to_string().contains("unknown field `args`") {
                    " (the arguments go in `execute: { fn, args }`)"
                } else {
                    ""
                };
                format!("runCode(source, options): {e}{hint}")
            })?;
            serde_json::to_value(state.run_code(code).await).map_err(|e| e.to_string())?
        }
        _ => {
            let mut request = args;
            if let Some(fields) = request.as_object_mut() {
                fields.insert("op".to_owned(), json!(op));
            }
            perform(state, &request).await?
        }
    };
    Ok(value.to_string())
}

/// The key a tool named its question by, if it named one.
fn key_of(args: &Value) -> Option<String> {
    args.get("key").and_then(Value::as_str).map(str::to_owned)
}

/// A tool's `fetch`: `{url, method, headers: [[name, value]], body?: base64}` through the
/// runtime's fetch policy; the answer as `{status, statusText, headers, text, base64}`.
async fn fetch(state: &ThreadState, args: Value) -> Result<Value, String> {
    let Some(policy) = state.fetch_policy() else {
        return Err("fetch is not available to this tool: the project allows no host ([fetch] hosts in toolhost.toml)".to_owned());
    };
    let headers = args
        .get("headers")
        .and_then(Value::as_array)
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|p| {
                    Some((
                        p.get(0)?.as_str()?.to_owned(),
                        p.get(1)?.as_str()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let body = match args.get("body").and_then(Value::as_str) {
        Some(b64) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| format!("fetch: the body is not base64: {e}"))?,
        ),
        None => None,
    };
    let request = FetchRequest {
        method: args
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("GET")
            .to_ascii_uppercase(),
        url: text(&args, "url")?.to_owned(),
        headers,
        body,
    };
    let answer = policy.fetch(request).await?;
    Ok(json!({
        "status": answer.status,
        "statusText": answer.status_text,
        "headers": answer.headers,
        "text": String::from_utf8_lossy(&answer.body),
        "base64": base64::engine::general_purpose::STANDARD.encode(&answer.body),
    }))
}
