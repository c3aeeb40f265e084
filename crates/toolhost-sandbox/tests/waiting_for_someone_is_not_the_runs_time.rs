//! A run's deadline is for its own work: the time its host spends waiting for someone else (a
//! person answering a form, a model answering a request: [`Host::waits_for_someone`]) is added to
//! it, while the time of any other host operation counts.
//!
//! Each host operation takes as long as the whole deadline and the code's own work is a few
//! operations, so the verdicts do not depend on how fast the machine runs the code.

use std::sync::Arc;
use std::time::Duration;
use toolhost_sandbox::{Host, HostDoor, RunCode, Sandbox, SandboxLimits};

const DEADLINE: Duration = Duration::from_millis(500);

/// A host whose every operation takes the run's whole deadline; `ask` waits for someone, `work`
/// does not.
struct Slow;

/// The two operations of [`Slow`].
enum Op {
    Ask,
    Work,
}

impl Host for Slow {
    type Op = Op;
    type Error = String;

    fn parse(&self, name: &str, _args: serde_json::Value) -> Result<Op, String> {
        match name {
            "ask" => Ok(Op::Ask),
            "work" => Ok(Op::Work),
            other => Err(format!("no operation {other}")),
        }
    }

    fn call(&self, _op: Op) -> Result<serde_json::Value, String> {
        std::thread::sleep(DEADLINE);
        Ok(1.into())
    }

    fn waits_for_someone(&self, op: &Op) -> bool {
        matches!(op, Op::Ask)
    }
}

/// The outcome of calling `op` three times (three deadlines in all), then a little work.
fn three_times(op: &str) -> serde_json::Value {
    let limits = SandboxLimits {
        deadline: Some(DEADLINE),
        ..SandboxLimits::default()
    };
    let sandbox = Sandbox::new(limits).unwrap();
    let code = RunCode {
        source: format!(
            "export default function () {{ let n = 0; for (let i = 0; i < 3; i++) n += Number(__toolhost('{op}', '{{}}')); let x = 0; for (let j = 0; j < 100; j++) x += j; return n; }}"
        ),
        ..RunCode::default()
    };
    let result = sandbox
        .run_to_end(code, Some(HostDoor::new(Arc::new(Slow))))
        .unwrap();
    serde_json::to_value(&result).unwrap()
}

#[test]
fn waiting_for_someone_does_not_use_up_the_deadline() {
    let asked = three_times("ask");
    assert_eq!(asked["status"], "success", "{asked}");
    assert_eq!(asked["result"], 3);
}

#[test]
fn the_hosts_own_work_counts_against_the_deadline() {
    let worked = three_times("work");
    assert_ne!(worked["status"], "success", "{worked}");
    assert_eq!(worked["error"]["name"], "DeadlineError", "{worked}");
}
