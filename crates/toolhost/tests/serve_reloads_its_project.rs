//! `toolhost serve` as a real process loads its project again when a tool file is added and the
//! prompt offers it (the API lists it); with `--no-reload` it keeps the project as it started.

mod common;

use common::{
    http_get, lines_of, next_line, scripted_agent, served_address, toolhost, write, TempProject,
};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// A JavaScript tool `name` that answers with its own name.
fn tool(p: &TempProject, name: &str) {
    write(
        &p.root,
        &format!("agents/tools/{name}.js"),
        &format!(
            "import {{ defineTool }} from '@standardagents/spec';\n\
             export default defineTool({{ description: 'Says {name}.', execute: async () => '{name}' }});\n"
        ),
    );
}

/// A `toolhost serve` process and its standard output, kept open: a server whose output was
/// closed ends at its next line, as a command-line program should.
struct Served {
    child: Child,
    _output: Receiver<String>,
}

/// `toolhost serve` of `p` on a port of its own with `extra` arguments: the process and its
/// address, once it listens.
fn serve(p: &TempProject, data: &str, extra: &[&str]) -> (Served, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", &p.root.display().to_string(), "--data", data])
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let output = lines_of(server.stdout.take().unwrap());
    let first = next_line(&output);
    let addr = served_address(&first);
    let served = Served {
        child: server,
        _output: output,
    };
    (served, addr)
}

/// The names `GET /v1/tools` lists.
fn tools(addr: &str, token: &str) -> Vec<String> {
    let (status, body) = http_get(addr, "/v1/tools", token);
    assert_eq!(status, 200, "{body}");
    let listed: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_tool_added_while_serving_is_taken_unless_reloading_is_off() {
    let p = TempProject::new();
    tool(&p, "first");
    scripted_agent(&p.root, &["first"], "{\"text\": \"hi\"}\n");
    let data = p.root.join("data").display().to_string();
    let created = toolhost(&[
        "tokens", "create", "t", "--scope", "read", "--data", &data, "--json",
    ]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let created: Value = serde_json::from_str(&created.stdout).unwrap();
    let token = created["token"].as_str().unwrap().to_owned();
    let (mut reloading, at) = serve(&p, &data, &[]);
    let (mut fixed, fixed_at) = serve(&p, &data, &["--no-reload"]);
    assert!(!tools(&at, &token).contains(&"second".to_owned()));

    tool(&p, "second");
    scripted_agent(&p.root, &["first", "second"], "{\"text\": \"hi\"}\n");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !tools(&at, &token).contains(&"second".to_owned()) {
        assert!(
            Instant::now() < deadline,
            "the server never took the new tool"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The reloading server took it; the other had as many chances (it looks every second) and
    // more, and keeps the project it started with.
    std::thread::sleep(Duration::from_millis(2500));
    let kept = tools(&fixed_at, &token);
    assert!(kept.contains(&"first".to_owned()), "{kept:?}");
    assert!(!kept.contains(&"second".to_owned()), "{kept:?}");
    for server in [&mut reloading, &mut fixed] {
        let _ = server.child.kill();
        let _ = server.child.wait();
    }
}
