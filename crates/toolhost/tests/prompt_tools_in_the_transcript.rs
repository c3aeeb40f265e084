//! A prompt tool's sub-prompt is shown in the transcript between its call and its result,
//! indented: its first message, its own calls with their results, and its answer.

mod common;

use common::{toolhost, write, TempProject};

#[test]
fn the_transcript_shows_a_sub_prompt_under_its_call() {
    let p = TempProject::new();
    let files = [
        ("agents/agents/lead.json", r#"{"type": "ai_human", "sideA": {"prompt": "lead"}}"#),
        ("agents/prompts/lead.json", r#"{"toolDescription": "Leads.", "prompt": "Delegate.", "model": "lead", "tools": ["worker"]}"#),
        ("agents/prompts/worker.json", r#"{"toolDescription": "Thinks it over.", "prompt": "Think.", "model": "worker", "tools": ["think"]}"#),
        ("agents/models/lead.json", r#"{"provider": "test", "script": "lead.jsonl"}"#),
        ("agents/models/worker.json", r#"{"provider": "test", "script": "worker.jsonl"}"#),
        ("lead.jsonl", "{\"toolCalls\": [{\"name\": \"worker\", \"arguments\": {\"message\": \"ponder\"}}]}\n{\"text\": \"done\"}\n"),
        ("worker.jsonl", "{\"toolCalls\": [{\"name\": \"think\", \"arguments\": {\"thought\": \"hmm\"}}]}\n{\"text\": \"pondered\"}\n"),
    ];
    for (file, text) in files {
        write(&p.root, file, text);
    }
    let dir = p.root.display().to_string();
    let data = p.root.join("data").display().to_string();
    let run = toolhost(&["run", &dir, "--agent", "lead", "--data", &data, "go"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let expected = [
        "user: go",
        r#"  call worker({"message":"ponder"})"#,
        "    sub-prompt: ponder",
        r#"      call think({"thought":"hmm"})"#,
        "      ok think: hmm",
        "    sub-prompt answer: pondered",
        "  ok worker: pondered",
        "assistant: done",
    ];
    let at = lines
        .iter()
        .position(|l| *l == "user: go")
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(&lines[at..at + expected.len()], expected, "{}", run.stdout);
}
