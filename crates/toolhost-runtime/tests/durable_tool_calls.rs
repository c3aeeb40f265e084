//! The engine runs a thread's tool calls durably: each call is journaled before it runs, its
//! result stored before the next step, failures become results, and a thread picked up after a
//! crash finishes its pending calls without running a completed one again.

mod common;

use common::{within, Project};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason, OUTCOME_UNKNOWN};
use toolhost_store::{
    CallIntent, CallState, NewMessage, Role, SqliteStore, Store, ToolCallRecord, Write,
};

fn new_project(script: &str) -> Project {
    Project::with_files(&[
            ("agents/agents/helper.json", r#"{"type": "ai_human", "sideA": {"prompt": "assistant", "maxSteps": 10}}"#.to_owned()),
            ("agents/prompts/assistant.json", r#"{"toolDescription": "Helps.", "prompt": "You help.", "model": "scripted", "tools": ["count", "count_idempotent"]}"#.to_owned()),
            ("agents/models/scripted.json", r#"{"provider": "test", "script": "script.jsonl"}"#.to_owned()),
            ("script.jsonl", script.to_owned()),
    ])
}

fn counting_tool(name: &str, idempotent: bool, runs: Arc<AtomicUsize>) -> toolhost_core::AnyTool {
    DynamicTool::new(name, "Counts its runs.")
        .parameters(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .idempotent(idempotent)
        .handler(move |args: Value, _ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if args["n"] == json!(13) {
                    return Err(ToolError::new("unlucky number"));
                }
                Ok::<_, ToolError>(format!("counted {}", args["n"]))
            }
        })
        .build()
        .unwrap()
}

async fn runtime_without_check(
    root: &Path,
    store: Arc<dyn Store>,
    runs: &Arc<AtomicUsize>,
) -> Runtime {
    let mut rt = Runtime::load(root, store).await.unwrap();
    rt.register_tool(counting_tool("count", false, runs.clone()));
    rt.register_tool(counting_tool("count_idempotent", true, runs.clone()));
    rt
}

async fn runtime(root: &Path, store: Arc<dyn Store>, runs: &Arc<AtomicUsize>) -> Runtime {
    let mut rt = Runtime::load(root, store).await.unwrap();
    rt.register_tool(counting_tool("count", false, runs.clone()));
    rt.register_tool(counting_tool("count_idempotent", true, runs.clone()));
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    rt
}

const SCRIPT: &str = r#"
{"toolCalls": [{"name": "count", "arguments": {"n": 1}}, {"name": "count", "arguments": {"n": "two"}}]}
{"toolCalls": [{"name": "count", "arguments": {"n": 13}}, {"name": "count", "arguments": "{\"n\": 3,}"}]}
{"text": "Done counting."}
"#;

#[tokio::test]
async fn calls_run_in_order_and_failures_become_results_the_model_sees() {
    let project = new_project(SCRIPT);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let rt = runtime(&project.root, store.clone(), &runs).await;
    let thread = rt.start_thread("helper", "count for me").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));

    let messages = store.messages(&thread.id).unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    let texts: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_deref().unwrap())
        .collect();
    assert_eq!(texts[0], "counted 1");
    assert!(texts[1].starts_with("ToolCallError: invalid arguments for `count`: at /n: expected integer, got string \"two\""), "{}", texts[1]);
    assert_eq!(texts[2], "ToolCallError: unlucky number");
    // A trailing comma is mended (see tests/argument_repair.rs); the wrong type is not.
    assert_eq!(texts[3], "counted 3");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "the invalid call never runs"
    );
    // Every call has exactly one result, right after its reply, and a completed journal entry.
    for (i, m) in messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
    {
        for (k, call) in m.tool_calls.iter().enumerate() {
            assert_eq!(
                messages[i + 1 + k].tool_call_id.as_deref(),
                Some(call.id.as_str())
            );
        }
    }
    let calls = store.calls(&thread.id).unwrap();
    assert_eq!(calls.len(), 4);
    assert!(calls.iter().all(|c| c.state == CallState::Completed));
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        toolhost_store::ThreadStatus::Done
    );
}

/// Stores a reply with one call as a crash would leave it: optionally journaled, no result.
fn crashed_reply(store: &dyn Store, thread: &str, tool: &str, journaled: bool) -> String {
    let id = format!("call_{tool}_{journaled}");
    let mut writes = vec![Write::AppendMessage(NewMessage {
        role: Some(Role::Assistant),
        tool_calls: vec![ToolCallRecord {
            id: id.clone(),
            name: tool.into(),
            arguments: r#"{"n": 7}"#.into(),
        }],
        ..NewMessage::default()
    })];
    if journaled {
        writes.push(Write::RecordIntent(CallIntent {
            call_id: id.clone(),
            tool: tool.into(),
            arguments: r#"{"n": 7}"#.into(),
            message_id: None,
        }));
    }
    store.apply(thread, writes).unwrap();
    id
}

