//! A thread of 300 tool calls survives SIGKILL at random moments: the real `toolhost` process is
//! killed at least 20 times and resumed each time; afterwards every call has exactly one result,
//! every completed call appended its line to a file outside the store exactly once, no line is
//! there twice, and nothing committed before a kill was lost.

mod common;

use common::{run_with_random_kills, write, KilledRun, TempProject};
use std::collections::{HashMap, HashSet};
use toolhost_store::{Role, Store};

const CALLS: usize = 300;
const KILLS: usize = 20;

fn project() -> TempProject {
    let p = TempProject::new();
    let files = [
        ("agents/agents/looper.json", r#"{"type": "ai_human", "sideA": {"prompt": "loop", "maxSteps": 400}}"#.to_owned()),
        ("agents/prompts/loop.json", r#"{"toolDescription": "Loops.", "prompt": "Append lines.", "model": "script", "tools": ["append_line"]}"#.to_owned()),
        ("agents/models/script.json", r#"{"provider": "test", "script": "script.jsonl"}"#.to_owned()),
        ("agents/tools/append_line.json", r#"{"type": "object", "description": "Appends the call id to the log.", "properties": {"_activity": {"const": "append_line"}, "n": {"type": "integer"}}, "required": ["n"]}"#.to_owned()),
        ("agents/activities/append_line.json", r#"{"command": ["python3", "append_line.py"], "env": ["PATH", "CRASH_LOG"], "timeoutMs": 20000}"#.to_owned()),
        (
            "append_line.py",
            "import json, os, sys\ncall = json.load(sys.stdin)\nwith open(os.environ['CRASH_LOG'], 'a') as f:\n    f.write(call['call_id'] + '\\n')\n    f.flush()\n    os.fsync(f.fileno())\nprint(json.dumps({'status': 'success', 'result': 'appended'}))\n".to_owned(),
        ),
        ("script.jsonl", format!("{{\"toolCalls\": [{{\"name\": \"append_line\", \"arguments\": {{\"n\": 1}}}}], \"times\": {CALLS}}}\n{{\"text\": \"done\"}}\n")),
    ];
    for (file, text) in files {
        write(&p.root, file, &text);
    }
    p
}

#[test]
fn a_thread_killed_at_random_moments_loses_nothing_and_repeats_nothing() {
    let p = project();
    let log = p.root.join("calls.log");
    let KilledRun {
        thread: id,
        seed,
        kills,
        store,
    } = run_with_random_kills(&p.root, "looper", &log, KILLS, 400);
    let messages = store.messages(&id).unwrap();
    let calls: Vec<(String, usize)> = messages
        .iter()
        .enumerate()
        .flat_map(|(i, m)| m.tool_calls.iter().map(move |c| (c.id.clone(), i)))
        .collect();
    assert_eq!(calls.len(), CALLS, "seed {seed}");
    let mut results: HashMap<&str, Vec<&toolhost_store::Message>> = HashMap::new();
    for m in messages.iter().filter(|m| m.role == Role::Tool) {
        results
            .entry(m.tool_call_id.as_deref().unwrap())
            .or_default()
            .push(m);
    }
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
        let found = results.get(call.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        assert_eq!(
            found.len(),
            1,
            "seed {seed}: call {call} has {} results",
            found.len()
        );
        assert_eq!(
            messages[at + 1].tool_call_id.as_deref(),
            Some(call.as_str()),
            "seed {seed}: result not right after its call"
        );
        if found[0].status == Some(toolhost_store::ToolStatus::Success) {
            assert!(
                unique.contains(call),
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
    let known: HashSet<&String> = calls.iter().map(|(c, _)| c).collect();
    assert!(
        unique.iter().all(|l| known.contains(l)),
        "seed {seed}: the file has a line of no call"
    );
    assert!(
        unknown <= kills,
        "seed {seed}: more unknown outcomes ({unknown}) than kills ({kills})"
    );
    assert_eq!(
        store.thread(&id).unwrap().status,
        toolhost_store::ThreadStatus::Done
    );
    eprintln!(
        "seed {seed}: {kills} kills, {unknown} calls with unknown outcome, {} lines",
        lines.len()
    );
}
