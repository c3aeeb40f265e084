//! A sub-prompt inside a run: a call in it that waits for approval pauses the thread and the
//! calling call gets its one result once it goes on; a stop inside it ends it with one result
//! saying so; a secret in it is redacted like anywhere else; `state.execution().promptPath`
//! grows inside it; a session binding called beside a prompt tool still ends the session; and a
//! prompt tool inside a sub-prompt nests one level deeper.

mod common;

use common::subprompts::{
    helper_prompt, helper_result, lead_calls, register_tools, setup, setup_side, Recorded,
};
use common::traces::{assert_no_trace_in_files, SECRET};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use toolhost_core::approval::Approval;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::variables::VariableDecl;
use toolhost_runtime::engine::{RunOutcome, Runtime, StopReason, ThreadState, Verdict, Waiting};
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_runtime::variables::VariableValue;
use toolhost_store::{Role, ThreadStatus, ToolStatus};

#[tokio::test]
async fn an_approval_inside_a_sub_prompt_pauses_the_thread_and_the_call_gets_one_result() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({"tools": ["guarded"]})),
        lead_calls(json!({"message": "go"})),
        json!([{"toolCalls": [{"name": "guarded", "arguments": {}}]}, {"text": "guarded ran"}]),
    )
    .await;
    let mut rt = s.rt;
    let runs = Arc::new(Mutex::new(0));
    let counter = runs.clone();
    rt.register_tool(
        DynamicTool::new("guarded", "Needs approval.")
            .parameters(json!({"type": "object", "properties": {}}))
            .approval(Approval::always())
            .handler(move |_: Value, _| {
                let counter = counter.clone();
                async move {
                    *counter.lock().unwrap() += 1;
                    Ok::<_, ToolError>("done".to_owned())
                }
            })
            .build()
            .unwrap(),
    );
    let thread = rt.start_thread("a", "start").await.unwrap();
    let RunOutcome::Paused(Waiting::Approval(request)) = rt.run(&thread.id).await.unwrap() else {
        panic!("the thread should wait for the approval inside the sub-prompt");
    };
    assert_eq!(request.tool, "guarded");
    assert_eq!(
        s.store.thread(&thread.id).unwrap().status,
        ThreadStatus::Paused
    );
    // The lead's call is journaled and has no result while it waits.
    let messages = s.store.messages(&thread.id).unwrap();
    let lead_call = messages[1].tool_calls[0].id.clone();
    assert!(messages
        .iter()
        .all(|m| m.tool_call_id.as_ref() != Some(&lead_call)));
    rt.decide(&thread.id, &request.call_id, Verdict::approve("alice"))
        .await
        .unwrap();
    let outcome = rt.run(&thread.id).await.unwrap();
    assert_eq!(outcome, RunOutcome::Done(StopReason::Response));
    assert_eq!(*runs.lock().unwrap(), 1);
    let messages = s.store.messages(&thread.id).unwrap();
    assert_eq!(
        helper_result(&messages).content.as_deref(),
        Some("guarded ran")
    );
    // The sub-prompt's first message was stored once, and it was asked twice in all.
    assert_eq!(
        messages
            .iter()
            .filter(|m| m.depth == 1 && m.role == Role::User)
            .count(),
        1
    );
    assert_eq!(s.helper.requests().len(), 2);
}

