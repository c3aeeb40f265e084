//! The runtime's one `runCode` sandbox (spec 001 §1, SA-8, SA-9), shared by every thread: its
//! limits come from the embedding program, and a cap on runs in flight bounds the OS threads
//! they take (a run past the cap waits for a slot).

use super::{Runtime, ThreadState};
use std::sync::Arc;
use tokio::sync::Semaphore;
use toolhost_core::tool::AbortSignal;
use toolhost_sandbox::{RunCode, RunError, RunResult, Sandbox, SandboxError, SandboxLimits};

/// How many runs may be in flight at once unless the embedding program says otherwise.
pub const DEFAULT_MAX_RUNS_IN_FLIGHT: usize = 4;

/// How many runs of each JavaScript tool file are kept prepared unless the embedding program
/// says otherwise (see [`Runtime::set_warm_runtimes`]).
pub const DEFAULT_WARM_RUNTIMES: usize = 1;

/// The sandbox of a runtime and the slots of its runs.
#[derive(Debug, Clone)]
pub(crate) struct CodeRunner {
    sandbox: Sandbox,
    slots: Arc<Semaphore>,
    warm: usize,
}

impl Default for CodeRunner {
    fn default() -> Self {
        Self::new(SandboxLimits::default(), DEFAULT_MAX_RUNS_IN_FLIGHT)
            .expect("the default limits are in range")
    }
}

impl CodeRunner {
    /// A runner with these limits and at most `max_in_flight` runs at once (at least one).
    pub(crate) fn new(limits: SandboxLimits, max_in_flight: usize) -> Result<Self, SandboxError> {
        Ok(Self {
            sandbox: Sandbox::new(limits)?,
            slots: Arc::new(Semaphore::new(max_in_flight.max(1))),
            warm: DEFAULT_WARM_RUNTIMES,
        })
    }

    /// The sandbox (its limits apply to tool files in JavaScript too).
    pub(crate) fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// How many runs of each JavaScript tool file are kept prepared.
    pub(crate) fn warm(&self) -> usize {
        self.warm
    }

    /// A runner with other limits (and a new set of slots), keeping how many runs are kept warm.
    pub(super) fn with_limits(
        &self,
        limits: SandboxLimits,
        max_in_flight: usize,
    ) -> Result<Self, SandboxError> {
        let mut runner = Self::new(limits, max_in_flight)?;
        runner.warm = self.warm;
        Ok(runner)
    }

    /// Keeps `per_tool` runs of each JavaScript tool file prepared in advance.
    pub(super) fn set_warm(&mut self, per_tool: usize) {
        self.warm = per_tool;
    }

    /// Runs `code` once a slot is free; `abort` raised to interrupt ends the wait or terminates
    /// the run.
    pub(crate) async fn run(&self, code: RunCode, abort: &AbortSignal) -> RunResult {
        let started = std::time::Instant::now();
        let slot = tokio::select! {
            slot = self.slots.clone().acquire_owned() => slot,
            () = abort.interrupted() => return terminated(started, "the call was stopped before the code started"),
        };
        // The semaphore is never closed, so a slot always comes.
        let Ok(_slot) = slot else {
            return failed(started, "the sandbox is closed".to_owned());
        };
        let mut handle = match self.sandbox.run(code) {
            Ok(handle) => handle,
            Err(e) => return failed(started, e.to_string()),
        };
        tokio::select! {
            result = &mut handle => result,
            () = abort.interrupted() => {
                handle.terminate();
                // The run ends at its next interrupt check and reports itself terminated.
                handle.await
            }
        }
    }
}

fn terminated(started: std::time::Instant, message: &str) -> RunResult {
    error_result(started, RunError::TERMINATED, message.to_owned())
}

fn failed(started: std::time::Instant, message: String) -> RunResult {
    error_result(started, RunError::SANDBOX, message)
}

fn error_result(started: std::time::Instant, name: &str, message: String) -> RunResult {
    RunResult::Error {
        error: RunError {
            name: name.to_owned(),
            message,
            stack: None,
        },
        logs: Vec::new(),
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
    }
}

impl Runtime {
    /// The state of `thread_id` that a run hands its calls, with this runtime's sandbox.
    pub(crate) fn thread_state(&self, thread_id: &str, agent: &str) -> ThreadState {
        ThreadState::new(self.services.db.clone(), thread_id, agent)
            .with_code(self.services.code.clone())
            .with_fetch(self.services.fetch.clone())
            .with_quotas(self.services.quotas.clone())
            .with_live(self.process.live.clone())
            .with_answerers(self.process.answerers.clone())
    }
}
