//! The runs this node started in the background, so that shutdown can stop them and wait for
//! them, event streams can say when one ended, a request can wait for one (a direct tool call),
//! and metrics can count them; and the bound on how many run at once. Work past the bound is
//! offered to any node of the database with room for it ([`Store::offer_work`]); on a database
//! that several nodes share, a node that stops hands the turns it interrupted to the others the
//! same way.

use crate::problem::Problem;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinSet;
use toolhost_runtime::engine::{
    RunOutcome, Runtime, RuntimeError, SessionEnd, StopReason, Waiting,
};
use toolhost_store::{AsyncStore, EventKind, Store, Write};

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
    /// Woken when this node offered work (once the offer is stored).
    offered: Arc<tokio::sync::Notify>,
}

#[derive(Default)]
struct Inner {
    /// The most threads run at once.
    capacity: usize,
    /// Work may be on offer that this node could take (it offered some, or heard of some).
    offers_may_wait: bool,
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

impl Runs {
    /// No runs yet; at most `capacity` threads run at once.
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                capacity,
                ..Inner::default()
            })),
            ended: broadcast::channel(ENDED_CAPACITY).0,
            offered: Arc::default(),
        }
    }

    /// Runs `thread` in the background. When another run owns it, that run takes up what was
    /// stored for it, so this one ends at once. When this node runs as many threads as it may,
    /// the thread is offered to any node with room instead (this one included, once it has
    /// room). Nothing starts once shutdown began: what was stored waits for the next run, and
    /// on a shared database it is offered to the other nodes at once.
    pub fn start(&self, runtime: Arc<Runtime>, thread: String) {
        self.spawn(runtime, thread, None);
    }

    /// How many more threads this node may run now.
    pub fn room(&self) -> usize {
        let inner = self.lock();
        if inner.closed {
            return 0;
        }
        inner.capacity.saturating_sub(inner.running.len())
    }

    /// Notes that work may be on offer (another node offered some).
    pub fn offers_heard(&self) {
        self.lock().offers_may_wait = true;
    }

    /// Completes once this node has offered work (at once if it did since the last wait).
    pub async fn offered(&self) {
        self.offered.notified().await;
    }

    /// Whether work may be on offer that this node has not taken.
    pub fn offers_may_wait(&self) -> bool {
        self.lock().offers_may_wait
    }

    /// Clears the mark of [`Runs::offers_may_wait`]: a take found all there was.
    pub fn offers_taken(&self) {
        self.lock().offers_may_wait = false;
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

    /// Whether this node has a run of `thread` under way.
    pub fn is_running(&self, thread: &str) -> bool {
        self.lock().running.contains_key(thread)
    }

    fn spawn(&self, runtime: Arc<Runtime>, thread: String, reply: Option<Reply>) {
        let mut inner = self.lock();
        while inner.tasks.try_join_next().is_some() {}
        let store = runtime.store().clone();
        if inner.closed {
            // A client waiting for the run hears that nothing ran (its reply is dropped). The
            // work is stored; on a shared database another node is told of it at once.
            if reply.is_none() && is_shared(&*store) {
                inner.tasks.spawn(self.clone().offer(store, thread));
            }
            return;
        }
        // A waiting client's run is this node's to do; a thread that runs here already is
        // taken up by its run.
        let full = inner.running.len() >= inner.capacity;
        if full && reply.is_none() && !inner.running.contains_key(&thread) {
            inner.tasks.spawn(self.clone().offer(store, thread));
            return;
        }
        *inner.running.entry(thread.clone()).or_default() += 1;
        inner.started += 1;
        let this = self.clone();
        inner.tasks.spawn(async move {
            // Counted as ended even if the run panics: the guard says so when it is dropped.
            let mut ended = Ended {
                runs: this,
                thread: thread.clone(),
                data: Some(RunEndedData::Failed {
                    error: "the run panicked".to_owned(),
                }),
            };
            let result = runtime.run(&thread).await;
            ended.data = match &result {
                Ok(outcome) => Some(RunEndedData::of(outcome)),
                // The owner's run takes up what was stored; it, not this, ends the turn.
                Err(RuntimeError::ThreadBusy { .. }) => None,
                Err(e) => {
                    tracing::warn!(thread = %thread, error = %e, "a background run failed");
                    Some(RunEndedData::Failed {
                        error: e.to_string(),
                    })
                }
            };
            if let Some(data) = &ended.data {
                // Stored, so that a client that follows the thread later still sees it.
                let write = Write::Event {
                    kind: EventKind::RunEnded,
                    // Plain strings, numbers and lists: they always have a JSON form.
                    data: serde_json::to_value(data).unwrap_or_default(),
                };
                if let Err(e) = AsyncStore::new(runtime.store().clone())
                    .apply(&thread, vec![write])
                    .await
                {
                    tracing::warn!(thread = %thread, error = %e, "the end of a run was not stored");
                }
            }
            // Stopped because this node is stopping, on a shared database: the run left the
            // turn `running` (see `close_and_stop`), which any node's sweep takes up; the offer
            // tells the other nodes at once.
            let handed_back = matches!(result, Ok(RunOutcome::Done(StopReason::Stopped)))
                && ended.runs.lock().closed
                && is_shared(&**runtime.store());
            let runs = ended.runs.clone();
            drop(ended);
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
            if handed_back {
                runs.offer(runtime.store().clone(), thread).await;
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
    /// On a database other nodes share, each run hands its thread on as it stops (its turn is
    /// left as work for them); alone, a stopped thread waits until someone runs it.
    pub async fn close_and_stop(&self, runtime: &Runtime) {
        let threads: Vec<String> = {
            let mut inner = self.lock();
            inner.closed = true;
            inner.running.keys().cloned().collect()
        };
        let shared = is_shared(&**runtime.store());
        // A running program or runCode run finishes and its result is stored.
        for thread in threads {
            if shared {
                runtime.hand_back(&thread);
            } else {
                runtime.stop_gracefully(&thread);
            }
        }
    }

    /// Waits until every run has stored what it did and released its thread.
    pub async fn wait(&self) {
        let mut tasks = std::mem::take(&mut self.lock().tasks);
        while tasks.join_next().await.is_some() {}
    }
}

/// Whether other nodes share the store (they hear its offers).
fn is_shared(store: &dyn Store) -> bool {
    store.work_offers().is_some()
}

/// Ends a run's bookkeeping when dropped, however the run's task ended: its count, and the
/// notice to event streams (none when another run owned the thread).
struct Ended {
    runs: Runs,
    thread: String,
    data: Option<RunEndedData>,
}

impl Drop for Ended {
    fn drop(&mut self) {
        let label = match &self.data {
            Some(data) => data.label(),
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
    /// Offers `thread`'s work to any node with room for it; once it is stored, this node's
    /// taker is told too (it takes it up when it has room).
    async fn offer(self, store: Arc<dyn Store>, thread: String) {
        let offered = AsyncStore::new(store)
            .run_blocking({
                let thread = thread.clone();
                move |store| store.offer_work(&thread)
            })
            .await;
        match offered {
            Ok(()) => {
                self.lock().offers_may_wait = true;
                self.offered.notify_one();
            }
            Err(e) => {
                tracing::warn!(thread = %thread, error = %e, "work could not be offered; a sweep takes it up")
            }
        }
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

/// How a run this node started ended, as clients read it: the data of its `run_ended` event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub(crate) enum RunEndedData {
    /// The thread finished its turn, for `reason`.
    Done {
        /// Why (`response`, `stop_tool`, `max_steps`, ...).
        reason: &'static str,
        /// The tool that stopped it (`stop_tool`).
        #[serde(skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// The limit it reached (`max_steps`, `max_session_turns`).
        #[serde(skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// How a session binding's call ended the session (`session_stop`, `session_fail`).
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<SessionEnded>,
    },
    /// The thread waits for a person.
    Paused(PausedFor),
    /// The run failed.
    Failed {
        /// Why, in words.
        error: String,
    },
}

/// What a paused run waits for.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "waiting_for", rename_all = "snake_case")]
pub(crate) enum PausedFor {
    /// A decision on a call.
    Approval {
        /// The call.
        call_id: String,
        /// Its tool.
        tool: String,
    },
    /// Values of variables.
    Variables {
        /// The request the values answer.
        request_id: String,
        /// The variables wanted.
        names: Vec<String>,
    },
}

/// How a session binding's call ended the session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SessionEnded {
    tool: String,
    message: Option<String>,
    attachments: Vec<String>,
}

impl RunEndedData {
    /// A run's outcome.
    pub(crate) fn of(outcome: &RunOutcome) -> Self {
        match outcome {
            RunOutcome::Done(reason) => {
                let (reason, tool, limit, session) = match reason {
                    StopReason::Response => ("response", None, None, None),
                    StopReason::StopTool(tool) => ("stop_tool", Some(tool.clone()), None, None),
                    StopReason::MaxSteps(n) => ("max_steps", None, Some(*n), None),
                    StopReason::MaxSessionTurns(n) => ("max_session_turns", None, Some(*n), None),
                    StopReason::Stopped => ("stopped", None, None, None),
                    StopReason::SessionStop(end) => ("session_stop", None, None, Some(end.into())),
                    StopReason::SessionFail(end) => ("session_fail", None, None, Some(end.into())),
                };
                RunEndedData::Done {
                    reason,
                    tool,
                    limit,
                    session,
                }
            }
            RunOutcome::Paused(Waiting::Approval(request)) => {
                RunEndedData::Paused(PausedFor::Approval {
                    call_id: request.call_id.clone(),
                    tool: request.tool.clone(),
                })
            }
            RunOutcome::Paused(Waiting::Variables { request_id, names }) => {
                RunEndedData::Paused(PausedFor::Variables {
                    request_id: request_id.clone(),
                    names: names.clone(),
                })
            }
        }
    }

    /// Its `status`, as a metric label.
    fn label(&self) -> &'static str {
        match self {
            RunEndedData::Done { .. } => "done",
            RunEndedData::Paused(_) => "paused",
            RunEndedData::Failed { .. } => "failed",
        }
    }
}

impl From<&SessionEnd> for SessionEnded {
    fn from(end: &SessionEnd) -> Self {
        SessionEnded {
            tool: end.tool.clone(),
            message: end.message.clone(),
            attachments: end.attachments.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_run_end_is_read_by_its_status_and_the_fields_of_that_status() {
        let read = |data: RunEndedData| serde_json::to_value(data).unwrap();
        let done = RunEndedData::of(&RunOutcome::Done(StopReason::MaxSteps(3)));
        assert_eq!(done.label(), "done");
        assert_eq!(
            read(done),
            json!({"status": "done", "reason": "max_steps", "limit": 3})
        );
        let paused = RunEndedData::of(&RunOutcome::Paused(Waiting::Variables {
            request_id: "r1".into(),
            names: vec!["TOKEN".into()],
        }));
        assert_eq!(paused.label(), "paused");
        assert_eq!(
            read(paused),
            json!({"status": "paused", "waiting_for": "variables", "request_id": "r1", "names": ["TOKEN"]})
        );
        let failed = RunEndedData::Failed {
            error: "no model".into(),
        };
        assert_eq!(failed.label(), "failed");
        assert_eq!(
            read(failed),
            json!({"status": "failed", "error": "no model"})
        );
    }
}
