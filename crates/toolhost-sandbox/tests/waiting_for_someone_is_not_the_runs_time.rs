//! A run's deadline is for its own work: the time its host spends waiting for someone else (a
//! person answering a form, a model answering a request: [`Host::waits_for_someone`]) is added to
//! it, while the time of any other host operation counts.

use std::sync::Arc;
use std::time::Duration;
use toolhost_sandbox::{Host, RunCode, Sandbox, SandboxLimits};

/// A host whose every operation takes 150 ms; `ask` waits for someone, `work` does not.
struct Slow;

impl Host for Slow {
    fn call(&self, _op: &str, _args: &str) -> Result<String, String> {
        std::thread::sleep(Duration::from_millis(150));
        Ok("1".to_owned())
    }

    fn waits_for_someone(&self, op: &str) -> bool {
        op == "ask"
    }
}

/// The outcome of calling `op` three times (450 ms in all) under a 300 ms deadline, then
/// working a little (the deadline is looked at while code runs).
fn three_times(op: &str) -> serde_json::Value {
    let limits = SandboxLimits {
        deadline: Some(Duration::from_millis(300)),
        ..SandboxLimits::default()
    };
    let sandbox = Sandbox::new(limits).unwrap();
    let code = RunCode {
        source: format!(
            "export default function () {{ let n = 0; for (let i = 0; i < 3; i++) n += Number(__toolhost('{op}', '{{}}')); let x = 0; for (let j = 0; j < 2000000; j++) x += j; return n; }}"
        ),
        ..RunCode::default()
    };
    let result = sandbox.run_to_end(code, Some(Arc::new(Slow))).unwrap();
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
    assert!(worked.to_string().contains("deadline"), "{worked}");
}
