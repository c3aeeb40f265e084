//! Tool files in JavaScript and TypeScript from the command line: the spec's examples in
//! `examples/js-tools` run as the README says, and a project's toolhost.toml `[fetch]` table
//! lets a tool file reach a host (a real server on loopback) and no other.

mod common;

use common::{toolhost, write, TempProject};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;

fn example() -> String {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../examples/js-tools")
        .display()
        .to_string()
}

#[test]
fn the_js_tools_example_runs_its_typescript_tools() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let list = toolhost(&["tools", "list", &example()]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with("get_weather") && l.contains("javascript")),
        "{}",
        list.stdout
    );
    let run = toolhost(&[
        "run",
        &example(),
        "--agent",
        "assistant",
        "--data",
        &data_dir,
        "Help me at the harbour.",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for said in [
        "ok create_ticket: Created ticket #1042: Broken crane",
        "ok execute_step: Step 1 of wf-7 done",
        "\"vectorStoreId\":\"vs_harbour\"",
    ] {
        assert!(run.stdout.contains(said), "{said}: {}", run.stdout);
    }
}

/// Answers one request with a JSON body on a loopback port of its own.
fn one_answer() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut socket, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf);
            let body = r#"{"tide":"low at noon"}"#;
            let _ = write!(
                socket,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[test]
fn fetch_reaches_the_hosts_of_toolhost_toml() {
    let port = one_answer();
    let p = TempProject::new();
    p.tool(
        "tides.js",
        "import { defineTool } from '@standardagents/spec';
import { z } from 'zod';
export default defineTool({
  description: 'Asks the tide service.',
  args: z.object({ url: z.string() }),
  execute: async (state, args) => {
    const data = await (await fetch(args.url)).json();
    return data.tide;
  },
});
",
    );
    write(
        &p.root,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
    );
    write(
        &p.root,
        "agents/prompts/p.json",
        r#"{"toolDescription": "x", "prompt": "Work.", "model": "m", "tools": ["tides"], "includeChat": true, "includePastTools": true}"#,
    );
    write(
        &p.root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "m.jsonl"}"#,
    );
    let allowed = format!("http://127.0.0.1:{port}/tides");
    let refused = format!("http://127.0.0.2:{port}/tides");
    write(
        &p.root,
        "m.jsonl",
        &format!(
            "{{\"toolCalls\": [{{\"name\": \"tides\", \"arguments\": {{\"url\": \"{allowed}\"}}}}]}}\n{{\"toolCalls\": [{{\"name\": \"tides\", \"arguments\": {{\"url\": \"{refused}\"}}}}]}}\n{{\"text\": \"done\"}}\n"
        ),
    );
    write(
        &p.root,
        "toolhost.toml",
        &format!("[fetch]\nhosts = [\"127.0.0.1:{port}\"]\ntimeout_ms = 5000\n"),
    );
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&["run", &dir, "--agent", "a", "--data", &data, "go"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("ok tides: low at noon"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("127.0.0.2 is not a host tools may reach"),
        "{}",
        run.stdout
    );

    // A key the table does not have is refused, naming the file.
    write(&p.root, "toolhost.toml", "[fetch]\nhost = [\"x\"]\n");
    let run = toolhost(&["run", &dir, "--agent", "a", "--data", &data, "go"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("toolhost.toml") && run.stderr.contains("host"),
        "{}",
        run.stderr
    );
}
