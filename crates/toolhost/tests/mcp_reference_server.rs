//! toolhost's MCP client against the MCP project's reference server
//! (`@modelcontextprotocol/server-everything`, run with Node 22; `./scripts/test` installs both
//! and names them in `TOOLHOST_TEST_NODE22` and `TOOLHOST_TEST_EVERYTHING`): an independent
//! implementation's tools are listed, imported and called by the real binary, over stdio and
//! over streamable HTTP.

mod common;

use common::{scripted_agent, toolhost_in, write, TempProject};
use serde_json::Value;

fn needed(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run the tests with ./scripts/test, which installs the MCP reference server and Node 22")
    })
}

/// A project whose agent `a` offers `tools` of the reference server (trusted, so that its
/// read-only tools need no approval) and plays `script`. Node's start may take long on a slow
/// machine.
fn project(tools: &[&str], timeouts: &str, script: &str) -> TempProject {
    let p = TempProject::new();
    write(
        &p.root,
        "agents/mcp/everything.json",
        &format!(
            r#"{{"command": [{:?}, {:?}, "stdio"], "trusted": true, "connectTimeoutMs": 120000{timeouts}}}"#,
            needed("TOOLHOST_TEST_NODE22"),
            needed("TOOLHOST_TEST_EVERYTHING")
        ),
    );
    scripted_agent(&p.root, tools, script);
    p
}

/// `toolhost ARGS` in the project's folder: exit code, standard output and error.
fn toolhost(p: &TempProject, args: &[&str]) -> (i32, String, String) {
    let run = toolhost_in(&p.root, args);
    (run.code, run.stdout, run.stderr)
}

