//! OAuth both ways, all real processes on loopback: a real authorization server (oidc-provider
//! from npm, RS256 JWT access tokens), `toolhost serve` taking its tokens at `/mcp`
//! (`[server.oauth]`), and another project's `toolhost run` using that server's tools with the
//! client credentials grant (`"oauth"` in its `agents/mcp/` file): it finds the authorization
//! server from the 401, gets a token for the resource, keeps it sealed in its store and calls.

mod common;

use common::{
    free_port, lines_of, next_line, output_of, read_away, scripted_agent, served_address, write,
    TempProject,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const CLIENT_ID: &str = "toolhost-test";
const CLIENT_SECRET: &str = "a-client-secret-only-the-test-knows";

fn installed(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run the tests with ./scripts/test, which installs what it names")
    })
}

/// Ends a child process when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the authorization server; its issuer URL.
fn authorization_server() -> (Running, String) {
    let script = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../toolhost-server/tests/oauth/authorization_server.mjs");
    let mut child = Command::new(installed("TOOLHOST_TEST_NODE22"))
        .arg(script)
        .args([
            &installed("TOOLHOST_TEST_OIDC_PROVIDER"),
            CLIENT_ID,
            CLIENT_SECRET,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // Ended when dropped, also when it never says it started.
    let running = Running(child);
    let first = next_line(&lines_of(stdout));
    let started: Value = serde_json::from_str(&first)
        .unwrap_or_else(|e| panic!("the authorization server said {first:?}: {e}"));
    (running, started["issuer"].as_str().unwrap().to_owned())
}

/// Serves a project whose agent offers `think` at `/mcp`, taking the issuer's tokens.
fn served(issuer: &str) -> (TempProject, Running, String) {
    let project = TempProject::new();
    scripted_agent(&project.root, &["think"], "{\"text\": \"unused\"}\n");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    write(
        &project.root,
        "toolhost.toml",
        &format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\nmcp_agent = \"a\"\n\n[server.oauth]\nissuer = \"{issuer}\"\nresource = \"{url}\"\n"
        ),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", &project.root.display().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = lines_of(child.stdout.take().unwrap());
    // Ended when dropped, also when it never says where it listens.
    let running = Running(child);
    let first = next_line(&out);
    assert_eq!(served_address(&first), format!("127.0.0.1:{port}"));
    // The rest of what it prints is read away, so that it never blocks on a full pipe.
    read_away(out);
    (project, running, url)
}

/// A project whose agent calls `remote.think` of the server at `url`, with client credentials
/// registered with `issuer`.
fn client_project(url: &str, issuer: &str) -> TempProject {
    let project = TempProject::new();
    scripted_agent(
        &project.root,
        &["remote.think"],
        "{\"toolCalls\": [{\"name\": \"remote.think\", \"arguments\": {\"thought\": \"over OAuth\"}}]}\n{\"text\": \"done\"}\n",
    );
    write(
        &project.root,
        "agents/mcp/remote.json",
        &serde_json::json!({"url": url, "trusted": true, "oauth": {
            "grant": "client_credentials", "clientId": CLIENT_ID, "issuer": issuer,
            "clientSecret": "${REMOTE_CLIENT_SECRET}", "scope": "run"}})
        .to_string(),
    );
    project
}

/// Whether `bytes` hold a JSON Web Token: base64url text from `eyJ` (an encoded `{"`) to a dot
/// and a second `eyJ`. A bare `eyJ` is not enough: sealed values are base64 of random bytes,
/// where those three letters turn up by chance (about once in 260,000 places), but no dot does.
fn holds_a_jwt(bytes: &[u8]) -> bool {
    let base64url = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
    bytes.windows(3).enumerate().any(|(at, w)| {
        w == b"eyJ" && {
            let rest = &bytes[at + 3..];
            let header = rest.iter().take_while(|b| base64url(b)).count();
            rest[header..].starts_with(b".eyJ")
        }
    })
}

fn toolhost_with_secret(secret: &str, args: &[&str]) -> (i32, String, String) {
    let out = output_of(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .env("REMOTE_CLIENT_SECRET", secret)
            .stdin(Stdio::null()),
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_toolhost_client_uses_a_toolhost_servers_tools_with_tokens_of_a_real_authorization_server() {
    let (_issuer_process, issuer) = authorization_server();
    let (_served_project, _server, url) = served(&issuer);
    let client = client_project(&url, &issuer);
    let dir = client.root.display().to_string();
    let data: PathBuf = client.root.join("data");
    let data_arg = data.display().to_string();

    let (code, stdout, stderr) = toolhost_with_secret(
        CLIENT_SECRET,
        &[
            "run", &dir, "--agent", "a", "go", "--data", &data_arg, "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let record: Value = serde_json::from_str(&stdout).unwrap();
    let results = common::tool_results(&record);
    assert_eq!(results.len(), 1, "{stdout}");
    assert_eq!(results[0].0, "remote.think");
    assert_eq!(results[0].1, "success", "{results:?}");
    assert!(results[0].2.contains("over OAuth"), "{results:?}");
    assert!(!stdout.contains(CLIENT_SECRET) && !stderr.contains(CLIENT_SECRET));

    // The grant is kept sealed: nothing of it reads as a token in the database.
    let db = std::fs::read(data.join("toolhost.db")).unwrap();
    let wal = std::fs::read(data.join("toolhost.db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        for plain in ["access_token", CLIENT_SECRET] {
            assert!(
                !bytes.windows(plain.len()).any(|w| w == plain.as_bytes()),
                "{plain} is in the database in plain text"
            );
        }
        assert!(
            !holds_a_jwt(bytes),
            "a token is in the database in plain text"
        );
    }

    // Listing again reuses the kept token: the wrong secret does not matter now.
    let (code, stdout, stderr) = toolhost_with_secret(
        "wrong",
        &["mcp", "list", &dir, "--json", "--data", &data_arg],
    );
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    assert!(stdout.contains("\"remote.think\""), "{stdout}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let oauth = &listed["servers"][0]["oauth"];
    assert_eq!(oauth["authorized"], true, "{listed}");
    assert_eq!(oauth["grant"], "client_credentials");
    assert_eq!(oauth["issuer"], issuer.as_str());
    assert_eq!(oauth["scope"], "run");

    // A client whose secret is wrong, with no kept grant, is told what the server said.
    let other = client_project(&url, &issuer);
    let (code, stdout, stderr) = toolhost_with_secret(
        "wrong",
        &[
            "run",
            &other.root.display().to_string(),
            "--agent",
            "a",
            "go",
            "--json",
            "--data",
            &other.root.join("data").display().to_string(),
        ],
    );
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("invalid_client"), "{code}: {said}");
    assert!(!said.contains(CLIENT_SECRET));
}

#[test]
fn login_and_logout_say_clearly_what_cannot_be_done() {
    let project = TempProject::new();
    let dir = project.root.display().to_string();
    let data = project.root.join("data").display().to_string();
    write(
        &project.root,
        "agents/mcp/plain.json",
        r#"{"url": "https://mcp.example/mcp"}"#,
    );
    write(
        &project.root,
        "agents/mcp/local.json",
        r#"{"command": ["python3", "x.py"]}"#,
    );
    let run = |args: &[&str]| toolhost_with_secret("unused", args);

    let (code, _, stderr) = run(&["mcp", "login", &dir, "nope", "--data", &data]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no MCP server named \"nope\""), "{stderr}");

    let (code, _, stderr) = run(&["mcp", "login", &dir, "plain", "--data", &data]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("has no `oauth`"), "{stderr}");

    let (code, _, stderr) = run(&["mcp", "login", &dir, "local", "--data", &data]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("is a program, not a server at a URL"),
        "{stderr}"
    );

    let (code, _, stderr) = run(&["mcp", "logout", &dir, "plain", "--data", &data]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no authorization of MCP server \"plain\" is kept"),
        "{stderr}"
    );

    // A server that lets anyone in needs no login, and the login says so.
    let open = open_mcp_server();
    write(
        &project.root,
        "agents/mcp/open.json",
        &serde_json::json!({"url": open, "oauth": {}}).to_string(),
    );
    let (code, _, stderr) = run(&["mcp", "login", &dir, "open", "--data", &data]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("MCP server \"open\" let toolhost in and list its tools without a token: it needs no login"),
        "{stderr}"
    );

    write(
        &project.root,
        "agents/mcp/plain.json",
        r#"{"url": "https://mcp.example/mcp", "oauth": {"clientId": "ci", "clientSecret": "written-in"}}"#,
    );
    let (code, _, stderr) = run(&["mcp", "login", &dir, "plain", "--data", &data]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("never hold the secret"), "{stderr}");
    assert!(
        !stderr.contains("written-in"),
        "the secret was quoted: {stderr}"
    );
}

/// An MCP server on loopback that lets anyone in: each request is answered 200 with an empty
/// tool list. Serves, on a thread of its own, until the test ends. Its URL.
fn open_mcp_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            // The head, then as much body as it announces.
            let mut seen = Vec::new();
            let mut buffer = [0u8; 4096];
            loop {
                match stream.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buffer[..n]),
                }
                let text = String::from_utf8_lossy(&seen).to_ascii_lowercase();
                let Some(end) = text.find("\r\n\r\n") else {
                    continue;
                };
                let length = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if seen.len() >= end + 4 + length {
                    break;
                }
            }
            let body = r#"{"jsonrpc":"2.0","id":0,"result":{"tools":[]}}"#;
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    url
}
