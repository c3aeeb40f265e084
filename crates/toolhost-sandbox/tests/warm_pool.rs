//! A warm pool: runs of one module prepared in advance, each serving one call. A call through
//! the pool gets what a cold run of the same code gets, sees nothing of earlier calls, gets the
//! module's own error when it failed to load, can be terminated, and has its deadline counted
//! from the call, not from when it was prepared.

mod common;

use common::{error_of, small_limits, value_of};
use serde_json::json;
use std::time::Duration;
use toolhost_sandbox::{Execute, RunCode, RunError, Sandbox, SandboxLimits};

fn call(args: Vec<serde_json::Value>) -> Execute {
    Execute {
        fn_name: "default".to_owned(),
        args,
    }
}

const COUNTER: &str = "globalThis.calls = (globalThis.calls ?? 0) + 1;
export default (a, b) => ({ sum: a + b, calls: globalThis.calls });";

#[tokio::test]
async fn each_call_gets_a_fresh_prepared_run_and_a_cold_runs_result() {
    let sandbox = Sandbox::new(small_limits()).unwrap();
    let pool = sandbox
        .warm(
            RunCode {
                source: COUNTER.to_owned(),
                ..RunCode::default()
            },
            2,
        )
        .unwrap();
    assert_eq!(pool.size(), 2);
    for i in 0..5 {
        let result = pool
            .run(call(vec![json!(i), json!(1)]), None)
            .unwrap()
            .await;
        // The module ran once for this call: nothing of an earlier call is left.
        assert_eq!(value_of(&result), json!({"sum": i + 1, "calls": 1}));
    }
    let cold = sandbox
        .run(RunCode {
            source: COUNTER.to_owned(),
            execute: call(vec![json!(2), json!(1)]),
            ..RunCode::default()
        })
        .unwrap()
        .await;
    assert_eq!(value_of(&cold), json!({"sum": 3, "calls": 1}));
}

#[tokio::test]
async fn a_module_that_fails_to_load_fails_the_call_with_its_error() {
    let sandbox = Sandbox::new(small_limits()).unwrap();
    let pool = sandbox
        .warm(
            RunCode {
                source: "throw new TypeError('no tide table'); export default () => 1;".to_owned(),
                ..RunCode::default()
            },
            1,
        )
        .unwrap();
    let result = pool.run(call(vec![]), None).unwrap().await;
    assert_eq!(
        error_of(&result),
        ("TypeError".to_owned(), "no tide table".to_owned())
    );
}

#[tokio::test]
async fn a_warm_call_is_terminated_and_its_deadline_counts_from_the_call() {
    let limits = SandboxLimits {
        deadline: Some(Duration::from_millis(300)),
        ..small_limits()
    };
    let sandbox = Sandbox::new(limits).unwrap();
    let pool = sandbox
        .warm(
            RunCode {
                source: "export default (spin) => { const until = Date.now() + spin; while (Date.now() < until) {} return 'done'; }".to_owned(),
                ..RunCode::default()
            },
            1,
        )
        .unwrap();
    // Prepared long before the call: the deadline has not started.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let result = pool.run(call(vec![json!(50)]), None).unwrap().await;
    assert_eq!(value_of(&result), json!("done"));
    // A call that spins past its deadline is stopped there.
    let result = pool.run(call(vec![json!(10_000)]), None).unwrap().await;
    assert_eq!(error_of(&result).0, RunError::DEADLINE);
    // And one its caller terminates ends terminated.
    let handle = pool.run(call(vec![json!(10_000)]), None).unwrap();
    handle.terminate();
    assert_eq!(error_of(&handle.await).0, RunError::TERMINATED);
}
