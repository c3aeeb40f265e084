//! Before each request the conversation is checked against the tool-call ordering rules of the
//! APIs. When something (here, a request middleware) broke them, the request is mended honestly:
//! a call without a result gets an error result saying it may not have run, a result without a
//! call is left out. The repair is stored as an event (once while the same fault stays), and the
//! stored history stays as it was.

mod common;

use common::{call_answer, one_prompt_project, ping_tool, runtime_on, text_answer, ListModel};
use serde_json::Value;
use std::sync::Arc;
use toolhost_providers::{ChatMessage, ChatRole, ModelRequest, RESULT_UNAVAILABLE};
use toolhost_runtime::engine::{
    CompletionRequestArgs, Middleware, MiddlewareResult, MiddlewareScope,
};
use toolhost_store::Role;

/// A tool result that answers no call.
fn stray() -> ChatMessage {
    ChatMessage {
        role: ChatRole::Tool,
        content: Some("a stray result".to_owned()),
        tool_call_id: Some("call_nobody_made".to_owned()),
        ..ChatMessage::default()
    }
}

/// Drops every tool result from the request and adds one that answers no call.
struct Scrambler;

impl Middleware for Scrambler {
    fn completion_request(
        &self,
        args: &CompletionRequestArgs<'_>,
    ) -> MiddlewareResult<ModelRequest> {
        let mut changed = args.request.clone();
        changed.messages.retain(|m| m.role != ChatRole::Tool);
        changed.messages.push(stray());
        Ok(Some(changed))
    }
}

#[tokio::test]
async fn a_broken_request_is_mended_without_inventing_a_success() {
    let project = one_prompt_project(&["ping"]);
    let model = ListModel::new(vec![call_answer("w1", "ping", "{}"), text_answer("done")]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(ping_tool());
    rt.add_middleware(MiddlewareScope::AllAgents, Arc::new(Scrambler));
    let thread = rt.start_thread("a", "ping it").await.unwrap();
    rt.run(&thread.id).await.unwrap();

    // The model got an error result for its call, right after it, and no stray result.
    let second = &model.requests()[1];
    let at = second
        .iter()
        .position(|m| !m.tool_calls.is_empty())
        .unwrap();
    let call_id = &second[at].tool_calls[0].id;
    let result = &second[at + 1];
    assert_eq!(result.role, ChatRole::Tool);
    assert_eq!(result.tool_call_id.as_ref(), Some(call_id));
    assert_eq!(result.content.as_deref(), Some(RESULT_UNAVAILABLE));
    assert!(result.is_error);
    assert_eq!(second.len(), at + 2, "the stray result is left out");

    // The repair is on record; the stored history keeps the real result.
    let events = store.events(&thread.id, 0).unwrap();
    let repaired: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind == toolhost_store::EventKind::HistoryRepaired)
        .map(|e| &e.data)
        .collect();
    let kinds: Vec<Vec<&str>> = repaired
        .iter()
        .map(|d| {
            d["repairs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["kind"].as_str().unwrap())
                .collect()
        })
        .collect();
    // The first request had only the stray result; the second also lacked the call's result.
    assert_eq!(
        kinds,
        [
            vec!["orphan_result"],
            vec!["missing_result", "orphan_result"]
        ]
    );
    let stored = store.messages(&thread.id).unwrap();
    let pong = stored.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(pong.content.as_deref(), Some("pong"));
}

/// Adds the same stray result to every request.
struct Stray;

impl Middleware for Stray {
    fn completion_request(
        &self,
        args: &CompletionRequestArgs<'_>,
    ) -> MiddlewareResult<ModelRequest> {
        let mut changed = args.request.clone();
        changed.messages.push(stray());
        Ok(Some(changed))
    }
}

#[tokio::test]
async fn a_fault_that_stays_is_mended_every_time_and_recorded_once() {
    let project = one_prompt_project(&["ping"]);
    let model = ListModel::new(vec![
        call_answer("w1", "ping", "{}"),
        call_answer("w2", "ping", "{}"),
        text_answer("done"),
    ]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(ping_tool());
    rt.add_middleware(MiddlewareScope::AllAgents, Arc::new(Stray));
    let thread = rt.start_thread("a", "ping twice").await.unwrap();
    rt.run(&thread.id).await.unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert!(
            request
                .iter()
                .all(|m| m.tool_call_id.as_deref() != Some("call_nobody_made")),
            "the stray result is left out of every request"
        );
    }
    let repaired = store
        .events(&thread.id, 0)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == toolhost_store::EventKind::HistoryRepaired)
        .count();
    assert_eq!(repaired, 1);
}
