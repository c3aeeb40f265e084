//! Reading what the MCP project's conformance suite found: shared by the tests that run it
//! against `/mcp` (this crate) and with `toolhost` as the client (the command line's crate).

use serde_json::Value;
use std::path::Path;

/// A program the test needs, named by `scripts/test` in the environment variable `var`.
pub fn installed(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with ./scripts/test, which installs the MCP conformance suite and Node 22")
    })
}

/// What a finished run of the suite printed, standard output then error.
pub fn printed(ran: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    )
}

/// The checks saved under `dir` (a `checks.json` per scenario run).
pub fn checks_in(dir: &Path) -> Vec<Value> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(checks_in(&path));
        } else if path.file_name().is_some_and(|n| n == "checks.json") {
            let text = std::fs::read_to_string(&path).unwrap();
            found.extend(serde_json::from_str::<Vec<Value>>(&text).unwrap());
        }
    }
    found
}

/// The checks of scenario `name` that did not succeed (anything but SUCCESS or INFO: a
/// warning too), a line each.
pub fn failures(name: &str, checks: &[Value]) -> Vec<String> {
    checks
        .iter()
        .filter(|c| !matches!(c["status"].as_str(), Some("SUCCESS" | "INFO")))
        .map(|c| {
            format!(
                "{name}: {} is {}: {}",
                c["id"], c["status"], c["errorMessage"]
            )
        })
        .collect()
}
