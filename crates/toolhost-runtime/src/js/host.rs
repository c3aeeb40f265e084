//! The door between a JavaScript tool's run and its thread: the run's thread asks (blocking,
//! it has that thread to itself) over a channel, and the call's async task answers with the
//! call's [`ThreadState`] while it waits for the run, so every operation runs on the async
//! runtime like a Rust tool's.
//!
//! Ops: those of a process activity's state channel (`getValue`, `setValue`, `readFile`,
//! `writeFile`, `readdir`, `stat`, `emitThreadEvent`, `queueTool`, `progress`; see
//! [`crate::activity::channel`]), plus `readText` and `writeText` (UTF-8 text), `aborted` (the
//! call's abort signal), `runCode` (the sandbox of `state.runCode`), `fetch` (through the
//! runtime's [`crate::engine::FetchPolicy`], refused when it allows no host), and `elicit`,
//! `sample` and `roots` (asking whoever made the call, see [`crate::engine::Answerer`]). The
//! sandbox reads each request into a [`HostOp`] before it reaches the call's task. Each `console`
//! entry the code writes reaches the thread as it is written (published live).

use crate::activity::state_ops::{optional_text, text, OpError, StateOp};
use crate::engine::{StateError, ThreadState};
use base64::Engine as _;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use toolhost_core::tool::AbortSignal;
use toolhost_providers::fetch::FetchRequest;
use toolhost_sandbox::{Host, HostDoor, LogEntry, RunCode, RunHandle, RunResult};

/// One request from the run.
pub(super) enum Request {
    /// An operation, and where its answer goes.
    Op {
        op: HostOp,
        reply: oneshot::Sender<Result<Value, HostError>>,
    },
    /// A `console` entry the code wrote, as it wrote it.
    Log(LogEntry),
}

/// The run's side of the door.
struct Door {
    requests: mpsc::UnboundedSender<Request>,
}

impl Host for Door {
    type Op = HostOp;
    type Error = HostError;

    fn parse(&self, name: &str, args: Value) -> Result<HostOp, HostError> {
        HostOp::parse(name, args)
    }

    fn call(&self, op: HostOp) -> Result<Value, HostError> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request::Op { op, reply })
            .map_err(|_| HostError::Ended)?;
        answer.blocking_recv().map_err(|_| HostError::Ended)?
    }

    /// A person's form, a model's completion or a client's roots: the time they take is theirs.
    fn waits_for_someone(&self, op: &HostOp) -> bool {
        matches!(
            op,
            HostOp::Elicit { .. } | HostOp::Sample { .. } | HostOp::Roots { .. }
        )
    }

    fn log(&self, entry: &LogEntry) {
        // A call that has ended shows nothing more.
        let _ = self.requests.send(Request::Log(entry.clone()));
    }
}

/// A door for one run, and where its requests arrive.
pub(super) fn door() -> (HostDoor, mpsc::UnboundedReceiver<Request>) {
    let (requests, arrive) = mpsc::unbounded_channel();
    (HostDoor::new(Arc::new(Door { requests })), arrive)
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
            result = &mut handle => {
                // The supervisor hands each console entry over before it reads the run's end:
                // entries still in the channel are shown before the call ends.
                while let Ok(request) = requests.try_recv() {
                    if let Request::Log(entry) = request {
                        show(state, &entry);
                    }
                }
                return result;
            }
            Some(request) = requests.recv() => match request {
                Request::Op { op, reply } => {
                    let answer = answer(state, abort, op).await;
                    // The run may have ended meanwhile (terminated): nobody waits for the answer.
                    let _ = reply.send(answer);
                }
                Request::Log(entry) => show(state, &entry),
            },
            () = abort.interrupted(), if !abort.is_interrupted() => {}
        }
        if abort.is_interrupted() {
            terminator.terminate();
        }
    }
}

/// Publishes a console entry of the call's code on its thread (live).
fn show(state: Option<&ThreadState>, entry: &LogEntry) {
    if let Some(state) = state {
        state.log(entry.level.as_str(), &entry.message);
    }
}

/// One operation a JavaScript tool asks of its host, with its arguments parsed.
#[derive(Debug)]
pub(super) enum HostOp {
    /// Whether the call was asked to stop.
    Aborted,
    /// `readText {path}`: a file as UTF-8 text.
    ReadText { path: String },
    /// `writeText {path, text, mimeType?}`.
    WriteText {
        path: String,
        text: String,
        mime_type: Option<String>,
    },
    /// `fetch {url, method, headers, body?}` (see [`fetch`]).
    Fetch(Value),
    /// `elicit {message, requestedSchema, key?}`: a question to whoever made the call.
    Elicit {
        message: String,
        schema: Value,
        key: Option<String>,
    },
    /// `sample {request, key?}`: a completion by the caller's model.
    Sample { request: Value, key: Option<String> },
    /// `roots {key?}`: the caller's roots.
    Roots { key: Option<String> },
    /// `runCode (source, options)`: a run in the sandbox.
    RunCode(RunCode),
    /// One of the thread-state operations a program's channel has too.
    State(StateOp),
}

