//! Hostile code gets a clear error naming the limit it hit, and leaves the host and later runs
//! unharmed.

mod common;

use common::{
    error_of, run, run_with, short_deadline, small_limits, value_of, within, LogsOnly,
    GIVE_UP_AFTER,
};
use std::time::{Duration, Instant};
use toolhost_sandbox::{HostDoor, RunCode, RunError, RunResult, Sandbox, SandboxLimits};

#[tokio::test]
async fn an_endless_loop_is_killed_at_its_deadline() {
    let started = Instant::now();
    let result = run_with(
        short_deadline(),
        "export default function () { for (;;) {} }",
    )
    .await;
    let (name, message) = error_of(&result);
    assert_eq!(name, RunError::DEADLINE);
    assert!(message.contains("deadline of 500 ms"), "{message}");
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert!(result.duration_ms() >= 500.0);
}

#[tokio::test]
async fn an_endless_loop_that_catches_everything_is_still_killed() {
    let source = "export default function () { for (;;) { try { for (;;) {} } catch (e) {} } }";
    let (name, _) = error_of(&run_with(short_deadline(), source).await);
    assert_eq!(name, RunError::DEADLINE);
}

#[tokio::test]
async fn a_catastrophic_regular_expression_is_killed_at_its_deadline() {
    let source = "export default () => /^(a+)+$/.test('a'.repeat(64) + 'b')";
    let (name, _) = error_of(&run_with(short_deadline(), source).await);
    assert_eq!(name, RunError::DEADLINE);
}

/// Starts `source` with no deadline, waits until it logged once, terminates it, and returns its
/// result and how long the stop took to reach it.
async fn terminated_after_its_first_log(source: &str) -> (RunResult, Duration) {
    let limits = SandboxLimits {
        deadline: None,
        ..small_limits()
    };
    let sandbox = Sandbox::new(limits).expect("valid limits");
    let (host, heard) = LogsOnly::new();
    let code = RunCode {
        source: source.to_owned(),
        ..RunCode::default()
    };
    let handle = sandbox
        .run_with_host(code, HostDoor::new(host))
        .expect("the run starts");
    let terminator = handle.terminator();
    let stopped = tokio::task::spawn_blocking(move || {
        // Stopped also when no log comes: a run without a deadline would never end otherwise.
        let heard = heard.recv_timeout(GIVE_UP_AFTER);
        let at = Instant::now();
        terminator.terminate();
        heard.map(|_| at)
    });
    // Awaited on a task of its own while the stop comes, so that the bound on its end starts
    // once the stop was sent.
    let run = tokio::spawn(handle);
    let at = stopped.await.expect("the stopping task ends");
    let result = within("the end of the terminated run", run)
        .await
        .expect("the run's task ends");
    let at = at.unwrap_or_else(|e| {
        panic!("the run never logged before it spins ({e}); it ended with {result:?}")
    });
    (result, at.elapsed())
}

#[tokio::test]
async fn terminate_from_the_caller_stops_the_run() {
    let source = "export default function () { console.log('started'); for (;;) {} }";
    let (result, _) = terminated_after_its_first_log(source).await;
    let (name, message) = error_of(&result);
    assert_eq!(name, RunError::TERMINATED);
    assert_eq!(message, "the run was terminated by its caller");
    assert_eq!(
        result.logs()[0].message,
        "started",
        "logs before the stop are kept"
    );
}

/// Each of these spends its time in native operations that QuickJS does not interrupt, so its
/// interrupt checks come seconds apart: the run's process is killed.
const SLOW_NATIVE: &[(&str, &str)] = &[
    (
        "an 8 MB string upper-cased again and again",
        "const b = 'x'.repeat(8e6); for (;;) b.toUpperCase();",
    ),
    (
        "out-of-memory errors caught again and again",
        "for (;;) { try { const a = []; for (;;) a.push('y'.repeat(1e6)); } catch (e) {} }",
    ),
];

