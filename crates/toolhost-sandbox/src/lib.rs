//! The `runCode` sandbox of toolhost (spec 001 §1, SA-8, SA-9): an ES module runs in QuickJS
//! with no capability of the host, under a memory cap, a stack cap and a deadline, and the caller
//! can await its result or terminate it.
//!
//! # Contract
//!
//! **What a run gets.** [`Sandbox::run`] takes a [`RunCode`]: the main module's source, the
//! modules it may import (by exact specifier, source given by the caller), JSON globals, and
//! which export to call with which JSON arguments (`default` with none unless said). Each run
//! gets a **fresh QuickJS runtime and context in a process of its own** (a fork of the caller's,
//! served by a thread of the caller's), which exits at its end: nothing of one run is seen by
//! another, at the same time or later, and nothing the code does can keep it alive past its
//! deadline or a stop.
//!
//! **What is isolated.** The context has the ECMAScript built-ins (objects, functions, errors,
//! `Math`, `JSON`, `Date`, `RegExp`, `Proxy`, `Map`/`Set`, typed arrays, `Promise`, `WeakRef`,
//! `eval` and `Function`, which reach only the same context), the given globals, and `console`
//! (captured; the given globals are set after it and may replace it or any built-in). Nothing
//! else: no files, network, timers, environment, process, `performance`, nor QuickJS's
//! `std`/`os` modules (the crate does not build them); `Atomics.wait` cannot block. An import of
//! a module that was not given is refused with a `ReferenceError` that names it and what may be
//! imported.
//!
//! **Limits** ([`SandboxLimits`], defaults in brackets): memory of the run's runtime
//! [64 MiB]; native stack for JavaScript [1 MiB, and the run's thread gets that plus a fixed
//! margin, so the engine's own check always fires first]; a deadline from the start of the run
//! [30 s; `None` leaves only [`RunHandle::terminate`], SA-8's own behaviour]; the result's JSON
//! [1 MiB]; the logs [64 KiB, each entry costing its bytes plus 8; past the cap entries are cut or
//! dropped and one `warn` entry at the end says how many]. The deadline is checked by QuickJS's
//! interrupt handler, which it calls about every 10,000 operations and during
//! regular-expression matching, so that the error can say where the code was; a native
//! operation can run long between two checks, so the run's process is killed once the deadline
//! is passed by [`grace`] (as long as the deadline, at most 1 s): a run always ends within twice
//! its deadline and within its deadline plus one second. [`RunHandle::terminate`] kills the
//! process at once; the result then has the logs the run had written. QuickJS also caps a string at 2^30 - 1 characters
//! (`InternalError: string too long`). A limit hit is an error result whose `name` says which
//! ([`RunError::DEADLINE`], [`RunError::TERMINATED`], [`RunError::MEMORY`], [`RunError::STACK`],
//! [`RunError::RESULT_SIZE`]); memory and stack errors that the code catches itself are its own
//! business.
//!
//! **Result** ([`RunResult`], serialized in the spec's names): `{status: "success", result,
//! logs, durationMs}` or `{status: "error", error: {name, message, stack?}, logs, durationMs}`.
//! A returned promise is awaited; jobs still queued then run too. It is an error when the code
//! throws (JavaScript's own name, message and stack), when a promise was rejected and nothing
//! handled it ([`RunError::UNHANDLED_REJECTION`]), when the awaited promise can never settle,
//! when the export is missing, and when the result is not JSON ([`RunError::NOT_JSON`], naming
//! the path: `undefined` inside, functions, symbols, BigInts, non-finite numbers, cycles, class
//! instances); `undefined` as the whole result is `null`. SA-9 also names `reports`, which no
//! source defines; results do not carry it.
//!
//! **Cost.** Forking the process and creating the runtime and context are part of every run
//! (nothing can leak between runs); a [`WarmPool`] does both before the call. The `run_code` bench measures start to result and prints
//! [`Sandbox::fresh_context_memory`].

