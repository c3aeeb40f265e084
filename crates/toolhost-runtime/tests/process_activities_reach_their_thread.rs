//! Process activities reach their thread (issue: every tool kind gets `ThreadState`): a
//! program called in a thread talks to the thread's state over the channel toolhost opens for
//! the call, through the Python helper in `examples/python`; a stop of the run reaches the
//! program (SIGTERM, then SIGKILL after the grace period); a program that sends garbage on the
//! channel gets an error answer and its call still completes.

mod common;

use common::Project;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::path::normalize;
use toolhost_store::{Role, SqliteStore, Store};

const HELPER: &str = include_str!("../../../examples/python/toolhost_state.py");

/// A project whose `worker` prompt offers `visit` (the Python program `visit.py`, given) and
/// `echo` (queued by `visit`), on a scripted model playing `script`.
fn project(program: &str, script: serde_json::Value) -> Project {
    let tool = |name: &str| {
        json!({"type": "object", "description": "x", "properties": {"_activity": {"const": name},
            "n": {"type": "integer"}}})
        .to_string()
    };
    let activity = |file: &str| {
        json!({"command": ["python3", file], "env": ["PATH"], "timeoutMs": 30000}).to_string()
    };
    Project::with_files(&[
        ("agents/agents/worker.json", json!({"type": "ai_human", "sideA": {"prompt": "worker"}}).to_string()),
        ("agents/prompts/worker.json", json!({"toolDescription": "x", "prompt": "Work.",
            "model": "worker", "tools": ["visit", "echo"], "includeChat": true,
            "includePastTools": true}).to_string()),
        ("agents/models/worker.json", json!({"provider": "test", "script": "worker.json"}).to_string()),
        ("worker.json", script.to_string()),
        ("agents/tools/visit.json", tool("visit")),
        ("agents/tools/echo.json", tool("echo")),
        ("agents/activities/visit.json", activity("visit.py")),
        ("agents/activities/echo.json", activity("echo.py")),
        ("toolhost_state.py", HELPER.to_owned()),
        ("visit.py", program.to_owned()),
        ("echo.py", "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'status': 'success', 'result': 'echoed'}))\n".to_owned()),
    ])
}

async fn runtime(p: &Project) -> (Arc<Runtime>, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    (Arc::new(rt), store)
}

fn results(store: &Arc<dyn Store>, thread: &str) -> Vec<String> {
    store
        .messages(thread)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.content)
        .collect()
}

const VISIT: &str = r#"
import json, sys
from toolhost_state import ThreadState, ToolhostError
call = json.load(sys.stdin)
state = ThreadState()
visits = (state.get_value("visits") or 0) + 1
state.set_value("visits", visits)
path = state.write_file(f"/visits/{visits}.txt", f"visit {visits}", "text/plain")
back = state.read_file(path).decode()
listed = [e["path"] for e in state.readdir("/visits")]
state.emit("visited", {"n": visits})
if visits == 1:
    state.queue_tool("echo", {"n": 1})
try:
    state.read_file("/../etc/passwd")
    refused = "no"
except ToolhostError as e:
    refused = "yes"
print(json.dumps({"status": "success", "result": f"{back}; {listed}; refused {refused}"}))
"#;

#[tokio::test]
async fn a_process_activity_uses_its_threads_values_files_events_and_queue() {
    // The queued call of `echo` is an assistant message too, so the scripted model's second
    // turn is never played.
    let script = json!([
        {"toolCalls": [{"name": "visit", "arguments": {"n": 1}}]},
        {"text": "never played"},
        {"toolCalls": [{"name": "visit", "arguments": {"n": 2}}]},
        {"text": "done"}
    ]);
    let p = project(VISIT, script);
    let (rt, store) = runtime(&p).await;
    let thread = rt.start_thread("worker", "go").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    assert_eq!(store.value(&thread.id, "visits").unwrap(), Some(json!(2)));
    let second = store
        .read_file(&thread.id, &normalize("/visits/2.txt").unwrap())
        .unwrap();
    assert_eq!(second, b"visit 2");
    let events: Vec<_> = store
        .events(&thread.id, 0)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind.as_str() == "visited")
        .map(|e| e.data)
        .collect();
    assert_eq!(events, [json!({"n": 1}), json!({"n": 2})]);
    let texts = results(&store, &thread.id);
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(texts[0], "visit 1; ['/visits/1.txt']; refused yes");
    // The tool the first visit queued ran before the model was asked again.
    assert_eq!(texts[1], "echoed");
    assert_eq!(
        texts[2],
        "visit 2; ['/visits/1.txt', '/visits/2.txt']; refused yes"
    );
}

