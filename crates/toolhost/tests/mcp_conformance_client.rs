//! toolhost as the client in the MCP project's conformance suite (`@modelcontextprotocol/
//! conformance` 0.1.16, pinned in `scripts/test-node/`): for each client scenario the suite
//! starts its own server and runs `tests/mcp/conformance_client.py`, which names that server in
//! a project's `agents/mcp/` and runs the project's agent with `toolhost run` (approving its
//! calls as a person would). Every check the suite makes must succeed.
//!
//! Run: `initialize`, `tools_call`, `sse-retry`. Not run: the `auth/*` scenarios (toolhost does
//! not do OAuth for MCP servers; a token is a header variable) and
//! `elicitation-sep1034-client-defaults` (toolhost does not answer a server's elicitation).

mod common;

use common::{scripted_agent, test_python, TempProject};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// A program the test needs, named by `scripts/test` in the environment variable `var`.
fn installed(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with ./scripts/test, which installs the MCP conformance suite and Node 22")
    })
}

/// The checks saved under `dir` (a `checks.json` per scenario run).
fn checks_in(dir: &Path) -> Vec<Value> {
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

/// Runs client scenario `name` with toolhost running an agent whose prompt offers `tools` of the
/// scenario's server and whose scripted model says `script`: the checks the suite made, once
/// every one succeeded.
fn scenario(name: &str, tools: &[&str], script: &str) -> Vec<Value> {
    let project = TempProject::new();
    scripted_agent(&project.root, tools, script);
    std::fs::create_dir_all(project.root.join("agents/mcp")).unwrap();
    let out = project.root.join("results");
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance_client.py");
    let command = format!(
        "{} {} {} {} {}",
        test_python(),
        client.display(),
        env!("CARGO_BIN_EXE_toolhost"),
        project.root.display(),
        project.root.join("data").display()
    );
    let ran = Command::new(installed("TOOLHOST_TEST_NODE22"))
        .arg(installed("TOOLHOST_TEST_CONFORMANCE_2025"))
        .args(["client", "--scenario", name, "--command", &command, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    let checks = checks_in(&out);
    assert!(!checks.is_empty(), "{name} saved no checks:\n{printed}");
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !matches!(c["status"].as_str(), Some("SUCCESS" | "INFO")))
        .map(|c| format!("{} is {}: {}", c["id"], c["status"], c["errorMessage"]))
        .collect();
    assert!(
        failed.is_empty(),
        "{name}:\n{}\n{printed}",
        failed.join("\n")
    );
    assert!(ran.status.success(), "{name}:\n{printed}");
    checks
}

#[test]
fn toolhost_initializes_with_the_suites_server() {
    let checks = scenario("initialize", &[], "{\"text\": \"hello\"}\n");
    assert!(
        checks
            .iter()
            .any(|c| c["id"] == "mcp-client-initialization"),
        "{checks:?}"
    );
}

#[test]
fn toolhost_calls_the_suites_tool_with_the_arguments_its_model_gave() {
    let checks = scenario(
        "tools_call",
        &["conformance.add_numbers"],
        "{\"toolCalls\": [{\"name\": \"conformance.add_numbers\", \"arguments\": {\"a\": 2, \"b\": 3}}]}\n{\"text\": \"5\"}\n",
    );
    let added = checks
        .iter()
        .find(|c| c["id"] == "tool-add-numbers")
        .expect("the tool was called");
    assert_eq!(added["details"]["result"], 5, "{added}");
}

#[test]
fn toolhost_reconnects_to_a_stream_the_server_closed_and_gets_the_answer() {
    scenario(
        "sse-retry",
        &["conformance.test_reconnection"],
        "{\"toolCalls\": [{\"name\": \"conformance.test_reconnection\", \"arguments\": {}}]}\n{\"text\": \"done\"}\n",
    );
}
