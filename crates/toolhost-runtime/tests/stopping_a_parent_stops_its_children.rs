//! Stopping a thread whose run waits for a blocking sub-agent stops the child too: the child
//! stops after its operation under way (its tool sees the stop), the parent's call gets one
//! result saying the child was stopped, and both threads can be resumed later.

mod common;

use common::{within, Project};
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::Notify;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::ToolContext;
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{Role, SqliteStore, Store, ThreadStatus, ToolStatus};

fn project() -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    Project::with_files(&[
        (
            "agents/agents/lead.json",
            json!({"sideA": {"prompt": "lead"}}).to_string(),
        ),
        (
            "agents/agents/team.json",
            json!({"type": "dual_ai",
            "sideA": {"prompt": "boss"}, "sideB": {"prompt": "worker"}})
            .to_string(),
        ),
        ("agents/prompts/lead.json", prompt("lead", json!(["team"]))),
        ("agents/prompts/boss.json", prompt("boss", json!([]))),
        (
            "agents/prompts/worker.json",
            prompt("worker", json!(["wait"])),
        ),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/boss.json", model("boss.json")),
        ("agents/models/worker.json", model("worker.json")),
        (
            "lead.json",
            json!([{"toolCalls": [{"name": "team", "arguments": {"message": "go"}}]},
            {"text": "unused"}])
            .to_string(),
        ),
        ("boss.json", json!([{"text": "wait for it"}]).to_string()),
        (
            "worker.json",
            json!([{"toolCalls": [{"name": "wait", "arguments": {}}]},
            {"text": "unused"}])
            .to_string(),
        ),
    ])
}

#[tokio::test]
async fn stopping_a_parent_stops_its_running_child() {
    let p = project();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    let started = Arc::new(Notify::new());
    let signal = started.clone();
    rt.register_tool(
        DynamicTool::new("wait", "Waits until its run is stopped.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(move |_: Value, ctx: ToolContext| {
                let signal = signal.clone();
                async move {
                    signal.notify_one();
                    while !ctx.abort_signal().is_aborted() {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    Ok::<_, ToolError>("noticed the stop".to_owned())
                }
            })
            .build()
            .unwrap(),
    );
    let rt = Arc::new(rt);
    let lead = rt.start_thread("lead", "start").await.unwrap();
    let (runner, id) = (rt.clone(), lead.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    within("the start of the child's wait tool", started.notified()).await;
    // The parent is asked to stop; nobody names the child.
    assert!(rt.stop(&lead.id).await);
    let outcome = within("the end of the parent's run", task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Stopped));

    let child = &store.threads(Some(&lead.id)).unwrap()[0];
    // Stopped, so resumable: idle, not done.
    assert_eq!(child.status, ThreadStatus::Idle);
    let child_messages = store.messages(&child.id).unwrap();
    let waited = child_messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(waited.content.as_deref(), Some("noticed the stop"));

    let messages = store.messages(&lead.id).unwrap();
    let results: Vec<_> = messages.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].status, Some(ToolStatus::Error));
    assert!(
        results[0]
            .content
            .as_deref()
            .unwrap()
            .contains("was stopped"),
        "{:?}",
        results[0].content
    );
    assert_eq!(store.thread(&lead.id).unwrap().status, ThreadStatus::Idle);
}