#[tokio::test]
async fn a_secret_in_a_sub_prompt_is_redacted_like_anywhere_else() {
    let s = setup(
        json!({"name": "helper", "includeToolCalls": true}),
        helper_prompt(json!({"tools": ["leak"]})),
        lead_calls(json!({"message": format!("use {SECRET}")})),
        json!([{"toolCalls": [{"name": "leak", "arguments": {}}]}, {"text": "used it"}]),
    )
    .await;
    let mut rt = s.rt;
    rt.register_tool(
        DynamicTool::new("leak", "Returns the token.")
            .parameters(json!({"type": "object", "properties": {}}))
            .variable(VariableDecl::secret("TOKEN"))
            .handler(|_: Value, ctx| async move {
                let state = ctx.get::<ThreadState>().unwrap();
                Ok::<_, ToolError>(format!("token={}", state.env("TOKEN").unwrap()))
            })
            .build()
            .unwrap(),
    );
    rt.set_secret_key(SecretKey::generate().unwrap());
    let thread = rt
        .start_thread_with("a", "go", vec![VariableValue::secret("TOKEN", SECRET)])
        .await
        .unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    // Neither model was sent the secret, and the call's result does not hold it.
    let sent = format!("{:?}{:?}", s.lead.requests(), s.helper.requests());
    assert!(!sent.contains(SECRET));
    let messages = s.store.messages(&thread.id).unwrap();
    let result = helper_result(&messages).content.clone().unwrap();
    assert!(result.contains("token="), "{result}");
    assert!(!result.contains(SECRET), "{result}");
    drop(rt);
    drop(s.store);
    assert_no_trace_in_files(&s.project.root.join("t.db"));
}

#[tokio::test]
async fn prompt_path_grows_when_a_call_runs_inside_a_sub_prompt() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({"tools": ["where"]})),
        json!([{"toolCalls": [{"name": "where", "arguments": {}}]},
               {"toolCalls": [{"name": "helper", "arguments": {"message": "go"}}]},
               {"text": "thanks"}]),
        json!([{"toolCalls": [{"name": "where", "arguments": {}}]}, {"text": "ok"}]),
    )
    .await;
    let rt = s.rt;
    let thread = rt.start_thread("a", "start").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let paths: Vec<(u32, String)> = s
        .store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.name.as_deref() == Some("where"))
        .map(|m| (m.depth, m.content.unwrap_or_default()))
        .collect();
    assert_eq!(
        paths,
        [(0, "lead".to_owned()), (1, "lead/helper".to_owned())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_inside_a_sub_prompt_ends_it_and_the_call_gets_one_result_saying_so() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({"tools": ["wait", "ping"]})),
        lead_calls(json!({"message": "go"})),
        json!([{"toolCalls": [{"name": "wait", "arguments": {}}, {"name": "ping", "arguments": {}}]},
               {"text": "never"}]),
    ).await;
    let mut rt = s.rt;
    let started = Arc::new(tokio::sync::Notify::new());
    let signal = started.clone();
    rt.register_tool(
        DynamicTool::new("wait", "Waits until the run is stopped.")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(move |_: Value, ctx: toolhost_core::ToolContext| {
                let signal = signal.clone();
                async move {
                    signal.notify_one();
                    while !ctx.abort_signal().is_aborted() {
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    Ok::<_, ToolError>("noticed the stop".to_owned())
                }
            })
            .build()
            .unwrap(),
    );
    let rt = Arc::new(rt);
    let thread = rt.start_thread("a", "start").await.unwrap();
    let (runner, id) = (rt.clone(), thread.id.clone());
    let task = tokio::spawn(async move { runner.run(&id).await });
    common::within("the start of the wait tool", started.notified()).await;
    assert!(rt.stop(&thread.id).await);
    assert_eq!(
        common::within("the end of the stopped run", task)
            .await
            .unwrap()
            .unwrap(),
        RunOutcome::Done(StopReason::Stopped)
    );
    // Neither model was asked again; every call has one result, the call that had not started
    // says it did not run, and the lead's call says its sub-prompt was stopped.
    assert_eq!(s.lead.requests().len(), 1);
    assert_eq!(s.helper.requests().len(), 1);
    let messages = s.store.messages(&thread.id).unwrap();
    for m in &messages {
        for c in &m.tool_calls {
            let n = messages
                .iter()
                .filter(|r| r.tool_call_id.as_ref() == Some(&c.id))
                .count();
            assert_eq!(n, 1, "call {} of {} has {n} results", c.id, c.name);
        }
    }
    let result = helper_result(&messages);
    assert_eq!(result.status, Some(ToolStatus::Error));
    assert!(result.content.as_deref().unwrap().contains("stopped"));
    assert_eq!(
        s.store.thread(&thread.id).unwrap().status,
        ThreadStatus::Idle
    );
}

