//! `toolhost serve` loads its project again when the files under `agents/` change: the API and
//! `/mcp` take the new tools, an MCP client (the official Python SDK's) is told with
//! `notifications/tools/list_changed`, and an event stream opened before the reload still gets
//! the live events of a run on the new load.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolhost_server::auth::Scope;

/// The longest a run or a notification is waited for.
const PATIENCE: Duration = Duration::from_secs(60);

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A JavaScript tool `name` that answers with its own name.
fn tool(root: &Path, name: &str) {
    write(
        root,
        &format!("agents/tools/{name}.js"),
        &format!(
            "import {{ defineTool }} from '@standardagents/spec';\n\
             export default defineTool({{ description: 'Says {name}.', execute: async () => '{name}' }});\n"
        ),
    );
}

/// Agent `a`'s prompt, offering `tools`; its scripted model calls each of `calls` in turn, one
/// per run (the turn it plays is the count of assistant messages in the thread), ending each
/// run with "done".
fn offering(root: &Path, tools: &[&str], calls: &[&str]) {
    write(
        root,
        "agents/prompts/p.json",
        &json!({"toolDescription": "x", "prompt": "Work.", "model": "m", "includeChat": true,
            "includePastTools": true, "tools": tools})
        .to_string(),
    );
    let script: String = calls
        .iter()
        .map(|name| {
            format!(
                "{}\n{}\n",
                json!({"toolCalls": [{"name": name, "arguments": {}}]}),
                json!({"text": "done"})
            )
        })
        .collect();
    write(root, "m.jsonl", &script);
}

fn project() -> PathBuf {
    let root = temp_dir();
    write(
        &root,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
    );
    write(
        &root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "m.jsonl"}"#,
    );
    tool(&root, "first");
    offering(&root, &["first"], &["first"]);
    root
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_while_serving_reaches_the_api_mcp_clients_and_open_streams() {
    let root = project();
    let server = TestServer::start_watching(&root, |config| {
        config.mcp_agent = Some("a".to_owned());
    })
    .await;
    let token = server.token(&[Scope::Read, Scope::Run], None);
    let thread = server
        .create(&token, json!({"agent": "a", "message": "go"}))
        .await;
    let mut stream = server.events(&thread, &token, None).await;
    stream.until("run_ended", PATIENCE).await;

    let python = std::env::var("TOOLHOST_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("TOOLHOST_TEST_PYTHON does not name a Python with the mcp package: run the tests with ./scripts/test, which installs it")
    });
    let script = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("tests/mcp/http_client_watch.py");
    let url = format!("http://{}/mcp", server.addr);
    let mut client = tokio::process::Command::new(python)
        .arg(script)
        .args([&url, &token])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    let before = within("the MCP client's first list of tools", lines.next_line())
        .await
        .unwrap()
        .expect("the MCP client ended before it listed the tools");
    let before: Value = serde_json::from_str(&before).unwrap();
    assert_eq!(before["before"], json!(["first"]), "{before}");

    tool(&root, "second");
    offering(&root, &["second", "first"], &["first", "second"]);
    let after = tokio::time::timeout(PATIENCE, lines.next_line())
        .await
        .expect("the MCP client was never told that the list changed")
        .unwrap()
        .unwrap();
    let after: Value = serde_json::from_str(&after).unwrap();
    assert_eq!(after["after"], json!(["first", "second"]), "{after}");
    assert!(within("the end of the MCP client", client.wait())
        .await
        .unwrap()
        .success());

    // The API lists the new tool, and a run on the new load calls it; the stream opened before
    // the reload sees that run's live events, not only what it stored.
    let listed = server.get("/v1/tools", Some(&token)).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let names: Vec<&str> = listed.json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"second"), "{names:?}");
    let sent = server
        .post(
            &format!("/v1/threads/{thread}/messages"),
            Some(&token),
            &json!({"message": "again"}),
        )
        .await;
    assert!(sent.status < 300, "{}", sent.text);
    let seen = stream.until("run_ended", PATIENCE).await;
    assert!(
        seen.iter().any(|e| e.event == "answer_started"),
        "no live event after the reload: {:?}",
        seen.iter().map(|e| e.event.as_str()).collect::<Vec<_>>()
    );
    let results: Vec<&str> = seen
        .iter()
        .filter(|e| e.event == "message" && e.data["role"] == "tool")
        .filter_map(|e| e.data["content"].as_str())
        .collect();
    assert_eq!(results, ["second"], "the run used the new load");
    let _ = std::fs::remove_dir_all(root);
}
