//! The runtime's one `runCode` sandbox (spec 001 §1, SA-8, SA-9), shared by every thread: its
//! limits come from the embedding program, and a cap on runs in flight bounds the OS threads
//! they take (a run past the cap waits for a slot).

use super::{Runtime, ThreadState};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use toolhost_core::tool::AbortSignal;
use toolhost_sandbox::{RunCode, RunError, RunResult, Sandbox, SandboxError, SandboxLimits};

/// How many runs may be in flight at once unless the embedding program says otherwise.
pub const DEFAULT_MAX_RUNS_IN_FLIGHT: usize = 4;

/// How often a waiting or running call looks at its abort signal, which is a flag, not a waker.
const ABORT_POLL: Duration = Duration::from_millis(10);

/// The sandbox of a runtime and the slots of its runs.
#[derive(Debug, Clone)]
pub(crate) struct CodeRunner {
    sandbox: Sandbox,
    slots: Arc<Semaphore>,
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
        })
    }

    /// Runs `code` once a slot is free; `abort` raised to interrupt ends the wait or terminates
    /// the run.
    pub(crate) async fn run(&self, code: RunCode, abort: &AbortSignal) -> RunResult {
        let started = std::time::Instant::now();
        let slot = tokio::select! {
            slot = self.slots.clone().acquire_owned() => slot,
            () = raised(abort) => return terminated(started, "the call was stopped before the code started"),
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
            () = raised(abort) => {
                handle.terminate();
                // The run ends at its next interrupt check and reports itself terminated.
                handle.await
            }
        }
    }
}

/// Resolves once `abort` asks to interrupt (a graceful stop lets the run finish).
async fn raised(abort: &AbortSignal) {
    while !abort.is_interrupted() {
        tokio::time::sleep(ABORT_POLL).await;
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
    /// Sets the limits of every `runCode` run (memory, stack, deadline, result and log sizes;
    /// [`SandboxLimits::default`] unless set) and how many runs may be in flight at once
    /// ([`DEFAULT_MAX_RUNS_IN_FLIGHT`] unless set; each run takes an OS thread, and runs past the
    /// cap wait). Refuses limits out of their ranges, keeping the ones in force.
    pub fn set_code_limits(
        &mut self,
        limits: SandboxLimits,
        max_in_flight: usize,
    ) -> Result<(), SandboxError> {
        self.code = CodeRunner::new(limits, max_in_flight)?;
        Ok(())
    }

    /// The state of `thread_id` that a run hands its calls, with this runtime's sandbox.
    pub(crate) fn thread_state(&self, thread_id: &str, agent: &str) -> ThreadState {
        ThreadState::new(self.db.clone(), thread_id, agent)
            .with_code(self.code.clone())
            .with_fetch(self.fetch.clone())
    }
}
