//! A tool may steer the run it is called in (catalogue SA-7): `force_turn(side)` ends the
//! current turn of a `dual_ai` session after the call's step and gives the next turn to that
//! side; `stop()` stops the run after the operation under way and records the calling side as
//! `stoppedBy`.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{
    RunOutcome, Runtime, Side, StopReason, ThreadState, STOPPED_BY_KEY,
};
use toolhost_store::{Role, SqliteStore, Store};

/// `interview` (dual_ai, or ai_human with `kind`) whose interviewer offers `control` and
/// `note`; the scripts are given.
fn project(kind: &str, interviewer: Value, candidate: Value) -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Talk.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let mut agent = json!({"type": kind, "sideA": {"prompt": "interviewer"}});
    if kind == "dual_ai" {
        agent["sideB"] = json!({"prompt": "candidate"});
        agent["maxSessionTurns"] = json!(3);
    }
    Project::with_files(&[
        ("agents/agents/interview.json", agent.to_string()),
        (
            "agents/prompts/interviewer.json",
            prompt("interviewer", json!(["control", "note"])),
        ),
        (
            "agents/prompts/candidate.json",
            prompt("candidate", json!([])),
        ),
        ("agents/models/interviewer.json", model("interviewer.json")),
        ("agents/models/candidate.json", model("candidate.json")),
        ("interviewer.json", interviewer.to_string()),
        ("candidate.json", candidate.to_string()),
    ])
}

/// `control` calls `force_turn` or `stop` as its `action` says; `note` counts its runs.
async fn runtime(p: &Project) -> (Runtime, Arc<dyn Store>, Arc<AtomicUsize>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    rt.register_tool(
        DynamicTool::new("control", "Steers the run.")
            .parameters(json!({"type": "object", "properties": {"action": {"type": "string"}}}))
            .handler(|args: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                match args["action"].as_str() {
                    Some("stop") => {
                        state.stop();
                        assert_eq!(state.execution().stopped_by, Some(state.side()));
                        Ok("stopping".to_owned())
                    }
                    _ => state
                        .force_turn(Side::A)
                        .map(|()| "the next turn is a's".to_owned())
                        .map_err(ToolError::from),
                }
            })
            .build()
            .unwrap(),
    );
    let notes = Arc::new(AtomicUsize::new(0));
    let counter = notes.clone();
    rt.register_tool(
        DynamicTool::new("note", "Takes a note.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(move |_: Value, _| {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, ToolError>("noted".to_owned())
                }
            })
            .build()
            .unwrap(),
    );
    (rt, store, notes)
}

#[tokio::test]
async fn force_turn_gives_the_next_turn_to_the_side_named() {
    let p = project(
        "dual_ai",
        json!([
            {"toolCalls": [{"name": "control", "arguments": {"action": "force"}}]},
            {"text": "the interviewer again"},
            {"text": "unused"}
        ]),
        json!([{"text": "the candidate answers"}]),
    );
    let (rt, store, _) = runtime(&p).await;
    let thread = rt.start_thread("interview", "begin").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::MaxSessionTurns(3)));
    // Turn 1: a's call; turn 2: a again (forced) instead of b; turn 3: b.
    let replies: Vec<(Option<Side>, Option<u32>, Option<String>)> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| (m.metadata.side, m.metadata.turn, m.content))
        .collect();
    assert_eq!(
        replies,
        [
            (Some(Side::A), Some(1), None),
            (
                Some(Side::A),
                Some(2),
                Some("the interviewer again".to_owned())
            ),
            (
                Some(Side::B),
                Some(3),
                Some("the candidate answers".to_owned())
            ),
        ]
    );
}

#[tokio::test]
async fn stop_from_a_tool_ends_the_run_after_its_call_and_records_the_side() {
    let p = project(
        "dual_ai",
        json!([
            {"toolCalls": [
                {"name": "control", "arguments": {"action": "stop"}},
                {"name": "note", "arguments": {}}
            ]},
            {"text": "unused"}
        ]),
        json!([{"text": "unused"}]),
    );
    let (rt, store, notes) = runtime(&p).await;
    let thread = rt.start_thread("interview", "begin").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Stopped));
    assert_eq!(
        notes.load(Ordering::SeqCst),
        0,
        "the call after the stop did not run"
    );
    assert_eq!(
        store.value(&thread.id, STOPPED_BY_KEY).unwrap(),
        Some(json!("a"))
    );
}

#[tokio::test]
async fn force_turn_on_a_thread_with_one_side_is_an_error_result() {
    let p = project(
        "ai_human",
        json!([
            {"toolCalls": [{"name": "control", "arguments": {"action": "force"}}]},
            {"text": "done"}
        ]),
        json!([{"text": "unused"}]),
    );
    let (rt, store, _) = runtime(&p).await;
    let thread = rt.start_thread("interview", "begin").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let result = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(
        result
            .content
            .as_deref()
            .unwrap()
            .contains("forceTurn needs a dual_ai thread"),
        "{:?}",
        result.content
    );
}