#[tokio::test]
async fn slow_native_operations_end_within_the_deadline_and_its_grace() {
    for (what, body) in SLOW_NATIVE {
        let limits = SandboxLimits {
            deadline: Some(Duration::from_secs(1)),
            ..small_limits()
        };
        let started = Instant::now();
        let result = run_with(limits, &format!("export default function () {{ {body} }}")).await;
        let (name, message) = error_of(&result);
        assert_eq!(name, RunError::DEADLINE, "{what}: {message}");
        // Before runs had processes of their own, these ran for minutes. The bound is the
        // deadline plus its grace (2 s) with a wide margin for a slow machine's fork and start.
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what} ran {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_stop_reaches_code_in_a_slow_native_operation() {
    for (what, body) in SLOW_NATIVE {
        let source = format!("export default function () {{ console.log('spinning'); {body} }}");
        let (result, took) = terminated_after_its_first_log(&source).await;
        let (name, _) = error_of(&result);
        assert_eq!(name, RunError::TERMINATED, "{what}");
        // The stop kills the process; the old interrupt check took tens of seconds here.
        assert!(
            took < Duration::from_secs(10),
            "{what}: the stop took {took:?}"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn awaiting_a_run_does_not_block_the_async_runtime() {
    let sandbox = Sandbox::new(short_deadline()).expect("valid limits");
    let handle = sandbox
        .run(RunCode {
            source: "export default function () { for (;;) {} }".into(),
            ..RunCode::default()
        })
        .expect("the run starts");
    // On a single-threaded runtime, this timer fires while the run spins only if the run is
    // not on the runtime's thread.
    let timer = tokio::time::sleep(Duration::from_millis(50));
    tokio::pin!(handle);
    tokio::select! {
        _ = timer => {}
        result = &mut handle => panic!("the run ended before the timer: {result:?}"),
    }
    let (name, _) = error_of(&handle.await);
    assert_eq!(name, RunError::DEADLINE);
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_at_its_cap() {
    let source = "export default function () {
        const hoard = [];
        for (;;) hoard.push(new Array(1000).fill(hoard.length));
    }";
    let (name, message) = error_of(&run(source).await);
    assert_eq!(name, RunError::MEMORY);
    assert!(
        message.contains("memory cap of 16777216 bytes"),
        "{message}"
    );
}

#[tokio::test]
async fn a_huge_string_is_stopped_at_the_memory_cap() {
    // A flat string larger than the cap.
    let source = "export default function () { return 'x'.repeat(64 << 20).length; }";
    let (name, _) = error_of(&run(source).await);
    assert_eq!(name, RunError::MEMORY);
    // Doubling builds ropes that cost little memory: the engine's length limit stops it.
    let source = "export default function () { let s = 'x'; for (;;) s = s + s; }";
    let (name, message) = error_of(&run(source).await);
    assert_eq!(
        (name.as_str(), message.as_str()),
        ("InternalError", "string too long")
    );
    // Flattening such a rope needs the memory, and the cap stops that.
    let source = "export default function () {
        let s = 'x';
        for (let i = 0; i < 28; i++) s = s + s;
        return s.indexOf('y');
    }";
    let (name, _) = error_of(&run(source).await);
    assert_eq!(name, RunError::MEMORY);
}

#[tokio::test]
async fn deep_recursion_hits_the_stack_cap() {
    let source = "function down(n) { return down(n + 1) + 1; }
        export default function () { return down(0); }";
    let result = run(source).await;
    let error = result.error().expect("an error");
    assert_eq!(error.name, RunError::STACK);
    assert!(
        error.message.contains("stack cap of 1048576 bytes"),
        "{}",
        error.message
    );
    assert!(error.stack.as_deref().is_some_and(|s| s.contains("down")));
}

#[tokio::test]
async fn an_unhandled_promise_rejection_is_an_error() {
    let source = "export default async function () {
        Promise.reject(new TypeError('nobody listens'));
        return 'done';
    }";
    let (name, message) = error_of(&run(source).await);
    assert_eq!(name, RunError::UNHANDLED_REJECTION);
    assert!(message.contains("TypeError: nobody listens"), "{message}");
}

#[tokio::test]
async fn a_rejection_handled_later_is_not_an_error() {
    let source = "export default async function () {
        const p = Promise.reject(new Error('late'));
        await null;
        return await p.catch((e) => e.message);
    }";
    assert_eq!(value_of(&run(source).await), "late");
}

#[tokio::test]
async fn a_promise_that_can_never_settle_is_an_error() {
    let source = "export default function () { return new Promise(() => {}); }";
    let (name, message) = error_of(&run(source).await);
    assert_eq!(name, RunError::NEVER_SETTLED);
    assert!(message.contains("no timers or I/O"), "{message}");
}

#[tokio::test]
async fn a_run_after_hostile_runs_still_works() {
    let hostile = ["export default function () { for (;;) {} }"];
    for source in hostile {
        assert!(
            run_with(short_deadline(), source).await.error().is_some(),
            "{source}"
        );
    }
    let hostile = [
        "export default function () { const a = []; for (;;) a.push([a.length]); }",
        "function f() { return f() + 1; } export default () => f();",
        "export default async () => { Promise.reject(new Error('x')); }",
    ];
    for source in hostile {
        assert!(run(source).await.error().is_some(), "{source}");
    }
    let source = "export default (a, b) => ({ sum: a + b })";
    let sandbox = Sandbox::new(small_limits()).expect("valid limits");
    let mut code = RunCode {
        source: source.into(),
        ..RunCode::default()
    };
    code.execute.args = vec![2.into(), 3.into()];
    let result = sandbox.run(code).expect("the run starts").await;
    assert_eq!(value_of(&result), serde_json::json!({ "sum": 5 }));
    // A tiny memory cap does not bother a trivial run either.
    let tiny = SandboxLimits {
        memory_bytes: SandboxLimits::MIN_MEMORY_BYTES,
        ..small_limits()
    };
    assert_eq!(value_of(&run_with(tiny, "export default () => 1").await), 1);
}
