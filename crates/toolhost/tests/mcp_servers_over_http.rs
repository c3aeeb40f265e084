//! An MCP server at a URL (`agents/mcp/NAME.json` with `url` and `headers`): the real binary
//! reaches a real server over MCP's streamable HTTP on loopback (the official Python SDK,
//! `tests/mcp/notes_server.py http PORT`, which refuses a bearer token it does not know). A
//! header's `${NAME}` comes from the thread's variables, else from toolhost's environment; no
//! thread's calls carry another's token, and the token is stored nowhere in clear.

mod common;

use common::{
    free_port, notes_server, output_with_input, scripted_agent, test_python, tool_results,
    wait_until_listening, write, TempProject,
};
use serde_json::Value;
use std::process::{Child, Command, Stdio};

/// The notes server over HTTP on a free port of 127.0.0.1, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start() -> Self {
        let python = test_python();
        let port = free_port();
        let mut child = Command::new(python)
            .arg(notes_server())
            .args(["http", &port.to_string()])
            .env("NOTES_TOKENS", "alpha,beta")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until_listening(&mut child, port, "the MCP server");
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A project whose agent `a` offers tools of the server at `port`, named `remote` (a slow
/// machine may take long to answer the first request).
fn project(port: u16, extra: &str, script: &str) -> TempProject {
    let p = TempProject::new();
    write(
        &p.root,
        "agents/mcp/remote.json",
        &format!(
            r#"{{"url": "http://127.0.0.1:{port}/mcp", "headers": {{"Authorization": "Bearer ${{REMOTE_TOKEN}}"}}, "trusted": true, "connectTimeoutMs": 120000{extra}}}"#
        ),
    );
    scripted_agent(
        &p.root,
        &["remote.add", "remote.whoami", "remote.slow_count"],
        script,
    );
    p
}

/// Runs `toolhost` in the project with `REMOTE_TOKEN` set in its environment (or not) and
/// `stdin` as its input.
fn toolhost(
    p: &TempProject,
    env_token: Option<&str>,
    args: &[&str],
    stdin: &str,
) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .args(args)
        .current_dir(&p.root)
        .env_remove("REMOTE_TOKEN")
        .env_remove("TOOLHOST_SECRET_KEY");
    if let Some(token) = env_token {
        command.env("REMOTE_TOKEN", token);
    }
    let out = output_with_input(&mut command, stdin);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The status and text of each tool result of a `--json` record.
fn results(stdout: &str) -> Vec<(String, String)> {
    let record: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    tool_results(&record)
        .into_iter()
        .map(|(_, status, text)| (status, text))
        .collect()
}

const WHO: &str = r#"{"toolCalls": [{"name": "remote.add", "arguments": {"a": 2, "b": 3}}, {"name": "remote.whoami", "arguments": {}}]}
{"text": "done"}
"#;

#[test]
fn a_server_at_a_url_is_listed_with_the_headers_toolhosts_environment_fills() {
    let server = Server::start();
    let p = project(server.port, "", WHO);
    let (code, stdout, stderr) = toolhost(&p, None, &["mcp", "list", "."], "");
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("header Authorization needs the variable REMOTE_TOKEN, which is not in toolhost's environment"),
        "{stdout}"
    );
    let (code, stdout, stderr) = toolhost(&p, Some("alpha"), &["mcp", "list", "."], "");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("connected") && stdout.contains("remote.whoami"),
        "{stdout}"
    );
    assert!(stderr.is_empty(), "{stderr}");
    // A token the server does not know: the listing fails, saying how.
    let (code, stdout, _) = toolhost(&p, Some("gamma"), &["mcp", "list", "."], "");
    assert_eq!(code, 2);
    assert!(stdout.contains("HTTP 401: unknown token"), "{stdout}");
}

#[test]
fn a_call_carries_its_threads_token_and_toolhosts_otherwise_and_the_token_is_stored_sealed() {
    let server = Server::start();
    let p = project(server.port, "", WHO);
    let run = ["run", ".", "--agent", "a", "--data", "data", "--json", "go"];
    let (code, stdout, stderr) = toolhost(&p, Some("alpha"), &run, "");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(
        results(&stdout),
        [
            ("success".to_owned(), "5".to_owned()),
            ("success".to_owned(), "token a".to_owned())
        ]
    );

    // This thread has a token of its own: its calls carry it, not toolhost's.
    let with_secret = [
        "run",
        ".",
        "--agent",
        "a",
        "--data",
        "data",
        "--json",
        "--secret",
        "REMOTE_TOKEN",
        "go",
    ];
    let (code, stdout, stderr) = toolhost(&p, Some("alpha"), &with_secret, "beta\n");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(results(&stdout)[1].1, "token b");
    assert!(!stdout.contains("beta") && !stderr.contains("beta"));
    for file in ["toolhost.db", "toolhost.db-wal"] {
        let bytes = std::fs::read(p.root.join("data").join(file)).unwrap_or_default();
        assert!(
            !bytes.windows(4).any(|w| w == b"beta"),
            "the token is in {file} in clear"
        );
    }

    // A thread whose token the server refuses gets errors that say so; the thread goes on.
    let (code, stdout, stderr) = toolhost(&p, Some("alpha"), &with_secret, "gamma\n");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let refused = results(&stdout);
    assert!(
        refused.iter().all(|(status, _)| status == "error"),
        "{refused:?}"
    );
    assert!(
        refused[0].1.contains("HTTP 401: unknown token"),
        "{refused:?}"
    );
    assert!(!stderr.contains("rmcp"), "{stderr}");
}

#[test]
fn progress_over_the_event_stream_keeps_a_call_alive_past_its_soft_timeout() {
    let server = Server::start();
    let p = project(
        server.port,
        // 20 steps of 0.3 s: 6 s in all, past the 5 s without an answer; each step well within it.
        r#", "callTimeoutMs": 5000"#,
        r#"{"toolCalls": [{"name": "remote.slow_count", "arguments": {"steps": 20}}]}
{"text": "done"}
"#,
    );
    let (code, stdout, stderr) = toolhost(
        &p,
        Some("alpha"),
        &["run", ".", "--agent", "a", "--data", "data", "--json", "go"],
        "",
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(
        results(&stdout),
        [("success".to_owned(), "counted to 20".to_owned())]
    );
}
