//! An MCP server that answers more than a client should hold: a result over 16 MiB, a tool list
//! nested 10,000 levels deep. Each is an error at once that names the limit, never an answer
//! dropped and waited for until a timeout; the server's next answers are still taken. The real
//! binary and a real server process (`tests/mcp/oversized_server.py`, plain JSON-RPC lines).

mod common;

use common::{scripted_agent, test_python, tool_results, write, TempProject};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// A project whose agent offers the server `h`'s tools on a scripted model playing `script`.
/// The timeouts are far longer than any test runs: an answer waited for would hang the test,
/// not pass it.
fn project(script: &str) -> TempProject {
    let project = TempProject::new();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/oversized_server.py");
    write(
        &project.root,
        "agents/mcp/h.json",
        &format!(
            r#"{{"command": [{:?}, {:?}], "env": ["DEEP"], "trusted": true, "connectTimeoutMs": 600000, "callTimeoutMs": 600000}}"#,
            test_python(),
            server
        ),
    );
    scripted_agent(&project.root, &["h.big", "h.echo"], script);
    project
}

fn toolhost(deep: bool, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .env("DEEP", if deep { "1" } else { "0" })
        .output()
        .expect("run toolhost");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_result_over_16_mib_fails_its_call_at_once_and_the_next_call_is_answered() {
    let project = project(
        r#"{"toolCalls": [{"name": "h.big", "arguments": {}}]}
{"toolCalls": [{"name": "h.echo", "arguments": {"text": "still here"}}]}
{"text": "Done."}
"#,
    );
    let dir = project.root.display().to_string();
    let data = project.root.join("data").display().to_string();
    let (code, stdout, stderr) = toolhost(
        false,
        &["run", &dir, "--agent", "a", "--data", &data, "--json", "go"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record: Value = serde_json::from_str(&stdout).unwrap();
    let results = tool_results(&record);
    assert_eq!(results.len(), 2, "{record}");
    assert_eq!(results[0].0, "h.big");
    assert_eq!(results[0].1, "error");
    assert!(
        results[0].2.contains("could not read the server's answer")
            && results[0].2.contains("16777216 bytes"),
        "{}",
        results[0].2
    );
    assert_eq!(
        results[1],
        ("h.echo".into(), "success".into(), "still here".into())
    );
}

#[test]
fn a_tool_list_nested_too_deep_is_an_error_naming_the_limit() {
    let project = project("{\"text\": \"hi\"}\n");
    let dir = project.root.display().to_string();
    let (code, stdout, stderr) = toolhost(true, &["mcp", "list", &dir, "--json"]);
    // A server that failed makes the listing exit 2; it still says what each server is.
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let server = &listed["servers"][0];
    assert_ne!(server["state"], "connected", "{server}");
    let said = server.to_string();
    assert!(
        said.contains("could not read the server's answer") && said.contains("128 levels"),
        "{said}"
    );
}
