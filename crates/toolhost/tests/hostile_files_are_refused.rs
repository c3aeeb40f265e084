//! Files that would hang toolhost or exhaust the machine are refused with an error naming the
//! file and the reason: a FIFO, a device, a file past the size cap, and a small tool file whose
//! `$ref`s expand exponentially.

mod common;

use common::{toolhost, write, TempProject};
use std::path::Path;
use std::process::Command;

/// A project with one agent on the scripted model whose script is `scripts/s.jsonl`.
fn scripted_project() -> TempProject {
    let p = TempProject::new();
    write(
        &p.root,
        "agents/agents/a.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
    );
    write(
        &p.root,
        "agents/prompts/p.json",
        r#"{"toolDescription": "t", "prompt": "Answer.", "model": "m"}"#,
    );
    write(
        &p.root,
        "agents/models/m.json",
        r#"{"provider": "test", "script": "scripts/s.jsonl"}"#,
    );
    std::fs::create_dir_all(p.root.join("scripts")).unwrap();
    p
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs the agent and returns the run; it must end (not hang) and fail.
fn run_agent(p: &TempProject) -> common::Run {
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&[
        "run",
        &p.root.display().to_string(),
        "--agent",
        "a",
        "--data",
        &data,
        "hi",
    ]);
    assert_ne!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        !run.stderr.contains("has no adapter"),
        "the cause is not guessed: {}",
        run.stderr
    );
    run
}

#[test]
fn a_model_script_that_is_a_fifo_is_refused_instead_of_hanging_the_run() {
    let p = scripted_project();
    mkfifo(&p.root.join("scripts/s.jsonl"));
    let run = run_agent(&p);
    assert!(
        run.stderr
            .contains("scripts/s.jsonl: it is a FIFO (named pipe), not a regular file"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_model_script_linked_to_dev_zero_is_refused_instead_of_read_forever() {
    let p = scripted_project();
    std::os::unix::fs::symlink("/dev/zero", p.root.join("scripts/s.jsonl")).unwrap();
    let run = run_agent(&p);
    assert!(
        run.stderr
            .contains("scripts/s.jsonl: it is a character device, not a regular file"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_model_script_past_the_size_cap_is_refused_naming_the_limit() {
    let p = scripted_project();
    let line = "{\"text\": \"x\"}\n";
    let big = line.repeat((4 * 1024 * 1024) / line.len() + 1);
    write(&p.root, "scripts/s.jsonl", &big);
    let run = run_agent(&p);
    assert!(
        run.stderr
            .contains("scripts/s.jsonl: the file is larger than 4194304 bytes"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_linked_regular_script_is_read() {
    let p = scripted_project();
    write(
        &p.root,
        "scripts/real.jsonl",
        "{\"text\": \"linked answer\"}\n",
    );
    std::os::unix::fs::symlink(
        p.root.join("scripts/real.jsonl"),
        p.root.join("scripts/s.jsonl"),
    )
    .unwrap();
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&[
        "run",
        &p.root.display().to_string(),
        "--agent",
        "a",
        "--data",
        &data,
        "hi",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("assistant: linked answer"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_tool_file_that_is_a_fifo_is_reported_not_skipped_or_waited_on() {
    let p = TempProject::new();
    p.tool(
        "good.json",
        r#"{"type": "object", "description": "A good tool.", "properties": {}}"#,
    );
    mkfifo(&p.root.join("agents/tools/pipe.json"));
    let run = toolhost(&["tools", "list", &p.root.display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stdout.contains("good"), "{}", run.stdout);
    assert!(
        run.stderr.contains("pipe.json") && run.stderr.contains("it is a FIFO (named pipe)"),
        "{}",
        run.stderr
    );
}

/// 40 `$defs`, each `anyOf: [{$ref: previous}, {$ref: previous}]`: a few kilobytes on disk,
/// 2^40 copies when every `$ref` is inlined.
fn doubling_tool(levels: usize) -> String {
    let mut defs = vec![r#""d0": {"type": "string"}"#.to_owned()];
    for i in 1..=levels {
        defs.push(format!(
            r##""d{i}": {{"anyOf": [{{"$ref": "#/$defs/d{p}"}}, {{"$ref": "#/$defs/d{p}"}}]}}"##,
            p = i - 1
        ));
    }
    format!(
        r##"{{"type": "object", "description": "Fans out.", "properties": {{"x": {{"$ref": "#/$defs/d{levels}"}}}}, "$defs": {{{}}}}}"##,
        defs.join(", ")
    )
}

#[test]
fn a_tool_whose_refs_expand_exponentially_is_refused_naming_file_pointer_and_limit() {
    let p = TempProject::new();
    let text = doubling_tool(40);
    assert!(
        text.len() < 5 * 1024,
        "the file is small: {} bytes",
        text.len()
    );
    p.tool("fanout.json", &text).tool(
        "good.json",
        r#"{"type": "object", "description": "A good tool.", "properties": {}}"#,
    );
    let run = toolhost(&["tools", "list", &p.root.display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stdout.contains("good"), "{}", run.stdout);
    let report: String = run
        .stderr
        .lines()
        .skip_while(|l| !l.contains("fanout.json"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    for expected in [
        "at /properties/x/$ref",
        "\"#/$defs/d40\" → \"#/$defs/d39\"",
        "larger than 1048576 bytes, the limit",
    ] {
        assert!(report.contains(expected), "{expected:?} in\n{}", run.stderr);
    }
}

/// Runs `toolhost` with standard input read from `/dev/zero`, which never ends a line.
fn with_endless_stdin(args: &[&str]) -> common::Run {
    common::Run::from(common::output_of(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .stdin(std::fs::File::open("/dev/zero").unwrap()),
    ))
}

#[test]
fn standard_input_without_line_breaks_is_read_up_to_a_cap_not_until_memory_runs_out() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let project = common::quickstart();
    let run = with_endless_stdin(&[
        "run",
        &project,
        "--agent",
        "assistant",
        "--data",
        &data_dir,
        "--secret",
        "TOKEN",
        "hi",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "secret TOKEN: standard input could not be read: the line is longer than 1048576 bytes, the limit"
        ),
        "{}",
        run.stderr
    );
    let chat = with_endless_stdin(&[
        "chat",
        &project,
        "--agent",
        "assistant",
        "--data",
        &data_dir,
    ]);
    assert!(
        chat.stdout.contains(
            "error: standard input could not be read: the line is longer than 1048576 bytes"
        ),
        "{}\n{}",
        chat.stdout,
        chat.stderr
    );
}

#[test]
fn a_database_that_is_a_fifo_is_named_not_reported_as_a_disk_error() {
    let data = TempProject::new();
    let dir = data.root.join("data");
    std::fs::create_dir_all(&dir).unwrap();
    mkfifo(&dir.join("toolhost.db"));
    let run = toolhost(&["threads", "list", "--data", &dir.display().to_string()]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("toolhost.db is a FIFO (named pipe), not a regular file"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_tool_file_with_an_integer_past_64_bits_is_refused_not_rounded() {
    let p = TempProject::new();
    p.tool(
        "pay.json",
        r#"{"type": "object", "description": "Pays.", "properties": {"amount": {"type": "integer", "maximum": 123456789012345678901234567890}}}"#,
    );
    let run = toolhost(&["tools", "list", &p.root.display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("pay.json")
            && run.stderr.contains(
                "at /properties/amount/maximum: the integer 123456789012345678901234567890 does not fit in 64 bits"
            ),
        "{}",
        run.stderr
    );
}
