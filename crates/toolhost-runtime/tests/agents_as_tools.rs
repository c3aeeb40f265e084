//! Agents as tools (spec 003 `asTool`, catalogue AN-19): an agent of one runtime, wrapped as a
//! tool, is called by a program or offered to another runtime's model: a call runs the agent in
//! a thread of its own from the call's `prompt` and returns what the agent ended with; a call
//! made again with the same id continues its thread and runs nothing twice.

mod common;

use common::Project;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolContext, ToolError};
use toolhost_runtime::engine::{AsToolOptions, Runtime, AS_TOOL_TAG};
use toolhost_store::{Role, SqliteStore, Store};

/// A project whose `researcher` (dual_ai) asks with `asker` and reports with `finder`, which
/// calls `note` and then the session-ending `report`.
fn research_project() -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    Project::with_files(&[
        ("agents/agents/researcher.json", json!({
            "type": "dual_ai", "description": "Researches a question.", "maxSessionTurns": 4,
            "sideA": {"prompt": "asker"},
            "sideB": {"prompt": "finder", "sessionStop": {"name": "report", "messageProperty": "text"}}
        }).to_string()),
        ("agents/prompts/asker.json", prompt("asker", json!([]))),
        ("agents/prompts/finder.json", prompt("finder", json!(["note", "report"]))),
        ("agents/models/asker.json", model("asker.json")),
        ("agents/models/finder.json", model("finder.json")),
        ("asker.json", json!([{"text": "please find it"}]).to_string()),
        ("finder.json", json!([
            {"toolCalls": [{"name": "note", "arguments": {}}]},
            {"toolCalls": [{"name": "report", "arguments": {"text": "the answer is 42"}}]}
        ]).to_string()),
    ])
}

async fn research_runtime(p: &Project) -> (Arc<Runtime>, Arc<dyn Store>, Arc<AtomicUsize>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
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
    rt.register_tool(
        DynamicTool::new("report", "Reports.")
            .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("reported".to_owned()) })
            .build()
            .unwrap(),
    );
    (Arc::new(rt), store, notes)
}

#[tokio::test]
async fn an_agent_called_as_a_tool_runs_in_its_own_thread_and_answers_once_per_call() {
    let p = research_project();
    let (rt, store, notes) = research_runtime(&p).await;
    let tool = Runtime::agent_as_tool(&rt, "researcher", AsToolOptions::default()).unwrap();
    assert_eq!(tool.name(), "researcher");
    assert_eq!(tool.definition().description, "Researches a question.");
    assert_eq!(tool.definition().parameters["required"], json!(["prompt"]));

    let result = tool
        .call(json!({"prompt": "what is it?"}), ToolContext::new("call-1"))
        .await
        .unwrap();
    assert_eq!(result.model_text(), "the answer is 42");
    let threads = store.threads(None).unwrap();
    assert_eq!(threads.len(), 1);
    assert!(threads[0].tags.iter().any(|t| t == AS_TOOL_TAG));
    let first = &store.messages(&threads[0].id).unwrap()[0];
    assert_eq!(
        (first.role, first.content.as_deref()),
        (Role::User, Some("what is it?"))
    );

    // The same call again (a retry) continues its thread: nothing runs twice.
    let again = tool
        .call(json!({"prompt": "what is it?"}), ToolContext::new("call-1"))
        .await
        .unwrap();
    assert_eq!(again.model_text(), "the answer is 42");
    assert_eq!(store.threads(None).unwrap().len(), 1);
    assert_eq!(notes.load(Ordering::SeqCst), 1);
    // Arguments that do not fit the schema are refused before anything runs.
    assert!(tool
        .call(json!({"question": 1}), ToolContext::new("call-2"))
        .await
        .is_err());
    assert_eq!(store.threads(None).unwrap().len(), 1);
}

#[tokio::test]
async fn an_agent_of_one_runtime_is_offered_to_another_runtimes_model() {
    let p = research_project();
    let (research, research_store, _) = research_runtime(&p).await;
    let options = AsToolOptions {
        name: Some("ask_research".into()),
        ..AsToolOptions::default()
    };
    let tool = Runtime::agent_as_tool(&research, "researcher", options).unwrap();

    let boss = Project::with_files(&[
        (
            "agents/agents/boss.json",
            json!({"type": "ai_human", "sideA": {"prompt": "boss"}}).to_string(),
        ),
        (
            "agents/prompts/boss.json",
            json!({"toolDescription": "x", "prompt": "Lead.",
            "model": "boss", "tools": ["ask_research"], "includeChat": true,
            "includePastTools": true})
            .to_string(),
        ),
        (
            "agents/models/boss.json",
            json!({"provider": "test", "script": "boss.json"}).to_string(),
        ),
        (
            "boss.json",
            json!([
                {"toolCalls": [{"name": "ask_research", "arguments": {"prompt": "what is it?"}}]},
                {"text": "research says 42"}
            ])
            .to_string(),
        ),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&boss.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&boss.root, store.clone()).await.unwrap();
    rt.register_tool(tool);
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let thread = rt.start_thread("boss", "go").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let messages = store.messages(&thread.id).unwrap();
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.content.as_deref(), Some("the answer is 42"));
    assert_eq!(
        messages.last().unwrap().content.as_deref(),
        Some("research says 42")
    );
    // The research ran in the other runtime's store.
    assert_eq!(research_store.threads(None).unwrap().len(), 1);
}

#[tokio::test]
async fn an_agent_that_cannot_start_is_refused_when_it_is_wrapped() {
    let p = research_project();
    let (rt, _, _) = research_runtime(&p).await;
    let error = Runtime::agent_as_tool(&rt, "nobody", AsToolOptions::default()).unwrap_err();
    assert!(error.to_string().contains("nobody"), "{error}");
}