#[tokio::test]
async fn a_session_stop_in_the_reply_that_called_a_prompt_tool_ends_the_session_after_a_pause() {
    let s = setup_side(
        json!({"prompt": "lead", "sessionStop": {"name": "finish", "messageProperty": "text"}}),
        json!("helper"),
        helper_prompt(json!({"tools": ["guarded"]})),
        json!([{"toolCalls": [{"name": "helper", "arguments": {"message": "go"}},
                              {"name": "finish", "arguments": {"text": "all done"}}]}]),
        json!([{"toolCalls": [{"name": "guarded", "arguments": {}}]}, {"text": "ok"}]),
    )
    .await;
    let mut rt = s.rt;
    rt.register_tool(
        DynamicTool::new("guarded", "Needs approval.")
            .parameters(json!({"type": "object", "properties": {}}))
            .approval(Approval::always())
            .handler(|_: Value, _| async move { Ok::<_, ToolError>("done".to_owned()) })
            .build()
            .unwrap(),
    );
    let thread = rt.start_thread("a", "start").await.unwrap();
    let RunOutcome::Paused(Waiting::Approval(request)) = rt.run(&thread.id).await.unwrap() else {
        panic!("the sub-prompt's call should wait for approval");
    };
    rt.decide(&thread.id, &request.call_id, Verdict::approve("alice"))
        .await
        .unwrap();
    // Read back from the store, the sub-prompt's nested first message is not the person's: the
    // session ends on the reply's `finish` call.
    let RunOutcome::Done(StopReason::SessionStop(end)) = rt.run(&thread.id).await.unwrap() else {
        panic!("the session should end on `finish`");
    };
    assert_eq!(end.message.as_deref(), Some("all done"));
    assert_eq!(s.lead.requests().len(), 1);
}

#[tokio::test]
async fn a_prompt_tool_inside_a_sub_prompt_nests_one_level_deeper() {
    let s = setup(
        json!("helper"),
        helper_prompt(json!({"tools": ["deep"]})),
        lead_calls(json!({"message": "go"})),
        json!([{"toolCalls": [{"name": "deep", "arguments": {"message": "deeper"}}]},
               {"text": "helper done"}]),
    )
    .await;
    std::fs::write(
        s.project.root.join("agents/prompts/deep.json"),
        json!({"toolDescription": "Goes deep.", "prompt": "Deep.", "model": "deep",
               "tools": ["where"]})
        .to_string(),
    )
    .unwrap();
    // The project as it is now, with the models and tools of the setup.
    let mut rt = Runtime::load(&s.project.root, s.store.clone())
        .await
        .unwrap();
    register_tools(&mut rt);
    let deep = Recorded::new(
        json!([{"toolCalls": [{"name": "where", "arguments": {}}]}, {"text": "deep done"}]),
    );
    rt.register_model("lead", s.lead.clone());
    rt.register_model("helper", s.helper.clone());
    rt.register_model("deep", deep.clone());
    let thread = rt.start_thread("a", "start").await.unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let messages = s.store.messages(&thread.id).unwrap();
    assert_eq!(
        helper_result(&messages).content.as_deref(),
        Some("helper done")
    );
    let deep_call = messages
        .iter()
        .find(|m| m.depth == 1 && m.tool_calls.iter().any(|c| c.name == "deep"))
        .map(|m| m.tool_calls[0].id.clone())
        .unwrap();
    let deepest: Vec<&toolhost_store::Message> = messages.iter().filter(|m| m.depth == 2).collect();
    assert_eq!(deepest.len(), 4, "first message, call, result, answer");
    assert!(deepest
        .iter()
        .all(|m| m.parent_id.as_ref() == Some(&deep_call)));
    let at = deepest
        .iter()
        .find(|m| m.name.as_deref() == Some("where"))
        .unwrap();
    assert_eq!(at.content.as_deref(), Some("lead/helper/deep"));
    // The helper saw its own conversation only: the deep prompt's answer as a result.
    let helper_last = s.helper.requests().last().unwrap().messages.clone();
    assert_eq!(helper_last.len(), 4);
    assert_eq!(helper_last[3].content.as_deref(), Some("deep done"));
}
