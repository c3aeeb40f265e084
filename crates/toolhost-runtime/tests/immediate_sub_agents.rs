//! An agent offered with `immediate` (spec 001 §5) is started by the runtime when the prompt
//! becomes active, before its first model step, once per thread. Its child's first message
//! carries only the `nameEnv` and `descriptionEnv` values; `scopedEnv` values are copied into
//! the child and never reach a model, a stored message, an event or a file in plain text.

mod common;

use common::subprompts::Recorded;
use common::traces::{assert_no_trace_in_files, SECRET};
use common::Project;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::variables::VariableDecl;
use toolhost_runtime::engine::{Runtime, RuntimeError, ThreadState};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, SqliteStore, Store};

/// `lead` offers `research` as `offer`; `research` declares TOKEN scoped (so it is not
/// inherited) and its `finder` offers `peek` (which declares TOKEN) and `report`.
fn project(offer: Value, asker_schema: Option<Value>) -> Project {
    let prompt = |model: &str, tools: Value| {
        json!({"toolDescription": "x", "prompt": "Work.", "model": model, "tools": tools,
            "includeChat": true, "includePastTools": true})
    };
    let mut asker = prompt("asker", json!([]));
    if let Some(schema) = asker_schema {
        asker["requiredSchema"] = schema;
    }
    let model = |script: &str| json!({"provider": "test", "script": script}).to_string();
    let files = [
        ("agents/agents/lead.json", json!({"type": "ai_human", "sideA": {"prompt": "lead"}}).to_string()),
        ("agents/agents/research.json", json!({
            "type": "dual_ai", "description": "Researches.", "maxSessionTurns": 4,
            "variables": [{"name": "TOKEN", "type": "secret", "scoped": true}],
            "sideA": {"prompt": "asker"},
            "sideB": {"prompt": "finder", "sessionStop": {"name": "report", "messageProperty": "text"}}
        }).to_string()),
        ("agents/prompts/lead.json", prompt("lead", json!([offer])).to_string()),
        ("agents/prompts/asker.json", asker.to_string()),
        ("agents/prompts/finder.json", prompt("finder", json!(["peek", "report"])).to_string()),
        ("agents/models/lead.json", model("lead.json")),
        ("agents/models/asker.json", model("asker.json")),
        ("agents/models/finder.json", model("finder.json")),
        ("lead.json", json!([{"text": "the lead answers"}]).to_string()),
        ("asker.json", json!([{"text": "please look"}]).to_string()),
        ("finder.json", json!([{"text": "unused: the tests register their own"}]).to_string()),
    ];
    Project::with_files(&files)
}

struct Run {
    rt: Runtime,
    store: Arc<dyn Store>,
    lead_model: Arc<Recorded>,
    asker_model: Arc<Recorded>,
    finder_model: Arc<Recorded>,
    peeked: Arc<Mutex<Vec<Option<String>>>>,
}

