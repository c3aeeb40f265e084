//! A caller that waits for a call's result gets it from the run that stores it, as a value:
//! the very message stored, and only once.

mod common;

use common::{one_prompt_project, ping_tool, runtime_on, ListModel, Project};
use std::sync::Arc;
use toolhost_runtime::engine::{RunOutcome, Runtime, ScratchCall};
use toolhost_store::{Role, Store};

/// A runtime with the `ping` tool, and a direct call of it stored on a thread of its own (the
/// project is returned so that its folder lives as long as the test).
async fn a_ping_call() -> (Project, Runtime, Arc<dyn Store>, ScratchCall) {
    let project = one_prompt_project(&["ping"]);
    let (mut rt, store) = runtime_on(&project, ListModel::new(Vec::new())).await;
    rt.register_tool(ping_tool());
    let call = rt
        .start_scratch_call("a", "ping", "{}", Vec::new())
        .await
        .unwrap();
    (project, rt, store, call)
}

#[tokio::test]
async fn the_run_that_stores_a_calls_result_hands_it_to_whoever_waits_for_it() {
    let (_project, rt, store, call) = a_ping_call().await;
    let mut expected = rt.expect_result(&call.thread.id, &call.call_id);
    // Another call's wait is not answered by this one's result.
    let mut other = rt.expect_result(&call.thread.id, "not-this-call");
    assert!(
        expected.take().is_none(),
        "nothing is handed before the run"
    );

    // A direct call's thread runs the call and does not ask the model.
    let outcome = rt.run(&call.thread.id).await.unwrap();
    assert!(matches!(outcome, RunOutcome::Done(_)), "{outcome:?}");

    let handed = expected.take().expect("the run handed the result over");
    assert_eq!(handed.role, Role::Tool);
    assert_eq!(handed.tool_call_id.as_deref(), Some(call.call_id.as_str()));
    assert_eq!(handed.content.as_deref(), Some("pong"));
    // The very message stored.
    let stored = store
        .messages(&call.thread.id)
        .unwrap()
        .into_iter()
        .find(|m| m.tool_call_id.as_deref() == Some(call.call_id.as_str()))
        .unwrap();
    assert_eq!(handed.id, stored.id);
    assert_eq!(handed.seq, stored.seq);
    assert!(expected.take().is_none(), "a result is handed over once");
    assert!(other.take().is_none());
}

#[tokio::test]
async fn a_later_wait_for_the_same_call_gets_its_result_whatever_the_earlier_one_does() {
    let (_project, rt, _store, call) = a_ping_call().await;
    let earlier = rt.expect_result(&call.thread.id, &call.call_id);
    let mut later = rt.expect_result(&call.thread.id, &call.call_id);
    // The earlier wait ends (its caller went away) before the run: the later one still waits.
    drop(earlier);
    rt.run(&call.thread.id).await.unwrap();
    let handed = later.take().expect("the later wait got the result");
    assert_eq!(handed.content.as_deref(), Some("pong"));
}
