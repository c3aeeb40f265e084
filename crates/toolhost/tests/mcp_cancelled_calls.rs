//! An MCP client that cancels a call (`notifications/cancelled`) over stdio: the call under way
//! is interrupted and stored with an error result, the thread is left free (not `running`), and
//! the session's next call works.

mod common;

use common::{toolhost, TempProject, PATIENCE};
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

struct Client {
    child: Child,
    input: ChildStdin,
    /// Standard output's lines, read on a thread so that a wait for one can end.
    output: Receiver<String>,
}

impl Client {
    fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// Reads lines until the answer to request `id`; fails the test when the server closed its
    /// output or wrote nothing for [`PATIENCE`].
    fn answer(&mut self, id: u64) -> Value {
        loop {
            let line = common::next_line(&self.output);
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }
}

/// A project whose agent offers `slow` (a program that marks it started, then sleeps ten
/// minutes) and `quick` (one that answers at once).
fn project() -> TempProject {
    let p = TempProject::new();
    common::write(
        &p.root,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
    );
    common::write(
        &p.root,
        "agents/prompts/p.json",
        r#"{"toolDescription": "x", "prompt": "Work.", "model": "m", "tools": ["slow", "quick"]}"#,
    );
    common::write(
        &p.root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "m.jsonl"}"#,
    );
    common::write(&p.root, "m.jsonl", "{\"text\": \"unused\"}\n");
    for (name, script) in [
        ("slow", "touch started; exec sleep 600"),
        (
            "quick",
            r#"echo '{"status": "success", "result": "quick"}'"#,
        ),
    ] {
        common::write(
            &p.root,
            &format!("agents/tools/{name}.json"),
            &json!({"type": "object", "description": name, "properties": {
                "_activity": {"type": "string", "const": name}}, "additionalProperties": false})
            .to_string(),
        );
        common::write(
            &p.root,
            &format!("agents/activities/{name}.json"),
            &json!({"command": ["sh", "-c", script], "timeoutMs": 900000}).to_string(),
        );
    }
    p
}

#[test]
fn a_cancelled_call_ends_with_an_error_result_and_frees_its_thread() {
    let p = project();
    let root = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["mcp", &root, "--agent", "a", "--data", &data])
        .current_dir(&p.root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut client = Client {
        input: child.stdin.take().unwrap(),
        output: common::lines_of(child.stdout.take().unwrap()),
        child,
    };
    client.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}),
    );
    client.answer(1);
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    client.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}}}));
    // Wait for the program to run, then cancel its call.
    let give_up = Instant::now() + Duration::from_secs(120);
    while !p.root.join("started").exists() {
        assert!(Instant::now() < give_up, "the slow program never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    client.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user gave up"}}),
    );
    // The session goes on: the next call is answered (the cancelled one is not, by the spec).
    client.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "quick", "arguments": {}}}));
    let quick = client.answer(3);
    assert_eq!(quick["result"]["content"][0]["text"], "quick", "{quick}");

    // The cancelled call's thread: free, with the call answered by an error.
    let listed = toolhost(&["threads", "list", "--data", &data, "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let threads: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    let mut found = false;
    for thread in &threads {
        let id = thread["id"].as_str().unwrap();
        let shown = toolhost(&["threads", "show", id, "--data", &data, "--json"]);
        let record: Value = serde_json::from_str(&shown.stdout).unwrap();
        assert_ne!(record["thread"]["status"], "running", "{record}");
        assert!(record["owner"].is_null(), "{record}");
        for message in record["messages"].as_array().unwrap() {
            if message["role"] == "tool" && message["name"] == "slow" {
                found = true;
                assert_eq!(message["status"], "error", "{message}");
            }
        }
    }
    assert!(found, "the cancelled call has its result: {threads:?}");
    drop(client.input);
    common::wait_or_kill(client.child, "toolhost mcp", PATIENCE);
}