mod console;
mod convert;
mod host;
mod imports;
mod ipc;
mod process;
mod result;
mod worker;

pub use convert::MAX_DEPTH;
pub use host::{Host, HostDoor, HOST_FUNCTION};
pub use process::grace;
pub use result::{Execute, LogEntry, LogLevel, RunCode, RunError, RunResult};

use process::Control;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Stack the run's thread has beyond [`SandboxLimits::max_stack_bytes`], for the frames the
/// engine does not count (the thread's start, the host's calls, the result's conversion).
const STACK_MARGIN: usize = 1 << 20;

/// The bounds of every run of a [`Sandbox`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxLimits {
    /// Memory QuickJS may allocate for the run (its runtime's limit). Default 64 MiB; at least
    /// [`SandboxLimits::MIN_MEMORY_BYTES`].
    pub memory_bytes: usize,
    /// Native stack JavaScript may use. Default 1 MiB; between
    /// [`SandboxLimits::MIN_STACK_BYTES`] and [`SandboxLimits::MAX_STACK_BYTES`].
    pub max_stack_bytes: usize,
    /// Wall time from the start of the run after which it is stopped. Default 30 s. The run has
    /// its process to itself and never waits for I/O, so this is its CPU time unless the machine
    /// is oversubscribed. `None`: only [`RunHandle::terminate`] stops it.
    pub deadline: Option<Duration>,
    /// Bytes of the result's JSON text. Default 1 MiB.
    pub max_result_bytes: usize,
    /// Bytes of logs (messages plus 8 per entry). Default 64 KiB.
    pub max_log_bytes: usize,
}

impl SandboxLimits {
    /// The least memory cap accepted: a fresh context needs a few hundred KiB.
    pub const MIN_MEMORY_BYTES: usize = 1 << 20;
    /// The least stack cap accepted.
    pub const MIN_STACK_BYTES: usize = 64 << 10;
    /// The largest stack cap accepted.
    pub const MAX_STACK_BYTES: usize = 256 << 20;
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            memory_bytes: 64 << 20,
            max_stack_bytes: 1 << 20,
            deadline: Some(Duration::from_secs(30)),
            max_result_bytes: 1 << 20,
            max_log_bytes: 64 << 10,
        }
    }
}

/// Why a run could not start (everything that happens once it started is in its [`RunResult`]).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// [`SandboxLimits::memory_bytes`] is below the minimum.
    #[error("the sandbox's memory cap of {given} bytes is below the minimum of {minimum} bytes")]
    MemoryTooSmall {
        /// The cap given.
        given: usize,
        /// [`SandboxLimits::MIN_MEMORY_BYTES`].
        minimum: usize,
    },
    /// [`SandboxLimits::max_stack_bytes`] is outside its range.
    #[error("the sandbox's stack cap of {given} bytes is outside {minimum}..={maximum} bytes")]
    StackOutOfRange {
        /// The cap given.
        given: usize,
        /// [`SandboxLimits::MIN_STACK_BYTES`].
        minimum: usize,
        /// [`SandboxLimits::MAX_STACK_BYTES`].
        maximum: usize,
    },
    /// An import was given the main module's own name.
    #[error("an import may not be named `{name}`: that is the main module's name")]
    ReservedImportName {
        /// The name.
        name: String,
    },
    /// A global or an argument nests deeper than [`MAX_DEPTH`].
    #[error("{what} nests deeper than {MAX_DEPTH} levels")]
    TooDeep {
        /// Which value: `globals.NAME` or `execute.args[N]`.
        what: String,
    },
    /// The operating system refused a thread for the run.
    #[error("the sandbox could not start a thread for the run: {0}")]
    Spawn(#[source] std::io::Error),
    /// QuickJS could not create a runtime and context.
    #[error("QuickJS could not create a context: {0}")]
    Engine(String),
}

