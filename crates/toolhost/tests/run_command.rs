//! `toolhost run` runs the example agent on the scripted model with real process activities;
//! `toolhost threads` lists and shows what it stored.

mod common;

use common::{quickstart, toolhost, toolhost_in, TempProject};
use serde_json::Value;

#[test]
fn run_prints_each_call_with_its_arguments_result_and_status() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let run = toolhost(&[
        "run",
        &quickstart(),
        "--agent",
        "assistant",
        "--data",
        &data_dir,
        "What's the weather in Oslo?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for expected in [
        "user: What's the weather in Oslo?",
        "call get_weather({\"location\":\"Oslo\"})",
        "ok get_weather: {\"location\": \"Oslo\", \"temperature\": \"7 °C\", \"sky\": \"cloudy\"}",
        "ok get_current_time: ",
        "ok search_knowledge_base: [{\"title\": \"Umbrella policy\"",
        "assistant: It is 7 °C and cloudy in Oslo",
    ] {
        assert!(
            run.stdout.contains(expected),
            "missing {expected:?} in\n{}",
            run.stdout
        );
    }
    assert!(
        run.stderr.contains("done: the agent replied"),
        "{}",
        run.stderr
    );
}

#[test]
fn run_json_and_threads_show_give_the_whole_record() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
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
    let id = record["thread"]["id"].as_str().unwrap().to_owned();
    assert_eq!(record["thread"]["status"], "done");
    assert_eq!(record["messages"].as_array().unwrap().len(), 7);
    let calls = record["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c["state"] == "completed"));

    let list = toolhost(&["threads", "list", "--data", &data_dir]);
    assert_eq!(list.code, 0);
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("done") && l.contains("assistant")),
        "{}",
        list.stdout
    );
    let show = toolhost(&["threads", "show", &id, "--data", &data_dir, "--json"]);
    assert_eq!(show.code, 0);
    let shown: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(shown["messages"], record["messages"]);
}

#[test]
fn an_unknown_agent_or_thread_exits_2_with_a_clear_sentence() {
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
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("there is no agent named \"nobody\""),
        "{}",
        run.stderr
    );
    let show = toolhost(&["threads", "show", "no-such-thread", "--data", &data_dir]);
    assert_eq!(show.code, 2);
    assert!(
        show.stderr.contains("there is no thread no-such-thread"),
        "{}",
        show.stderr
    );
}

#[test]
fn an_ephemeral_store_runs_the_same_and_leaves_nothing_on_disk() {
    let cwd = TempProject::new();
    let out = toolhost_in(
        &cwd.root,
        &[
            "run",
            &quickstart(),
            "--agent",
            "assistant",
            "--data",
            ":memory:",
            "--json",
            "What's the weather in Oslo?",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let record: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(record["thread"]["status"], "done");
    assert!(record["messages"].as_array().unwrap().len() >= 4);
    // Nothing was written where the command ran: no data folder, no database, no key.
    let left: Vec<String> = std::fs::read_dir(&cwd.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["agents".to_owned()], "{left:?}");
}

#[test]
fn an_agent_with_an_output_schema_plans_calls_and_ends_with_its_output() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let run = toolhost(&[
        "run",
        &quickstart(),
        "--agent",
        "reporter",
        "--data",
        &data_dir,
        "Is it nice in Oslo?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for expected in [
        "call get_weather({\"location\":\"Oslo\"})",
        "why: the report needs the weather",
        "ok get_weather: {\"location\": \"Oslo\", \"temperature\": \"7 °C\", \"sky\": \"cloudy\"}",
        "ok sentiment_analysis: {\"sentiment\":\"positive\",\"confidence\":0.8}",
        "assistant: {\"city\":\"Oslo\",\"weather\":\"7 °C and cloudy\",\"mood\":\"positive\"}",
        // Results remembered at their `_outputPath`s.
        "state: {\"weather\":{\"oslo\":{\"location\":\"Oslo\",\"temperature\":\"7 °C\",\"sky\":\"cloudy\"}},\"mood\":{\"sentiment\":\"positive\",\"confidence\":0.8}}",
    ] {
        assert!(
            run.stdout.contains(expected),
            "missing {expected:?} in\n{}",
            run.stdout
        );
    }
    assert!(
        run.stderr.contains("done: the agent replied"),
        "{}",
        run.stderr
    );
}
