//! The spec's session bindings on a side: `sessionStop` ends the session with the call's
//! message and attachments, `sessionFail` ends it as failed, `sessionStatus` publishes a
//! status; each accepts a tool name or `{name, messageProperty, attachmentsProperty}`, and the
//! older names `endSessionTool`, `failSessionTool` and `statusTool` mean the same.

mod common;

use common::{call_answer, text_answer, ListModel, Project};
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, SessionEnd, StopReason};
use toolhost_store::{SqliteStore, Store, ThreadStatus};

/// A tool that takes `text` and `files` and answers `noted`.
fn tool(name: &str) -> toolhost_core::AnyTool {
    DynamicTool::new(name, "Reports.")
        .parameters(json!({"type": "object", "properties": {
            "text": {"type": "string"},
            "files": {"type": "array", "items": {"type": "string"}}
        }}))
        .handler(|_: Value, _| async move { Ok::<_, ToolError>("noted".to_owned()) })
        .build()
        .unwrap()
}

/// A runtime on a project whose agent `s` is `agent`, with prompts `pa` and `pb` offering the
/// tools `finish`, `give_up` and `report`, on models `ma` and `mb`.
async fn runtime(
    agent: Value,
    a: Arc<ListModel>,
    b: Arc<ListModel>,
) -> (Runtime, Arc<dyn Store>, Project) {
    let prompt = |model: &str| {
        json!({"toolDescription": "x", "model": model, "prompt": "Go.", "tools": ["finish", "give_up", "report"]})
            .to_string()
    };
    let project = Project::with_files(&[
        ("agents/agents/s.json", agent.to_string()),
        ("agents/prompts/pa.json", prompt("ma")),
        ("agents/prompts/pb.json", prompt("mb")),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    for name in ["finish", "give_up", "report"] {
        rt.register_tool(tool(name));
    }
    rt.register_model("ma", a);
    rt.register_model("mb", b);
    (rt, store, project)
}

#[tokio::test]
async fn session_stop_ends_the_session_with_the_calls_message_and_attachments() {
    let a = ListModel::new(vec![call_answer(
        "c1",
        "finish",
        r#"{"text": "all done", "files": ["/attachments/report.txt"]}"#,
    )]);
    let agent = json!({"type": "ai_human", "sideA": {"prompt": "pa",
        "sessionStop": {"name": "finish", "messageProperty": "text", "attachmentsProperty": "files"}}});
    let (rt, store, _project) = runtime(agent, a.clone(), ListModel::new(vec![])).await;
    let thread = rt.start_thread("s", "work").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(
        outcome,
        RunOutcome::Done(StopReason::SessionStop(SessionEnd {
            tool: "finish".into(),
            message: Some("all done".into()),
            attachments: vec!["/attachments/report.txt".into()],
        }))
    );
    // The tool ran and its result is stored; the model was not asked again.
    let messages = store.messages(&thread.id).unwrap();
    assert_eq!(messages.last().unwrap().content.as_deref(), Some("noted"));
    assert_eq!(a.requests().len(), 1);
    assert_eq!(store.thread(&thread.id).unwrap().status, ThreadStatus::Done);
}

#[tokio::test]
async fn fail_session_tool_ends_a_dual_ai_session_as_failed_before_its_turns_run_out() {
    let a = ListModel::new(vec![call_answer("c1", "give_up", "{}")]);
    let b = ListModel::new(vec![text_answer("never asked")]);
    let agent = json!({"type": "dual_ai", "maxSessionTurns": 6,
        "sideA": {"prompt": "pa", "failSessionTool": "give_up"},
        "sideB": {"prompt": "pb"}});
    let (rt, store, _project) = runtime(agent, a, b.clone()).await;
    let thread = rt.start_thread("s", "work").await.unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(
        outcome,
        RunOutcome::Done(StopReason::SessionFail(SessionEnd {
            tool: "give_up".into(),
            message: None,
            attachments: Vec::new(),
        }))
    );
    assert!(b.requests().is_empty());
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Failed
    );
}

#[tokio::test]
async fn status_tool_publishes_the_latest_status_without_ending_anything() {
    let a = ListModel::new(vec![
        call_answer("c1", "report", r#"{"text": "a quarter"}"#),
        call_answer("c2", "report", r#"{"text": "halfway"}"#),
        text_answer("still going"),
    ]);
    let agent = json!({"type": "ai_human", "sideA": {"prompt": "pa",
        "statusTool": {"name": "report", "messageProperty": "text"}}});
    let (rt, _store, _project) = runtime(agent, a, ListModel::new(vec![])).await;
    let thread = rt.start_thread("s", "work").await.unwrap();
    assert_eq!(rt.session_status(&thread.id).await.unwrap(), None);
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
    assert_eq!(
        rt.session_status(&thread.id).await.unwrap().as_deref(),
        Some("halfway")
    );
}

#[tokio::test]
async fn a_binding_and_its_older_name_together_or_a_malformed_binding_are_errors() {
    let agent = |side: Value| json!({"type": "ai_human", "sideA": side}).to_string();
    let project = Project::with_files(&[
        (
            "agents/agents/both.json",
            agent(json!({"prompt": "pa", "sessionStop": "finish", "endSessionTool": "finish"})),
        ),
        (
            "agents/agents/extra.json",
            agent(json!({"prompt": "pa", "sessionFail": {"name": "give_up", "reason": "x"}})),
        ),
        (
            "agents/agents/empty.json",
            agent(json!({"prompt": "pa", "sessionStatus": ""})),
        ),
        (
            "agents/prompts/pa.json",
            json!({"toolDescription": "x", "model": "ma", "prompt": "Go."}).to_string(),
        ),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store).await.unwrap();
    rt.register_model("ma", ListModel::new(vec![]));
    let problems = rt.problems();
    let of = |name: &str| {
        problems
            .iter()
            .find(|p| p.path.ends_with(format!("agents/agents/{name}.json")))
            .map(|p| p.message.clone())
            .unwrap_or_default()
    };
    assert!(
        of("both").contains("duplicate field `sessionStop`"),
        "{problems:?}"
    );
    assert!(
        of("extra").contains("a session binding") && of("extra").contains("unknown field `reason`"),
        "{problems:?}"
    );
    assert!(of("empty").contains("names no tool"), "{problems:?}");
    // The agent that did not load is refused by name when a thread is started.
    let err = rt.start_thread("both", "hi").await.unwrap_err();
    assert!(err.to_string().contains("agents/agents/both.json"), "{err}");
}
