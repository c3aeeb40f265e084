//! A `dual_ai` agent offered in a prompt's `tools` is a tool: calling it runs the agent as a
//! sub-agent in a child thread (its parent the calling thread, tagged with its name), through
//! the same engine, and the calling call waits for the child's session result and gets it.
//! Sub-agents nest at most four deep; a child that waits for a person answers the call with an
//! error naming it. An agent offer the engine cannot honour is refused before a thread starts,
//! naming the file and the field.

mod common;

use common::subprompts::Recorded;
use common::Project;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::{RunOutcome, Runtime, RuntimeError, StopReason};
use toolhost_store::{Role, SqliteStore, Store, ThreadStatus};

/// Agent `lead` (ai_human) offers `offer`; agent `research` (dual_ai) has side A `asker` and
/// side B `finder`, whose `report` call ends the session with its `text`. All on scripted
/// `test` models.
fn project(offer: Value, research_kind: &str) -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let files = [
        ("agents/agents/lead.json", json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string()),
        ("agents/agents/research.json", json!({
            "type": research_kind, "description": "Researches a question.", "maxSessionTurns": 4,
            "sideA": {"prompt": "asker"},
            "sideB": {"prompt": "finder", "sessionStop": {"name": "report", "messageProperty": "text"}}
        }).to_string()),
        ("agents/prompts/lead.json", prompt("lead", json!([offer]))),
        ("agents/prompts/asker.json", prompt("asker", json!([]))),
        ("agents/prompts/finder.json", prompt("finder", json!(["note", "report"]))),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/asker.json", model("asker.json")),
        ("agents/models/finder.json", model("finder.json")),
        ("lead.json", json!([
            {"toolCalls": [{"name": "research", "arguments": {"message": "what is it?"}}]},
            {"text": "the lead is done"}
        ]).to_string()),
        ("asker.json", json!([{"text": "please find it"}]).to_string()),
        ("finder.json", json!([
            {"toolCalls": [{"name": "note", "arguments": {}}]},
            {"toolCalls": [{"name": "report", "arguments": {"text": "the answer is 42"}}]}
        ]).to_string()),
    ];
    Project::with_files(&files)
}

async fn runtime(project: &Project) -> (Runtime, Arc<dyn Store>, Arc<AtomicUsize>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
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
        DynamicTool::new("report", "Reports the finding.")
            .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("reported".to_owned()) })
            .build()
            .unwrap(),
    );
    (rt, store, notes)
}

