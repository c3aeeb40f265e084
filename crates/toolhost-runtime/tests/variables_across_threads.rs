//! A sub-agent's child thread inherits its parent's variable values (spec 001 §3), but not a
//! name its own definitions declare `scoped`; what a child resolves flows on to its children.

mod common;

use common::subprompts::Recorded;
use common::traces::{assert_no_trace_in_files, SECRET};
use common::Project;
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::variables::VariableDecl;
use toolhost_runtime::engine::Runtime;
use toolhost_runtime::engine::ThreadState;
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, SqliteStore, Store};

/// `lead` (ai_human) calls `research` (dual_ai), whose side B `finder` shows `REGION` in its
/// system prompt and reports at once. `research` declares `variables` as given.
fn project(research_variables: Value) -> Project {
    project_with(research_variables, json!(["report"]))
}

/// Like [`project`], with `finder` offering `finder_tools`.
fn project_with(research_variables: Value, finder_tools: Value) -> Project {
    let prompt = |model: &str, text: Value, tools: Value| {
        json!({"toolDescription": "x", "prompt": text, "model": model, "tools": tools,
            "includeChat": true, "variables": [{"name": "REGION", "type": "text"}]})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let files = [
        ("agents/agents/lead.json", json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string()),
        ("agents/agents/research.json", json!({
            "type": "dual_ai", "description": "Researches.", "maxSessionTurns": 4,
            "variables": research_variables,
            "sideA": {"prompt": "asker"},
            "sideB": {"prompt": "finder", "sessionStop": {"name": "report", "messageProperty": "text"}}
        }).to_string()),
        ("agents/prompts/lead.json", prompt("lead", json!("Lead."), json!(["research"]))),
        ("agents/prompts/asker.json", prompt("asker", json!("Ask."), json!([]))),
        ("agents/prompts/finder.json", prompt("finder",
            json!([{"type": "text", "text": "Region:"}, {"type": "env", "name": "REGION"}]),
            finder_tools)),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/asker.json", model("asker.json")),
        ("agents/models/finder.json", model("finder.json")),
        ("lead.json", json!([
            {"toolCalls": [{"name": "research", "arguments": {"message": "where?"}}]},
            {"text": "done"}
        ]).to_string()),
        ("asker.json", json!([{"text": "please find it"}]).to_string()),
        ("finder.json", json!([
            {"toolCalls": [{"name": "report", "arguments": {"text": "found"}}]}
        ]).to_string()),
    ];
    Project::with_files(&files)
}

/// Runs a lead given REGION=`region`; returns the system prompt the child's `finder` saw.
async fn finder_system_prompt(research_variables: Value, region: &str) -> String {
    let p = project(research_variables);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    rt.register_tool(
        DynamicTool::new("report", "Reports.")
            .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("done".to_owned()) })
            .build()
            .unwrap(),
    );
    let finder = Recorded::new(json!([
        {"toolCalls": [{"name": "report", "arguments": {"text": "found"}}]}
    ]));
    rt.register_model("finder", finder.clone());
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let lead = rt
        .start_thread_with("lead", "go", vec![VariableValue::text("REGION", region)])
        .await
        .unwrap();
    rt.run(&lead.id).await.unwrap();
    assert_eq!(store.threads(Some(&lead.id)).unwrap().len(), 1);
    finder.requests()[0].messages[0].content.clone().unwrap()
}

#[tokio::test]
async fn a_child_thread_inherits_its_parents_variable_values() {
    let system = finder_system_prompt(json!([]), "eu-west").await;
    assert!(system.contains("eu-west"), "{system}");
}

#[tokio::test]
async fn a_variable_the_child_declares_scoped_is_not_inherited() {
    let system = finder_system_prompt(
        json!([{"name": "REGION", "type": "text", "scoped": true}]),
        "eu-west",
    )
    .await;
    assert!(!system.contains("eu-west"), "{system}");
}

#[tokio::test]
async fn an_inherited_secret_reaches_the_childs_tool_and_nothing_else_in_plain_text() {
    let p = project_with(json!([]), json!(["peek", "report"]));
    let db = p.root.join("t.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    rt.set_secret_key(SecretKey::generate().unwrap());
    let seen = Arc::new(std::sync::Mutex::new(None));
    let peeked = seen.clone();
    rt.register_tool(
        DynamicTool::new("peek", "Uses the token.")
            .parameters(json!({"type": "object", "properties": {}}))
            .variable(VariableDecl::secret("TOKEN"))
            .handler(move |_: Value, ctx| {
                let peeked = peeked.clone();
                async move {
                    let token = ctx
                        .get::<ThreadState>()
                        .unwrap()
                        .env("TOKEN")
                        .map(str::to_owned);
                    *peeked.lock().unwrap() = token.clone();
                    Ok::<_, ToolError>(format!("the token is {}", token.unwrap_or_default()))
                }
            })
            .build()
            .unwrap(),
    );
    rt.register_tool(
        DynamicTool::new("report", "Reports.")
            .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("done".to_owned()) })
            .build()
            .unwrap(),
    );
    let finder = Recorded::new(json!([
        {"toolCalls": [{"name": "peek", "arguments": {}}]},
        {"toolCalls": [{"name": "report", "arguments": {"text": "found"}}]}
    ]));
    rt.register_model("finder", finder.clone());
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let lead = rt
        .start_thread_with("lead", "go", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    rt.run(&lead.id).await.unwrap();

    // The child's tool had the parent's secret; its stored result and the child's model did not.
    assert_eq!(seen.lock().unwrap().as_deref(), Some(SECRET));
    let child = &store.threads(Some(&lead.id)).unwrap()[0];
    let result = store
        .messages(&child.id)
        .unwrap()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .and_then(|m| m.content)
        .unwrap();
    assert_eq!(result, "the token is [redacted TOKEN]");
    for request in finder.requests() {
        let sent = serde_json::to_string(&request.messages).unwrap();
        assert!(!sent.contains(SECRET), "{sent}");
    }
    assert!(store.variables(&child.id).unwrap().is_empty());
    drop(rt);
    drop(store);
    assert_no_trace_in_files(&db);
}
