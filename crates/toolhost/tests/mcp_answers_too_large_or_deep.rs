//! An MCP server that answers more than a client should hold: a result over 16 MiB, a tool list
//! nested 10,000 levels deep. Each is an error at once that names the limit, never an answer
//! dropped and waited for until a timeout (nor, over HTTP, an event stream resumed to be sent
//! the same answer again); the server's next answers are still taken. The real binary and a
//! real server process (`tests/mcp/oversized_server.py`, plain JSON-RPC), over standard input
//! and output and over streamable HTTP, answering as JSON and as an event stream.

mod common;

use common::{
    lines_of, next_line, output_of, scripted_agent, test_python, tool_results, write, TempProject,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn server_script() -> PathBuf {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("tests/mcp/oversized_server.py")
}

/// How the project reaches the server.
enum Reach {
    Stdio,
    /// Over HTTP at this port.
    Http(u16),
}

/// A project whose agent offers the server `h`'s tools on a scripted model playing `script`.
/// The timeouts are far longer than any test runs: an answer waited for would hang the test,
/// not pass it.
fn project(reach: Reach, script: &str) -> TempProject {
    let project = TempProject::new();
    let endpoint = match reach {
        Reach::Stdio => format!(
            r#""command": [{:?}, {:?}], "env": ["DEEP"]"#,
            test_python(),
            server_script()
        ),
        Reach::Http(port) => format!(r#""url": "http://127.0.0.1:{port}/mcp""#),
    };
    write(
        &project.root,
        "agents/mcp/h.json",
        &format!(
            r#"{{{endpoint}, "trusted": true, "connectTimeoutMs": 600000, "callTimeoutMs": 600000}}"#
        ),
    );
    scripted_agent(&project.root, &["h.big", "h.echo"], script);
    project
}

/// The server over HTTP (`answer`: "json" or "sse"), stopped when dropped.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn start(answer: &str, deep: bool) -> Self {
        let child = Command::new(test_python())
            .arg(server_script())
            .arg("http")
            .env("ANSWER", answer)
            .env("DEEP", if deep { "1" } else { "0" })
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // Killed when dropped, also when it never says where it listens.
        let mut server = HttpServer { child, port: 0 };
        let first = next_line(&lines_of(server.child.stdout.take().unwrap()));
        server.port = first
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the server said {first:?}"));
        server
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn toolhost(deep: bool, args: &[&str]) -> (i32, String, String) {
    let out = output_of(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .env("DEEP", if deep { "1" } else { "0" })
            .stdin(Stdio::null()),
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the agent calling `h.big`, then `h.echo`: the first fails naming the limit, the second
/// is answered.
fn big_then_echo(reach: Reach) {
    let project = project(
        reach,
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
            && results[0].2.contains("16777216 bytes")
            && !results[0].2.contains("unknown"),
        "{}",
        results[0].2
    );
    assert_eq!(
        results[1],
        ("h.echo".into(), "success".into(), "still here".into())
    );
}

/// `toolhost mcp list` of a server whose tool list is too deep: the server failed, saying why.
fn deep_list(reach: Reach) {
    let project = project(reach, "{\"text\": \"hi\"}\n");
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

#[test]
fn over_stdio_a_result_over_16_mib_fails_its_call_at_once_and_the_next_call_is_answered() {
    big_then_echo(Reach::Stdio);
}

#[test]
fn over_stdio_a_tool_list_nested_too_deep_is_an_error_naming_the_limit() {
    deep_list(Reach::Stdio);
}

#[test]
fn over_http_a_json_result_over_16_mib_fails_its_call_at_once() {
    let server = HttpServer::start("json", false);
    big_then_echo(Reach::Http(server.port));
}

#[test]
fn over_http_an_event_over_16_mib_fails_its_call_at_once_and_is_not_resumed() {
    // The server replays the event on a resumed stream: resuming would loop until the timeout.
    let server = HttpServer::start("sse", false);
    big_then_echo(Reach::Http(server.port));
}

#[test]
fn over_http_a_tool_list_nested_too_deep_is_an_error_naming_the_limit() {
    for answer in ["json", "sse"] {
        let server = HttpServer::start(answer, true);
        deep_list(Reach::Http(server.port));
    }
}
