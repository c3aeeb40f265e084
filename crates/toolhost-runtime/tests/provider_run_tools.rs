//! The results a provider reports for a tool it ran (`executionMode: provider`) are stored as tool
//! results before the reply they came with: silent, since the model already has them, a failed
//! run as an error, and never sent back as results of calls the conversation does not hold. A
//! reply that comes with them and makes no call still ends the turn, and the tool's local
//! `execute` is not called.

mod common;

use common::{one_prompt_project, runtime_on, text_answer, ListModel};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_providers::{ModelResponse, ProviderToolResult};
use toolhost_runtime::engine::{RunOutcome, StopReason};
use toolhost_store::Role;

#[tokio::test]
async fn provider_results_are_stored_before_their_reply_and_never_sent_back() {
    let project = one_prompt_project(&["web_search"]);
    // The second turn's request shows the first turn's reply (`includeChat`).
    std::fs::write(
        project.root.join("agents/prompts/p.json"),
        json!({"toolDescription": "x", "prompt": "Be brief.", "model": "list", "tools": ["web_search"], "includeChat": true}).to_string(),
    )
    .unwrap();
    let model = ListModel::new(vec![
        Ok(ModelResponse {
            text: Some("Oslo has 717,710 people.".into()),
            provider_results: vec![
                ProviderToolResult {
                    call_id: Some("ws_01".into()),
                    name: "web_search".into(),
                    input: Some(json!({"query": "population of Oslo"})),
                    output: json!([{"url": "https://example.org/oslo", "title": "Oslo"}]),
                    failed: false,
                },
                ProviderToolResult {
                    call_id: Some("ws_02".into()),
                    name: "web_search".into(),
                    input: Some(json!({"query": "population of Oslo 2025"})),
                    output: json!({"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}),
                    failed: true,
                },
            ],
            ..ModelResponse::default()
        }),
        text_answer("You are welcome."),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    rt.register_tool(
        DynamicTool::new("web_search", "Searches the web.")
            .provider_executed("openai")
            .handler(move |_: Value, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<_, ToolError>("local search".to_owned()) }
            })
            .build()
            .unwrap(),
    );
    let thread = rt
        .start_thread("a", "How many people live in Oslo?")
        .await
        .unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    rt.store()
        .apply(
            &thread.id,
            vec![toolhost_store::Write::Enqueue(
                toolhost_store::QueueItem::Message {
                    role: Role::User,
                    content: "Thanks!".into(),
                },
            )],
        )
        .unwrap();
    rt.run(&thread.id).await.unwrap();

    let messages = store.messages(&thread.id).unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Tool,
            Role::Tool,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ],
        "the provider's results come before the reply, which ended the turn"
    );
    assert_eq!(messages[2].status, Some(toolhost_store::ToolStatus::Error));
    let result = &messages[1];
    assert_eq!(result.name.as_deref(), Some("web_search"));
    assert_eq!(result.tool_call_id.as_deref(), Some("ws_01"));
    assert!(result.silent);
    assert!(result.metadata.provider_run);
    assert_eq!(
        result.metadata.input.as_ref().unwrap()["query"],
        "population of Oslo"
    );
    assert_eq!(result.metadata.output.as_ref().unwrap()[0]["title"], "Oslo");
    assert_eq!(result.status, Some(toolhost_store::ToolStatus::Success));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "execute never runs");
    // The next request holds the reply's words, not a result of a call it does not hold.
    let second = &model.requests()[1];
    assert!(
        second.iter().all(|m| m.tool_call_id.is_none()),
        "{second:?}"
    );
    assert!(second
        .iter()
        .any(|m| m.content.as_deref() == Some("Oslo has 717,710 people.")));
}
