//! Tool files written in JavaScript and TypeScript (spec 000, 002): the spec's own examples in
//! `examples/js-tools` load unchanged (TypeScript stripped of its types, `defineTool` and the Zod
//! subset toolhost's own), are offered with the JSON Schema a blueprint would hold, and run
//! in a thread with their `state`: storage, queued tools, events and tenvs.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason};
use toolhost_store::{Role, SqliteStore, Store};

fn example() -> PathBuf {
    PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../examples/js-tools")
}

fn temp_db() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "toolhost-js-tools-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("t.db")
}

#[tokio::test]
async fn the_spec_examples_load_with_the_schema_a_blueprint_would_hold() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&temp_db()).unwrap());
    let rt = Runtime::load(&example(), store).await.unwrap();
    assert!(rt.problems().is_empty(), "{:?}", rt.problems());
    let weather = rt.tools().get("get_weather").unwrap().definition().clone();
    assert_eq!(
        weather.description,
        "Get the current weather for a location"
    );
    assert_eq!(
        weather.parameters,
        json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name or coordinates"},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
            },
            "required": ["location"],
            "additionalProperties": false
        })
    );
    let ticket = rt
        .tools()
        .get("create_ticket")
        .unwrap()
        .definition()
        .clone();
    assert_eq!(
        ticket.parameters["properties"]["title"],
        json!({"type": "string", "minLength": 5, "maxLength": 200, "description": "Ticket title"})
    );
    assert_eq!(
        ticket.parameters["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string"}, "description": "Optional tags"})
    );
    let search = rt.tools().get("search_files").unwrap().definition().clone();
    let names: Vec<(&str, bool)> = search
        .variables
        .iter()
        .map(|v| (v.name.as_str(), v.required))
        .collect();
    assert_eq!(
        names,
        vec![("vectorStoreId", true), ("userLocation", false)]
    );
}

#[tokio::test]
async fn the_spec_examples_run_in_a_thread_with_their_state() {
    // Cold runs, the default warm pool, and a larger one: the same results.
    for warm in [0, 1, 3] {
        spec_examples_run(warm).await;
    }
}

async fn spec_examples_run(warm: usize) {
    let db = temp_db();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).unwrap());
    let mut rt = Runtime::load(&example(), store.clone()).await.unwrap();
    rt.set_warm_runtimes(warm);
    let thread = rt
        .start_thread("assistant", "Help me at the harbour.")
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
    let results: Vec<(String, String)> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.name.unwrap_or_default(), m.content.unwrap_or_default()))
        .collect();
    let result = |tool: &str| {
        results
            .iter()
            .find(|(n, _)| n == tool)
            .map(|(_, c)| c.clone())
            .unwrap_or_else(|| panic!("no result of {tool}: {results:?}"))
    };
    let weather: Value = serde_json::from_str(&result("get_weather")).unwrap();
    assert_eq!(weather["units"], "celsius", "the default was applied");
    assert_eq!(
        result("create_ticket"),
        "Created ticket #1042: Broken crane"
    );
    assert_eq!(
        store.value(&thread.id, "last_ticket").unwrap(),
        Some(json!(1042))
    );
    assert_eq!(result("start_workflow"), "Workflow initiated");
    // The queued step ran before the next model step, and the event was recorded.
    assert_eq!(result("execute_step"), "Step 1 of wf-7 done");
    assert_eq!(
        store.value(&thread.id, "workflow:wf-7").unwrap(),
        Some(json!({"step": 1, "done": true}))
    );
    let events = store.events(&thread.id, 0).unwrap();
    assert!(
        events.iter().any(|e| e.kind.as_str() == "workflow_started"),
        "{events:?}"
    );
    let search: Value = serde_json::from_str(&result("search_files")).unwrap();
    assert_eq!(search["vectorStoreId"], "vs_harbour");
    assert_eq!(search["hits"], json!(["tides.md", "harbour-rules.md"]));
}
