//! An `ai_human` agent offered in a prompt's `tools` is a handoff on the same thread: calling it
//! makes it the thread's agent, the history stays, and its prompt answers from the next step
//! on (and every later message). A `dual_ai` thread cannot be handed over: the call is an error
//! and the thread keeps its agent. A handoff entry takes no settings.

mod common;

use common::subprompts::Recorded;
use common::Project;
use serde_json::{json, Value};
use std::sync::Arc;
use toolhost_providers::ChatRole;
use toolhost_runtime::engine::{RunOutcome, Runtime, RuntimeError, StopReason};
use toolhost_store::{Role, SqliteStore, Store, ToolStatus};

fn project(front_offer: Value) -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": format!("You are {model}."), "model": model, "tools": tools})
            .to_string()
    };
    let model = json!({"provider": "test", "script": "none.json"}).to_string();
    Project::with_files(&[
        ("agents/agents/front.json", json!({"sideA": {"prompt": "front"}}).to_string()),
        ("agents/agents/billing.json", json!({"description": "Answers billing questions.", "sideA": {"prompt": "billing_desk"}}).to_string()),
        ("agents/agents/duo.json", json!({"type": "dual_ai", "maxSessionTurns": 2,
            "sideA": {"prompt": "front"}, "sideB": {"prompt": "other"}}).to_string()),
        ("agents/prompts/front.json", prompt("front", json!([front_offer]))),
        ("agents/prompts/billing_desk.json", prompt("billing", json!([]))),
        ("agents/prompts/other.json", prompt("other", json!([]))),
        ("agents/models/front.json", model.clone()),
        ("agents/models/billing.json", model.clone()),
        ("agents/models/other.json", model),
        ("none.json", json!([{"text": "unused"}]).to_string()),
    ])
}

struct Setup {
    rt: Runtime,
    store: Arc<dyn Store>,
    front: Arc<Recorded>,
    billing: Arc<Recorded>,
}

async fn setup(p: &Project, front_turns: Value) -> Setup {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    let front = Recorded::new(front_turns);
    // The scripted model plays the turn after the replies it is shown: billing is first shown
    // front's call (turn 2), then, after the next message, none (turn 1).
    let billing = Recorded::new(json!([
        {"text": "you are welcome"},
        {"text": "billing here: the invoice is paid"}
    ]));
    rt.register_model("front", front.clone());
    rt.register_model("billing", billing.clone());
    rt.register_model("other", Recorded::new(json!([{"text": "fine"}])));
    Setup {
        rt,
        store,
        front,
        billing,
    }
}

#[tokio::test]
async fn calling_an_ai_human_agent_hands_the_same_thread_over_with_its_history() {
    let p = project(json!("billing"));
    let s = setup(
        &p,
        json!([{"toolCalls": [{"name": "billing", "arguments": {}}]}]),
    )
    .await;
    // The handoff is offered with the agent's description and no arguments.
    let thread =
        s.rt.start_thread("front", "is my invoice paid?")
            .await
            .unwrap();
    let outcome = s.rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
    let offered = &s.front.requests()[0].tools;
    let tool = offered.iter().find(|t| t.name == "billing").unwrap();
    assert_eq!(tool.description, "Answers billing questions.");
    assert_eq!(tool.parameters["properties"], json!({}));

    // The same thread, now billing's; no child thread.
    assert_eq!(s.store.thread(&thread.id).unwrap().agent, "billing");
    assert!(s.store.threads(Some(&thread.id)).unwrap().is_empty());
    let messages = s.store.messages(&thread.id).unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(messages[2].status, Some(ToolStatus::Success));
    assert_eq!(
        messages[3].content.as_deref(),
        Some("billing here: the invoice is paid")
    );

    // Billing's model saw the person's message (the history stays) under its own prompt.
    let asked = &s.billing.requests()[0].messages;
    assert!(asked[0]
        .content
        .as_deref()
        .unwrap_or("")
        .contains("You are billing."));
    assert!(asked
        .iter()
        .any(|m| m.role == ChatRole::User && m.content.as_deref() == Some("is my invoice paid?")));

    // The next message is billing's to answer; front's model is not asked again.
    s.rt.send(&thread.id, "thanks").await.unwrap();
    s.rt.run(&thread.id).await.unwrap();
    assert_eq!(s.billing.requests().len(), 2);
    assert_eq!(s.front.requests().len(), 1);
    let last = s.store.messages(&thread.id).unwrap().pop().unwrap();
    assert_eq!(last.content.as_deref(), Some("you are welcome"));
}

#[tokio::test]
async fn a_dual_ai_thread_cannot_be_handed_over_and_keeps_its_agent() {
    let p = project(json!("billing"));
    let s = setup(
        &p,
        json!([{"toolCalls": [{"name": "billing", "arguments": {}}]}, {"text": "ok then"}]),
    )
    .await;
    let thread = s.rt.start_thread("duo", "hello").await.unwrap();
    s.rt.run(&thread.id).await.unwrap();
    assert_eq!(s.store.thread(&thread.id).unwrap().agent, "duo");
    let messages = s.store.messages(&thread.id).unwrap();
    let result = messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.status, Some(ToolStatus::Error));
    assert!(result
        .content
        .as_deref()
        .unwrap()
        .contains("dual_ai thread"));
    assert!(s.billing.requests().is_empty());
}

#[tokio::test]
async fn a_handoff_entry_with_settings_is_refused_naming_the_file() {
    let p = project(json!({"name": "billing", "blocking": true}));
    let s = setup(&p, json!([{"text": "unused"}])).await;
    let err = s.rt.start_thread("front", "hi").await.unwrap_err();
    let RuntimeError::Unsound { problems, .. } = err else {
        panic!("expected Unsound, got {err}");
    };
    assert!(
        problems
            .iter()
            .any(|p| p.to_string().contains("front.json") && p.to_string().contains("takes none")),
        "{problems:?}"
    );
}