#[tokio::test]
async fn a_blocking_sub_agent_runs_in_a_child_thread_and_its_session_result_answers_the_call() {
    let p = project(json!("research"), "dual_ai");
    let (rt, store, notes) = runtime(&p).await;
    let lead = rt.start_thread("lead", "find it").await.unwrap();
    let outcome = rt.run(&lead.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));

    // One child, under the lead, tagged with its name, whose session ended.
    let children = store.threads(Some(&lead.id)).unwrap();
    assert_eq!(children.len(), 1);
    let child = &children[0];
    assert_eq!(child.agent, "research");
    assert_eq!(child.parent.as_deref(), Some(lead.id.as_str()));
    assert!(
        child.tags.iter().any(|t| t == "name:research"),
        "{:?}",
        child.tags
    );
    assert_eq!(child.status, ThreadStatus::Done);

    // The child's conversation: the call's message first, then both sides' work; its own call
    // ran once and has one result.
    let child_messages = store.messages(&child.id).unwrap();
    assert_eq!(child_messages[0].role, Role::User);
    assert_eq!(child_messages[0].content.as_deref(), Some("what is it?"));
    assert_eq!(notes.load(Ordering::SeqCst), 1);
    assert_eq!(
        child_messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count(),
        2
    );

    // The lead's call got the child's session result, and the lead's model answered after it;
    // nothing of the child is stored in the lead's thread.
    let messages = store.messages(&lead.id).unwrap();
    let results: Vec<_> = messages.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content.as_deref(), Some("the answer is 42"));
    assert_eq!(
        messages.last().unwrap().content.as_deref(),
        Some("the lead is done")
    );
    assert!(messages
        .iter()
        .all(|m| m.content.as_deref() != Some("please find it")));

    // Running the lead again starts no second child and runs nothing twice.
    rt.run(&lead.id).await.unwrap();
    assert_eq!(store.threads(Some(&lead.id)).unwrap().len(), 1);
    assert_eq!(notes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_sub_agent_is_offered_with_its_description_and_its_first_sides_arguments() {
    let p = project(json!("research"), "dual_ai");
    let (mut rt, _store, _) = runtime(&p).await;
    let lead_model = Recorded::new(json!([{"text": "nothing to do"}]));
    rt.register_model("lead", lead_model.clone());
    let lead = rt.start_thread("lead", "find it").await.unwrap();
    rt.run(&lead.id).await.unwrap();
    let request = &lead_model.requests()[0];
    let tool = request.tools.iter().find(|t| t.name == "research").unwrap();
    assert_eq!(tool.description, "Researches a question.");
    assert_eq!(tool.parameters["required"], json!(["message"]));
    assert_eq!(tool.parameters["properties"]["message"]["type"], "string");
}

/// The lines of the refusal to start a thread of `lead`; nothing may have been stored.
async fn refusal(p: &Project) -> Vec<String> {
    let (rt, store, _) = runtime(p).await;
    let err = rt.start_thread("lead", "hi").await.unwrap_err();
    assert!(store.threads(None).unwrap().is_empty());
    match err {
        RuntimeError::Unsound { problems, .. } => problems.iter().map(|p| p.to_string()).collect(),
        other => panic!("expected Unsound, got {other}"),
    }
}

#[tokio::test]
async fn an_agent_offer_the_engine_cannot_honour_is_refused_naming_the_file_and_field() {
    // Settings only a prompt tool has are refused for an agent.
    let lines = refusal(&project(
        json!({"name": "research", "includeToolCalls": true}),
        "dual_ai",
    ))
    .await;
    assert!(
        lines
            .iter()
            .any(|l| l.contains("lead.json") && l.contains("prompt-tool settings")),
        "{lines:?}"
    );
    // The fields both kinds share are read as the agent's, and checked against its arguments.
    for entry in [
        json!({"name": "research", "initUserMessageProperty": "topic"}),
        json!({"name": "research", "blocking": true, "initUserMessageProperty": "topic"}),
    ] {
        let lines = refusal(&project(entry, "dual_ai")).await;
        assert!(
            lines.iter().any(|l| l.contains("lead.json")
                && l.contains("initUserMessageProperty")
                && l.contains("topic")),
            "{lines:?}"
        );
    }
}

#[tokio::test]
async fn sub_agents_nest_at_most_four_deep_and_the_call_past_that_is_an_error() {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    // Side A of `deep` offers `deep` itself: every child calls it again.
    let p = Project::with_files(&[
        (
            "agents/agents/deep.json",
            json!({"type": "dual_ai", "maxSessionTurns": 2,
            "sideA": {"prompt": "diver"}, "sideB": {"prompt": "watcher"}})
            .to_string(),
        ),
        (
            "agents/prompts/diver.json",
            prompt("diver", json!(["deep"])),
        ),
        ("agents/prompts/watcher.json", prompt("watcher", json!([]))),
        ("agents/models/diver.json", model("diver.json")),
        ("agents/models/watcher.json", model("watcher.json")),
        (
            "diver.json",
            json!([
                {"toolCalls": [{"name": "deep", "arguments": {"message": "again"}}]},
                {"text": "dived"}
            ])
            .to_string(),
        ),
        ("watcher.json", json!([{"text": "watched"}]).to_string()),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    let root = rt.start_thread("deep", "dive").await.unwrap();
    rt.run(&root.id).await.unwrap();

    // The root and four levels of children, one each.
    let mut chain = vec![root.id.clone()];
    loop {
        let children = store.threads(Some(chain.last().unwrap())).unwrap();
        match children.as_slice() {
            [] => break,
            [only] => chain.push(only.id.clone()),
            more => panic!("{} children of one call", more.len()),
        }
    }
    assert_eq!(chain.len(), 5);
    assert_eq!(store.threads(None).unwrap().len(), 5);
    // The deepest one's call is refused; every other call got its child's result.
    for (depth, id) in chain.iter().enumerate() {
        let result = store
            .messages(id)
            .unwrap()
            .into_iter()
            .find(|m| m.role == Role::Tool)
            .unwrap();
        let text = result.content.unwrap();
        if depth == 4 {
            assert!(text.contains("deeper than 4"), "{text}");
        } else {
            assert_eq!(text, "watched");
        }
    }
}

#[tokio::test]
async fn a_child_that_waits_for_a_person_answers_the_call_with_an_error_naming_it() {
    let p = project(json!("research"), "dual_ai");
    let (mut rt, store, _) = runtime(&p).await;
    rt.register_tool(
        DynamicTool::new("note", "Takes a note, with approval.")
            .parameters(json!({"type": "object", "properties": {}}))
            .approval(toolhost_core::approval::Approval::always())
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("noted".to_owned()) })
            .build()
            .unwrap(),
    );
    let lead = rt.start_thread("lead", "find it").await.unwrap();
    rt.run(&lead.id).await.unwrap();
    let child = &store.threads(Some(&lead.id)).unwrap()[0];
    assert_eq!(child.status, ThreadStatus::Paused);
    let messages = store.messages(&lead.id).unwrap();
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.status, Some(toolhost_store::ToolStatus::Error));
    let text = result.content.as_deref().unwrap();
    assert!(
        text.contains(&child.id) && text.contains("decision") && text.contains("note"),
        "{text}"
    );
}
