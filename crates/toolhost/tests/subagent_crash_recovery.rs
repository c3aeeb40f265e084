//! A tree of threads survives SIGKILL: the lead calls the `dual_ai` agent `team` as a blocking
//! sub-agent; in the child thread side A asks and side B makes 120 tool calls, then ends the
//! session with `report`. The real `toolhost` process is killed at least 10 times while the
//! tree runs and the lead is resumed each time. Afterwards there is one child; every call in
//! every thread has exactly one result and appended its line to a file outside the store at
//! most once (exactly once when it completed); and the lead's call of `team` got exactly one
//! result: the child's session result. The same with `blocking: false`: the lead's call gets
//! a reference at once, and the child's result reaches the lead as exactly one message.

mod common;

use common::{run_with_random_kills, write, KilledRun, TempProject};
use std::collections::{HashMap, HashSet};
use toolhost_store::{Message, Role, Store, ThreadStatus, ToolStatus};

const CALLS: usize = 120;
const KILLS: usize = 10;

/// The worker's script for one session: every call, then the report.
fn one_session() -> String {
    format!("{{\"toolCalls\": [{{\"name\": \"append_line\", \"arguments\": {{\"n\": 1}}}}], \"times\": {CALLS}}}\n{{\"toolCalls\": [{{\"name\": \"report\", \"arguments\": {{\"text\": \"worked\"}}}}]}}\n")
}

/// The project; the lead offers `team` as `offer` and plays `lead_script`.
fn project(offer: &str, lead_script: &str) -> TempProject {
    project_with(offer, lead_script, &one_session(), 1)
}

