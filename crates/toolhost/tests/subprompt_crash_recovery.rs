//! A sub-prompt survives SIGKILL: the lead prompt calls the prompt tool `worker`, whose
//! sub-prompt makes 150 tool calls; the real `toolhost` process is killed at least 10 times
//! while it runs and resumed each time. Afterwards every call inside the sub-prompt has exactly
//! one result and appended its line to a file outside the store at most once (exactly once when
//! it completed), the sub-prompt started once, and the lead's call of `worker` got exactly one
//! result: the sub-prompt's answer.

mod common;

use common::{run_with_random_kills, write, KilledRun, TempProject};
use std::collections::{HashMap, HashSet};
use toolhost_store::{Message, Role, Store, ThreadStatus, ToolStatus};

const CALLS: usize = 150;
const KILLS: usize = 10;

fn project() -> TempProject {
    let p = TempProject::new();
    let files = [
        ("agents/agents/lead.json", r#"{"type": "ai_human", "sideA": {"prompt": "lead"}}"#.to_owned()),
        ("agents/prompts/lead.json", r#"{"toolDescription": "Leads.", "prompt": "Delegate.", "model": "lead", "tools": ["worker"]}"#.to_owned()),
        ("agents/prompts/worker.json", r#"{"toolDescription": "Appends lines.", "prompt": "Append lines.", "model": "worker", "tools": ["append_line"], "maxSteps": 400}"#.to_owned()),
        ("agents/models/lead.json", r#"{"provider": "test", "script": "lead.jsonl"}"#.to_owned()),
        ("agents/models/worker.json", r#"{"provider": "test", "script": "worker.jsonl"}"#.to_owned()),
        ("agents/tools/append_line.json", r#"{"type": "object", "description": "Appends the call id to the log.", "properties": {"_activity": {"const": "append_line"}, "n": {"type": "integer"}}, "required": ["n"]}"#.to_owned()),
        ("agents/activities/append_line.json", r#"{"command": ["python3", "append_line.py"], "env": ["PATH", "CRASH_LOG"], "timeoutMs": 20000}"#.to_owned()),
        (
            "append_line.py",
            "import json, os, sys\ncall = json.load(sys.stdin)\nwith open(os.environ['CRASH_LOG'], 'a') as f:\n    f.write(call['call_id'] + '\\n')\n    f.flush()\n    os.fsync(f.fileno())\nprint(json.dumps({'status': 'success', 'result': 'appended'}))\n".to_owned(),
        ),
        ("lead.jsonl", "{\"toolCalls\": [{\"name\": \"worker\", \"arguments\": {\"message\": \"append\"}}]}\n{\"text\": \"done\"}\n".to_owned()),
        ("worker.jsonl", format!("{{\"toolCalls\": [{{\"name\": \"append_line\", \"arguments\": {{\"n\": 1}}}}], \"times\": {CALLS}}}\n{{\"text\": \"worked\"}}\n")),
    ];
    for (file, text) in files {
        write(&p.root, file, &text);
    }
    p
}

#[test]
fn a_sub_prompt_killed_at_random_moments_runs_every_call_once_and_answers_once() {
    let p = project();
    let log = p.root.join("calls.log");
    let KilledRun {
        thread: id,
        seed,
        kills,
        store,
    } = run_with_random_kills(&p.root, "lead", &log, KILLS, 300);
    let messages = store.messages(&id).unwrap();
    let mut results: HashMap<&str, Vec<&Message>> = HashMap::new();
    for m in messages.iter().filter(|m| m.role == Role::Tool) {
        results
            .entry(m.tool_call_id.as_deref().unwrap())
            .or_default()
            .push(m);
    }

    // The lead's one call of the prompt tool, and its one result: the sub-prompt's answer.
    let lead_calls: Vec<&str> = messages
        .iter()
        .filter(|m| m.depth == 0)
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    assert_eq!(lead_calls.len(), 1, "seed {seed}");
    let answer = &results[lead_calls[0]];
    assert_eq!(
        answer.len(),
        1,
        "seed {seed}: the lead's call has {} results",
        answer.len()
    );
    assert_eq!(answer[0].content.as_deref(), Some("worked"), "seed {seed}");
    assert_eq!(answer[0].depth, 0);
    assert_eq!(
        messages.last().unwrap().content.as_deref(),
        Some("done"),
        "seed {seed}"
    );

    // The sub-prompt started once, and everything of it is nested under the lead's call.
    let nested: Vec<(usize, &Message)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.depth == 1)
        .collect();
    assert!(nested
        .iter()
        .all(|(_, m)| m.parent_id.as_deref() == Some(lead_calls[0])));
    assert_eq!(
        nested.iter().filter(|(_, m)| m.role == Role::User).count(),
        1,
        "seed {seed}: the sub-prompt's first message was stored more than once"
    );
    let calls: Vec<(&str, usize)> = nested
        .iter()
        .flat_map(|(i, m)| m.tool_calls.iter().map(move |c| (c.id.as_str(), *i)))
        .collect();
    assert_eq!(calls.len(), CALLS, "seed {seed}");

    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let unique: HashSet<&String> = lines.iter().collect();
    assert_eq!(
        unique.len(),
        lines.len(),
        "seed {seed}: a call appended its line twice"
    );
    let mut unknown = 0;
    for (call, at) in &calls {
        let found = results.get(call).map(Vec::as_slice).unwrap_or(&[]);
        assert_eq!(
            found.len(),
            1,
            "seed {seed}: call {call} has {} results",
            found.len()
        );
        assert_eq!(
            messages[at + 1].tool_call_id.as_deref(),
            Some(*call),
            "seed {seed}: result not right after its call"
        );
        if found[0].status == Some(ToolStatus::Success) {
            assert!(
                unique.contains(&call.to_string()),
                "seed {seed}: completed call {call} is not in the file"
            );
        } else {
            assert_eq!(
                found[0].content.as_deref(),
                Some(toolhost_runtime::engine::OUTCOME_UNKNOWN),
                "seed {seed}"
            );
            unknown += 1;
        }
    }
    let known: HashSet<&str> = calls.iter().map(|(c, _)| *c).collect();
    assert!(
        unique.iter().all(|l| known.contains(l.as_str())),
        "seed {seed}: the file has a line of no call"
    );
    assert!(
        unknown <= kills,
        "seed {seed}: more unknown outcomes ({unknown}) than kills ({kills})"
    );
    assert_eq!(store.thread(&id).unwrap().status, ThreadStatus::Done);
    eprintln!(
        "seed {seed}: {kills} kills, {unknown} calls with unknown outcome, {} lines",
        lines.len()
    );
}
