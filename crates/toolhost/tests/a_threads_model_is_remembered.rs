//! The model a thread was started with (`toolhost run --model X`) is remembered: the printed
//! "continue with" command, run as printed, answers with X, not with the agent's own model.

mod common;

use common::{toolhost, write, TempProject};

#[test]
fn resume_answers_with_the_model_the_thread_was_started_with() {
    let p = TempProject::new();
    let root = &p.root;
    write(
        root,
        "agents/agents/shop.json",
        r#"{"type": "ai_human", "sideA": {"prompt": "shop"}}"#,
    );
    write(
        root,
        "agents/prompts/shop.json",
        r#"{"toolDescription": "Shop.", "prompt": "You sell.", "model": "own", "tools": ["pay"]}"#,
    );
    // The agent's own model would answer differently at every turn.
    write(
        root,
        "agents/models/own.json",
        r#"{"provider": "test", "script": "own.jsonl"}"#,
    );
    write(
        root,
        "own.jsonl",
        "{\"text\": \"own model, turn 1\"}\n{\"text\": \"own model, turn 2\"}\n",
    );
    write(
        root,
        "agents/models/other.json",
        r#"{"provider": "test", "script": "other.jsonl"}"#,
    );
    write(
        root,
        "other.jsonl",
        "{\"toolCalls\": [{\"name\": \"pay\", \"arguments\": {}}]}\n{\"text\": \"Paid, said the other model.\"}\n",
    );
    write(
        root,
        "agents/tools/pay.json",
        r#"{"type": "object", "description": "Pays.", "properties": {}, "additionalProperties": false}"#,
    );
    write(
        root,
        "agents/activities/pay.json",
        r#"{"command": ["sh", "-c", "cat >/dev/null; echo '{\"status\": \"success\", \"result\": \"paid\"}'"], "approval": {"reason": "Moves money."}}"#,
    );
    let dir = root.display().to_string();
    let data = root.join("data").display().to_string();
    let run = toolhost(&[
        "run", &dir, "--agent", "shop", "--model", "other", "--data", &data, "pay",
    ]);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let hint = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("continue with: toolhost "))
        .unwrap_or_else(|| panic!("no hint in {}", run.stderr));
    assert!(hint.contains("--approve "), "{hint}");
    let args: Vec<&str> = hint.split_whitespace().collect();
    let resumed = toolhost(&args);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    assert!(
        resumed.stdout.contains("Paid, said the other model."),
        "{}",
        resumed.stdout
    );
    assert!(!resumed.stdout.contains("own model"), "{}", resumed.stdout);
}