/// Runs code under fixed [`SandboxLimits`]. Cheap to clone and share; runs are independent.
#[derive(Debug, Clone)]
pub struct Sandbox {
    limits: Arc<SandboxLimits>,
}

impl Sandbox {
    /// A sandbox whose runs have these limits; refuses limits outside their ranges.
    pub fn new(limits: SandboxLimits) -> Result<Self, SandboxError> {
        if limits.memory_bytes < SandboxLimits::MIN_MEMORY_BYTES {
            return Err(SandboxError::MemoryTooSmall {
                given: limits.memory_bytes,
                minimum: SandboxLimits::MIN_MEMORY_BYTES,
            });
        }
        let stack = SandboxLimits::MIN_STACK_BYTES..=SandboxLimits::MAX_STACK_BYTES;
        if !stack.contains(&limits.max_stack_bytes) {
            return Err(SandboxError::StackOutOfRange {
                given: limits.max_stack_bytes,
                minimum: SandboxLimits::MIN_STACK_BYTES,
                maximum: SandboxLimits::MAX_STACK_BYTES,
            });
        }
        Ok(Sandbox {
            limits: Arc::new(limits),
        })
    }

    /// The limits of this sandbox's runs.
    pub fn limits(&self) -> &SandboxLimits {
        &self.limits
    }

    /// Starts `code` in a process of its own and returns at once. Await the [`RunHandle`] for
    /// the result (awaiting never blocks the async runtime); dropping it unawaited terminates the
    /// run. Refuses an import named like the main module and globals or arguments nested deeper
    /// than [`MAX_DEPTH`].
    pub fn run(&self, code: RunCode) -> Result<RunHandle, SandboxError> {
        self.start(code, None)
    }

    /// Like [`Sandbox::run`], with one door to the host: the global function `__toolhost`
    /// (see [`Host`]). For toolhost's own JavaScript tools, never for `runCode`.
    pub fn run_with_host(&self, code: RunCode, host: HostDoor) -> Result<RunHandle, SandboxError> {
        self.start(code, Some(host))
    }

    /// Runs `code` (with `host`'s door, when given) and waits for its result on the calling
    /// thread, for callers that are not async (loading a project). Blocks the caller until the
    /// run ends; its limits bound how long.
    pub fn run_to_end(
        &self,
        code: RunCode,
        host: Option<HostDoor>,
    ) -> Result<RunResult, SandboxError> {
        self.check(&code)?;
        let limits = Arc::clone(&self.limits);
        let control = Arc::new(Control::default());
        let thread = std::thread::Builder::new()
            .name("toolhost-sandbox-run".to_owned())
            .stack_size(limits.max_stack_bytes + STACK_MARGIN)
            .spawn(move || process::run(&limits, code, control, host))
            .map_err(SandboxError::Spawn)?;
        thread.join().map_err(|_| {
            SandboxError::Engine("the run's thread stopped without a result".to_owned())
        })
    }

    /// Refuses an import named like the main module and globals or arguments nested deeper
    /// than [`MAX_DEPTH`].
    fn check(&self, code: &RunCode) -> Result<(), SandboxError> {
        if code.imports.contains_key(worker::MAIN) {
            return Err(SandboxError::ReservedImportName {
                name: worker::MAIN.to_owned(),
            });
        }
        let too_deep = |v: &serde_json::Value| convert::depth(v) > MAX_DEPTH;
        if let Some((name, _)) = code.globals.iter().find(|(_, v)| too_deep(v)) {
            return Err(SandboxError::TooDeep {
                what: format!("globals.{name}"),
            });
        }
        if let Some(i) = code.execute.args.iter().position(too_deep) {
            return Err(SandboxError::TooDeep {
                what: format!("execute.args[{i}]"),
            });
        }
        Ok(())
    }