async fn runtime(p: &Project) -> Run {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&p.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&p.root, store.clone()).await.unwrap();
    rt.set_secret_key(SecretKey::generate().unwrap());
    let peeked = Arc::new(Mutex::new(Vec::new()));
    let seen = peeked.clone();
    rt.register_tool(
        DynamicTool::new("peek", "Uses the token.")
            .parameters(json!({"type": "object", "properties": {}}))
            .variable(VariableDecl::secret("TOKEN"))
            .handler(move |_: Value, ctx| {
                let seen = seen.clone();
                async move {
                    let token = ctx
                        .get::<ThreadState>()
                        .unwrap()
                        .env("TOKEN")
                        .map(str::to_owned);
                    seen.lock().unwrap().push(token.clone());
                    Ok::<_, ToolError>(format!("the token is {}", token.unwrap_or_default()))
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
    // A scripted model plays the turn the number of assistant messages names: the runtime's
    // own (queued) call of the immediate agent is the first.
    let lead_model = Recorded::new(json!([
        {"text": "never played"},
        {"text": "the lead answers"},
        {"text": "the lead answers again"}
    ]));
    let asker_model = Recorded::new(json!([{"text": "please look"}]));
    let finder_model = Recorded::new(json!([
        {"toolCalls": [{"name": "peek", "arguments": {}}]},
        {"toolCalls": [{"name": "report", "arguments": {"text": "the coast is mapped"}}]}
    ]));
    rt.register_model("lead", lead_model.clone());
    rt.register_model("asker", asker_model.clone());
    rt.register_model("finder", finder_model.clone());
    Run {
        rt,
        store,
        lead_model,
        asker_model,
        finder_model,
        peeked,
    }
}

fn immediate_offer() -> Value {
    json!({"name": "research", "immediate": {
        "nameEnv": "TEAM", "descriptionEnv": "GOAL", "scopedEnv": ["TOKEN", "TEAM"]
    }})
}

#[tokio::test]
async fn an_immediate_sub_agent_runs_before_the_first_model_step_and_once_per_thread() {
    let p = project(immediate_offer(), None);
    let run = runtime(&p).await;
    assert!(run.rt.problems().is_empty(), "{:?}", run.rt.problems());
    let values = vec![
        VariableValue::text("TEAM", "blue team"),
        VariableValue::text("GOAL", "map the coast"),
        VariableValue::secret("TOKEN", SECRET),
    ];
    let lead = run
        .rt
        .start_thread_with("lead", "go", values)
        .await
        .unwrap();
    run.rt.run(&lead.id).await.unwrap();

    // The lead's model was first asked with the child's result already in the conversation.
    let first = &run.lead_model.requests()[0];
    let sent = serde_json::to_string(&first.messages).unwrap();
    assert!(sent.contains("the coast is mapped"), "{sent}");

    // One child; its first message is the name and description values, nothing else.
    let children = run.store.threads(Some(&lead.id)).unwrap();
    assert_eq!(children.len(), 1);
    let child_messages = run.store.messages(&children[0].id).unwrap();
    assert_eq!(child_messages[0].role, Role::User);
    assert_eq!(
        child_messages[0].content.as_deref(),
        Some("blue team\nmap the coast")
    );

    // Started once per thread: another message and run start no second child.
    run.rt.send(&lead.id, "and again").await.unwrap();
    assert_eq!(run.store.threads(Some(&lead.id)).unwrap().len(), 1);
}

#[tokio::test]
async fn scoped_env_values_reach_the_childs_tools_and_never_a_model_a_message_or_a_file() {
    let p = project(immediate_offer(), None);
    let run = runtime(&p).await;
    let values = vec![
        VariableValue::text("TEAM", "blue team"),
        VariableValue::text("GOAL", "map the coast"),
        VariableValue::secret("TOKEN", SECRET),
    ];
    let lead = run
        .rt
        .start_thread_with("lead", "go", values)
        .await
        .unwrap();
    run.rt.run(&lead.id).await.unwrap();

    // TOKEN is scoped in the child, so only the copy reaches its tool.
    assert_eq!(*run.peeked.lock().unwrap(), vec![Some(SECRET.to_owned())]);
    let child = run.store.threads(Some(&lead.id)).unwrap().remove(0);
    let stored = run.store.variables(&child.id).unwrap();
    let token = stored.iter().find(|v| v.name == "TOKEN").unwrap();
    assert!(token.secret, "a scopedEnv copy is stored sealed");
    assert!(!token.value.contains(SECRET));
    // TEAM is also designated by nameEnv, so it is copied as it is (a text).
    let team = stored.iter().find(|v| v.name == "TEAM").unwrap();
    assert!(!team.secret);
    assert_eq!(team.value, "blue team");

    // No model request, no stored message and no event of either thread holds the value.
    for model in [&run.lead_model, &run.asker_model, &run.finder_model] {
        for request in model.requests() {
            let sent = serde_json::to_string(&request.messages).unwrap();
            assert!(!sent.contains(SECRET), "{sent}");
        }
    }
    for thread in [&lead.id, &child.id] {
        for m in run.store.messages(thread).unwrap() {
            let text = format!("{:?}", m);
            assert!(!text.contains(SECRET), "{text}");
        }
        for e in run.store.events(thread, 0).unwrap() {
            assert!(!e.data.to_string().contains(SECRET));
        }
    }
    let Run { rt, store, .. } = run;
    drop(rt);
    drop(store);
    assert_no_trace_in_files(&p.root.join("t.db"));
}

#[tokio::test]
async fn immediate_true_starts_the_child_with_the_threads_first_message() {
    let p = project(json!({"name": "research", "immediate": true}), None);
    let run = runtime(&p).await;
    let lead = run.rt.start_thread("lead", "chart the bay").await.unwrap();
    run.rt.run(&lead.id).await.unwrap();
    let child = run.store.threads(Some(&lead.id)).unwrap().remove(0);
    let first = run.store.messages(&child.id).unwrap().remove(0);
    assert_eq!(first.content.as_deref(), Some("chart the bay"));
    // Without scopedEnv nothing is copied into the child.
    assert!(run.store.variables(&child.id).unwrap().is_empty());
}

#[tokio::test]
async fn an_immediate_agent_whose_first_side_takes_arguments_is_refused_naming_the_field() {
    let schema = json!({"type": "object", "properties": {"topic": {"type": "string"}},
        "required": ["topic"]});
    let p = project(json!({"name": "research", "immediate": true}), Some(schema));
    let run = runtime(&p).await;
    let err = run.rt.start_thread("lead", "go").await.unwrap_err();
    let RuntimeError::Unsound { problems, .. } = err else {
        panic!("expected Unsound, got {err}")
    };
    let lines: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("lead.json") && l.contains("`tools[0].immediate`")),
        "{lines:?}"
    );
    assert!(run.store.threads(None).unwrap().is_empty());
}
