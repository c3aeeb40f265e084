//! In a run with a host (a tool file's call), each `console` entry the log buffer keeps whole
//! is handed to the host as it is written ([`Host::log`]), so its thread can show it live; an entry
//! cut at the log cap is not (it could end in part of a secret), nor anything past the cap.

use std::sync::{Arc, Mutex};
use toolhost_sandbox::{Host, HostDoor, LogEntry, LogLevel, RunCode, Sandbox, SandboxLimits};

#[derive(Default)]
struct Recording(Mutex<Vec<(LogLevel, String)>>);

impl Host for Recording {
    type Op = ();
    type Error = String;

    fn parse(&self, name: &str, _args: serde_json::Value) -> Result<(), String> {
        Err(format!("no operation {name}"))
    }

    fn call(&self, (): ()) -> Result<serde_json::Value, String> {
        Ok(serde_json::Value::Null)
    }

    fn log(&self, entry: &LogEntry) {
        self.0
            .lock()
            .unwrap()
            .push((entry.level, entry.message.clone()));
    }
}

#[test]
fn entries_kept_whole_reach_the_host_as_they_are_written() {
    let limits = SandboxLimits {
        max_log_bytes: 64,
        ..SandboxLimits::default()
    };
    let sandbox = Sandbox::new(limits).unwrap();
    let host = Arc::new(Recording::default());
    let code = RunCode {
        // The call's own code (the default export) runs with the host; the module's top level
        // runs before the call has one.
        source: "console.info('before the call');\n\
                 export default function () {\n\
                   console.info('starting', { n: 1 }); console.debug('dbg');\n\
                   console.log('x'.repeat(200)); console.warn('after the cap'); return 7;\n\
                 }"
        .to_owned(),
        ..RunCode::default()
    };
    let result = sandbox
        .run_to_end(code, Some(HostDoor::new(host.clone())))
        .unwrap();
    let logs = serde_json::to_value(&result).unwrap()["logs"].clone();
    assert!(logs.as_array().unwrap().len() >= 3, "{logs}");
    let relayed = host.0.lock().unwrap().clone();
    assert_eq!(
        relayed,
        vec![
            (LogLevel::Info, "starting {\"n\":1}".to_owned()),
            (LogLevel::Debug, "dbg".to_owned()),
        ]
    );
}