    fn start(&self, code: RunCode, host: Option<HostDoor>) -> Result<RunHandle, SandboxError> {
        self.check(&code)?;
        let control = Arc::new(Control::default());
        let (sender, receiver) = oneshot::channel();
        let limits = Arc::clone(&self.limits);
        let shared = Arc::clone(&control);
        std::thread::Builder::new()
            .name("toolhost-sandbox-run".to_owned())
            .stack_size(limits.max_stack_bytes + STACK_MARGIN)
            .spawn(move || {
                // The receiver may be gone (the handle was dropped): the result is then unwanted.
                let _ = sender.send(process::run(&limits, code, shared, host));
            })
            .map_err(SandboxError::Spawn)?;
        Ok(RunHandle {
            terminator: Terminator { control },
            receiver,
            started: Instant::now(),
        })
    }

    /// The memory of a fresh runtime and context as a run gets them (built-ins and `console`),
    /// from QuickJS's own accounting; measured on the calling thread.
    pub fn fresh_context_memory(&self) -> Result<ContextMemory, SandboxError> {
        let logs = std::rc::Rc::new(std::cell::RefCell::new(console::LogBuffer::new(0)));
        let (rt, context) =
            worker::fresh(&self.limits, &logs).map_err(|e| SandboxError::Engine(e.message))?;
        let usage = rt.memory_usage();
        drop(context);
        Ok(ContextMemory {
            memory_used_bytes: usize::try_from(usage.memory_used_size).unwrap_or(0),
            malloc_bytes: usize::try_from(usage.malloc_size).unwrap_or(0),
            objects: usize::try_from(usage.obj_count).unwrap_or(0),
        })
    }
}

/// Runs of one module prepared in advance (a warm pool): up to `size` processes each hold a
/// fresh runtime and context with the module evaluated, waiting for one call. A call takes one
/// (or, when none is left, starts cold) and a replacement starts preparing at once. Each
/// prepared run serves one call and is then dropped, so nothing of one call reaches another,
/// as with [`Sandbox::run`]; what the pool saves is the preparation, done before the call.
/// Dropping the pool ends the idle runs.
pub struct WarmPool {
    sandbox: Sandbox,
    template: Arc<RunCode>,
    size: usize,
    ready: std::sync::Mutex<std::collections::VecDeque<Prepared>>,
}

impl std::fmt::Debug for WarmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmPool")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// A run being prepared or waiting for its call.
struct Prepared {
    jobs: std::sync::mpsc::Sender<process::Job>,
    control: Arc<Control>,
}

impl Sandbox {
    /// A pool of `size` runs of `code`'s module prepared in advance (see [`WarmPool`]); the
    /// export each call makes and its arguments are given with the call. Refuses what
    /// [`Sandbox::run`] refuses.
    pub fn warm(&self, code: RunCode, size: usize) -> Result<WarmPool, SandboxError> {
        self.check(&code)?;
        let pool = WarmPool {
            sandbox: self.clone(),
            template: Arc::new(code),
            size,
            ready: std::sync::Mutex::new(std::collections::VecDeque::with_capacity(size)),
        };
        for _ in 0..size {
            pool.prepare()?;
        }
        Ok(pool)
    }
}

