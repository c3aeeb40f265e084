//! Helpers shared by the behaviour tests.
#![allow(dead_code)]

use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use toolhost_sandbox::{Host, LogEntry, RunCode, RunResult, Sandbox, SandboxLimits};

/// How long a test waits for something the run should do (log, end) before it fails instead of
/// hanging: a hang must fail the test, not stall CI until it is cut. Far beyond what anything
/// takes on a slow machine, so it never fails a test that works.
pub const GIVE_UP_AFTER: Duration = Duration::from_secs(600);

/// Awaits `wait`, failing the test with a message saying that `what` never happened when it
/// has not ended after [`GIVE_UP_AFTER`].
pub async fn within<T>(what: &str, wait: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GIVE_UP_AFTER, wait)
        .await
        .unwrap_or_else(|_| panic!("{what} never happened within {GIVE_UP_AFTER:?}"))
}

/// A small memory cap, so that memory tests end quickly, and a deadline long enough that no
/// run that is meant to end by itself meets it, however slow the machine.
pub fn small_limits() -> SandboxLimits {
    SandboxLimits {
        memory_bytes: 16 << 20,
        deadline: Some(Duration::from_secs(60)),
        ..SandboxLimits::default()
    }
}

/// [`small_limits`] with a deadline of 500 ms, for runs that only their deadline ends.
pub fn short_deadline() -> SandboxLimits {
    SandboxLimits {
        deadline: Some(Duration::from_millis(500)),
        ..small_limits()
    }
}

/// A run of `source` (calling its default export) under `limits`.
pub async fn run_with(limits: SandboxLimits, source: &str) -> RunResult {
    let sandbox = Sandbox::new(limits).expect("valid limits");
    sandbox
        .run(RunCode {
            source: source.to_owned(),
            ..RunCode::default()
        })
        .expect("the run starts")
        .await
}

/// A run of `source` under [`small_limits`].
pub async fn run(source: &str) -> RunResult {
    run_with(small_limits(), source).await
}

/// The error's name and message, failing the test on a success.
pub fn error_of(result: &RunResult) -> (String, String) {
    let error = result
        .error()
        .unwrap_or_else(|| panic!("expected an error, got {result:?}"));
    (error.name.clone(), error.message.clone())
}

/// The result's value, failing the test on an error.
pub fn value_of(result: &RunResult) -> serde_json::Value {
    result
        .result()
        .unwrap_or_else(|| panic!("expected a success, got {result:?}"))
        .clone()
}

/// A host with no operations that hands on each console entry relayed to it, as it arrives.
pub struct LogsOnly(Mutex<mpsc::Sender<LogEntry>>);

impl LogsOnly {
    /// The host, and where its entries arrive.
    pub fn new() -> (Arc<Self>, mpsc::Receiver<LogEntry>) {
        let (told, heard) = mpsc::channel();
        (Arc::new(LogsOnly(Mutex::new(told))), heard)
    }
}

impl Host for LogsOnly {
    type Op = ();
    type Error = String;

    fn parse(&self, name: &str, _args: serde_json::Value) -> Result<(), String> {
        Err(format!("no operation {name}"))
    }

    fn call(&self, (): ()) -> Result<serde_json::Value, String> {
        Ok(serde_json::Value::Null)
    }

    fn log(&self, entry: &LogEntry) {
        // A test that stopped listening lets the run go on.
        let _ = self.0.lock().unwrap().send(entry.clone());
    }
}
