//! Helpers shared by the behaviour tests.
#![allow(dead_code)]

use std::time::Duration;
use toolhost_sandbox::{RunCode, RunResult, Sandbox, SandboxLimits};

/// Limits small enough that hostile tests end quickly.
pub fn small_limits() -> SandboxLimits {
    SandboxLimits {
        memory_bytes: 16 << 20,
        deadline: Some(Duration::from_millis(500)),
        ..SandboxLimits::default()
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
