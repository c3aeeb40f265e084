//! Variables merge prompt → agent → thread; a thread lacking a required variable cannot start
//! (agent and prompt variables) or pauses at the call that needs it (tool variables); secrets
//! are sealed at rest, opened only for the tool that declared them, and redacted from whatever
//! is stored or sent to a model.

mod common;

use common::{ListModel, Project};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::variables::VariableDecl;
use toolhost_providers::{FinishReason, ModelResponse, ModelToolCall, Usage};
use toolhost_runtime::engine::{RunOutcome, Runtime, RuntimeError, ThreadState, Waiting};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, SqliteStore, Store};

const CANARY: &str = "canary-7f3a9c-SECRET";

fn new_project(prompt: Value, agent: Value) -> Project {
    Project::with_files(&[
        ("agents/agents/ops.json", agent.to_string()),
        ("agents/prompts/ops.json", prompt.to_string()),
        (
            "agents/models/m.json",
            r#"{"provider": "test", "script": "s.json"}"#.to_owned(),
        ),
        ("s.json", r#"[{"text": "unused"}]"#.to_owned()),
    ])
}

fn calls(names: &[&str]) -> ModelResponse {
    ModelResponse {
        text: None,
        tool_calls: names
            .iter()
            .enumerate()
            .map(|(i, n)| ModelToolCall {
                id: format!("w{i}"),
                name: (*n).to_owned(),
                arguments: "{}".into(),
            })
            .collect(),
        usage: Usage::default(),
        finish: FinishReason::ToolCalls,
        ..ModelResponse::default()
    }
}

fn text(t: &str) -> ModelResponse {
    ModelResponse {
        text: Some(t.into()),
        tool_calls: Vec::new(),
        usage: Usage::default(),
        finish: FinishReason::Stop,
        ..ModelResponse::default()
    }
}

/// `use_token` declares TOKEN (secret) and REGION; it reports what it sees, then fails with an
/// error that quotes the token. `peek` declares nothing and reports what it sees.
fn tools(seen: &Arc<Mutex<Vec<String>>>) -> Vec<toolhost_core::AnyTool> {
    let s1 = seen.clone();
    let s2 = seen.clone();
    vec![
        DynamicTool::new("use_token", "Calls the service.")
            .variable(VariableDecl::secret("TOKEN"))
            .variable(VariableDecl::text("REGION").optional())
            .handler(move |_args: Value, ctx| {
                let seen = s1.clone();
                async move {
                    let state = ctx.get::<ThreadState>().unwrap();
                    seen.lock().unwrap().push(format!(
                        "use_token TOKEN={} REGION={}",
                        state.env("TOKEN").unwrap_or("-"),
                        state.env("REGION").unwrap_or("-")
                    ));
                    state
                        .emit("debug", json!({"sent": state.env("TOKEN")}))
                        .await
                        .unwrap();
                    Err::<String, _>(ToolError::new(format!(
                        "the service refused token {}",
                        state.env("TOKEN").unwrap_or("")
                    )))
                }
            })
            .build()
            .unwrap(),
        DynamicTool::new("peek", "Looks around.")
            .handler(move |_args: Value, ctx| {
                let seen = s2.clone();
                async move {
                    let state = ctx.get::<ThreadState>().unwrap();
                    seen.lock()
                        .unwrap()
                        .push(format!("peek TOKEN={}", state.env("TOKEN").unwrap_or("-")));
                    Ok::<_, ToolError>("looked")
                }
            })
            .build()
            .unwrap(),
    ]
}

async fn runtime(
    root: &Path,
    store: Arc<dyn Store>,
    model: Arc<ListModel>,
    seen: &Arc<Mutex<Vec<String>>>,
    key: &SecretKey,
) -> Runtime {
    let mut rt = Runtime::load(root, store).await.unwrap();
    for t in tools(seen) {
        rt.register_tool(t);
    }
    rt.register_model("m", model);
    rt.set_secret_key(key.clone());
    rt
}

fn prompt() -> Value {
    json!({
        "toolDescription": "Ops.",
        "prompt": [{"type": "text", "text": "Region:"}, {"type": "env", "name": "REGION"}],
        "model": "m",
        "tools": ["use_token", "peek"],
        "variables": [{"name": "REGION", "type": "text", "required": true}],
        "values": {"REGION": "from-prompt"}
    })
}

#[tokio::test]
async fn values_merge_prompt_then_agent_then_thread_and_required_ones_are_checked() {
    let project = new_project(
        prompt(),
        json!({"type": "ai_human", "sideA": {"prompt": "ops"},
               "variables": [{"name": "TEAM", "type": "text", "required": true}],
               "values": {"REGION": "from-agent"}}),
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let model = ListModel::new(vec![Ok(text("ok")), Ok(text("ok"))]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let key = SecretKey::generate().unwrap();
    let rt = runtime(&project.root, store.clone(), model.clone(), &seen, &key).await;
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());

    let err = rt.start_thread("ops", "hi").await.unwrap_err();
    assert!(matches!(&err, RuntimeError::MissingVariables { names, .. } if names == &["TEAM"]));
    assert!(err.to_string().contains("TEAM"), "{err}");
    assert!(store.threads(None).unwrap().is_empty());

    // The agent's value beats the prompt's; the thread's beats both.
    let t1 = rt
        .start_thread_with("ops", "hi", vec![VariableValue::text("TEAM", "core")])
        .await
        .unwrap();
    rt.run(&t1.id).await.unwrap();
    let t2 = rt
        .start_thread_with(
            "ops",
            "hi",
            vec![
                VariableValue::text("TEAM", "core"),
                VariableValue::text("REGION", "from-thread"),
            ],
        )
        .await
        .unwrap();
    rt.run(&t2.id).await.unwrap();
    let requests = model.requests();
    assert_eq!(
        requests[0][0].content.as_deref(),
        Some("Region:\n\nfrom-agent")
    );
    assert_eq!(
        requests[1][0].content.as_deref(),
        Some("Region:\n\nfrom-thread")
    );
}

#[tokio::test]
async fn a_missing_secret_pauses_the_call_and_the_secret_never_leaks() {
    let project = new_project(
        prompt(),
        json!({"type": "ai_human", "sideA": {"prompt": "ops"}}),
    );
    let db = project.root.join("t.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).unwrap());
    let model = ListModel::new(vec![
        Ok(calls(&["peek", "use_token", "peek"])),
        Ok(text("Reported.")),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let key = SecretKey::generate().unwrap();
    let rt = runtime(&project.root, store.clone(), model.clone(), &seen, &key).await;
    let thread = rt.start_thread("ops", "call the service").await.unwrap();

    let RunOutcome::Paused(Waiting::Variables { request_id, names }) =
        rt.run(&thread.id).await.unwrap()
    else {
        panic!("expected a pause for variables");
    };
    assert_eq!(names, vec!["TOKEN"]);
    // The call before ran; the one that needs the secret and the one after wait.
    assert_eq!(*seen.lock().unwrap(), vec!["peek TOKEN=-"]);
    let requests = store.variable_requests(&thread.id).unwrap();
    assert_eq!(requests[0].id, request_id);
    assert_eq!(requests[0].answered_at, None);

    rt.set_variables(&thread.id, vec![VariableValue::secret("TOKEN", CANARY)])
        .await
        .unwrap();
    assert!(store.variable_requests(&thread.id).unwrap()[0]
        .answered_at
        .is_some());
    let outcome = rt.run(&thread.id).await.unwrap();
    assert!(matches!(outcome, RunOutcome::Done(_)), "{outcome:?}");

    // Only the tool that declared the secret saw it.
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            "peek TOKEN=-".to_owned(),
            format!("use_token TOKEN={CANARY} REGION=from-prompt"),
            "peek TOKEN=-".to_owned()
        ]
    );
    // The error quoting it was redacted before it was stored and shown to the model.
    let results: Vec<String> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.unwrap_or_default())
        .collect();
    assert!(
        results[1].contains("refused token [redacted TOKEN]"),
        "{results:?}"
    );
    // Nowhere in plain text: messages, events, values, variables, the model's requests...
    let everything = format!(
        "{:?}{:?}{:?}{:?}{:?}",
        store.messages(&thread.id).unwrap(),
        store.events(&thread.id, 0).unwrap(),
        store.values(&thread.id).unwrap(),
        store.variables(&thread.id).unwrap(),
        model.requests()
    );
    assert!(!everything.contains(CANARY));
    assert!(everything.contains("[redacted TOKEN]"));
    // ...nor in the database files, the write-ahead log included.
    drop(rt);
    drop(store);
    for suffix in ["", "-wal", "-shm"] {
        let path = PathBuf::from(format!("{}{suffix}", db.display()));
        if let Ok(bytes) = std::fs::read(&path) {
            assert!(
                !bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()),
                "the secret is in {}",
                path.display()
            );
        }
    }
}

#[tokio::test]
async fn a_prompt_that_puts_a_secret_in_its_text_is_refused_at_load() {
    let mut p = prompt();
    p["variables"] = json!([{"name": "REGION", "type": "secret", "required": true}]);
    p["values"] = json!({});
    let project = new_project(p, json!({"type": "ai_human", "sideA": {"prompt": "ops"}}));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let rt = Runtime::load(&project.root, store).await.unwrap();
    let problems = rt.problems();
    assert!(
        problems
            .iter()
            .any(|p| p.message.contains("secret variable \"REGION\"")),
        "{problems:?}"
    );
    // A secret value written in a definition file is refused too.
    let mut p = prompt();
    p["variables"] = json!([{"name": "REGION", "type": "secret"}]);
    p["prompt"] = json!("No parts.");
    let project = new_project(p, json!({"type": "ai_human", "sideA": {"prompt": "ops"}}));
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let rt = Runtime::load(&project.root, store).await.unwrap();
    assert!(rt.problems().iter().any(|p| p
        .message
        .contains("secrets are never written in definition files")));
}