/// Why a host operation failed: the text the tool's code gets as a thrown `Error`.
#[derive(Debug, thiserror::Error)]
pub(super) enum HostError {
    /// The tool's call ended before the run's request was answered.
    #[error("the tool's call has ended")]
    Ended,
    /// The call was made outside a thread's run.
    #[error("{op}: this call has no thread (it was made outside a thread's run)")]
    NoThread { op: String },
    /// `runCode`'s options do not parse.
    #[error("runCode(source, options): {reason}{hint}")]
    RunCodeOptions {
        reason: serde_json::Error,
        hint: &'static str,
    },
    /// A file read as text is not UTF-8.
    #[error("{path} is not UTF-8 text")]
    NotText { path: String },
    /// A thread-state operation failed.
    #[error(transparent)]
    Op(#[from] OpError),
    /// What the tool asked of its thread (a fetch, a question) was refused, or failed.
    #[error(transparent)]
    State(#[from] StateError),
}

impl HostOp {
    /// The operation's name, as the code asks for it.
    fn name(&self) -> &'static str {
        match self {
            Self::Aborted => "aborted",
            Self::ReadText { .. } => "readText",
            Self::WriteText { .. } => "writeText",
            Self::Fetch(_) => "fetch",
            Self::Elicit { .. } => "elicit",
            Self::Sample { .. } => "sample",
            Self::Roots { .. } => "roots",
            Self::RunCode(_) => "runCode",
            Self::State(op) => op.name(),
        }
    }

    /// The operation `op` with the JSON `args`.
    fn parse(op: &str, args: Value) -> Result<Self, HostError> {
        let owned = |field| text(&args, field).map(str::to_owned);
        let key = || optional_text(&args, "key");
        Ok(match op {
            "aborted" => Self::Aborted,
            "readText" => Self::ReadText {
                path: owned("path")?,
            },
            "writeText" => Self::WriteText {
                path: owned("path")?,
                text: owned("text")?,
                mime_type: optional_text(&args, "mimeType"),
            },
            "elicit" => Self::Elicit {
                message: owned("message")?,
                schema: args.get("requestedSchema").cloned().unwrap_or(Value::Null),
                key: key(),
            },
            "sample" => Self::Sample {
                request: args.get("request").cloned().unwrap_or(Value::Null),
                key: key(),
            },
            "roots" => Self::Roots { key: key() },
            "runCode" => Self::RunCode(serde_json::from_value(args).map_err(|reason| {
                let hint = if reason.to_string().contains("unknown field `args`") {
                    " (the arguments go in `execute: { fn, args }`)"
                } else {
                    ""
                };
                HostError::RunCodeOptions { reason, hint }
            })?),
            "fetch" => Self::Fetch(args),
            _ => {
                let mut request = args;
                if let Some(fields) = request.as_object_mut() {
                    fields.insert("op".to_owned(), json!(op));
                }
                Self::State(StateOp::parse(&request)?)
            }
        })
    }

    /// Carries the operation out for the call whose state is `state`.
    async fn perform(self, state: &ThreadState) -> Result<Value, HostError> {
        Ok(match self {
            // Answered before a state is needed.
            Self::Aborted => Value::Null,
            Self::ReadText { path } => {
                let bytes = state.read_file(&path).await.map_err(OpError::from)?;
                Value::String(String::from_utf8(bytes).map_err(|_| HostError::NotText { path })?)
            }
            Self::WriteText {
                path,
                text,
                mime_type,
            } => {
                let written = state
                    .write_file(&path, text.into_bytes(), mime_type.as_deref())
                    .await
                    .map_err(OpError::from)?;
                Value::String(written.as_str().to_owned())
            }
            Self::Fetch(args) => fetch(state, args).await?,
            Self::Elicit {
                message,
                schema,
                key,
            } => state.elicit(&message, schema, key).await?,
            Self::Sample { request, key } => state.sample(request, key).await?,
            Self::Roots { key } => state.roots(key).await?,
            Self::RunCode(code) => {
                serde_json::to_value(state.run_code(code).await).map_err(OpError::from)?
            }
            Self::State(op) => op.perform(state).await?,
        })
    }
}

/// Answers one request of the run.
async fn answer(
    state: Option<&ThreadState>,
    abort: &AbortSignal,
    op: HostOp,
) -> Result<Value, HostError> {
    match (op, state) {
        (HostOp::Aborted, _) => Ok(Value::Bool(abort.is_aborted())),
        (op, Some(state)) => op.perform(state).await,
        (op, None) => Err(HostError::NoThread {
            op: op.name().to_owned(),
        }),
    }
}

/// A tool's `fetch`: `{url, method, headers: [[name, value]], body?: base64}` through the
/// runtime's fetch policy; the answer as `{status, statusText, headers, text, base64}`.
async fn fetch(state: &ThreadState, args: Value) -> Result<Value, HostError> {
    let Some(policy) = state.fetch_policy() else {
        return Err(StateError::NoFetch.into());
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
                .map_err(StateError::BodyNotBase64)?,
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