async fn resume_after(tool: &str, journaled: bool) -> (String, usize) {
    let project = new_project(
        "{\"toolCalls\": [{\"name\": \"count\", \"arguments\": {\"n\": 1}}]}\n{\"text\": \"ok\"}\n",
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let rt = runtime(&project.root, store.clone(), &runs).await;
    let thread = rt.start_thread("helper", "go").await.unwrap();
    let id = crashed_reply(store.as_ref(), &thread.id, tool, journaled);
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let messages = store.messages(&thread.id).unwrap();
    let result = messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some(id.as_str()))
        .unwrap();
    assert_eq!(
        messages
            .iter()
            .filter(|m| m.tool_call_id.as_deref() == Some(id.as_str()))
            .count(),
        1
    );
    (result.content.clone().unwrap(), runs.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_journaled_call_without_result_is_reported_as_unknown_and_not_run_again() {
    let (text, runs) = resume_after("count", true).await;
    assert_eq!(text, OUTCOME_UNKNOWN);
    assert_eq!(runs, 0);
}

#[tokio::test]
async fn a_journaled_idempotent_call_is_run_again() {
    let (text, runs) = resume_after("count_idempotent", true).await;
    assert_eq!(text, "counted 7");
    assert_eq!(runs, 1);
}

#[tokio::test]
async fn a_call_that_was_never_journaled_runs_after_a_restart() {
    let (text, runs) = resume_after("count", false).await;
    assert_eq!(text, "counted 7");
    assert_eq!(runs, 1);
}

#[tokio::test]
async fn the_step_budget_ends_a_turn_that_never_stops_calling() {
    let project = new_project(
        "{\"toolCalls\": [{\"name\": \"count\", \"arguments\": {\"n\": 1}}], \"times\": 50}\n",
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let rt = runtime(&project.root, store.clone(), &runs).await;
    let thread = rt.start_thread("helper", "go").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::MaxSteps(10))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_takes_effect_after_the_call_under_way_and_leaves_no_call_without_result() {
    let project = new_project("{\"toolCalls\": [{\"name\": \"wait_for_stop\", \"arguments\": {}}, {\"name\": \"count\", \"arguments\": {\"n\": 1}}]}\n{\"text\": \"never\"}\n");
    std::fs::write(
        project.root.join("agents/prompts/assistant.json"),
        r#"{"toolDescription": "Helps.", "prompt": "You help.", "model": "scripted", "tools": ["count", "wait_for_stop"]}"#,
    )
    .unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let mut rt = runtime_without_check(&project.root, store.clone(), &runs).await;
    let started = Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    rt.register_tool(
        DynamicTool::new("wait_for_stop", "Waits until the run is stopped.")
            .handler(move |_, ctx: toolhost_core::ToolContext| {
                let signal = signal.clone();
                async move {
                    signal.notify_one();
                    while !ctx.abort_signal().is_aborted() {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    Ok::<_, ToolError>("noticed the stop")
                }
            })
            .build()
            .unwrap(),
    );
    let rt = Arc::new(rt);
    let thread = rt.start_thread("helper", "go").await.unwrap();
    let (runner, id) = (rt.clone(), thread.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    within("the start of the wait_for_stop tool", started.notified()).await;
    assert!(rt.stop(&thread.id).await);
    assert_eq!(
        within("the end of the stopped run", task)
            .await
            .unwrap()
            .unwrap(),
        RunOutcome::Done(StopReason::Stopped)
    );
    assert!(!rt.stop(&thread.id).await, "the run is over");

    let texts: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "noticed the stop",
            toolhost_runtime::engine::NOT_RUN_STOPPED
        ]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        toolhost_store::ThreadStatus::Idle
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_overlap_up_to_the_cap_and_results_keep_call_order() {
    let calls: Vec<String> = (0..6)
        .map(|i| format!("{{\"name\": \"slow\", \"arguments\": {{\"n\": {i}}}}}"))
        .collect();
    let project = new_project(&format!(
        "{{\"toolCalls\": [{}]}}\n{{\"text\": \"done\"}}\n",
        calls.join(", ")
    ));
    std::fs::write(
        project.root.join("agents/prompts/assistant.json"),
        r#"{"toolDescription": "Helps.", "prompt": "You help.", "model": "scripted", "tools": ["slow"], "parallelToolCalls": true}"#,
    )
    .unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let mut rt = runtime_without_check(&project.root, store.clone(), &runs).await;
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (a, p) = (active.clone(), peak.clone());
    rt.register_tool(
        DynamicTool::new("slow", "Takes a while; earlier calls take longer.")
            .parameters(json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
            .handler(move |args: Value, _| {
                let (active, peak) = (a.clone(), p.clone());
                async move {
                    let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    let n = args["n"].as_u64().unwrap_or(0);
                    tokio::time::sleep(std::time::Duration::from_millis(60 - 10 * n)).await;
                    active.fetch_sub(1, Ordering::SeqCst);
                    Ok::<_, ToolError>(format!("slow {n}"))
                }
            })
            .build()
            .unwrap(),
    );
    let thread = rt.start_thread("helper", "go").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        (2..=toolhost_runtime::engine::PARALLEL_CAP).contains(&peak),
        "peak concurrency {peak}"
    );
    let texts: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.unwrap())
        .collect();
    assert_eq!(
        texts,
        (0..6).map(|i| format!("slow {i}")).collect::<Vec<_>>()
    );
}