/// The project with the worker playing `worker_script` and the boss answering `sessions`
/// messages.
fn project_with(
    offer: &str,
    lead_script: &str,
    worker_script: &str,
    sessions: usize,
) -> TempProject {
    let p = TempProject::new();
    let prompt = |model: &str, tools: &str, extra: &str| {
        format!(
            r#"{{"toolDescription": "Works.", "prompt": "Work.", "model": "{model}", "tools": {tools}, "includeChat": true, "includePastTools": true{extra}}}"#
        )
    };
    let files = [
        ("agents/agents/lead.json", r#"{"type": "ai_human", "sideA": {"prompt": "lead"}}"#.to_owned()),
        ("agents/agents/team.json", r#"{"type": "dual_ai", "description": "Appends lines.", "sideA": {"prompt": "boss"}, "sideB": {"prompt": "worker", "sessionStop": {"name": "report", "messageProperty": "text"}}}"#.to_owned()),
        ("agents/prompts/lead.json", prompt("lead", &format!("[{offer}]"), "")),
        ("agents/prompts/boss.json", prompt("boss", "[]", "")),
        ("agents/prompts/worker.json", prompt("worker", r#"["append_line", "report"]"#, r#", "maxSteps": 400"#)),
        ("agents/models/lead.json", r#"{"provider": "test", "script": "lead.jsonl"}"#.to_owned()),
        ("agents/models/boss.json", r#"{"provider": "test", "script": "boss.jsonl"}"#.to_owned()),
        ("agents/models/worker.json", r#"{"provider": "test", "script": "worker.jsonl"}"#.to_owned()),
        ("agents/tools/append_line.json", r#"{"type": "object", "description": "Appends the call id to the log.", "properties": {"_activity": {"const": "append_line"}, "n": {"type": "integer"}}, "required": ["n"]}"#.to_owned()),
        ("agents/tools/report.json", r#"{"type": "object", "description": "Reports.", "properties": {"_activity": {"const": "report"}, "text": {"type": "string"}}, "required": ["text"]}"#.to_owned()),
        ("agents/activities/append_line.json", r#"{"command": ["python3", "append_line.py"], "env": ["PATH", "CRASH_LOG"], "timeoutMs": 20000}"#.to_owned()),
        ("agents/activities/report.json", r#"{"command": ["python3", "report.py"], "env": ["PATH"], "timeoutMs": 20000}"#.to_owned()),
        (
            "append_line.py",
            "import json, os, sys\ncall = json.load(sys.stdin)\nwith open(os.environ['CRASH_LOG'], 'a') as f:\n    f.write(call['call_id'] + '\\n')\n    f.flush()\n    os.fsync(f.fileno())\nprint(json.dumps({'status': 'success', 'result': 'appended'}))\n".to_owned(),
        ),
        ("report.py", "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': 'reported'}))\n".to_owned()),
        ("lead.jsonl", lead_script.to_owned()),
        ("boss.jsonl", format!("{{\"text\": \"append the lines\", \"times\": {sessions}}}\n")),
        ("worker.jsonl", worker_script.to_owned()),
    ];
    for (file, text) in files {
        write(&p.root, file, &text);
    }
    p
}

const LEAD_CALLS_TEAM: &str =
    "{\"toolCalls\": [{\"name\": \"team\", \"arguments\": {\"message\": \"append\"}}]}\n";

#[test]
fn a_tree_of_threads_killed_at_random_moments_runs_every_call_once_and_answers_once() {
    let p = project(
        "\"team\"",
        &format!("{LEAD_CALLS_TEAM}{{\"text\": \"done\"}}\n"),
    );
    let log = p.root.join("calls.log");
    let KilledRun {
        thread: id,
        seed,
        kills,
        store,
    } = run_with_random_kills(&p.root, "lead", &log, KILLS, 300);
    let children = store.threads(Some(&id)).unwrap();
    assert_eq!(
        children.len(),
        1,
        "seed {seed}: {} children",
        children.len()
    );
    let child = &children[0];
    assert_eq!(store.threads(None).unwrap().len(), 2, "seed {seed}");
    assert_eq!(child.status, ThreadStatus::Done, "seed {seed}");
    assert_eq!(store.thread(&id).unwrap().status, ThreadStatus::Done);

    let (lines, unknown) = every_call_ran_once(&store, &[&id, &child.id], &log, seed, kills);

    // The child's first message is the call's, stored once; the lead's one call of `team` has
    // one result: the child's session result; then the lead answered.
    let child_messages = store.messages(&child.id).unwrap();
    assert_eq!(
        child_messages
            .iter()
            .filter(|m| m.role == Role::User && m.content.as_deref() == Some("append"))
            .count(),
        1,
        "seed {seed}"
    );
    let messages = store.messages(&id).unwrap();
    let lead_results: Vec<&Message> = messages.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(lead_results.len(), 1, "seed {seed}");
    assert_eq!(
        lead_results[0].content.as_deref(),
        Some("worked"),
        "seed {seed}"
    );
    assert_eq!(messages.last().unwrap().content.as_deref(), Some("done"));
    eprintln!(
        "seed {seed}: {kills} kills, {unknown} calls with unknown outcome, {} lines",
        lines.len()
    );
}

/// Checks that every call of `threads` has exactly one result, that each `append_line` call
/// appended its line at most once (exactly once when it completed), and that no more outcomes
/// are unknown than there were kills; returns the log's lines and the unknown outcomes.
fn every_call_ran_once(
    store: &toolhost_store::SqliteStore,
    threads: &[&String],
    log: &std::path::Path,
    seed: u64,
    kills: usize,
) -> (Vec<String>, usize) {
    let lines: Vec<String> = std::fs::read_to_string(log)
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

    // Every call of every thread has exactly one result, right after its call's reply.
    let mut unknown = 0;
    let mut appends = HashSet::new();
    for thread in threads {
        let messages = store.messages(thread).unwrap();
        let mut results: HashMap<&str, Vec<&Message>> = HashMap::new();
        for m in messages.iter().filter(|m| m.role == Role::Tool) {
            results
                .entry(m.tool_call_id.as_deref().unwrap())
                .or_default()
                .push(m);
        }
        for m in messages.iter().filter(|m| m.role == Role::Assistant) {
            for c in &m.tool_calls {
                let found = results.get(c.id.as_str()).map(Vec::as_slice).unwrap_or(&[]);
                assert_eq!(
                    found.len(),
                    1,
                    "seed {seed}: call {} of thread {thread} has {} results",
                    c.id,
                    found.len()
                );
                if c.name != "append_line" {
                    continue;
                }
                appends.insert(c.id.clone());
                if found[0].status == Some(ToolStatus::Success) {
                    assert!(
                        unique.contains(&c.id),
                        "seed {seed}: completed call {} is not in the file",
                        c.id
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
        }
    }
    assert_eq!(appends.len(), CALLS, "seed {seed}");
    assert!(
        unique.iter().all(|l| appends.contains(l.as_str())),
        "seed {seed}: the file has a line of no call"
    );
    assert!(
        unknown <= kills,
        "seed {seed}: more unknown outcomes ({unknown}) than kills ({kills})"
    );

    (lines, unknown)
}

#[test]
fn a_non_blocking_child_killed_at_random_moments_reaches_its_parent_once() {
    let script = format!("{LEAD_CALLS_TEAM}{{\"text\": \"started\"}}\n{{\"text\": \"done\"}}\n");
    let p = project(r#"{"name": "team", "blocking": false}"#, &script);
    let log = p.root.join("calls.log");
    let KilledRun {
        thread: id,
        seed,
        kills,
        store,
    } = run_with_random_kills(&p.root, "lead", &log, KILLS, 300);
    let children = store.threads(Some(&id)).unwrap();
    assert_eq!(
        children.len(),
        1,
        "seed {seed}: {} children",
        children.len()
    );
    let child = &children[0];
    assert_eq!(child.status, ThreadStatus::Done, "seed {seed}");
    let (lines, unknown) = every_call_ran_once(&store, &[&id, &child.id], &log, seed, kills);

    // The lead's call got the reference; the child's result arrived as one message, which the
    // lead answered.
    let messages = store.messages(&id).unwrap();
    let delivered: Vec<&Message> = messages
        .iter()
        .filter(|m| {
            m.role == Role::User && m.content.as_deref().is_some_and(|c| c.contains(&child.id))
        })
        .collect();
    assert_eq!(delivered.len(), 1, "seed {seed}");
    assert!(
        delivered[0].content.as_deref().unwrap().contains("worked"),
        "seed {seed}"
    );
    assert_eq!(
        messages.last().unwrap().content.as_deref(),
        Some("done"),
        "seed {seed}"
    );
    assert!(store.queued(&id).unwrap().is_empty(), "seed {seed}");
    eprintln!(
        "seed {seed}: {kills} kills, {unknown} unknown outcomes, {} lines",
        lines.len()
    );
}

#[test]
fn a_resumable_instance_killed_at_random_moments_runs_each_session_once() {
    // Two sessions of one instance: created, then sent a second message; half the calls each.
    let half = CALLS / 2;
    let session = |text: &str| {
        format!("{{\"toolCalls\": [{{\"name\": \"append_line\", \"arguments\": {{\"n\": 1}}}}], \"times\": {half}}}\n{{\"toolCalls\": [{{\"name\": \"report\", \"arguments\": {{\"text\": \"{text}\"}}}}]}}\n")
    };
    let worker = format!("{}{}", session("first half"), session("second half"));
    let lead = concat!(
        "{\"toolCalls\": [{\"name\": \"subagent_create\", \"arguments\": {\"name\": \"t\", \"arguments\": {\"message\": \"append\"}}}]}\n",
        "{\"toolCalls\": [{\"name\": \"subagent_message\", \"arguments\": {\"name\": \"t\", \"message\": \"again\"}}]}\n",
        "{\"text\": \"done\"}\n"
    );
    let p = project_with(
        r#"{"name": "team", "resumable": {"receives_messages": "side_a"}}"#,
        lead,
        &worker,
        2,
    );
    let log = p.root.join("calls.log");
    let KilledRun {
        thread: id,
        seed,
        kills,
        store,
    } = run_with_random_kills(&p.root, "lead", &log, KILLS, 300);
    let children = store.threads(Some(&id)).unwrap();
    assert_eq!(
        children.len(),
        1,
        "seed {seed}: {} children",
        children.len()
    );
    let child = &children[0];
    let (lines, unknown) = every_call_ran_once(&store, &[&id, &child.id], &log, seed, kills);

    // Each of the lead's messages reached the instance once, and each call got its session's
    // result.
    let child_messages = store.messages(&child.id).unwrap();
    for text in ["append", "again"] {
        let n = child_messages
            .iter()
            .filter(|m| m.role == Role::User && m.content.as_deref() == Some(text))
            .count();
        assert_eq!(n, 1, "seed {seed}: {text:?} reached the instance {n} times");
    }
    let messages = store.messages(&id).unwrap();
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.content.as_deref())
        .collect();
    assert_eq!(results.len(), 2, "seed {seed}: {results:?}");
    assert!(
        results[0].contains("\"result\":\"first half\""),
        "seed {seed}: {results:?}"
    );
    assert!(
        results[1].contains("\"result\":\"second half\""),
        "seed {seed}: {results:?}"
    );
    assert_eq!(
        messages.last().unwrap().content.as_deref(),
        Some("done"),
        "seed {seed}"
    );
    eprintln!(
        "seed {seed}: {kills} kills, {unknown} unknown outcomes, {} lines",
        lines.len()
    );
}
