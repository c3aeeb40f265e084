//! The runs this node started in the background, so that shutdown can stop them and wait for
//! them, event streams can say when one ended, a request can wait for one (a direct tool call),
//! and metrics can count them.

use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinSet;
use toolhost_runtime::engine::{RunOutcome, Runtime, RuntimeError, StopReason, Waiting};

/// How many run-ended notices an event stream may fall behind before it is dropped.
const ENDED_CAPACITY: usize = 256;

/// A run of this node ended: the thread and how (see [`describe`]; `failed` with an `error`, or
/// `owned_elsewhere` when another run had the thread).
#[derive(Debug, Clone)]
pub(crate) struct RunEnded {
    pub thread: String,
    pub data: Value,
}

/// The background runs of a server. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Runs {
    inner: Arc<Mutex<Inner>>,
    ended: broadcast::Sender<RunEnded>,
}

#[derive(Default)]
struct Inner {
    tasks: JoinSet<()>,
    /// How many runs of each thread this node has under way.
    running: HashMap<String, usize>,
    /// Shutting down: no new runs.
    closed: bool,
    /// Runs started since the server started.
    started: u64,
    /// Runs ended since the server started, by how they ended.
    ended: BTreeMap<&'static str, u64>,
}

/// How many runs this node started, ended (by how they ended) and has under way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RunCounts {
    pub started: u64,
    /// By outcome: `done`, `paused`, `failed`, `owned_elsewhere`.
    pub ended: BTreeMap<&'static str, u64>,
    pub under_way: usize,
}

/// How a run ended, for a client that waits for it.
type Reply = oneshot::Sender<Result<RunOutcome, RuntimeError>>;

impl Default for Runs {
    fn default() -> Self {
        Self {
            inner: Arc::default(),
            ended: broadcast::channel(ENDED_CAPACITY).0,
        }
    }
}

impl Runs {
    /// Runs `thread` in the background. When another run owns it, that run takes up what was
    /// stored for it, so this one ends at once. Nothing starts once shutdown began: what was
    /// stored waits for the next run.
    pub fn start(&self, runtime: Arc<Runtime>, thread: String) {
        self.spawn(runtime, thread, None);
    }

    /// Runs `thread` like [`Runs::start`] and waits for how the run ended; `None` when
    /// shutdown began and nothing ran. The run goes on when the waiter goes away.
    pub async fn run(
        &self,
        runtime: Arc<Runtime>,
        thread: String,
    ) -> Option<Result<RunOutcome, RuntimeError>> {
        let (reply, outcome) = oneshot::channel();
        self.spawn(runtime, thread, Some(reply));
        outcome.await.ok()
    }

    fn spawn(&self, runtime: Arc<Runtime>, thread: String, reply: Option<Reply>) {
        let mut inner = self.lock();
        if inner.closed {
            return;
        }
        while inner.tasks.try_join_next().is_some() {}
        *inner.running.entry(thread.clone()).or_default() += 1;
        inner.started += 1;
        let this = self.clone();
        inner.tasks.spawn(async move {
            let result = runtime.run(&thread).await;
            let data = match &result {
                Ok(outcome) => describe(outcome),
                Err(RuntimeError::ThreadBusy { .. }) => json!({"status": "owned_elsewhere"}),
                Err(e) => {
                    tracing::warn!(thread = %thread, error = %e, "a background run failed");
                    json!({"status": "failed", "error": e.to_string()})
                }
            };
            this.finished(&thread, outcome_label(&data));
            let _ = this.ended.send(RunEnded { thread, data });
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
        });
    }

    /// The runs of this node so far.
    pub fn counts(&self) -> RunCounts {
        let inner = self.lock();
        RunCounts {
            started: inner.started,
            ended: inner.ended.clone(),
            under_way: inner.running.values().sum(),
        }
    }

    /// Notices of runs that end from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<RunEnded> {
        self.ended.subscribe()
    }

    /// Refuses new runs, asks every run under way to stop after the operation it is in, and
    /// waits until they have stored what they did and released their threads.
    pub async fn stop_all_and_wait(&self, runtime: &Runtime) {
        let (threads, mut tasks) = {
            let mut inner = self.lock();
            inner.closed = true;
            let threads: Vec<String> = inner.running.keys().cloned().collect();
            (threads, std::mem::take(&mut inner.tasks))
        };
        for thread in threads {
            runtime.stop(&thread).await;
        }
        while tasks.join_next().await.is_some() {}
    }

    fn finished(&self, thread: &str, outcome: &'static str) {
        let mut inner = self.lock();
        *inner.ended.entry(outcome).or_default() += 1;
        if let Some(n) = inner.running.get_mut(thread) {
            *n -= 1;
            if *n == 0 {
                inner.running.remove(thread);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The `status` of a described run, as a metric label.
fn outcome_label(data: &Value) -> &'static str {
    match data["status"].as_str() {
        Some("done") => "done",
        Some("paused") => "paused",
        Some("owned_elsewhere") => "owned_elsewhere",
        _ => "failed",
    }
}

/// A run's outcome as clients read it.
pub(crate) fn describe(outcome: &RunOutcome) -> Value {
    match outcome {
        RunOutcome::Done(reason) => {
            let mut done = json!({"status": "done"});
            let (name, detail) = match reason {
                StopReason::Response => ("response", None),
                StopReason::StopTool(tool) => ("stop_tool", Some(("tool", json!(tool)))),
                StopReason::MaxSteps(n) => ("max_steps", Some(("limit", json!(n)))),
                StopReason::MaxSessionTurns(n) => ("max_session_turns", Some(("limit", json!(n)))),
                StopReason::Stopped => ("stopped", None),
                StopReason::SessionStop(end) => ("session_stop", Some(("session", session(end)))),
                StopReason::SessionFail(end) => ("session_fail", Some(("session", session(end)))),
            };
            done["reason"] = json!(name);
            if let Some((key, value)) = detail {
                done[key] = value;
            }
            done
        }
        RunOutcome::Paused(Waiting::Approval(request)) => json!({
            "status": "paused",
            "waitingFor": "approval",
            "callId": request.call_id,
            "tool": request.tool,
        }),
        RunOutcome::Paused(Waiting::Variables { request_id, names }) => json!({
            "status": "paused",
            "waitingFor": "variables",
            "requestId": request_id,
            "names": names,
        }),
    }
}

/// How a session binding's call ended the session, as clients read it.
fn session(end: &toolhost_runtime::engine::SessionEnd) -> Value {
    json!({"tool": end.tool, "message": end.message, "attachments": end.attachments})
}