/// Runs agent `a` once with `--json`: the thread's record.
fn run(p: &TempProject) -> Value {
    let (code, stdout, stderr) = toolhost(
        p,
        &["run", ".", "--agent", "a", "--data", "data", "--json", "go"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn tool_messages(record: &Value) -> Vec<&Value> {
    record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect()
}

#[test]
fn the_reference_servers_tools_are_listed_and_every_schema_is_taken() {
    let p = project(&[], "", "{\"text\": \"hi\"}\n");
    let (code, stdout, stderr) = toolhost(&p, &["mcp", "list", ".", "--json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let server = &listed["servers"][0];
    assert_eq!(server["state"], "connected", "{server}");
    let tools = server["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in [
        "everything.echo",
        "everything.get-sum",
        "everything.get-structured-content",
        "everything.trigger-long-running-operation",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    // Every schema the reference server declares is taken (none left out as a problem).
    assert!(
        listed["problems"].as_array().unwrap().is_empty(),
        "{listed}"
    );
    // The names a provider refuses (dashes and the server's dot) are listed as they are; the
    // model adapters map them on the wire.
    let (code, stdout, _) = toolhost(&p, &["tools", "list", "."]);
    assert_eq!(code, 0);
    assert!(stdout.contains("everything.get-sum"), "{stdout}");
}

#[test]
fn text_structured_content_images_and_resource_links_come_back_as_results() {
    let p = project(
        &[
            "everything.echo",
            "everything.get-sum",
            "everything.get-structured-content",
            "everything.get-tiny-image",
            "everything.get-resource-links",
        ],
        "",
        r#"{"toolCalls": [{"name": "everything.echo", "arguments": {"message": "hi"}}, {"name": "everything.get-sum", "arguments": {"a": 2, "b": 40}}]}
{"toolCalls": [{"name": "everything.get-structured-content", "arguments": {"location": "New York"}}]}
{"toolCalls": [{"name": "everything.get-tiny-image", "arguments": {}}, {"name": "everything.get-resource-links", "arguments": {"count": 2}}]}
{"text": "done"}
"#,
    );
    let record = run(&p);
    let results = tool_messages(&record);
    assert_eq!(results.len(), 5, "{record}");
    let text = |i: usize| results[i]["content"].as_str().unwrap();
    assert!(results.iter().all(|m| m["status"] == "success"), "{record}");
    assert_eq!(text(0), "Echo: hi");
    assert!(text(1).contains("42"), "{}", text(1));
    let weather: Value =
        serde_json::from_str(text(2)).unwrap_or_else(|e| panic!("{e}: {}", text(2)));
    assert!(weather["temperature"].is_number(), "{weather}");
    let image = &results[3]["metadata"]["result"]["content"];
    assert!(
        image
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "image" && b["mimeType"] == "image/png"),
        "{image}"
    );
    assert!(
        text(4).contains("[resource: ") && text(4).contains("demo://resource/"),
        "{}",
        text(4)
    );
}

#[test]
fn a_long_operation_reporting_progress_outlives_the_call_timeout_and_an_endless_one_is_cut() {
    // 12 steps in 6 s: past the 4 s without an answer, each step well within it, and the whole
    // well within the 20 s maximum.
    let p = project(
        &["everything.trigger-long-running-operation"],
        r#", "callTimeoutMs": 4000, "maxCallTimeoutMs": 20000"#,
        r#"{"toolCalls": [{"name": "everything.trigger-long-running-operation", "arguments": {"duration": 6, "steps": 12}}]}
{"toolCalls": [{"name": "everything.trigger-long-running-operation", "arguments": {"duration": 60, "steps": 120}}]}
{"text": "done"}
"#,
    );
    let record = run(&p);
    let results = tool_messages(&record);
    assert_eq!(results.len(), 2, "{record}");
    assert_eq!(results[0]["status"], "success", "{record}");
    assert!(results[0]["content"]
        .as_str()
        .unwrap()
        .contains("Steps: 12"));
    // Two steps a second keep the soft timeout fed; the hard maximum ends it.
    assert_eq!(results[1]["status"], "error", "{record}");
    let said = results[1]["content"].as_str().unwrap();
    assert!(
        said.contains("did not answer within 20000 ms") && said.contains("asked to cancel"),
        "{said}"
    );
}

/// The reference server over MCP's streamable HTTP (`streamableHttp`, on `PORT`), once it says it
/// listens; killed when dropped.
struct OverHttp {
    child: std::process::Child,
    url: String,
}

impl OverHttp {
    fn start() -> Self {
        let port = common::free_port();
        let mut child = std::process::Command::new(needed("TOOLHOST_TEST_NODE22"))
            .args([&needed("TOOLHOST_TEST_EVERYTHING"), "streamableHttp"])
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let said = common::lines_of(child.stderr.take().unwrap());
        // Killed when dropped, also when it never says it listens.
        let server = OverHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        // Fails when the server ended, or said nothing for a long time, before it listened.
        while !common::next_line(&said).contains("listening on port") {}
        // Its later lines go nowhere rather than filling a pipe no one reads.
        common::read_away(said);
        server
    }
}

impl Drop for OverHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn over_streamable_http_the_reference_servers_tools_are_listed_and_called() {
    let server = OverHttp::start();
    let p = TempProject::new();
    write(
        &p.root,
        "agents/mcp/everything.json",
        &format!(
            r#"{{"url": "{}", "trusted": true, "connectTimeoutMs": 120000}}"#,
            server.url
        ),
    );
    scripted_agent(
        &p.root,
        &["everything.echo", "everything.get-structured-content"],
        r#"{"toolCalls": [{"name": "everything.echo", "arguments": {"message": "over http"}}, {"name": "everything.get-structured-content", "arguments": {"location": "Chicago"}}]}
{"text": "done"}
"#,
    );
    let (code, stdout, stderr) = toolhost(&p, &["mcp", "list", ".", "--json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(listed["servers"][0]["state"], "connected", "{listed}");
    assert!(
        listed["problems"].as_array().unwrap().is_empty(),
        "{listed}"
    );
    let record = run(&p);
    let results = tool_messages(&record);
    assert_eq!(results.len(), 2, "{record}");
    assert!(results.iter().all(|m| m["status"] == "success"), "{record}");
    assert_eq!(results[0]["content"], "Echo: over http");
    let weather: Value = serde_json::from_str(results[1]["content"].as_str().unwrap()).unwrap();
    assert!(weather["temperature"].is_number(), "{weather}");
}
