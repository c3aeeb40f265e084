//! In a run with a host (a tool file's call), each `console` entry the log buffer keeps whole
//! is handed to the host as it is written ([`Host::log`]), so its thread can show it live; an entry
//! cut at the log cap is not (it could end in part of a secret), nor anything past the cap.

mod common;

use common::LogsOnly;
use toolhost_sandbox::{HostDoor, LogLevel, RunCode, Sandbox, SandboxLimits};

#[test]
fn entries_kept_whole_reach_the_host_as_they_are_written() {
    let limits = SandboxLimits {
        max_log_bytes: 64,
        ..SandboxLimits::default()
    };
    let sandbox = Sandbox::new(limits).unwrap();
    let (host, heard) = LogsOnly::new();
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
    let result = sandbox.run_to_end(code, Some(HostDoor::new(host))).unwrap();
    let logs = serde_json::to_value(&result).unwrap()["logs"].clone();
    assert!(logs.as_array().unwrap().len() >= 3, "{logs}");
    let relayed: Vec<(LogLevel, String)> = heard.try_iter().map(|e| (e.level, e.message)).collect();
    assert_eq!(
        relayed,
        vec![
            (LogLevel::Info, "starting {\"n\":1}".to_owned()),
            (LogLevel::Debug, "dbg".to_owned()),
        ]
    );
}
