//! What a 2026-07-28 MCP server asks within a call of its tool, through toolhost: toolhost serves
//! the tool (`toolhost mcp`) to an MCP client that answers forms, declares to the server the
//! capabilities that client has for each call, relays the server's `input_required` question
//! to it, and calls again with the answer and the server's request state.
//!
//! The server (`tests/mcp/asking_server.py`) is written by hand after the protocol: it asks only
//! a client that declared elicitation in the call's `_meta`, and refuses others with -32021.

mod common;

use common::{lines_of, next_line, output_of, scripted_agent, test_python, TempProject};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// Kills the server when the test ends, however it ends.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_servers_question_reaches_the_client_toolhost_serves_and_its_answer_goes_back() {
    let project = TempProject::new();
    let tests = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("tests/mcp");
    let log = project.root.join("capabilities.jsonl");
    let mut child = Command::new(test_python())
        .arg(tests.join("asking_server.py"))
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // Killed when dropped, also when it never says its port.
    let _server = Server(child);
    let port = next_line(&lines_of(stdout));
    let url = format!("http://127.0.0.1:{}/mcp", port.trim());

    scripted_agent(
        &project.root,
        &["conformance.delete_report"],
        "{\"text\": \"unused\"}\n",
    );
    std::fs::create_dir_all(project.root.join("agents/mcp")).unwrap();
    let ran = output_of(
        Command::new(test_python())
            .arg(tests.join("conformance_proxy_client.py"))
            .arg(env!("CARGO_BIN_EXE_toolhost"))
            .arg(&project.root)
            .arg(project.root.join("data"))
            .arg(&url)
            .stdin(Stdio::null()),
    );
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let seen = std::fs::read_to_string(project.root.join("seen.json"))
        .unwrap_or_else(|e| panic!("the client saw nothing ({e}): {stderr}"));
    let seen: Value = serde_json::from_str(&seen).unwrap();
    assert!(ran.status.success(), "{seen} {stderr}");
    // The server's question reached the client (after the call's approval), and the answer and
    // the request state went back to the server.
    assert_eq!(seen["forms"][1], "Delete report.txt?", "{seen}");
    assert_eq!(
        seen["calls"][0]["text"], "deleted: True, state asked-once",
        "{seen}"
    );
    // Each round declared what the client can answer: elicitation (it gave no sampling or
    // roots).
    let declared: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(declared.len(), 2, "{declared:?}");
    for capabilities in declared {
        assert_eq!(capabilities, serde_json::json!({"elicitation": {}}));
    }
}
