//! The `[code]` table of a project's toolhost.toml sets the limits of every `runCode` run for
//! every command: an endless loop offered through the built-in `run_code` tool is stopped at
//! the deadline the file gives; a limit out of its range stops the command with a sentence
//! naming the file, and nothing runs.

mod common;

use common::{toolhost, write, TempProject};

fn project(toml: &str) -> TempProject {
    let p = TempProject::new();
    for (file, text) in [
        ("agents/agents/coder.json", r#"{"type": "ai_human", "sideA": {"prompt": "coder"}}"#),
        ("agents/prompts/coder.json", r#"{"toolDescription": "Codes.", "prompt": "Run code.", "model": "m", "tools": ["run_code"], "includeChat": true, "includePastTools": true}"#),
        ("agents/models/m.json", r#"{"provider": "test", "script": "m.jsonl"}"#),
        ("m.jsonl", "{\"toolCalls\": [{\"name\": \"run_code\", \"arguments\": {\"source\": \"export default () => { for (;;) {} }\"}}]}\n{\"text\": \"done\"}\n"),
        ("toolhost.toml", toml),
    ] {
        write(&p.root, file, text);
    }
    p
}

#[test]
fn the_deadline_of_the_code_table_stops_an_endless_loop() {
    let p = project("[code]\ndeadline_ms = 300\nmax_in_flight = 1\n");
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let started = std::time::Instant::now();
    let run = toolhost(&[
        "run", &dir, "--agent", "coder", "--data", &data, "--json", "loop",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("DeadlineError"), "{}", run.stdout);
    // The default deadline is 30 s: the file's 300 ms was the one in force.
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
}

#[test]
fn a_code_limit_out_of_range_stops_the_command_naming_the_file() {
    let p = project("[code]\nmemory_bytes = 10\n");
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&["run", &dir, "--agent", "coder", "--data", &data, "loop"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("the [code] limits of"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("toolhost.toml"), "{}", run.stderr);
    let unknown = project("[code]\nmemory = 10\n");
    let dir = unknown.root.display().to_string();
    let run = toolhost(&["run", &dir, "--agent", "coder", "--data", &data, "loop"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("unknown field `memory`"),
        "{}",
        run.stderr
    );
}
