//! `toolhost threads show THREAD --tree` shows a thread and its sub-agents' threads, each with
//! its status, agent and display name, as lines or as JSON; deleting is the store's and the
//! server's, so here only what a person reads is checked.

mod common;

use common::{toolhost, write, TempProject};
use serde_json::Value;

/// Agent `lead` calls the `dual_ai` agent `team` twice; each child's side B ends its session
/// with `report`.
fn project() -> TempProject {
    let p = TempProject::new();
    let prompt = |model: &str, tools: &str| {
        format!(
            r#"{{"toolDescription": "Works.", "prompt": "Work.", "model": "{model}", "tools": {tools}, "includeChat": true, "includePastTools": true}}"#
        )
    };
    let files = [
        ("agents/agents/lead.json", r#"{"sideA": {"prompt": "lead"}}"#.to_owned()),
        ("agents/agents/team.json", r#"{"type": "dual_ai", "sideA": {"prompt": "boss"}, "sideB": {"prompt": "worker", "sessionStop": {"name": "report", "messageProperty": "text"}}}"#.to_owned()),
        ("agents/prompts/lead.json", prompt("lead", r#"["team"]"#)),
        ("agents/prompts/boss.json", prompt("boss", "[]")),
        ("agents/prompts/worker.json", prompt("worker", r#"["report"]"#)),
        ("agents/models/lead.json", r#"{"provider": "test", "script": "lead.json"}"#.to_owned()),
        ("agents/models/boss.json", r#"{"provider": "test", "script": "boss.json"}"#.to_owned()),
        ("agents/models/worker.json", r#"{"provider": "test", "script": "worker.json"}"#.to_owned()),
        ("agents/tools/report.json", r#"{"type": "object", "description": "Reports.", "properties": {"text": {"type": "string"}, "_output": {"type": "string"}}, "required": ["text"]}"#.to_owned()),
        ("lead.json", r#"[{"toolCalls": [{"name": "team", "arguments": {"message": "one"}}, {"name": "team", "arguments": {"message": "two"}}]}, {"text": "done"}]"#.to_owned()),
        ("boss.json", r#"[{"text": "go"}]"#.to_owned()),
        ("worker.json", r#"[{"toolCalls": [{"name": "report", "arguments": {"text": "ok"}}]}]"#.to_owned()),
    ];
    for (file, text) in files {
        write(&p.root, file, &text);
    }
    p
}

#[test]
fn threads_show_tree_lists_each_child_with_its_status_and_name() {
    let p = project();
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&[
        "run", &dir, "--agent", "lead", "--data", &data, "--json", "go",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let record: Value = serde_json::from_str(&run.stdout).unwrap();
    let id = record["thread"]["id"].as_str().unwrap().to_owned();

    let shown = toolhost(&["threads", "show", &id, "--data", &data, "--tree"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let lines: Vec<&str> = shown.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", shown.stdout);
    assert!(
        lines[0].starts_with(&id) && lines[0].contains("done") && lines[0].contains("agent lead")
    );
    for child in &lines[1..] {
        assert!(child.starts_with("  "), "{child}");
        assert!(
            child.contains("done") && child.contains("agent team") && child.contains("\"team\""),
            "{child}"
        );
    }

    let json = toolhost(&["threads", "show", &id, "--data", &data, "--tree", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let tree: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(tree["id"], id.as_str());
    let children = tree["children"].as_array().unwrap();
    assert_eq!(children.len(), 2);
    assert!(children.iter().all(|c| c["status"] == "done"
        && c["name"] == "team"
        && c["children"] == Value::Array(vec![])));

    let missing = toolhost(&[
        "threads",
        "show",
        "no-such-thread",
        "--data",
        &data,
        "--tree",
    ]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
}
