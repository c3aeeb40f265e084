//! The delegation example (`examples/delegation`) runs as the README says: the planner calls the
//! researcher sub-agent (a `dual_ai` agent in a child thread, whose worker looks the fact up and
//! reports), the summarize prompt tool, and a resumable editor instance it creates and then
//! messages again, and answers; `threads show --tree` shows both children.

mod common;

use common::{toolhost, TempProject};
use std::path::Path;

fn example() -> String {
    Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../examples/delegation")
        .display()
        .to_string()
}

#[test]
fn the_delegation_example_delegates_to_a_sub_agent_and_a_prompt_tool_and_answers() {
    let data = TempProject::new();
    let data_dir = data.root.join("data").display().to_string();
    let run = toolhost(&[
        "run",
        &example(),
        "--agent",
        "planner",
        "--data",
        &data_dir,
        "--json",
        "How hot must water be to boil?",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let done: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    assert_eq!(done["thread"]["status"], "done", "{done}");
    let thread = done["thread"]["id"].as_str().unwrap().to_owned();
    let texts: Vec<&str> = done["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    // The researcher's session result, the summary, then the planner's answer.
    assert!(
        texts.contains(&"Water boils at 100 °C (212 °F) at sea level (lookup_fact)."),
        "{texts:?}"
    );
    assert!(
        texts.contains(&"At sea level water boils at 100 °C."),
        "{texts:?}"
    );
    assert!(
        texts
            .last()
            .unwrap()
            .starts_with("Water boils at 100 °C (212 °F) at sea level"),
        "{texts:?}"
    );
    // The editor instance answered both messages, keeping its conversation between them.
    let edits: Vec<serde_json::Value> = texts
        .iter()
        .filter(|t| t.contains("\"name\":\"copy-desk\""))
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    assert_eq!(edits.len(), 2, "{texts:?}");
    assert_eq!(edits[0]["result"], "Water boils at 100 °C at sea level.");
    assert_eq!(
        edits[1]["result"],
        "Water boils at 100 °C (212 °F) at sea level."
    );
    assert_eq!(edits[0]["reference"], edits[1]["reference"]);

    let tree = toolhost(&["threads", "show", &thread, "--tree", "--data", &data_dir]);
    assert_eq!(tree.code, 0, "{}", tree.stderr);
    let lines: Vec<&str> = tree.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", tree.stdout);
    assert!(
        lines[0].contains("done") && lines[0].contains("planner"),
        "{}",
        tree.stdout
    );
    assert!(
        lines[1..]
            .iter()
            .any(|l| l.contains("done") && l.contains("researcher")),
        "{}",
        tree.stdout
    );
    assert!(
        lines[1..]
            .iter()
            .any(|l| l.contains("done") && l.contains("copy-desk")),
        "{}",
        tree.stdout
    );
}
