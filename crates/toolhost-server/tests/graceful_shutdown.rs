//! Shutdown lets the operation under way finish and be stored, stops the run before its next
//! model request, and releases the thread, so that any process can take it up later.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_mid_call_stores_the_result_and_releases_the_thread() {
    let project = write_project(&[
        (
            "agents/agents/slow.json",
            r#"{"type": "ai_human", "sideA": {"label": "slow", "prompt": "slow", "stopOnResponse": true}}"#,
        ),
        (
            "agents/prompts/slow.json",
            r#"{"toolDescription": "Slow.", "prompt": "You wait.", "model": "slow_test", "tools": ["nap"]}"#,
        ),
        (
            "agents/models/slow_test.json",
            r#"{"provider": "test", "script": "scripts/slow.jsonl"}"#,
        ),
        (
            "scripts/slow.jsonl",
            "{\"toolCalls\": [{\"name\": \"nap\", \"arguments\": {}}]}\n{\"text\": \"rested\"}\n",
        ),
        (
            "agents/tools/nap.json",
            r#"{"type": "object", "description": "Naps a moment.", "properties": {"_activity": {"type": "string", "const": "nap"}}, "additionalProperties": false}"#,
        ),
        (
            "agents/activities/nap.json",
            r#"{"command": ["sh", "-c", "touch started; sleep 1; echo '{\"status\": \"success\", \"result\": \"napped\"}'"], "timeoutMs": 30000, "env": ["PATH"]}"#,
        ),
    ]);
    let server = TestServer::start_on(&project).await;
    let token = server.admin();
    let store = server.store.clone();
    let id = server
        .create(&token, json!({"agent": "slow", "message": "take a nap"}))
        .await;
    // Wait (a guard, not a measure) until the program runs: it marks that in the project folder
    // (its working folder). A stop before it starts would answer the call "not run" instead.
    let mut waited = 0;
    while !project.join("started").exists() {
        assert!(waited < 3000, "the call never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    assert!(
        store.lease(&id).unwrap().is_some(),
        "the run owns the thread"
    );

    server.shutdown().await.expect("a clean shutdown");

    assert_eq!(store.lease(&id).unwrap(), None, "the thread was released");
    let calls = store.calls(&id).unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].state, toolhost_store::CallState::Completed);
    let messages = store.messages(&id).unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last.content.as_deref(), Some("napped"), "{messages:#?}");
    assert!(
        messages
            .iter()
            .all(|m| m.content.as_deref() != Some("rested")),
        "no model request after the stop"
    );
    let _ = std::fs::remove_dir_all(project);
}