const SLEEPER: &str = r#"
import json, signal, sys, time, os
call = json.load(sys.stdin)
if os.environ.get("IGNORE_TERM") or "ignore" in json.dumps(call["arguments"]):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
open("started", "w").close()
time.sleep(60)
print(json.dumps({"status": "success", "result": "slept"}))
"#;

async fn stop_while_running(n: i64) -> (String, Duration) {
    let script = json!([
        {"toolCalls": [{"name": "visit", "arguments": {"n": n}}]},
        {"text": "done"}
    ]);
    let mut program = SLEEPER.to_owned();
    if n == 2 {
        program = program.replace("\"ignore\" in json.dumps(call[\"arguments\"])", "True");
    }
    let p = project(&program, script);
    let (rt, store) = runtime(&p).await;
    let thread = rt.start_thread("worker", "go").await.unwrap();
    let run = {
        let rt = rt.clone();
        let id = thread.id.clone();
        tokio::spawn(async move { rt.run(&id).await })
    };
    let started = p.root.join("started");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the program never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let asked = Instant::now();
    assert!(rt.stop(&thread.id).await);
    let outcome = run.await.unwrap().unwrap();
    let took = asked.elapsed();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Stopped));
    (results(&store, &thread.id).remove(0), took)
}

#[tokio::test]
async fn a_stop_reaches_a_running_program_with_sigterm() {
    let (result, took) = stop_while_running(1).await;
    assert!(
        result.contains("stopped: the run was asked to stop, so the program was sent SIGTERM"),
        "{result}"
    );
    assert!(!result.contains("SIGKILL"), "{result}");
    // Far less than the program's 60 s sleep (and than the grace period).
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[tokio::test]
async fn a_program_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let (result, took) = stop_while_running(2).await;
    assert!(
        result.contains("and, still running after the grace period, SIGKILL"),
        "{result}"
    );
    assert!(took >= toolhost_runtime::activity::STOP_GRACE, "{took:?}");
}

const GARBAGE: &str = r#"
import json, os, socket, sys
json.load(sys.stdin)
s = socket.socket(fileno=int(os.environ["TOOLHOST_STATE_FD"]))
f = s.makefile("rwb")
f.write(b'{"id": 1, "op": "launch"}\n'); f.flush()
unknown = json.loads(f.readline())
f.write(b"this is not json\n"); f.flush()
broken = json.loads(f.readline())
closed = f.readline() == b""
print(json.dumps({"status": "success", "result": json.dumps([unknown["error"], broken["error"], closed])}))
"#;

#[tokio::test]
async fn garbage_on_the_channel_gets_an_error_answer_and_the_call_completes() {
    let script = json!([
        {"toolCalls": [{"name": "visit", "arguments": {"n": 1}}]},
        {"text": "done"}
    ]);
    let p = project(GARBAGE, script);
    let (rt, store) = runtime(&p).await;
    let thread = rt.start_thread("worker", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let answer: serde_json::Value =
        serde_json::from_str(&results(&store, &thread.id).remove(0)).unwrap();
    assert!(
        answer[0]
            .as_str()
            .unwrap()
            .starts_with("unknown op \"launch\""),
        "{answer}"
    );
    assert!(
        answer[1].as_str().unwrap().contains("is not JSON"),
        "{answer}"
    );
    assert_eq!(
        answer[2], true,
        "the channel is closed after a line that is not JSON"
    );
}