impl WarmPool {
    /// How many runs the pool keeps prepared.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Starts one more run preparing and puts it in the pool.
    fn prepare(&self) -> Result<(), SandboxError> {
        let (jobs, waiting) = std::sync::mpsc::channel();
        let control = Arc::new(Control::default());
        let limits = Arc::clone(&self.sandbox.limits);
        let code = (*self.template).clone();
        let shared = Arc::clone(&control);
        std::thread::Builder::new()
            .name("toolhost-sandbox-warm".to_owned())
            .stack_size(limits.max_stack_bytes + STACK_MARGIN)
            .spawn(move || process::run_warm(&limits, code, shared, waiting))
            .map_err(SandboxError::Spawn)?;
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Prepared { jobs, control });
        Ok(())
    }

    /// Calls `execute` on a prepared run (with `host`'s door, when given), or on a cold one
    /// when none is left; await the handle as for [`Sandbox::run`].
    pub fn run(&self, execute: Execute, host: Option<HostDoor>) -> Result<RunHandle, SandboxError> {
        let taken = self
            .ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let Some(prepared) = taken else {
            let mut code = (*self.template).clone();
            code.execute = execute;
            return self.sandbox.start(code, host);
        };
        // A replacement prepares while this call runs.
        self.prepare()?;
        let (reply, receiver) = oneshot::channel();
        let job = process::Job {
            execute,
            host,
            reply,
        };
        if let Err(std::sync::mpsc::SendError(job)) = prepared.jobs.send(job) {
            // The prepared run is gone (its supervisor ended): start this call cold.
            let mut code = (*self.template).clone();
            code.execute = job.execute;
            return self.sandbox.start(code, job.host);
        }
        Ok(RunHandle {
            terminator: Terminator {
                control: prepared.control,
            },
            receiver,
            started: Instant::now(),
        })
    }
}

/// The memory of a fresh context ([`Sandbox::fresh_context_memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextMemory {
    /// Bytes QuickJS counts as used by its objects, strings, shapes and atoms.
    pub memory_used_bytes: usize,
    /// Bytes QuickJS allocated in all (what the memory cap limits).
    pub malloc_bytes: usize,
    /// Objects in the context.
    pub objects: usize,
}

/// Stops a run from anywhere: cloneable, usable while the [`RunHandle`] is awaited.
#[derive(Debug, Clone)]
pub struct Terminator {
    control: Arc<Control>,
}

impl Terminator {
    /// Asks the run to stop. The code is stopped at its next interrupt check and the run ends
    /// with a [`RunError::TERMINATED`] error (unless it had already finished).
    pub fn terminate(&self) {
        self.control.terminate();
    }
}

/// A started run: a future of its [`RunResult`] that can be terminated. Like any future, it
/// is not polled again once it gave its result; dropping it before then terminates the run.
#[derive(Debug)]
pub struct RunHandle {
    terminator: Terminator,
    receiver: oneshot::Receiver<RunResult>,
    started: Instant,
}

impl RunHandle {
    /// Stops the run (see [`Terminator::terminate`]).
    pub fn terminate(&self) {
        self.terminator.terminate();
    }

    /// A [`Terminator`] for this run, to stop it while the handle is being awaited.
    pub fn terminator(&self) -> Terminator {
        self.terminator.clone()
    }
}

impl Future for RunHandle {
    type Output = RunResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<RunResult> {
        let started = self.started;
        Pin::new(&mut self.receiver).poll(cx).map(|received| {
            received.unwrap_or_else(|_| RunResult::Error {
                error: RunError::new(
                    RunError::SANDBOX,
                    "the run's thread stopped without a result",
                ),
                logs: Vec::new(),
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            })
        })
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        // Nobody can receive the result any more; stop the work (a finished run ignores this).
        self.terminator.terminate();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn dropping_an_unawaited_handle_terminates_its_run() {
        let limits = SandboxLimits {
            deadline: None,
            ..SandboxLimits::default()
        };
        let sandbox = Sandbox::new(limits).expect("valid limits");
        let handle = sandbox
            .run(RunCode {
                source: "export default () => { for (;;) {} }".to_owned(),
                ..RunCode::default()
            })
            .expect("the run starts");
        let control = Arc::clone(&handle.terminator.control);
        assert!(!control.terminate.load(Ordering::Relaxed));
        drop(handle);
        assert!(control.terminate.load(Ordering::Relaxed));
        // The run's process is killed and its supervisor ends, releasing the last other
        // reference to the control.
        let until = Instant::now() + Duration::from_secs(60);
        while Arc::strong_count(&control) > 1 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(Arc::strong_count(&control), 1, "the run's thread ended");
    }
}
