//! The runs this node started in the background, so that shutdown can stop them and wait for
//! them, event streams can say when one ended, a request can wait for one (a direct tool call),
//! and metrics can count them.

use crate::problem::Problem;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinSet;
use toolhost_runtime::engine::{RunOutcome, Runtime, RuntimeError, StopReason, Waiting};
use toolhost_store::{AsyncStore, EventKind, Write};

/// How many run-ended notices an event stream may fall behind before it is dropped.
const ENDED_CAPACITY: usize = 256;

/// A run of this node ended. How it ended (see [`describe`], or `failed` with an `error`) is
/// stored as the thread's `run_ended` event; this notice only wakes the thread's followers.
#[derive(Debug, Clone)]
pub(crate) struct RunEnded {
    pub thread: String,
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

    /// Carries out `work` (which stores what a request gave and names the thread to run), then
    /// starts the thread's run, in a task of its own: a request abandoned after the write (its
    /// client gone, its time up) still gets its run, so what was stored is never left waiting.
    pub async fn store_then_run<T: Send + 'static>(
        &self,
        runtime: Arc<Runtime>,
        work: impl Future<Output = Result<(T, Option<String>), RuntimeError>> + Send + 'static,
    ) -> Result<T, Problem> {
        let runs = self.clone();
        let task = tokio::spawn(async move {
            let (value, thread) = work.await?;
            if let Some(thread) = thread {
                runs.start(runtime, thread);
            }
            Ok::<T, RuntimeError>(value)
        });
        match task.await {
            Ok(result) => result.map_err(Problem::from),
            Err(e) => Err(Problem::internal(format!("a request's work failed: {e}"))),
        }
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
            // Counted as ended even if the run panics: the guard says so when it is dropped.
            let mut ended = Ended {
                runs: this,
                thread: thread.clone(),
                data: Some(json!({"status": "failed", "error": "the run panicked"})),
            };
            let result = runtime.run(&thread).await;
            ended.data = match &result {
                Ok(outcome) => Some(describe(outcome)),
                // The owner's run takes up what was stored; it, not this, ends the turn.
                Err(RuntimeError::ThreadBusy { .. }) => None,
                Err(e) => {
                    tracing::warn!(thread = %thread, error = %e, "a background run failed");
                    Some(json!({"status": "failed", "error": e.to_string()}))
                }
            };
            if let Some(data) = &ended.data {
                // Stored, so that a client that follows the thread later still sees it.
                let write = Write::Event {
                    kind: EventKind::RunEnded,
                    data: data.clone(),
                };
                if let Err(e) = AsyncStore::new(runtime.store().clone())
                    .apply(&thread, vec![write])
                    .await
                {
                    tracing::warn!(thread = %thread, error = %e, "the end of a run was not stored");
                }
            }
            drop(ended);
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

    /// Refuses new runs and asks every run under way to stop after the operation it is in.
    pub async fn close_and_stop(&self, runtime: &Runtime) {
        let threads: Vec<String> = {
            let mut inner = self.lock();
            inner.closed = true;
            inner.running.keys().cloned().collect()
        };
        // A running program or runCode run finishes and its result is stored.
        for thread in threads {
            runtime.stop_gracefully(&thread);
        }
    }

    /// Waits until every run has stored what it did and released its thread.
    pub async fn wait(&self) {
        let mut tasks = std::mem::take(&mut self.lock().tasks);
        while tasks.join_next().await.is_some() {}
    }
}

/// Ends a run's bookkeeping when dropped, however the run's task ended: its count, and the
/// notice to event streams (none when another run owned the thread).
struct Ended {
    runs: Runs,
    thread: String,
    data: Option<Value>,
}

impl Drop for Ended {
    fn drop(&mut self) {
        let label = match &self.data {
            Some(data) => outcome_label(data),
            None => "owned_elsewhere",
        };
        self.runs.finished(&self.thread, label);
        if self.data.is_some() {
            let _ = self.runs.ended.send(RunEnded {
                thread: std::mem::take(&mut self.thread),
            });
        }
    }
}

impl Runs {
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
            "waiting_for": "approval",
            "call_id": request.call_id,
            "tool": request.tool,
        }),
        RunOutcome::Paused(Waiting::Variables { request_id, names }) => json!({
            "status": "paused",
            "waiting_for": "variables",
            "request_id": request_id,
            "names": names,
        }),
    }
}

/// How a session binding's call ended the session, as clients read it.
fn session(end: &toolhost_runtime::engine::SessionEnd) -> Value {
    json!({"tool": end.tool, "message": end.message, "attachments": end.attachments})
}
