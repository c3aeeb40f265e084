//! A model answer that no API is documented to send (a call without a tool name, a call without
//! an id, two different calls under one id) is malformed output, not a tool failure: nothing of
//! it runs or is stored, the same request is sent again within the model's attempt bound, and
//! then the run fails with an error that says what was wrong (catalogue AN-8).

mod common;

use common::{call_answer, one_prompt_project, ping_tool, runtime_on, text_answer, ListModel};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_providers::{ModelResponse, ModelToolCall};
use toolhost_runtime::engine::{RunOutcome, RuntimeError, StopReason};
use toolhost_store::{Role, ThreadStatus};

fn two_calls(first: (&str, &str, &str), second: (&str, &str, &str)) -> ModelResponse {
    let call = |(id, name, arguments): (&str, &str, &str)| ModelToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    };
    ModelResponse {
        tool_calls: vec![call(first), call(second)],
        ..ModelResponse::default()
    }
}

/// A `ping` tool that counts its runs.
fn counted_ping(runs: &Arc<AtomicUsize>) -> toolhost_core::AnyTool {
    let runs = runs.clone();
    DynamicTool::new("ping", "Pings.")
        .parameters(serde_json::json!({"type": "object", "properties": {}}))
        .handler(move |_: serde_json::Value, _| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("pong")
            }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn malformed_answers_are_asked_again_and_never_stored_or_run() {
    let project = one_prompt_project(&["ping"]);
    let model = ListModel::new(vec![
        // A valid call beside a nameless one: neither runs.
        Ok(two_calls(("w1", "ping", "{}"), ("w2", "", "{}"))),
        // No call id.
        call_answer("", "ping", "{}"),
        // Two different calls under one id.
        Ok(two_calls(
            ("w1", "ping", "{}"),
            ("w1", "ping", "{\"n\": 1}"),
        )),
        call_answer("w1", "ping", "{}"),
        text_answer("pong it is"),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    let runs = Arc::new(AtomicUsize::new(0));
    rt.register_tool(counted_ping(&runs));
    let thread = rt.start_thread("a", "ping").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    // The fourth attempt (the default bound) was sound; only it and the reply were stored.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    assert!(
        requests[..4].iter().all(|r| r == &requests[0]),
        "the same request each time"
    );
    let replies: Vec<_> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0].tool_calls.len(), 1);
    assert_eq!(replies[0].tool_calls[0].name, "ping");
}

#[tokio::test]
async fn the_run_fails_with_a_clear_error_once_the_attempts_are_used_up() {
    let project = one_prompt_project(&["ping"]);
    let nameless = || call_answer("w1", "", "{}");
    let model = ListModel::new((0..6).map(|_| nameless()).collect());
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(ping_tool());
    let thread = rt.start_thread("a", "ping").await.unwrap();
    let err = rt.run(&thread.id).await.unwrap_err();
    match &err {
        RuntimeError::MalformedAnswer {
            model,
            attempts,
            reason,
        } => {
            assert_eq!(model, "list");
            assert_eq!(*attempts, 4);
            assert!(
                reason.contains("call 1 (id \"w1\") has no tool name"),
                "{reason}"
            );
        }
        other => panic!("expected a malformed-answer error, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 4);
    assert_eq!(
        store.thread(&thread.id).unwrap().status,
        ThreadStatus::Failed
    );
    assert!(store
        .messages(&thread.id)
        .unwrap()
        .iter()
        .all(|m| m.role == Role::User));
}
