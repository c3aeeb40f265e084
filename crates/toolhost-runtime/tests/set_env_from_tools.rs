//! A tool sets a variable of its thread (`state.setEnv`, catalogue SA-31): a new value is a
//! secret unless it is empty (a blank visible entry); it is stored sealed when the call's step
//! is stored, redacted from the call's own result, seen by the calls of later steps, and passed
//! to the thread's active descendants but not to finished ones, nor to one that declares the
//! name `scoped`.

mod common;

use common::traces::{assert_no_trace_in_files, SECRET};
use common::Project;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::variables::VariableDecl;
use toolhost_runtime::engine::{Runtime, ThreadState};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_store::{NewThread, Role, SqliteStore, Store, ThreadStatus, Write};

/// `lead` offers `remember` (sets API_KEY to the secret and BLANK to "") and `peek` (declares
/// API_KEY); `research` declares BLANK scoped.
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
            json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string(),
        ),
        (
            "agents/agents/research.json",
            json!({"type": "ai_human", "sideA": {"prompt": "quiet"},
            "variables": [{"name": "BLANK", "type": "text", "scoped": true}]})
            .to_string(),
        ),
        (
            "agents/prompts/lead.json",
            prompt("lead", json!(["remember", "peek"])),
        ),
        ("agents/prompts/quiet.json", prompt("quiet", json!([]))),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/quiet.json", model("quiet.json")),
        (
            "lead.json",
            json!([
                {"toolCalls": [{"name": "remember", "arguments": {}}]},
                {"toolCalls": [{"name": "peek", "arguments": {}}]},
                {"text": "done"}
            ])
            .to_string(),
        ),
        ("quiet.json", json!([{"text": "quiet"}]).to_string()),
    ])
}

#[tokio::test]
async fn set_env_stores_a_secret_seen_from_the_next_step_and_passed_to_active_descendants() {
    let p = project();
    let db = p.root.join("t.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    rt.set_secret_key(SecretKey::generate().unwrap());
    rt.register_tool(
        DynamicTool::new("remember", "Remembers the key.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(|_: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                state.set_env("API_KEY", SECRET)?;
                state.set_env("BLANK", "")?;
                assert!(state.set_env("not a name", "x").is_err());
                // The value this call just set is redacted from its own result.
                Ok::<_, ToolError>(format!("remembered {SECRET}"))
            })
            .build()
            .unwrap(),
    );
    let seen = Arc::new(Mutex::new(None));
    let peeked = seen.clone();
    rt.register_tool(
        DynamicTool::new("peek", "Uses the key.")
            .parameters(json!({"type": "object", "properties": {}}))
            .variable(VariableDecl::secret("API_KEY"))
            .handler(move |_: Value, ctx| {
                let peeked = peeked.clone();
                async move {
                    let state = ctx.get::<ThreadState>().unwrap();
                    *peeked.lock().unwrap() = state.env("API_KEY").map(str::to_owned);
                    Ok::<_, ToolError>("peeked".to_owned())
                }
            })
            .build()
            .unwrap(),
    );
    let lead = rt.start_thread("lead", "go").await.unwrap();
    // Two children: one still active, one whose work is done.
    let child = |status: ThreadStatus| NewThread {
        agent: "research".into(),
        parent: Some(lead.id.clone()),
        writes: vec![Write::SetStatus(status)],
        ..NewThread::default()
    };
    let active = store.create_thread(child(ThreadStatus::Idle)).unwrap();
    let finished = store.create_thread(child(ThreadStatus::Done)).unwrap();
    rt.run(&lead.id).await.unwrap();

    // The later step's tool saw the value; the setting call's result is redacted.
    assert_eq!(seen.lock().unwrap().as_deref(), Some(SECRET));
    let results: Vec<String> = store
        .messages(&lead.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.content)
        .collect();
    assert_eq!(results[0], "remembered [redacted API_KEY]");

    // Stored sealed for the thread; the blank entry is a visible text.
    let vars = store.variables(&lead.id).unwrap();
    let key = vars.iter().find(|v| v.name == "API_KEY").unwrap();
    assert!(key.secret && !key.value.contains(SECRET));
    let blank = vars.iter().find(|v| v.name == "BLANK").unwrap();
    assert!(!blank.secret);
    assert_eq!(blank.value, "");

    // Passed to the active child (not BLANK, which it declares scoped), not the finished one.
    let names = |id: &str| -> Vec<String> {
        store
            .variables(id)
            .unwrap()
            .into_iter()
            .map(|v| v.name)
            .collect()
    };
    assert_eq!(names(&active.id), ["API_KEY"]);
    assert!(names(&finished.id).is_empty());
    drop(rt);
    drop(store);
    assert_no_trace_in_files(&db);
}
