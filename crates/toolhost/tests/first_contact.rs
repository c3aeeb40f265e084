//! What a new user sees first: `--help` says what toolhost does, an unknown name lists the ones
//! that exist, and `threads list` says when each thread was created and last active.

mod common;

use common::{quickstart, toolhost, TempProject};
use serde_json::Value;

#[test]
fn help_opens_with_what_toolhost_does_not_how_the_crate_is_built() {
    let help = toolhost(&["--help"]);
    assert_eq!(help.code, 0, "{}", help.stderr);
    let first = help.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("Define the tools of an LLM agent once"),
        "{first}"
    );
    assert!(!help.stdout.contains("facade crate"), "{}", help.stdout);
    for command in ["run", "chat", "threads", "tools"] {
        assert!(
            help.stdout.contains(&format!("  {command} ")),
            "{}",
            help.stdout
        );
    }
}

#[test]
fn an_unknown_agent_lists_the_agents_there_are() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let run = toolhost(&[
        "run",
        &quickstart(),
        "--agent",
        "nobody",
        "--data",
        &data_dir,
        "hi",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("the agents there: assistant, cashier"),
        "{}",
        run.stderr
    );
    let chat = toolhost(&[
        "chat",
        &quickstart(),
        "--agent",
        "nobody",
        "--data",
        &data_dir,
    ]);
    assert_eq!(chat.code, 2, "{}", chat.stderr);
    assert!(
        chat.stderr.contains("the agents there: assistant, cashier"),
        "{}",
        chat.stderr
    );
}

#[test]
fn an_unknown_model_lists_the_usable_ones() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let run = toolhost(&[
        "run",
        &quickstart(),
        "--agent",
        "assistant",
        "--model",
        "no-such-model",
        "--data",
        &data_dir,
        "hi",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the usable ones: cashier_test, local, quickstart_test, reporter_test;"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_thread_names_the_newest_threads_there_are() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let empty = toolhost(&["threads", "show", "no-such-thread", "--data", &data_dir]);
    assert_eq!(empty.code, 2, "{}", empty.stderr);
    assert!(
        empty.stderr.contains("it holds no threads"),
        "{}",
        empty.stderr
    );

    let run = toolhost(&[
        "run",
        &quickstart(),
        "--agent",
        "assistant",
        "--data",
        &data_dir,
        "--json",
        "Weather?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let record: Value = serde_json::from_str(&run.stdout).unwrap();
    let id = record["thread"]["id"].as_str().unwrap();
    for args in [
        vec!["threads", "show", "no-such-thread", "--data", &data_dir],
        vec!["threads", "stop", "no-such-thread", "--data", &data_dir],
        vec![
            "resume",
            &quickstart(),
            "no-such-thread",
            "--data",
            &data_dir,
        ],
    ] {
        let out = toolhost(&args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("there is no thread no-such-thread")
                && out
                    .stderr
                    .contains(&format!("the newest threads there: {id} (assistant)")),
            "{args:?}: {}",
            out.stderr
        );
    }
}

#[test]
fn threads_list_shows_when_each_thread_was_created_and_last_active() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let run = toolhost(&[
        "run",
        &quickstart(),
        "--agent",
        "assistant",
        "--data",
        &data_dir,
        "Weather?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    let json = toolhost(&["threads", "list", "--data", &data_dir, "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let rows: Value = serde_json::from_str(&json.stdout).unwrap();
    let row = &rows.as_array().unwrap()[0];
    let created = row["created_at"].as_i64().unwrap();
    let updated = row["updated_at"].as_i64().unwrap();
    assert!(created > 0 && updated >= created, "{row}");
    assert_eq!(row["messages"], 7);

    let text = toolhost(&["threads", "list", "--data", &data_dir]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let mut lines = text.stdout.lines();
    let header = lines.next().unwrap();
    assert!(
        header.contains("CREATED (UTC)") && header.contains("LAST ACTIVE (UTC)"),
        "{header}"
    );
    let line = lines.next().unwrap();
    // Both times, to the second: "YYYY-MM-DD HH:MM:SS".
    let stamps: Vec<&str> = line
        .split("  ")
        .map(str::trim)
        .filter(|f| f.len() == 19 && f.as_bytes()[4] == b'-' && f.as_bytes()[13] == b':')
        .collect();
    assert_eq!(stamps.len(), 2, "{line}");
    assert!(stamps[0] <= stamps[1], "{line}");
}
