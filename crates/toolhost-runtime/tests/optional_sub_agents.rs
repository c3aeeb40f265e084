//! `optional: FLAG` on an agent offer: the sub-agent is offered only when the thread's variable
//! FLAG resolves to `true`, `1` or `yes` (in any case). Otherwise the model is not shown the
//! tool, and a model that calls it anyway gets an error result and starts no child.

mod common;

use common::subprompts::Recorded;
use common::{call_answer, text_answer, ListModel, Project};
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_runtime::engine::Runtime;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, SqliteStore, Store};

/// Agent `lead` (ai_human) offers `research` under the flag `RESEARCH_ON`, which its prompt
/// declares; `research` (dual_ai) ends its session at once with `report`.
fn project() -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true,
            "variables": [{"name": "RESEARCH_ON", "type": "text"}]})
        .to_string()
    };
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let files = [
        ("agents/agents/lead.json", json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string()),
        ("agents/agents/research.json", json!({
            "type": "dual_ai", "description": "Researches a question.", "maxSessionTurns": 4,
            "sideA": {"prompt": "asker"},
            "sideB": {"prompt": "finder", "sessionStop": {"name": "report", "messageProperty": "text"}}
        }).to_string()),
        ("agents/prompts/lead.json", prompt("lead", json!([
            {"name": "research", "blocking": true, "optional": "RESEARCH_ON"}, "note"
        ]))),
        ("agents/prompts/asker.json", prompt("asker", json!([]))),
        ("agents/prompts/finder.json", prompt("finder", json!(["report"]))),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/asker.json", model("asker.json")),
        ("agents/models/finder.json", model("finder.json")),
        ("lead.json", json!([
            {"toolCalls": [{"name": "research", "arguments": {"message": "what is it?"}}]},
            {"text": "the lead is done"}
        ]).to_string()),
        ("asker.json", json!([{"text": "please find it"}]).to_string()),
        ("finder.json", json!([
            {"toolCalls": [{"name": "report", "arguments": {"text": "the answer is 42"}}]}
        ]).to_string()),
    ];
    Project::with_files(&files)
}

async fn runtime(project: &Project) -> (Runtime, Arc<dyn Store>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).await.unwrap();
    for (name, description) in [("report", "Reports."), ("note", "Notes.")] {
        rt.register_tool(
            DynamicTool::new(name, description)
                .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
                .handler(|_: Value, _| async move { Ok::<_, ToolError>("done".to_owned()) })
                .build()
                .unwrap(),
        );
    }
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    (rt, store)
}

fn flag_values(flag: Option<&str>) -> Vec<VariableValue> {
    flag.map(|v| vec![VariableValue::text("RESEARCH_ON", v)])
        .unwrap_or_default()
}

/// Whether the lead's model is shown `research` in every request of a run given `flag` as
/// RESEARCH_ON (or nothing); `note` always is.
async fn shown_with(flag: Option<&str>) -> bool {
    let p = project();
    let (mut rt, _store) = runtime(&p).await;
    let lead_model = Recorded::new(json!([{"toolCalls": [{"name": "note", "arguments": {}}]},
        {"text": "done"}]));
    rt.register_model("lead", lead_model.clone());
    let lead = rt
        .start_thread_with("lead", "find it", flag_values(flag))
        .await
        .unwrap();
    rt.run(&lead.id).await.unwrap();
    let requests = lead_model.requests();
    assert_eq!(requests.len(), 2);
    let shown =
        |r: &toolhost_providers::ModelRequest, name: &str| r.tools.iter().any(|t| t.name == name);
    assert!(requests.iter().all(|r| shown(r, "note")));
    let research = shown(&requests[0], "research");
    assert!(requests.iter().all(|r| shown(r, "research") == research));
    research
}

/// Runs a lead thread whose model calls `research` whether offered or not, given `flag`;
/// returns the call's result and how many children the lead has.
async fn call_with(flag: Option<&str>) -> (String, usize) {
    let p = project();
    let (mut rt, store) = runtime(&p).await;
    let lead_model = ListModel::new(vec![
        call_answer("c1", "research", r#"{"message": "what is it?"}"#),
        text_answer("the lead is done"),
    ]);
    rt.register_model("lead", lead_model);
    let lead = rt
        .start_thread_with("lead", "find it", flag_values(flag))
        .await
        .unwrap();
    rt.run(&lead.id).await.unwrap();
    let messages = store.messages(&lead.id).unwrap();
    let result = messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .and_then(|m| m.content.clone())
        .unwrap();
    (result, store.threads(Some(&lead.id)).unwrap().len())
}

#[tokio::test]
async fn an_optional_sub_agent_is_offered_and_runs_when_its_flag_is_true_1_or_yes() {
    for flag in ["true", "1", "yes", "YES", "True"] {
        assert!(shown_with(Some(flag)).await, "{flag}");
        let (result, children) = call_with(Some(flag)).await;
        assert_eq!(children, 1, "{flag}");
        assert_eq!(result, "the answer is 42", "{flag}");
    }
}

#[tokio::test]
async fn an_optional_sub_agent_is_not_offered_when_its_flag_is_off_or_unset_and_a_call_of_it_is_an_error(
) {
    for flag in [None, Some("false"), Some("0"), Some("no"), Some("")] {
        assert!(!shown_with(flag).await, "{flag:?}");
        let (result, children) = call_with(flag).await;
        assert_eq!(children, 0, "{flag:?}");
        assert!(result.contains("research"), "{flag:?}: {result}");
        assert_ne!(result, "the answer is 42");
    }
}
